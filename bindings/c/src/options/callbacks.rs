//! The caller's callbacks: each message's outcome, and log lines.

use super::*;

/// Sets the outcome callback (see `outbound_outcome_callback`), called once per accepted
/// message (and once per subscription it matched). `callback` NULL removes it. It replaces a
/// callback set by `outbound_options_set_outcome_callback_ex`: a client has one.
///
/// Ownership: `userdata` is not owned or touched by liboutbound; it is passed back to every
/// call and must stay valid, and be usable from another thread, until the client is freed.
///
/// Returns `OUTBOUND_RESULT_OK`, `_NULL_ARGUMENT` (options), `_PANIC`.
///
/// # Safety
/// `options` is NULL or live; `callback` is NULL or safe to call as documented.
#[no_mangle]
pub unsafe extern "C" fn outbound_options_set_outcome_callback(
    options: *mut outbound_options,
    callback: outbound_outcome_callback,
    userdata: *mut c_void,
) -> outbound_result {
    ffi!({
        let userdata = Userdata(userdata);
        let hook = callback.map(|cb| -> outbound::OutcomeCallback {
            Arc::new(move |o: &Outcome| {
                let ud = userdata;
                let id = c_string(&o.message_id);
                let detail = c_string(&o.detail);
                let kind = outcome_kind(o.kind);
                // SAFETY: the caller's callback, called as documented.
                unsafe { cb(id.as_ptr(), kind.as_ptr(), detail.as_ptr(), ud.0) }
            })
        });
        // SAFETY: the caller's contract.
        unsafe {
            with_config(options, |c| {
                c.on_outcome = hook;
                Ok(())
            })
        }
    })
}

/// Sets the outcome callback that is given the whole outcome (see
/// `outbound_outcome_callback_ex`): as `outbound_outcome_callback`, and the name of the
/// subscription each outcome is of (NULL for the message's own). `callback` NULL removes it.
/// It replaces a callback set by `outbound_options_set_outcome_callback`: a client has one.
///
/// Ownership: as for `outbound_options_set_outcome_callback`.
///
/// Returns `OUTBOUND_RESULT_OK`, `_NULL_ARGUMENT` (options), `_PANIC`.
///
/// # Safety
/// `options` is NULL or live; `callback` is NULL or safe to call as documented.
#[no_mangle]
pub unsafe extern "C" fn outbound_options_set_outcome_callback_ex(
    options: *mut outbound_options,
    callback: outbound_outcome_callback_ex,
    userdata: *mut c_void,
) -> outbound_result {
    ffi!({
        let userdata = Userdata(userdata);
        let hook = callback.map(|cb| -> outbound::OutcomeCallback {
            Arc::new(move |o: &Outcome| {
                let ud = userdata;
                let id = c_string(&o.message_id);
                let detail = c_string(&o.detail);
                let subscription = o.subscription.as_deref().map(c_string);
                let outcome = outbound_outcome {
                    message_id: id.as_ptr(),
                    outcome: outcome_kind(o.kind).as_ptr(),
                    detail: detail.as_ptr(),
                    subscription: subscription
                        .as_ref()
                        .map_or(std::ptr::null(), |s| s.as_ptr()),
                };
                // SAFETY: the caller's callback, called as documented; the texts outlive it.
                unsafe { cb(&outcome, ud.0) }
            })
        });
        // SAFETY: the caller's contract.
        unsafe {
            with_config(options, |c| {
                c.on_outcome = hook;
                Ok(())
            })
        }
    })
}

/// Sets the log callback (see `outbound_log_callback`). `callback` NULL removes it (lines
/// then go to stderr when logging is on).
///
/// Ownership: as for `outbound_options_set_outcome_callback`.
///
/// Returns `OUTBOUND_RESULT_OK`, `_NULL_ARGUMENT` (options), `_PANIC`.
///
/// # Safety
/// `options` is NULL or live; `callback` is NULL or safe to call as documented.
#[no_mangle]
pub unsafe extern "C" fn outbound_options_set_log_callback(
    options: *mut outbound_options,
    callback: outbound_log_callback,
    userdata: *mut c_void,
) -> outbound_result {
    ffi!({
        let userdata = Userdata(userdata);
        let sink = callback.map(|cb| -> outbound::LogSink {
            Arc::new(move |level: Level, line: &str| {
                let ud = userdata;
                let level = match level {
                    Level::Debug => outbound_log_level::Debug,
                    Level::Warn => outbound_log_level::Warn,
                };
                let line = c_string(line);
                // SAFETY: the caller's callback, called as documented.
                unsafe { cb(level, line.as_ptr(), ud.0) }
            })
        });
        // SAFETY: the caller's contract.
        unsafe {
            with_config(options, |c| {
                c.log_sink = sink;
                Ok(())
            })
        }
    })
}
