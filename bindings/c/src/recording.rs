//! The recording client's record, read from C. The client is the core's
//! `outbound::testing::recording` (`outbound_options_set_recording`); this module copies its
//! record into a snapshot of C strings and arrays, and forwards `respond_with` and `clear`.

use crate::client::outbound_client;
use crate::convert::{c_string, outcome_kind, req_str};
use crate::panic::PanicValue;
use crate::result::{fail, finish, outbound_result, set_last_error, Failure};
use outbound::testing::{Destination, Recording, Request};
use outbound::Outcome;
use std::ffi::{c_char, CStr, CString};

/// Which destination a recorded request was for.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum outbound_destination {
    /// A batch to `{endpoint}/v1/batch`.
    Ingestion = 0,
    /// One message to a webhook URL.
    Webhook = 1,
}

/// One header of a recorded request, or of an attempt in a URL's log
/// (`outbound_webhook_attempt_headers`). Both texts are NUL-terminated and owned by the
/// snapshot or list it came from.
#[repr(C)]
#[derive(Debug)]
pub struct outbound_recorded_header {
    /// The name, in lowercase (`"x-signature"`).
    pub name: *const c_char,
    /// The value, as it would have been sent (as it was, in an attempt's headers, a
    /// credential's as `"[redacted]"`).
    pub value: *const c_char,
}

/// A request the recording client would have sent. Read it through the pointer
/// `outbound_recording_request` gives; every pointer in it is owned by the snapshot and valid
/// until `outbound_recording_free`. Later releases may add fields at the end.
#[repr(C)]
#[derive(Debug)]
pub struct outbound_recorded_request {
    /// Ingestion (a batch) or webhook (one message).
    pub destination: outbound_destination,
    /// The URL it would have been POSTed to, NUL-terminated.
    pub url: *const c_char,
    /// The headers outbound sets, in order, names in lowercase (`content-type`,
    /// `authorization`, `x-signature` or the `webhook-*` ones, the webhook's own headers,
    /// ...; not the HTTP client's `host` and `content-length`). `outbound_recording_header`
    /// finds one by name.
    pub headers: *const outbound_recorded_header,
    /// How many headers `headers` holds.
    pub headers_len: usize,
    /// The body exactly as it would have been sent (gzip-compressed with
    /// `outbound_options_set_gzip`), followed by a NUL byte not counted in `body_len`, so a
    /// JSON body can be read as a C string.
    pub body: *const u8,
    /// The body's length in bytes.
    pub body_len: usize,
}

/// How one message ended, as the outcome callback was told. The texts are NUL-terminated
/// and owned by the snapshot. Later releases may add fields at the end.
#[repr(C)]
#[derive(Debug)]
pub struct outbound_recorded_outcome {
    /// The id returned when the message was enqueued.
    pub message_id: *const c_char,
    /// `"delivered"`, `"failed"` or `"dropped"` (the callback's texts).
    pub outcome: *const c_char,
    /// Why, when not delivered (`"webhooks: gone (status 410) ..."`); `""` when delivered.
    pub detail: *const c_char,
    /// The name of the subscription this outcome is of, or NULL for the message's own
    /// outcome (as `outbound_outcome.subscription`).
    pub subscription: *const c_char,
}

/// A snapshot of what a recording client would have sent and how each message ended, taken
/// by `outbound_recording_snapshot` and released with `outbound_recording_free`. It is a
/// copy: later requests, `outbound_recording_clear` and freeing the client do not change it,
/// and every pointer read from it stays valid until it is freed. It may be read from several
/// threads at once.
pub struct outbound_recording {
    requests: Vec<RecordedRequest>,
    outcomes: Vec<RecordedOutcome>,
}

/// A request's C view and the storage its pointers point into (heap buffers, which stay put
/// when this struct moves).
struct RecordedRequest {
    view: outbound_recorded_request,
    _url: CString,
    headers: Vec<outbound_recorded_header>,
    _texts: Vec<CString>,
    _body: Vec<u8>,
}

impl RecordedRequest {
    fn new(request: Request) -> RecordedRequest {
        let url = c_string(&request.url);
        let texts: Vec<CString> = request
            .headers
            .iter()
            .flat_map(|(name, value)| [c_string(name), c_string(value)])
            .collect();
        let headers: Vec<outbound_recorded_header> = texts
            .chunks_exact(2)
            .map(|pair| outbound_recorded_header {
                name: pair[0].as_ptr(),
                value: pair[1].as_ptr(),
            })
            .collect();
        let body_len = request.body.len();
        let mut body = request.body;
        body.push(0);
        let view = outbound_recorded_request {
            destination: match request.destination {
                Destination::Ingestion => outbound_destination::Ingestion,
                Destination::Webhook => outbound_destination::Webhook,
            },
            url: url.as_ptr(),
            headers: headers.as_ptr(),
            headers_len: headers.len(),
            body: body.as_ptr(),
            body_len,
        };
        RecordedRequest {
            view,
            _url: url,
            headers,
            _texts: texts,
            _body: body,
        }
    }
}

struct RecordedOutcome {
    view: outbound_recorded_outcome,
    _message_id: CString,
    _detail: CString,
    _subscription: Option<CString>,
}

impl RecordedOutcome {
    fn new(outcome: &Outcome) -> RecordedOutcome {
        let message_id = c_string(&outcome.message_id);
        let detail = c_string(&outcome.detail);
        let subscription = outcome.subscription.as_deref().map(c_string);
        RecordedOutcome {
            view: outbound_recorded_outcome {
                message_id: message_id.as_ptr(),
                outcome: outcome_kind(outcome.kind).as_ptr(),
                detail: detail.as_ptr(),
                subscription: subscription
                    .as_ref()
                    .map_or(std::ptr::null(), |s| s.as_ptr()),
            },
            _message_id: message_id,
            _detail: detail,
            _subscription: subscription,
        }
    }
}

impl PanicValue for *const outbound_recorded_request {
    fn on_panic() -> Self {
        std::ptr::null()
    }
}

impl PanicValue for *const outbound_recorded_outcome {
    fn on_panic() -> Self {
        std::ptr::null()
    }
}

/// The record of a recording client.
///
/// # Safety
/// `client` is NULL or live.
unsafe fn recording_of<'a>(client: *const outbound_client) -> Result<&'a Recording, Failure> {
    // SAFETY: per the contract.
    let client = unsafe { client.as_ref() }.ok_or(Failure::Null("client"))?;
    client.recording.as_ref().ok_or(Failure::NotRecording)
}

/// # Safety
/// `recording` is NULL or a live snapshot.
unsafe fn snapshot_ref<'a>(
    recording: *const outbound_recording,
) -> Result<&'a outbound_recording, Failure> {
    // SAFETY: per the contract.
    unsafe { recording.as_ref() }.ok_or(Failure::Null("recording"))
}

/// Records an index past the end as the thread's last error.
fn out_of_range(index: usize, len: usize, what: &str) {
    set_last_error(format!(
        "index {index} is out of range: the recording holds {len} {what}"
    ));
}

/// Element `index` of one of the snapshot's lists (`what` names it in the error), or NULL
/// with the thread's last error set.
///
/// # Safety
/// `recording` is NULL or a live snapshot.
unsafe fn nth<T, V>(
    recording: *const outbound_recording,
    index: usize,
    what: &str,
    list: impl Fn(&outbound_recording) -> &[T],
    view: impl Fn(&T) -> &V,
) -> *const V {
    // SAFETY: the caller's contract.
    match unsafe { snapshot_ref(recording) } {
        Ok(r) => {
            let items = list(r);
            match items.get(index) {
                Some(item) => view(item),
                None => {
                    out_of_range(index, items.len(), what);
                    std::ptr::null()
                }
            }
        }
        Err(f) => {
            fail(f);
            std::ptr::null()
        }
    }
}

/// Takes a snapshot of what a recording client (`outbound_options_set_recording`) would have
/// sent so far and of the outcomes so far, in order. Read it with
/// `outbound_recording_requests_len` / `outbound_recording_request`,
/// `outbound_recording_header`, `outbound_recording_outcomes_len` /
/// `outbound_recording_outcome`. Flush first (`outbound_flush`) to see what was queued.
///
/// Ownership: on success `*out` receives a snapshot the caller owns and must release with
/// `outbound_recording_free`; it does not depend on the client (it may be read after the
/// client is freed). On failure `*out` is not written.
///
/// Returns `OUTBOUND_RESULT_OK`, `_NULL_ARGUMENT` (client or out), `_NOT_RECORDING` (a client
/// built without `outbound_options_set_recording`), `_PANIC`.
///
/// # Safety
/// `client` is NULL or live; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn outbound_recording_snapshot(
    client: *const outbound_client,
    out: *mut *mut outbound_recording,
) -> outbound_result {
    ffi!({
        finish((|| {
            // SAFETY: the caller's contract.
            let recording = unsafe { recording_of(client) }?;
            if out.is_null() {
                return Err(Failure::Null("out"));
            }
            // Outcomes first: each is reported after its requests were recorded.
            let outcomes = recording
                .outcomes()
                .iter()
                .map(RecordedOutcome::new)
                .collect();
            let requests = recording
                .requests()
                .into_iter()
                .map(RecordedRequest::new)
                .collect();
            let snapshot = outbound_recording { requests, outcomes };
            // SAFETY: `out` is writable per the contract.
            unsafe { *out = Box::into_raw(Box::new(snapshot)) };
            Ok(())
        })())
    })
}

/// Frees a snapshot; every pointer read from it becomes invalid. NULL is a no-op.
///
/// # Safety
/// `recording` is NULL or from `outbound_recording_snapshot` and not freed yet.
#[no_mangle]
pub unsafe extern "C" fn outbound_recording_free(recording: *mut outbound_recording) {
    ffi!({
        if !recording.is_null() {
            // SAFETY: per the contract, we own it now.
            drop(unsafe { Box::from_raw(recording) });
        }
    })
}

/// How many requests the snapshot holds (0 for NULL).
///
/// # Safety
/// `recording` is NULL or a live snapshot.
#[no_mangle]
pub unsafe extern "C" fn outbound_recording_requests_len(
    recording: *const outbound_recording,
) -> usize {
    ffi!({
        // SAFETY: the caller's contract.
        match unsafe { snapshot_ref(recording) } {
            Ok(r) => r.requests.len(),
            Err(f) => {
                fail(f);
                0
            }
        }
    })
}

/// Request `index` of the snapshot (0 is the first that would have been sent), or NULL when
/// `index` is not below `outbound_recording_requests_len` or `recording` is NULL
/// (`outbound_last_error` says which).
///
/// Ownership: the request belongs to the snapshot; valid until `outbound_recording_free`.
///
/// # Safety
/// `recording` is NULL or a live snapshot.
#[no_mangle]
pub unsafe extern "C" fn outbound_recording_request(
    recording: *const outbound_recording,
    index: usize,
) -> *const outbound_recorded_request {
    ffi!({
        // SAFETY: the caller's contract.
        unsafe { nth(recording, index, "requests", |r| &r.requests, |q| &q.view) }
    })
}

/// The value of header `name` (any case: `"X-Signature"` finds `x-signature`) of request
/// `index` of the snapshot, or NULL when that request has no such header. NULL too when
/// `recording` or `name` is NULL, `name` is not UTF-8 or `index` is out of range; then
/// `outbound_last_error` says which.
///
/// Ownership: the value belongs to the snapshot; valid until `outbound_recording_free`.
///
/// # Safety
/// `recording` is NULL or a live snapshot; `name` is NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn outbound_recording_header(
    recording: *const outbound_recording,
    index: usize,
    name: *const c_char,
) -> *const c_char {
    ffi!({
        let found = (|| {
            // SAFETY: the caller's contract.
            let r = unsafe { snapshot_ref(recording) }?;
            let name = unsafe { req_str(name, "name") }?;
            let Some(req) = r.requests.get(index) else {
                out_of_range(index, r.requests.len(), "requests");
                return Ok(None);
            };
            Ok(req.headers.iter().find_map(|h| {
                // SAFETY: the snapshot's own NUL-terminated texts.
                let header = unsafe { CStr::from_ptr(h.name) };
                // HTTP header names are case-insensitive.
                header
                    .to_bytes()
                    .eq_ignore_ascii_case(name.as_bytes())
                    .then_some(h.value)
            }))
        })();
        match found {
            Ok(Some(value)) => value,
            Ok(None) => std::ptr::null(),
            Err(f) => {
                fail(f);
                std::ptr::null()
            }
        }
    })
}

/// How many outcomes the snapshot holds (0 for NULL).
///
/// # Safety
/// `recording` is NULL or a live snapshot.
#[no_mangle]
pub unsafe extern "C" fn outbound_recording_outcomes_len(
    recording: *const outbound_recording,
) -> usize {
    ffi!({
        // SAFETY: the caller's contract.
        match unsafe { snapshot_ref(recording) } {
            Ok(r) => r.outcomes.len(),
            Err(f) => {
                fail(f);
                0
            }
        }
    })
}

/// Outcome `index` of the snapshot (in the order they were reported), or NULL when `index`
/// is not below `outbound_recording_outcomes_len` or `recording` is NULL
/// (`outbound_last_error` says which).
///
/// Ownership: the outcome belongs to the snapshot; valid until `outbound_recording_free`.
///
/// # Safety
/// `recording` is NULL or a live snapshot.
#[no_mangle]
pub unsafe extern "C" fn outbound_recording_outcome(
    recording: *const outbound_recording,
    index: usize,
) -> *const outbound_recorded_outcome {
    ffi!({
        // SAFETY: the caller's contract.
        unsafe { nth(recording, index, "outcomes", |r| &r.outcomes, |o| &o.view) }
    })
}

/// Makes a recording client answer every later request with `status` instead of 200, to
/// test how your application copes with failures; the real rules apply: `410` fails a
/// webhook message at once as gone, `400` fails it, `503` is retried (with the real backoff)
/// until `max_retry_duration`. `200` goes back to success.
///
/// Returns `OUTBOUND_RESULT_OK`, `_NULL_ARGUMENT` (client), `_NOT_RECORDING`, `_PANIC`.
///
/// # Safety
/// `client` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn outbound_recording_respond_with(
    client: *const outbound_client,
    status: u16,
) -> outbound_result {
    ffi!({
        finish((|| {
            // SAFETY: the caller's contract.
            unsafe { recording_of(client) }?.respond_with(status);
            Ok(())
        })())
    })
}

/// Makes a recording client forget the requests and outcomes recorded so far (snapshots
/// already taken are not changed).
///
/// Returns `OUTBOUND_RESULT_OK`, `_NULL_ARGUMENT` (client), `_NOT_RECORDING`, `_PANIC`.
///
/// # Safety
/// `client` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn outbound_recording_clear(
    client: *const outbound_client,
) -> outbound_result {
    ffi!({
        finish((|| {
            // SAFETY: the caller's contract.
            unsafe { recording_of(client) }?.clear();
            Ok(())
        })())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::{
        outbound_client_free, outbound_client_new, outbound_flush, outbound_track,
    };
    use crate::options::{
        outbound_options_add_webhook, outbound_options_new, outbound_options_set_recording,
        outbound_options_set_shared_secret,
    };
    use crate::result::last_error_text;
    use std::ptr::{null, null_mut};

    fn client(recording: bool) -> *mut outbound_client {
        unsafe {
            let o = outbound_options_new();
            let url = c"https://hooks.example.com/in".as_ptr();
            assert_eq!(
                outbound_options_add_webhook(o, url, null()),
                outbound_result::Ok
            );
            assert_eq!(
                outbound_options_set_shared_secret(o, c"s3cret".as_ptr()),
                outbound_result::Ok
            );
            assert_eq!(
                outbound_options_set_recording(o, recording),
                outbound_result::Ok
            );
            let mut c = null_mut();
            assert_eq!(outbound_client_new(o, &mut c), outbound_result::Ok);
            c
        }
    }

    fn text<'a>(p: *const c_char) -> &'a str {
        unsafe { CStr::from_ptr(p) }.to_str().unwrap()
    }

    #[test]
    fn a_snapshot_is_a_copy_that_outlives_the_client() {
        let c = client(true);
        let mut rec = null_mut();
        unsafe {
            let (user, event, id) = (c"u1".as_ptr(), c"Signed Up".as_ptr(), c"m-1".as_ptr());
            let rc = outbound_track(
                c,
                user,
                null(),
                event,
                null(),
                null(),
                null(),
                null(),
                id,
                null_mut(),
                0,
                null_mut(),
            );
            assert_eq!(rc, outbound_result::Ok);
            assert_eq!(outbound_flush(c, 10_000), outbound_result::Ok);
            assert_eq!(
                outbound_recording_snapshot(c, &mut rec),
                outbound_result::Ok
            );
            assert_eq!(outbound_recording_clear(c), outbound_result::Ok);
            outbound_client_free(c);

            assert_eq!(outbound_recording_requests_len(rec), 1);
            let req = &*outbound_recording_request(rec, 0);
            assert_eq!(req.destination, outbound_destination::Webhook);
            assert_eq!(text(req.url), "https://hooks.example.com/in");
            let body = std::slice::from_raw_parts(req.body, req.body_len + 1);
            assert_eq!(body.last(), Some(&0), "the body is followed by a NUL");
            let body = &body[..req.body_len];
            let sig = text(outbound_recording_header(rec, 0, c"X-Signature".as_ptr()));
            assert!(outbound::verify(b"s3cret", body, sig));
            assert!(outbound_recording_header(rec, 0, c"x-absent".as_ptr()).is_null());

            assert_eq!(outbound_recording_outcomes_len(rec), 1);
            let o = &*outbound_recording_outcome(rec, 0);
            assert_eq!(
                (text(o.message_id), text(o.outcome), text(o.detail)),
                ("m-1", "delivered", "")
            );
            assert!(outbound_recording_outcome(rec, 1).is_null());
            assert!(last_error_text().contains("index 1 is out of range"));
            outbound_recording_free(rec);
        }
    }

    #[test]
    fn accessors_on_a_real_client_say_not_recording() {
        let c = client(false);
        let mut rec = null_mut();
        unsafe {
            assert_eq!(
                outbound_recording_snapshot(c, &mut rec),
                outbound_result::NotRecording
            );
            assert!(rec.is_null());
            assert!(last_error_text().contains("not a recording client"));
            assert_eq!(
                outbound_recording_respond_with(c, 410),
                outbound_result::NotRecording
            );
            assert_eq!(outbound_recording_clear(c), outbound_result::NotRecording);
            outbound_client_free(c);
        }
    }
}
