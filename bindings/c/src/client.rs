//! The client handle and the calls: one function per call, a generic JSON entry point,
//! flush, close, free, stats.

use crate::convert::{check_fits, millis, opt_object, opt_str, opt_string, write_text};
use crate::options::outbound_options;
use crate::result::{finish, outbound_result, Failure};
use outbound::canonical_json::WriteJson;
use outbound::{Client, Kind, Message};
use std::ffi::c_char;

/// Size of a buffer that holds every generated message id (a 36-character UUID) and its
/// NUL. A `message_id` you pass yourself needs `strlen(message_id) + 1`.
pub const OUTBOUND_ID_BUFFER_LEN: usize = 37;

/// A running client: a background scheduler thread and delivery workers. Create with
/// `outbound_client_new`; release with `outbound_client_free`. Every function taking a
/// client may be called from any thread concurrently, except `outbound_client_free`, which
/// must be the last call on it.
pub struct outbound_client {
    pub(crate) inner: Client,
    /// A recording client's record (`outbound_options_set_recording`).
    pub(crate) recording: Option<outbound::testing::Recording>,
}

/// A snapshot of a client's counters (`outbound_client_stats`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct outbound_stats {
    /// Messages accepted by calls, in all.
    pub accepted: u64,
    /// Accepted and waiting (for a batch, a worker or a retry), now.
    pub queued: u64,
    /// Being sent, now.
    pub in_flight: u64,
    /// Outcomes: delivered.
    pub delivered: u64,
    /// Outcomes: failed.
    pub failed: u64,
    /// Outcomes: dropped, plus calls refused because the queue was full.
    pub dropped: u64,
    /// Of `dropped`, the calls refused with `OUTBOUND_RESULT_QUEUE_FULL` (never accepted).
    pub queue_full: u64,
    /// Requests made again after a retryable failure.
    pub retries: u64,
    /// Accepted messages left in the spool by `outbound_client_close` (no outcome yet: the
    /// next client on the spool delivers them); 0 without a spool. After close:
    /// accepted + resumed = delivered + failed + dropped - queue_full + spooled.
    pub spooled: u64,
    /// Messages taken over from the spool (left by an earlier client, or by a process that
    /// died) and delivered by this client.
    pub resumed: u64,
}

/// Builds a client from `options` and starts its threads (a recording client with
/// `outbound_options_set_recording`).
///
/// Ownership: `options` is consumed whatever the result (do not use or free it afterwards).
/// On success `*out` receives a client the caller owns and must release with
/// `outbound_client_free`; on failure `*out` is not written.
///
/// Returns `OUTBOUND_RESULT_OK`, `OUTBOUND_RESULT_NULL_ARGUMENT` (options or out),
/// `OUTBOUND_RESULT_CONFIG` (the text names the setting: no destination, a 6th webhook, a bad
/// URL or header, a zero flush_at, an unreadable CA file, ...), `OUTBOUND_RESULT_PANIC`.
///
/// # Safety
/// `options` is NULL or from `outbound_options_new` and not yet consumed or freed; `out` is
/// NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn outbound_client_new(
    options: *mut outbound_options,
    out: *mut *mut outbound_client,
) -> outbound_result {
    ffi!({
        // Take ownership first, so the options are freed on every path.
        let options = (!options.is_null()).then(|| {
            // SAFETY: per the contract, the options are ours now.
            unsafe { Box::from_raw(options) }
        });
        finish((|| {
            let options = options.ok_or(Failure::Null("options"))?;
            if out.is_null() {
                return Err(Failure::Null("out"));
            }
            let (inner, recording) = if options.recording {
                let (inner, recording) = outbound::testing::recording(options.config)?;
                (inner, Some(recording))
            } else {
                (Client::new(options.config)?, None)
            };
            let client = Box::into_raw(Box::new(outbound_client { inner, recording }));
            // SAFETY: `out` is writable per the contract.
            unsafe { *out = client };
            Ok(())
        })())
    })
}

/// # Safety
/// `client` is NULL or a live client.
pub(crate) unsafe fn client_ref<'a>(client: *const outbound_client) -> Result<&'a Client, Failure> {
    // SAFETY: per the contract.
    unsafe { client.as_ref() }
        .map(|c| &c.inner)
        .ok_or(Failure::Null("client"))
}

/// The common path of every call: check the client, build the message, make sure the id
/// will fit the caller's buffer (so a too-small buffer never leaves a message queued that
/// the caller cannot identify), enqueue, copy the id out.
///
/// # Safety
/// Pointers as documented on the exported calls.
unsafe fn enqueue<O: WriteJson<Error = outbound::Error>>(
    client: *const outbound_client,
    build: impl FnOnce() -> Result<Message<O>, Failure>,
    id_buf: *mut c_char,
    id_len: usize,
    id_written: *mut usize,
) -> outbound_result {
    finish((|| {
        // SAFETY: the caller's contract.
        let client = unsafe { client_ref(client) }?;
        let msg = build()?;
        let id_len_needed = msg
            .message_id
            .as_ref()
            .map_or(OUTBOUND_ID_BUFFER_LEN - 1, String::len);
        // SAFETY: the caller's contract for the buffer.
        unsafe { check_fits(id_len_needed, id_buf, id_len, id_written, "id_buf") }?;
        // SAFETY: as above. The id fits unless the core generated a longer one than a UUID,
        // which would be reported as INSUFFICIENT_SIZE after all.
        client.enqueue_then(&msg, |id| unsafe {
            write_text(id, id_buf, id_len, id_written, "id_buf")
        })?
    })())
}

/// The fields every call but delete may carry.
struct Common {
    anonymous_id: Option<String>,
    context: Option<outbound::Object>,
    integrations: Option<outbound::Object>,
    timestamp: Option<outbound::OffsetDateTime>,
    message_id: Option<String>,
}

/// # Safety
/// Each pointer is NULL or NUL-terminated.
unsafe fn common(
    anonymous_id: *const c_char,
    context_json: *const c_char,
    integrations_json: *const c_char,
    timestamp: *const c_char,
    message_id: *const c_char,
) -> Result<Common, Failure> {
    // SAFETY: the caller's contract.
    unsafe {
        Ok(Common {
            anonymous_id: opt_string(anonymous_id, "anonymous_id")?,
            context: opt_object(context_json, "context_json")?,
            integrations: opt_object(integrations_json, "integrations_json")?,
            timestamp: opt_str(timestamp, "timestamp")?
                .map(outbound::timestamp::parse)
                .transpose()?,
            message_id: opt_string(message_id, "message_id")?,
        })
    }
}

fn message(kind: Kind, user_id: Option<String>, c: Common) -> Message {
    let mut m = Message::new(kind);
    m.user_id = user_id;
    m.anonymous_id = c.anonymous_id;
    m.context = c.context;
    m.integrations = c.integrations;
    m.timestamp = c.timestamp;
    m.message_id = c.message_id;
    m
}

/// Records who a user is: `identify` with `traits`.
///
/// Arguments shared by every call function (identify, track, page, screen, group, alias,
/// delete); each text is borrowed for the call only and copied, and NULL means "not given":
/// - `client`: the client (required).
/// - `user_id`, `anonymous_id`: the user; at least one is required (except as noted per call).
/// - `*_json`: a JSON object as text (`"{\"plan\":\"pro\"}"`); an array or other non-object is
///   `OUTBOUND_RESULT_WRONG_TYPE`, broken JSON `OUTBOUND_RESULT_INVALID_JSON`.
/// - `context_json`: extra facts (`ip`, `device`, ...); `context.library` is always set by us.
/// - `integrations_json`: destination name to `true`/`false`; `{"Webhooks":false}` skips webhooks.
/// - `timestamp`: RFC 3339 with an offset (`"2026-11-21T09:30:00.123Z"`); NULL = now.
/// - `message_id`: your own id; NULL = a fresh UUIDv4.
/// - `id_buf`, `id_len`: NULL, or a caller-owned buffer of `id_len` bytes (at least
///   `OUTBOUND_ID_BUFFER_LEN`) that receives the message id, NUL-terminated, on success.
/// - `id_written`: NULL, or receives the id's length (without the NUL).
///
/// On any failure nothing is queued, and messages already queued are unaffected.
///
/// Returns `OUTBOUND_RESULT_OK`, `_NULL_ARGUMENT` (client), `_INVALID_UTF8`,
/// `_INVALID_JSON`, `_WRONG_TYPE`, `_MISSING_FIELD`, `_INVALID_FIELD` (e.g. bad timestamp),
/// `_MESSAGE_TOO_LARGE`, `_QUEUE_FULL`, `_CLOSED`, `_INSUFFICIENT_SIZE` (id_buf; nothing
/// queued), `_PANIC`. The text is in `outbound_last_error`.
///
/// # Safety
/// `client` is NULL or live; every text is NULL or NUL-terminated; `id_buf` is NULL or has
/// `id_len` writable bytes; `id_written` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn outbound_identify(
    client: *const outbound_client,
    user_id: *const c_char,
    anonymous_id: *const c_char,
    traits_json: *const c_char,
    context_json: *const c_char,
    integrations_json: *const c_char,
    timestamp: *const c_char,
    message_id: *const c_char,
    id_buf: *mut c_char,
    id_len: usize,
    id_written: *mut usize,
) -> outbound_result {
    ffi!({
        unsafe {
            enqueue(
                client,
                || {
                    let c = common(
                        anonymous_id,
                        context_json,
                        integrations_json,
                        timestamp,
                        message_id,
                    )?;
                    let mut m = message(Kind::Identify, opt_string(user_id, "user_id")?, c);
                    m.traits = opt_object(traits_json, "traits_json")?;
                    Ok(m)
                },
                id_buf,
                id_len,
                id_written,
            )
        }
    })
}

/// Records something a user did: `track` of `event` (required) with `properties`.
/// Arguments, ownership and result codes as for `outbound_identify`.
///
/// # Safety
/// As for `outbound_identify`.
#[no_mangle]
pub unsafe extern "C" fn outbound_track(
    client: *const outbound_client,
    user_id: *const c_char,
    anonymous_id: *const c_char,
    event: *const c_char,
    properties_json: *const c_char,
    context_json: *const c_char,
    integrations_json: *const c_char,
    timestamp: *const c_char,
    message_id: *const c_char,
    id_buf: *mut c_char,
    id_len: usize,
    id_written: *mut usize,
) -> outbound_result {
    ffi!({
        unsafe {
            enqueue(
                client,
                || {
                    let c = common(
                        anonymous_id,
                        context_json,
                        integrations_json,
                        timestamp,
                        message_id,
                    )?;
                    let mut m = message(Kind::Track, opt_string(user_id, "user_id")?, c);
                    m.event = opt_string(event, "event")?;
                    m.properties = opt_object(properties_json, "properties_json")?;
                    Ok(m)
                },
                id_buf,
                id_len,
                id_written,
            )
        }
    })
}

/// Records a web page view: `page` with optional `name`, `category` and `properties`
/// (`url`, `title`, `referrer`, `path` are recognised). Arguments, ownership and result
/// codes as for `outbound_identify`.
///
/// # Safety
/// As for `outbound_identify`.
#[no_mangle]
pub unsafe extern "C" fn outbound_page(
    client: *const outbound_client,
    user_id: *const c_char,
    anonymous_id: *const c_char,
    name: *const c_char,
    category: *const c_char,
    properties_json: *const c_char,
    context_json: *const c_char,
    integrations_json: *const c_char,
    timestamp: *const c_char,
    message_id: *const c_char,
    id_buf: *mut c_char,
    id_len: usize,
    id_written: *mut usize,
) -> outbound_result {
    ffi!({
        unsafe {
            view(
                Kind::Page,
                client,
                [user_id, anonymous_id, name, category, properties_json],
                [context_json, integrations_json, timestamp, message_id],
                (id_buf, id_len, id_written),
            )
        }
    })
}

/// Records a mobile screen view: `screen` with optional `name`, `category` and
/// `properties`. Arguments, ownership and result codes as for `outbound_identify`.
///
/// # Safety
/// As for `outbound_identify`.
#[no_mangle]
pub unsafe extern "C" fn outbound_screen(
    client: *const outbound_client,
    user_id: *const c_char,
    anonymous_id: *const c_char,
    name: *const c_char,
    category: *const c_char,
    properties_json: *const c_char,
    context_json: *const c_char,
    integrations_json: *const c_char,
    timestamp: *const c_char,
    message_id: *const c_char,
    id_buf: *mut c_char,
    id_len: usize,
    id_written: *mut usize,
) -> outbound_result {
    ffi!({
        unsafe {
            view(
                Kind::Screen,
                client,
                [user_id, anonymous_id, name, category, properties_json],
                [context_json, integrations_json, timestamp, message_id],
                (id_buf, id_len, id_written),
            )
        }
    })
}

/// Page and screen take the same arguments.
///
/// # Safety
/// As for `outbound_identify`.
unsafe fn view(
    kind: Kind,
    client: *const outbound_client,
    [user_id, anonymous_id, name, category, properties_json]: [*const c_char; 5],
    [context_json, integrations_json, timestamp, message_id]: [*const c_char; 4],
    (id_buf, id_len, id_written): (*mut c_char, usize, *mut usize),
) -> outbound_result {
    // SAFETY: the caller's contract.
    unsafe {
        enqueue(
            client,
            || {
                let c = common(
                    anonymous_id,
                    context_json,
                    integrations_json,
                    timestamp,
                    message_id,
                )?;
                let mut m = message(kind, opt_string(user_id, "user_id")?, c);
                m.name = opt_string(name, "name")?;
                m.category = opt_string(category, "category")?;
                m.properties = opt_object(properties_json, "properties_json")?;
                Ok(m)
            },
            id_buf,
            id_len,
            id_written,
        )
    }
}

/// Records a user's membership of a group: `group` with `group_id` (required) and
/// `traits` of the group. Arguments, ownership and result codes as for `outbound_identify`.
///
/// # Safety
/// As for `outbound_identify`.
#[no_mangle]
pub unsafe extern "C" fn outbound_group(
    client: *const outbound_client,
    user_id: *const c_char,
    anonymous_id: *const c_char,
    group_id: *const c_char,
    traits_json: *const c_char,
    context_json: *const c_char,
    integrations_json: *const c_char,
    timestamp: *const c_char,
    message_id: *const c_char,
    id_buf: *mut c_char,
    id_len: usize,
    id_written: *mut usize,
) -> outbound_result {
    ffi!({
        unsafe {
            enqueue(
                client,
                || {
                    let c = common(
                        anonymous_id,
                        context_json,
                        integrations_json,
                        timestamp,
                        message_id,
                    )?;
                    let mut m = message(Kind::Group, opt_string(user_id, "user_id")?, c);
                    m.group_id = opt_string(group_id, "group_id")?;
                    m.traits = opt_object(traits_json, "traits_json")?;
                    Ok(m)
                },
                id_buf,
                id_len,
                id_written,
            )
        }
    })
}

/// Says two identities are one: `alias` of `previous_id` to `user_id` (both required; no
/// anonymous id). Arguments, ownership and result codes as for `outbound_identify`.
///
/// # Safety
/// As for `outbound_identify`.
#[no_mangle]
pub unsafe extern "C" fn outbound_alias(
    client: *const outbound_client,
    previous_id: *const c_char,
    user_id: *const c_char,
    context_json: *const c_char,
    integrations_json: *const c_char,
    timestamp: *const c_char,
    message_id: *const c_char,
    id_buf: *mut c_char,
    id_len: usize,
    id_written: *mut usize,
) -> outbound_result {
    ffi!({
        unsafe {
            enqueue(
                client,
                || {
                    let c = common(
                        std::ptr::null(),
                        context_json,
                        integrations_json,
                        timestamp,
                        message_id,
                    )?;
                    let mut m = message(Kind::Alias, opt_string(user_id, "user_id")?, c);
                    m.previous_id = opt_string(previous_id, "previous_id")?;
                    Ok(m)
                },
                id_buf,
                id_len,
                id_written,
            )
        }
    })
}

/// Requests deletion of `user_id`'s data (required): `delete`, sent to webhooks only (a
/// client without webhooks refuses it with `OUTBOUND_RESULT_INVALID_FIELD`). It carries only
/// the user id, the timestamp and the message id. Arguments, ownership and result codes as
/// for `outbound_identify`.
///
/// # Safety
/// As for `outbound_identify`.
#[no_mangle]
pub unsafe extern "C" fn outbound_delete(
    client: *const outbound_client,
    user_id: *const c_char,
    timestamp: *const c_char,
    message_id: *const c_char,
    id_buf: *mut c_char,
    id_len: usize,
    id_written: *mut usize,
) -> outbound_result {
    ffi!({
        unsafe {
            enqueue(
                client,
                || {
                    let null = std::ptr::null();
                    let c = common(null, null, null, timestamp, message_id)?;
                    Ok(message(Kind::Delete, opt_string(user_id, "user_id")?, c))
                },
                id_buf,
                id_len,
                id_written,
            )
        }
    })
}

/// Enqueues a message given as one Segment-style JSON object, e.g.
/// `{"type":"track","userId":"u1","event":"Signed Up","properties":{"plan":"pro"}}`.
/// Keys: `type` (required: identify, track, page, screen, group, alias, delete), `userId`,
/// `anonymousId`, `messageId`, `timestamp`, `event`, `name`, `category`, `groupId`,
/// `previousId`, `context`, `integrations`, `properties`, `traits`. Unknown keys are refused.
///
/// `json` is borrowed for the call (required). The id arguments and the result codes are
/// those of `outbound_identify`; a JSON array instead of an object is
/// `OUTBOUND_RESULT_WRONG_TYPE`, a missing `type` `OUTBOUND_RESULT_MISSING_FIELD`.
///
/// # Safety
/// `client` is NULL or live; `json` is NULL or NUL-terminated; the id pointers as for
/// `outbound_identify`.
#[no_mangle]
pub unsafe extern "C" fn outbound_enqueue_json(
    client: *const outbound_client,
    json: *const c_char,
    id_buf: *mut c_char,
    id_len: usize,
    id_written: *mut usize,
) -> outbound_result {
    ffi!({
        unsafe {
            enqueue(
                client,
                || {
                    let text = crate::convert::req_str(json, "json")?;
                    Ok(Message::from_json_text(text)?)
                },
                id_buf,
                id_len,
                id_written,
            )
        }
    })
}

/// Enqueues a message given in the packed form: the keys of `outbound_enqueue_json`'s object
/// as tagged, length-prefixed fields, so that nothing is parsed from text. It is meant for
/// bindings that hold a message as typed values (the Go package uses it); a C program will
/// find `outbound_enqueue_json` or the call functions simpler. The same message given either
/// way is queued with the same bytes, or refused with the same code and text.
///
/// The form (integers little-endian; every field at most once, `type` required):
///
/// ```text
/// message := field*
/// field   := tag:u8 payload
///            1 type, 2 messageId, 3 anonymousId, 4 userId, 5 previousId, 6 groupId,
///            7 event, 8 name, 9 category, 10 timestamp: a str
///            11 context, 13 properties, 14 traits: len:u32, then a value (an object) of
///            len bytes
///            12 integrations: a str holding the object as JSON text
/// str     := len:u32, then len bytes of UTF-8
/// value   := 'n' | 't' | 'f'                  null, true, false
///          | 'i' i64 | 'u' u64 | 'd' f64       a number (8 bytes)
///          | 's' str
///          | '[' count:u32 value*
///          | '{' count:u32 (str value)*        keys distinct, written in this order
/// ```
///
/// `packed` is borrowed for the call (required unless `len` is 0). The id arguments and the
/// result codes are those of `outbound_identify`; a buffer that does not follow the form
/// (truncated, an unknown tag, a repeated field or key, invalid UTF-8: checked as the
/// objects are written) is
/// `OUTBOUND_RESULT_INVALID_JSON`, a missing `type` `OUTBOUND_RESULT_MISSING_FIELD`, an
/// object field given another value `OUTBOUND_RESULT_WRONG_TYPE`.
///
/// # Safety
/// `client` is NULL or live; `packed` is NULL or points to `len` readable bytes; the id
/// pointers as for `outbound_identify`.
#[no_mangle]
pub unsafe extern "C" fn outbound_enqueue_packed(
    client: *const outbound_client,
    packed: *const u8,
    len: usize,
    id_buf: *mut c_char,
    id_len: usize,
    id_written: *mut usize,
) -> outbound_result {
    ffi!({
        unsafe {
            enqueue(
                client,
                || {
                    // SAFETY (the enclosing block): the caller's contract.
                    let buf = crate::convert::bytes(packed, len, "packed")?;
                    crate::packed::message(buf)
                },
                id_buf,
                id_len,
                id_written,
            )
        }
    })
}

/// Sends what is waiting for a batch now and waits, at most `timeout_ms` milliseconds,
/// until every accepted message has an outcome. Values above 100 years are capped.
///
/// Returns `OUTBOUND_RESULT_OK` when every message ended and none failed or was dropped since
/// the previous flush or close returned (or the client started; before this call too),
/// `OUTBOUND_RESULT_INCOMPLETE` otherwise (timeout, or a failure: see the stats and the
/// outcome callback), `_NULL_ARGUMENT`, `_PANIC`. Nothing is lost by a timeout: messages
/// keep being delivered in the background.
///
/// # Safety
/// `client` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn outbound_flush(
    client: *const outbound_client,
    timeout_ms: u64,
) -> outbound_result {
    ffi!({
        finish((|| {
            // SAFETY: the caller's contract.
            let client = unsafe { client_ref(client) }?;
            match client.flush(Some(millis(timeout_ms))) {
                true => Ok(()),
                false => Err(Failure::Incomplete("flush")),
            }
        })())
    })
}

/// Closes the client: flushes (waiting at most `timeout_ms`), then stops its threads;
/// messages still waiting then end as dropped ("client closed before delivery") and reach
/// the outcome callback. Afterwards every call returns `OUTBOUND_RESULT_CLOSED`; stats and
/// flush still work. The client must still be freed with `outbound_client_free`.
///
/// Returns `OUTBOUND_RESULT_OK` (everything delivered), `OUTBOUND_RESULT_INCOMPLETE` (closed,
/// but not everything was delivered), `OUTBOUND_RESULT_CLOSED` (already closed),
/// `_NULL_ARGUMENT`, `_PANIC`.
///
/// # Safety
/// `client` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn outbound_client_close(
    client: *const outbound_client,
    timeout_ms: u64,
) -> outbound_result {
    ffi!({
        finish((|| {
            // SAFETY: the caller's contract.
            let client = unsafe { client_ref(client) }?;
            match client.close(Some(millis(timeout_ms)))? {
                true => Ok(()),
                false => Err(Failure::Incomplete("close")),
            }
        })())
    })
}

/// Frees the client. A client not closed yet is closed first, waiting at most its
/// `timeout` option (default 5000 ms) for delivery. NULL is a no-op.
///
/// Ownership: `client` is invalid afterwards. No other call on it may be running or start.
/// The callbacks' `userdata` may be released once this returns: no outcome or log
/// callback of this client runs after its close returned (a callback under way is waited
/// for).
///
/// # Safety
/// `client` is NULL or from `outbound_client_new` and not freed yet.
#[no_mangle]
pub unsafe extern "C" fn outbound_client_free(client: *mut outbound_client) {
    ffi!({
        if !client.is_null() {
            // SAFETY: per the contract, we own it now.
            drop(unsafe { Box::from_raw(client) });
        }
    })
}

/// Writes a snapshot of the client's counters to `*out`.
///
/// Returns `OUTBOUND_RESULT_OK`, `_NULL_ARGUMENT` (client or out), `_PANIC`. `*out` is
/// written only on success.
///
/// # Safety
/// `client` is NULL or live; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn outbound_client_stats(
    client: *const outbound_client,
    out: *mut outbound_stats,
) -> outbound_result {
    ffi!({
        finish((|| {
            // SAFETY: the caller's contract.
            let client = unsafe { client_ref(client) }?;
            if out.is_null() {
                return Err(Failure::Null("out"));
            }
            // SAFETY: non-NULL and writable per the contract.
            unsafe { *out = stats_of(client.stats()) };
            Ok(())
        })())
    })
}

pub(crate) fn stats_of(s: outbound::Stats) -> outbound_stats {
    outbound_stats {
        accepted: s.accepted,
        queued: s.queued,
        in_flight: s.in_flight,
        delivered: s.delivered,
        failed: s.failed,
        dropped: s.dropped,
        queue_full: s.queue_full,
        retries: s.retries,
        spooled: s.spooled,
        resumed: s.resumed,
    }
}

/// Writes to `*out` whether the client's spool can be written: false while it cannot (a
/// Redis spool's server unreachable, an SQLite spool's disk failing), when messages
/// accepted meanwhile are held and delivered from memory only, until a commit succeeds
/// again. True without a spool. A service that promises "accepted = durable" refuses work
/// while this is false.
///
/// Returns `OUTBOUND_RESULT_OK`, `_NULL_ARGUMENT` (client or out), `_PANIC`. `*out` is
/// written only on success.
///
/// # Safety
/// `client` is NULL or live; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn outbound_client_spool_ok(
    client: *const outbound_client,
    out: *mut bool,
) -> outbound_result {
    ffi!({
        finish((|| {
            // SAFETY: the caller's contract.
            let client = unsafe { client_ref(client) }?;
            if out.is_null() {
                return Err(Failure::Null("out"));
            }
            // SAFETY: non-NULL and writable per the contract.
            unsafe { *out = client.spool_ok() };
            Ok(())
        })())
    })
}

/// Call in the child process right after `fork()`: the parent's threads do not exist in
/// the child, so the client gets new ones and an empty queue (messages queued before the
/// fork stay the parent's to send; nothing is sent twice).
///
/// Returns `OUTBOUND_RESULT_OK`, `_NULL_ARGUMENT`, `_CONFIG` (threads could not start),
/// `_PANIC`.
///
/// # Safety
/// `client` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn outbound_client_reset_after_fork(
    client: *const outbound_client,
) -> outbound_result {
    ffi!({
        finish((|| {
            // SAFETY: the caller's contract.
            let client = unsafe { client_ref(client) }?;
            Ok(client.reset_after_fork()?)
        })())
    })
}
