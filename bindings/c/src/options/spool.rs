//! Where accepted messages are kept until their outcome: the spool, its limits and
//! acknowledgement, and dead letters; and what each webhook URL's attempt log keeps.

use super::*;

/// Sets the spool directory (created if missing): every accepted message is written there
/// before its first attempt and removed at its outcome, so a restart or a crash loses
/// nothing that was flushed; a new client on the directory, or a live sibling process for the
/// files of a dead one, delivers what is pending. Each process takes its own file in the
/// directory; a second client of the same process on it is refused by `outbound_client_new`
/// (`OUTBOUND_RESULT_SPOOL`, naming the path). NULL unsets it (memory only, the default).
/// The text is copied.
///
/// `path` may instead be a Redis URL, `redis://[:password@]host[:port][/db][?prefix=NAME]`
/// (`rediss://` for TLS): the durable copy then lives in Redis 6.2+ (run it with
/// `appendonly yes`, `appendfsync everysec`), shared by a fleet; a living process on the same
/// server and prefix delivers what a dead one left once it has been silent for the timeout
/// + 10 s. An unreachable server fails `outbound_client_new` with `OUTBOUND_RESULT_SPOOL`.
///
/// Through Sentinel: `redis+sentinel://[:password@]host:port,host:port/MASTER[/db]`
/// (`rediss+sentinel://` for TLS); the primary is asked of the Sentinels at each connection.
///
/// Returns `OUTBOUND_RESULT_OK`, `_NULL_ARGUMENT` (options), `_INVALID_UTF8`, `_PANIC`.
///
/// # Safety
/// `options` is NULL or live; `path` is NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn outbound_options_set_spool(
    options: *mut outbound_options,
    path: *const c_char,
) -> outbound_result {
    ffi!({
        unsafe {
            with_config(options, |c| {
                c.spool = opt_string(path, "path")?.map(Into::into);
                Ok(())
            })
        }
    })
}

/// Bytes the spool may hold (default 1 GiB): the bound on a backlog while a destination is
/// down; past it calls are refused with `OUTBOUND_RESULT_QUEUE_FULL` and counted in
/// `outbound_stats.queue_full`.
///
/// Returns `OUTBOUND_RESULT_OK`, `_NULL_ARGUMENT` (options), `_PANIC`. The value is checked
/// by `outbound_client_new` (0 is refused).
///
/// # Safety
/// `options` is NULL or a live `outbound_options`.
#[no_mangle]
pub unsafe extern "C" fn outbound_options_set_spool_max_bytes(
    options: *mut outbound_options,
    bytes: u64,
) -> outbound_result {
    ffi!({
        unsafe {
            with_config(options, |c| {
                c.spool_max_bytes = bytes;
                Ok(())
            })
        }
    })
}

/// On a Redis spool: when a commit counts as acknowledged (`outbound_flush`, and
/// `outbound_client_spool_ok` goes false when one is not): `"auto"` (the default: the safe one the deployment allows, looked at
/// on each connection), `"memory"` (in Redis's memory), `"replicas:N"` (`WAIT`: on N
/// replicas) or `"fsync"` (`WAITAOF`: in the primary's AOF on disk; Redis 7.2 or newer,
/// else `outbound_client_new` fails with `OUTBOUND_RESULT_SPOOL` saying so). A commit whose
/// confirmation does not come within half of the timeout is not acknowledged. NULL restores
/// the default.
///
/// Returns `OUTBOUND_RESULT_OK`, `_CONFIG` (not one of those forms; nothing changed),
/// `_NULL_ARGUMENT` (options), `_INVALID_UTF8`, `_PANIC`.
///
/// # Safety
/// `options` is NULL or live; `ack` is NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn outbound_options_set_redis_ack(
    options: *mut outbound_options,
    ack: *const c_char,
) -> outbound_result {
    ffi!({
        unsafe {
            with_config(options, |c| {
                c.redis_ack = match opt_str(ack, "ack")? {
                    Some(text) => text.parse()?,
                    None => outbound::RedisAck::default(),
                };
                Ok(())
            })
        }
    })
}

/// How often accepted messages are committed to the spool together, in milliseconds
/// (default 20, at most 1000). A power cut loses at most what was accepted within one
/// interval; `outbound_flush` commits at once.
///
/// Returns `OUTBOUND_RESULT_OK`, `_NULL_ARGUMENT` (options), `_PANIC`. The value is checked
/// by `outbound_client_new`.
///
/// # Safety
/// `options` is NULL or a live `outbound_options`.
#[no_mangle]
pub unsafe extern "C" fn outbound_options_set_spool_commit_interval_ms(
    options: *mut outbound_options,
    ms: u64,
) -> outbound_result {
    ffi!({
        unsafe {
            with_config(options, |c| {
                c.spool_commit_interval = millis(ms);
                Ok(())
            })
        }
    })
}

/// Keeps dead letters (default false): a message whose webhook delivery fails for good
/// (its retry window closed, a permanent 4xx, a 410, the network guard's refusal) is kept in
/// the spool with its body and each URL's last attempt, to be listed and replayed
/// (`outbound_client_dead_letters`, `_replay_dead_letter`, ...). Needs
/// `outbound_options_set_spool`; without one `outbound_client_new` refuses it
/// (`OUTBOUND_RESULT_CONFIG`, naming `dead_letters`). Outcomes and counters are the same
/// either way.
///
/// Returns `OUTBOUND_RESULT_OK`, `_NULL_ARGUMENT` (options), `_PANIC`.
///
/// # Safety
/// `options` is NULL or a live `outbound_options`.
#[no_mangle]
pub unsafe extern "C" fn outbound_options_set_dead_letters(
    options: *mut outbound_options,
    keep: bool,
) -> outbound_result {
    // SAFETY: the caller's contract.
    ffi!({ unsafe { set(options, |c| c.dead_letters = keep) } })
}

/// How long a dead letter is kept, in milliseconds (default 14 days).
///
/// Returns `OUTBOUND_RESULT_OK`, `_NULL_ARGUMENT` (options), `_PANIC`. The value is checked
/// by `outbound_client_new` (0 is refused).
///
/// # Safety
/// `options` is NULL or a live `outbound_options`.
#[no_mangle]
pub unsafe extern "C" fn outbound_options_set_dead_letter_retention_ms(
    options: *mut outbound_options,
    ms: u64,
) -> outbound_result {
    // SAFETY: the caller's contract.
    ffi!({ unsafe { set(options, |c| c.dead_letter_retention = millis(ms)) } })
}

/// Bytes of dead letters kept at most (default 256 MiB): past it the oldest are dropped.
///
/// Returns `OUTBOUND_RESULT_OK`, `_NULL_ARGUMENT` (options), `_PANIC`. The value is checked
/// by `outbound_client_new` (0 is refused).
///
/// # Safety
/// `options` is NULL or a live `outbound_options`.
#[no_mangle]
pub unsafe extern "C" fn outbound_options_set_dead_letter_max_bytes(
    options: *mut outbound_options,
    bytes: u64,
) -> outbound_result {
    // SAFETY: the caller's contract.
    ffi!({ unsafe { set(options, |c| c.dead_letter_max_bytes = bytes) } })
}

/// Attempts each webhook URL's log keeps, the newest (default 100, 1 to 10000), for
/// `outbound_client_webhook_attempts`. The logs are in memory, all of a process's within one
/// 32 MiB budget, the least recently used freed first; a failure's attempt holds up to 64 KiB
/// of its answer plus its headers. Needs no spool.
///
/// Returns `OUTBOUND_RESULT_OK`, `_NULL_ARGUMENT` (options), `_PANIC`. The value is checked
/// by `outbound_client_new` (0 or above 10000 is refused, naming `attempt_log_size`).
///
/// # Safety
/// `options` is NULL or a live `outbound_options`.
#[no_mangle]
pub unsafe extern "C" fn outbound_options_set_attempt_log_size(
    options: *mut outbound_options,
    attempt_log_size: usize,
) -> outbound_result {
    // SAFETY: the caller's contract.
    ffi!({ unsafe { set(options, |c| c.attempt_log_size = attempt_log_size) } })
}

/// How long an attempt stays in its URL's log, in milliseconds (default 24 hours, at most
/// 30 days).
///
/// Returns `OUTBOUND_RESULT_OK`, `_NULL_ARGUMENT` (options), `_PANIC`. The value is checked
/// by `outbound_client_new` (0 or over 30 days is refused, naming `attempt_retention`).
///
/// # Safety
/// `options` is NULL or a live `outbound_options`.
#[no_mangle]
pub unsafe extern "C" fn outbound_options_set_attempt_retention_ms(
    options: *mut outbound_options,
    ms: u64,
) -> outbound_result {
    // SAFETY: the caller's contract.
    ffi!({ unsafe { set(options, |c| c.attempt_retention = millis(ms)) } })
}
