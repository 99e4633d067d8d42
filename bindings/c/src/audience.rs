//! Audience and computed-trait sync: membership changes become `identify` calls, with the
//! last sync remembered in SQLite (the core's `AudienceSync`).

use crate::client::outbound_client;
use crate::convert::{opt_str, req_str};
use crate::result::{finish, outbound_result, Failure};
use outbound::AudienceSync;
use std::ffi::c_char;

/// Remembered audience and trait state. Create with `outbound_audience_new`; release with
/// `outbound_audience_free`. One call at a time per object (it is not thread-safe); separate
/// objects may be used from separate threads.
pub struct outbound_audience {
    inner: AudienceSync,
}

/// What one `outbound_audience_sync` sent: one `identify` per joined and per left member.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct outbound_audience_counts {
    /// Members new since the last sync (sent `true`).
    pub joined: u64,
    /// Members gone since the last sync (sent `false`).
    pub left: u64,
    /// Members in both (nothing sent).
    pub unchanged: u64,
}

/// What one `outbound_trait_sync` sent: one `identify` per set and per cleared value.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct outbound_trait_counts {
    /// Users whose value is new or changed (sent the value).
    pub set: u64,
    /// Users absent from the new values (sent `null`, then forgotten).
    pub cleared: u64,
    /// Users whose value is the same (nothing sent).
    pub unchanged: u64,
}

/// Opens the state: the SQLite file at `state_path` (created if missing; it survives
/// restarts), or memory when `state_path` is NULL.
///
/// Ownership: on success `*out` receives an object the caller owns and must release with
/// `outbound_audience_free`; on failure `*out` is not written.
///
/// Returns `OUTBOUND_RESULT_OK`, `OUTBOUND_RESULT_NULL_ARGUMENT` (out),
/// `OUTBOUND_RESULT_INVALID_UTF8`, `OUTBOUND_RESULT_CONFIG` (the file cannot be opened or is
/// not a state database; the text names `state_path`), `OUTBOUND_RESULT_PANIC`.
///
/// # Safety
/// `state_path` is NULL or NUL-terminated; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn outbound_audience_new(
    state_path: *const c_char,
    out: *mut *mut outbound_audience,
) -> outbound_result {
    ffi!({
        finish((|| {
            // SAFETY: forwarded contract.
            let path = unsafe { opt_str(state_path, "state_path") }?;
            if out.is_null() {
                return Err(Failure::Null("out"));
            }
            let inner = AudienceSync::new(path.map(std::path::Path::new))?;
            // SAFETY: `out` is writable per the contract.
            unsafe { *out = Box::into_raw(Box::new(outbound_audience { inner })) };
            Ok(())
        })())
    })
}

/// Syncs audience `name` to its current members, `members_json`: a JSON array of ids
/// (strings or integers). Sends, through `client`, `identify` with trait
/// `snake_case(name)` = true for each member new since the last sync and false for each
/// one gone; nothing for the rest. The new state is saved after the identifies are queued:
/// a crash in between re-sends them next time (at-least-once), never loses one. A sync
/// larger than the client's queue waits for room.
///
/// Ownership: nothing is taken; `*out` (may be NULL) receives the counts on success.
///
/// Returns `OUTBOUND_RESULT_OK`, `OUTBOUND_RESULT_NULL_ARGUMENT`,
/// `OUTBOUND_RESULT_INVALID_UTF8`, `OUTBOUND_RESULT_INVALID_JSON`,
/// `OUTBOUND_RESULT_WRONG_TYPE` (not an array, or an id that is not a string or integer),
/// `OUTBOUND_RESULT_INVALID_FIELD` (empty name or id), `OUTBOUND_RESULT_QUEUE_FULL`,
/// `OUTBOUND_RESULT_CLOSED`, `OUTBOUND_RESULT_CONFIG` (the state database failed),
/// `OUTBOUND_RESULT_PANIC`. On any failure nothing of this sync is saved.
///
/// # Safety
/// `audience` and `client` are NULL or live objects of this library; the strings are NULL
/// or NUL-terminated; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn outbound_audience_sync(
    audience: *mut outbound_audience,
    client: *const outbound_client,
    name: *const c_char,
    members_json: *const c_char,
    out: *mut outbound_audience_counts,
) -> outbound_result {
    ffi!({
        unsafe {
            sync_with(
                audience,
                client,
                name,
                members_json,
                "members_json",
                out,
                |a, c, name, text| {
                    let members = outbound::parse_members("members_json", text)?;
                    let n = a.sync_audience(c, name, members)?;
                    Ok(outbound_audience_counts {
                        joined: n.joined,
                        left: n.left,
                        unchanged: n.unchanged,
                    })
                },
            )
        }
    })
}

/// Syncs computed trait `name` to `values_json`, a JSON object of user id → value. Sends
/// `identify` with trait `snake_case(name)` = the value for each user whose value is new or
/// changed, and `null` for each user absent (then forgotten); nothing for the rest. Order,
/// ownership and result codes as for `outbound_audience_sync` (`OUTBOUND_RESULT_WRONG_TYPE`
/// when `values_json` is not an object).
///
/// # Safety
/// As for `outbound_audience_sync`.
#[no_mangle]
pub unsafe extern "C" fn outbound_trait_sync(
    audience: *mut outbound_audience,
    client: *const outbound_client,
    name: *const c_char,
    values_json: *const c_char,
    out: *mut outbound_trait_counts,
) -> outbound_result {
    ffi!({
        unsafe {
            sync_with(
                audience,
                client,
                name,
                values_json,
                "values_json",
                out,
                |a, c, name, text| {
                    let values = outbound::parse_object("values_json", text)?;
                    let n = a.sync_trait(c, name, values)?;
                    Ok(outbound_trait_counts {
                        set: n.set,
                        cleared: n.cleared,
                        unchanged: n.unchanged,
                    })
                },
            )
        }
    })
}

/// The body both syncs share: check the pointers and texts, run `sync`, write `*out`.
///
/// # Safety
/// As for `outbound_audience_sync`.
unsafe fn sync_with<C>(
    audience: *mut outbound_audience,
    client: *const outbound_client,
    name: *const c_char,
    json: *const c_char,
    what: &'static str,
    out: *mut C,
    sync: impl FnOnce(&mut AudienceSync, &outbound::Client, &str, &str) -> Result<C, outbound::Error>,
) -> outbound_result {
    finish((|| {
        // SAFETY: NULL or live per the contract.
        let audience = unsafe { audience.as_mut() }.ok_or(Failure::Null("audience"))?;
        // SAFETY: as above.
        let client = unsafe { client.as_ref() }.ok_or(Failure::Null("client"))?;
        // SAFETY: forwarded contract.
        let name = unsafe { req_str(name, "name") }?;
        // SAFETY: forwarded contract.
        let text = unsafe { req_str(json, what) }?;
        let counts = sync(&mut audience.inner, &client.inner, name, text)?;
        if !out.is_null() {
            // SAFETY: writable per the contract.
            unsafe { *out = counts };
        }
        Ok(())
    })())
}

/// Releases the state object (the state file stays). NULL is a no-op.
///
/// # Safety
/// `audience` is NULL or from `outbound_audience_new` and not freed yet.
#[no_mangle]
pub unsafe extern "C" fn outbound_audience_free(audience: *mut outbound_audience) {
    ffi!({
        if !audience.is_null() {
            // SAFETY: ours per the contract.
            drop(unsafe { Box::from_raw(audience) });
        }
    })
}
