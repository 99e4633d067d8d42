//! Dead letters (a page, or one with its body), their deletion and replays, and their
//! stats, as C reads them.

use super::*;

/// A message whose webhook delivery failed for good (`outbound_dead_letter_list_get`). Every
/// pointer in it is owned by the list it came from. Later releases may add fields at the end.
#[repr(C)]
#[derive(Debug)]
pub struct outbound_dead_letter {
    /// Its `messageId`, NUL-terminated: a replay sends it again under the same one.
    pub message_id: *const c_char,
    /// When it failed, in Unix milliseconds.
    pub failed_at_ms: i64,
    /// Why, as the outcome said it: `"status 400"`, `"gone"`, `"blocked"`, `"expired"`, ...
    pub reason: *const c_char,
    /// The outcome's detail (`"webhooks: status 400"`).
    pub detail: *const c_char,
    /// Webhook rounds it was sent in.
    pub rounds: u32,
    /// When its first attempt went out, in Unix milliseconds; `OUTBOUND_TIME_NONE` if never.
    pub first_attempt_ms: i64,
    /// Each URL's last attempt.
    pub last_attempts: *const outbound_webhook_attempt,
    /// How many `last_attempts` holds.
    pub last_attempts_len: usize,
    /// The webhook body's length in bytes.
    pub size: u64,
    /// A replay of it is under way: it leaves the dead letters when the replay delivers it,
    /// and comes back (with the new attempts) if the replay fails.
    pub replaying: bool,
    /// The webhook body as it was sent, followed by a NUL byte not counted in `body_len` (so
    /// it can be read as a C string): only from `outbound_client_dead_letter`; NULL in a page
    /// of `outbound_client_dead_letters`.
    pub body: *const u8,
    /// The length of `body` in bytes (0 when NULL).
    pub body_len: usize,
}

/// A client's dead letters in all (`outbound_client_dead_letter_stats`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct outbound_dead_letter_stats {
    /// Dead letters kept now.
    pub count: u64,
    /// Their bytes, as `outbound_options_set_dead_letter_max_bytes` counts them.
    pub bytes: u64,
    /// Dropped, oldest first, to stay within the max bytes (since the spool was opened).
    pub evicted: u64,
    /// Dropped after the retention (since the spool was opened).
    pub expired: u64,
}

/// How a replay goes (`outbound_client_replay_dead_letter`, `_replay_dead_letters`,
/// `_replay_progress`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct outbound_replay_progress {
    /// The replay's number, for `outbound_client_replay_progress` (0: a range with nothing to
    /// replay).
    pub id: u64,
    /// Dead letters it took (those of its range not already replaying).
    pub total: u64,
    /// Handed to delivery so far.
    pub sent: u64,
    /// Delivered: they left the dead letters.
    pub delivered: u64,
    /// Failed again: back in the dead letters with their new attempts.
    pub failed: u64,
    /// Gone before their turn (deleted, or dropped by the limits).
    pub skipped: u64,
    /// When it started, in Unix milliseconds.
    pub started_ms: i64,
    /// Every dead letter it took has an outcome.
    pub done: bool,
}

/// Dead letters: a page, newest first (`outbound_client_dead_letters`), or the one
/// `outbound_client_dead_letter` found (0 or 1). Read with `outbound_dead_letter_list_len` /
/// `_get` / `_next`, release with `outbound_dead_letter_list_free`. A copy, as the attempt
/// list.
pub struct outbound_dead_letter_list {
    items: Vec<outbound_dead_letter>,
    next: *const c_char,
    // The arrays each letter's `last_attempts` points into.
    _attempts: Vec<Vec<outbound_webhook_attempt>>,
    _keep: Keep,
}

impl outbound_dead_letter_list {
    fn new(letters: &[DeadLetter], next: Option<&str>) -> outbound_dead_letter_list {
        let mut keep = Keep::default();
        let attempts: Vec<Vec<outbound_webhook_attempt>> = letters
            .iter()
            .map(|l| l.last_attempts.iter().map(|a| keep.attempt(a)).collect())
            .collect();
        let items = letters
            .iter()
            .zip(&attempts)
            .map(|(l, last)| {
                let (body, body_len) = keep.bytes(l.body.as_deref());
                outbound_dead_letter {
                    message_id: keep.text(&l.message_id),
                    failed_at_ms: unix_ms(l.failed_at),
                    reason: keep.text(&l.reason.to_string()),
                    detail: keep.text(&l.detail),
                    rounds: l.rounds,
                    first_attempt_ms: l.first_attempt.map_or(OUTBOUND_TIME_NONE, unix_ms),
                    last_attempts: if last.is_empty() {
                        null()
                    } else {
                        last.as_ptr()
                    },
                    last_attempts_len: last.len(),
                    size: l.size,
                    replaying: l.replaying,
                    body,
                    body_len,
                }
            })
            .collect();
        outbound_dead_letter_list {
            items,
            next: keep.opt_text(next),
            _attempts: attempts,
            _keep: keep,
        }
    }
}

impl outbound_replay_progress {
    fn of(p: &ReplayProgress) -> outbound_replay_progress {
        outbound_replay_progress {
            id: p.id,
            total: p.total,
            sent: p.sent,
            delivered: p.delivered,
            failed: p.failed,
            skipped: p.skipped,
            started_ms: unix_ms(p.started),
            done: p.done(),
        }
    }
}

impl PanicValue for *const outbound_dead_letter {
    fn on_panic() -> Self {
        null()
    }
}

/// One page of dead letters (`outbound_options_set_dead_letters` on), newest first, without
/// their bodies.
///
/// - `since_ms`, `until_ms`: only those that failed at or after `since_ms` and before
///   `until_ms` (Unix milliseconds); `OUTBOUND_TIME_NONE` leaves that end open.
/// - `limit`: at most this many, 1 to 1000 (100 is the other APIs' default).
/// - `cursor`: NULL for the newest, or the `outbound_dead_letter_list_next` of the page
///   before (copied during the call).
///
/// Ownership: on success `*out` receives a list the caller owns and must release with
/// `outbound_dead_letter_list_free`; on failure `*out` is not written.
///
/// Returns `OUTBOUND_RESULT_OK`, `_NULL_ARGUMENT` (client or out), `_INVALID_UTF8` (cursor),
/// `_INVALID_FIELD` (`limit` 0 or above 1000, a `cursor` no page gave; the text names the
/// field), `_CONFIG` (dead letters are off for this client), `_SPOOL` (the spool could not
/// be read), `_CLOSED`, `_PANIC`.
///
/// # Safety
/// `client` is NULL or live; `cursor` is NULL or NUL-terminated; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn outbound_client_dead_letters(
    client: *const outbound_client,
    since_ms: i64,
    until_ms: i64,
    limit: usize,
    cursor: *const c_char,
    out: *mut *mut outbound_dead_letter_list,
) -> outbound_result {
    // SAFETY: the caller's contract, forwarded (no search text).
    unsafe {
        outbound_client_search_dead_letters(
            client,
            since_ms,
            until_ms,
            limit,
            cursor,
            std::ptr::null(),
            out,
        )
    }
}

/// [`outbound_client_dead_letters`] keeping only the dead letters whose body (the event's
/// JSON as it was sent) contains `contains`: exact bytes, case-sensitive, so
/// `"userId":"u7"` finds user `u7` and not `u70`; 1 to 256 bytes; NULL keeps them all.
///
/// A search reads at most 10,000 dead letters a page: its page may hold fewer than `limit`
/// (none, even) while `outbound_dead_letter_list_next` is set; page on with it.
///
/// Returns what `outbound_client_dead_letters` returns, and `_INVALID_FIELD` naming
/// `contains` when it is empty or longer than 256 bytes, `_INVALID_UTF8` (contains).
///
/// # Safety
/// `client` is NULL or live; `cursor` and `contains` are NULL or NUL-terminated; `out` is
/// NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn outbound_client_search_dead_letters(
    client: *const outbound_client,
    since_ms: i64,
    until_ms: i64,
    limit: usize,
    cursor: *const c_char,
    contains: *const c_char,
    out: *mut *mut outbound_dead_letter_list,
) -> outbound_result {
    ffi!({
        finish((|| {
            // SAFETY: the caller's contract.
            let client = unsafe { client_ref(client) }?;
            check_out(out, "out")?;
            let query = DeadLetterQuery {
                since: time_of(since_ms, "since")?,
                until: time_of(until_ms, "until")?,
                limit,
                cursor: unsafe { crate::convert::opt_string(cursor, "cursor") }?,
                contains: unsafe { crate::convert::opt_string(contains, "contains") }?,
            };
            let page = client.dead_letters(&query)?;
            let list = outbound_dead_letter_list::new(&page.letters, page.next.as_deref());
            // SAFETY: `out` is non-NULL and writable.
            unsafe { give(out, list) };
            Ok(())
        })())
    })
}

/// The dead letter of message `message_id`, with its body: `*out` receives a list holding it,
/// or an empty list when there is none.
///
/// Ownership: on success `*out` receives a list the caller owns and must release with
/// `outbound_dead_letter_list_free`; on failure `*out` is not written.
///
/// Returns `OUTBOUND_RESULT_OK`, `_NULL_ARGUMENT` (client, message_id or out),
/// `_INVALID_UTF8`, `_CONFIG` (dead letters are off), `_SPOOL`, `_CLOSED`, `_PANIC`.
///
/// # Safety
/// `client` is NULL or live; `message_id` is NULL or NUL-terminated; `out` is NULL or
/// writable.
#[no_mangle]
pub unsafe extern "C" fn outbound_client_dead_letter(
    client: *const outbound_client,
    message_id: *const c_char,
    out: *mut *mut outbound_dead_letter_list,
) -> outbound_result {
    ffi!({
        finish((|| {
            // SAFETY: the caller's contract.
            let client = unsafe { client_ref(client) }?;
            let id = unsafe { req_str(message_id, "message_id") }?;
            check_out(out, "out")?;
            let found = client.dead_letter(id)?;
            let list = outbound_dead_letter_list::new(found.as_slice(), None);
            // SAFETY: `out` is non-NULL and writable.
            unsafe { give(out, list) };
            Ok(())
        })())
    })
}

/// How many dead letters the list holds (0 for NULL).
///
/// # Safety
/// `list` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn outbound_dead_letter_list_len(
    list: *const outbound_dead_letter_list,
) -> usize {
    // SAFETY: the caller's contract.
    ffi!({ unsafe { len_of(list, |l| l.items.len()) } })
}

/// Dead letter `index` of the list (0 is the newest), or NULL when `index` is not below
/// `outbound_dead_letter_list_len` or `list` is NULL (`outbound_last_error` says which).
///
/// Ownership: the dead letter belongs to the list; valid until `outbound_dead_letter_list_free`.
///
/// # Safety
/// `list` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn outbound_dead_letter_list_get(
    list: *const outbound_dead_letter_list,
    index: usize,
) -> *const outbound_dead_letter {
    // SAFETY: the caller's contract.
    ffi!({ unsafe { nth(list, index, |l| &l.items) } })
}

/// The cursor of the next page (give it to `outbound_client_dead_letters`), NUL-terminated;
/// NULL when there is no next page, for the list of `outbound_client_dead_letter`, and for a
/// NULL `list` (then `outbound_last_error` says so).
///
/// Ownership: the text belongs to the list; valid until `outbound_dead_letter_list_free`.
///
/// # Safety
/// `list` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn outbound_dead_letter_list_next(
    list: *const outbound_dead_letter_list,
) -> *const c_char {
    ffi!({
        // SAFETY: the caller's contract.
        match unsafe { list.as_ref() } {
            Some(l) => l.next,
            None => {
                fail(Failure::Null("list"));
                null()
            }
        }
    })
}

/// Frees a dead letter list; every pointer read from it becomes invalid. NULL is a no-op.
///
/// # Safety
/// `list` is NULL or from `outbound_client_dead_letters` / `outbound_client_dead_letter` and
/// not freed yet.
#[no_mangle]
pub unsafe extern "C" fn outbound_dead_letter_list_free(list: *mut outbound_dead_letter_list) {
    // SAFETY: the caller's contract.
    ffi!({ unsafe { free(list) } })
}

/// Discards the dead letter of message `message_id`; `*found` receives whether there was one.
///
/// Returns `OUTBOUND_RESULT_OK`, `_NULL_ARGUMENT` (client, message_id or found),
/// `_INVALID_UTF8`, `_CONFIG` (dead letters are off), `_SPOOL`, `_CLOSED`, `_PANIC`.
/// `*found` is written only on success.
///
/// # Safety
/// `client` is NULL or live; `message_id` is NULL or NUL-terminated; `found` is NULL or
/// writable.
#[no_mangle]
pub unsafe extern "C" fn outbound_client_delete_dead_letter(
    client: *const outbound_client,
    message_id: *const c_char,
    found: *mut bool,
) -> outbound_result {
    ffi!({
        finish((|| {
            // SAFETY: the caller's contract.
            let client = unsafe { client_ref(client) }?;
            let id = unsafe { req_str(message_id, "message_id") }?;
            check_out(found, "found")?;
            let deleted = client.delete_dead_letter(id)?;
            // SAFETY: non-NULL and writable per the contract.
            unsafe { *found = deleted };
            Ok(())
        })())
    })
}

/// Sends the dead letter of message `message_id` again through the normal path: the same
/// `messageId`, a fresh retry window, signed with the current secret, to every webhook
/// (`webhook` = `OUTBOUND_ALL_WEBHOOKS`) or to webhook `webhook` alone. It stays listed (as
/// replaying) until the replay has an outcome: delivered, it leaves the dead letters; failed,
/// it is back with its new attempts. Its outcome reaches the outcome callback and the
/// counters as a resumed message's.
///
/// `*found` receives false when there is no such dead letter or it is being replayed already
/// (then `*out` is not written); true with the replay's progress in `*out` otherwise.
///
/// Returns `OUTBOUND_RESULT_OK`, `_NULL_ARGUMENT` (client, message_id, out or found),
/// `_INVALID_UTF8`, `_INVALID_FIELD` (no webhook of that index; the text names `webhook`),
/// `_CONFIG` (dead letters are off), `_SPOOL`, `_CLOSED`, `_PANIC`. Nothing is written on
/// failure.
///
/// # Safety
/// `client` is NULL or live; `message_id` is NULL or NUL-terminated; `out` and `found` are
/// NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn outbound_client_replay_dead_letter(
    client: *const outbound_client,
    message_id: *const c_char,
    webhook: usize,
    out: *mut outbound_replay_progress,
    found: *mut bool,
) -> outbound_result {
    ffi!({
        finish((|| {
            // SAFETY: the caller's contract.
            let client = unsafe { client_ref(client) }?;
            let id = unsafe { req_str(message_id, "message_id") }?;
            check_out(out, "out")?;
            check_out(found, "found")?;
            let progress = client.replay_dead_letter(id, webhook_of(webhook))?;
            // SAFETY: both non-NULL and writable per the contract.
            unsafe { give_found(progress.as_ref(), out, found) };
            Ok(())
        })())
    })
}

/// `*found` says whether there is a replay, and `*out` receives its progress when there is.
///
/// # Safety
/// `out` and `found` are non-NULL and writable.
unsafe fn give_found(
    progress: Option<&ReplayProgress>,
    out: *mut outbound_replay_progress,
    found: *mut bool,
) {
    // SAFETY: the caller's contract.
    unsafe {
        if let Some(p) = progress {
            *out = outbound_replay_progress::of(p);
        }
        *found = progress.is_some();
    }
}

/// Replays every dead letter that failed at or after `since_ms` and before `until_ms` (Unix
/// milliseconds; `OUTBOUND_TIME_NONE` leaves an end open), to every webhook
/// (`OUTBOUND_ALL_WEBHOOKS`) or to webhook `webhook` alone, in the background, a window at a
/// time. `*out` receives its progress (follow it with `outbound_client_replay_progress`); a
/// range with nothing to replay gives a replay of id 0 and total 0, done. Dead letters being
/// replayed already are left to that replay.
///
/// Returns `OUTBOUND_RESULT_OK`, `_NULL_ARGUMENT` (client or out), `_INVALID_FIELD` (no
/// webhook of that index; the text names `webhook`), `_CONFIG` (dead letters are off),
/// `_SPOOL`, `_CLOSED`, `_PANIC`. `*out` is written only on success.
///
/// # Safety
/// `client` is NULL or live; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn outbound_client_replay_dead_letters(
    client: *const outbound_client,
    since_ms: i64,
    until_ms: i64,
    webhook: usize,
    out: *mut outbound_replay_progress,
) -> outbound_result {
    ffi!({
        finish((|| {
            // SAFETY: the caller's contract.
            let client = unsafe { client_ref(client) }?;
            check_out(out, "out")?;
            let (since, until) = (time_of(since_ms, "since")?, time_of(until_ms, "until")?);
            let progress = client.replay_dead_letters(since, until, webhook_of(webhook))?;
            // SAFETY: non-NULL and writable per the contract.
            unsafe { *out = outbound_replay_progress::of(&progress) };
            Ok(())
        })())
    })
}

/// How replay `replay_id` goes (the newest 256 replays of the process are kept): `*found`
/// receives whether it is known, and when it is, `*out` its progress.
///
/// Returns `OUTBOUND_RESULT_OK`, `_NULL_ARGUMENT` (client, out or found), `_CONFIG` (dead
/// letters are off), `_CLOSED`, `_PANIC`. Nothing is written on failure.
///
/// # Safety
/// `client` is NULL or live; `out` and `found` are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn outbound_client_replay_progress(
    client: *const outbound_client,
    replay_id: u64,
    out: *mut outbound_replay_progress,
    found: *mut bool,
) -> outbound_result {
    ffi!({
        finish((|| {
            // SAFETY: the caller's contract.
            let client = unsafe { client_ref(client) }?;
            check_out(out, "out")?;
            check_out(found, "found")?;
            let progress = client.replay_progress(replay_id)?;
            // SAFETY: both non-NULL and writable per the contract.
            unsafe { give_found(progress.as_ref(), out, found) };
            Ok(())
        })())
    })
}

/// Writes to `*out` how many dead letters are kept, their bytes, and how many the limits
/// dropped.
///
/// Returns `OUTBOUND_RESULT_OK`, `_NULL_ARGUMENT` (client or out), `_CONFIG` (dead letters are
/// off), `_SPOOL`, `_CLOSED`, `_PANIC`. `*out` is written only on success.
///
/// # Safety
/// `client` is NULL or live; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn outbound_client_dead_letter_stats(
    client: *const outbound_client,
    out: *mut outbound_dead_letter_stats,
) -> outbound_result {
    ffi!({
        finish((|| {
            // SAFETY: the caller's contract.
            let client = unsafe { client_ref(client) }?;
            check_out(out, "out")?;
            let s = client.dead_letter_stats()?;
            // SAFETY: non-NULL and writable per the contract.
            unsafe {
                *out = outbound_dead_letter_stats {
                    count: s.count,
                    bytes: s.bytes,
                    evicted: s.evicted,
                    expired: s.expired,
                }
            };
            Ok(())
        })())
    })
}
