//! Feeds arbitrary bytes to every JSON-taking entry point of the C ABI (audience sync and
//! subscriptions included) and to `outbound_enqueue_packed`, to the text arguments of the calls and of the
//! options (a webhook's endpoint settings included), and to `outbound_sign` /
//! `outbound_verify` and their `_sha256` forms, exactly as a C caller
//! would pass them (NUL-terminated strings, pointer + length byte ranges, small buffers).
//!
//! Finding = a crash, an AddressSanitizer report, a contained panic (`OUTBOUND_RESULT_PANIC`
//! means the panic boundary caught a bug, so it is turned back into a crash here), a result
//! code that is not defined, or an id/signature buffer not written as documented.
#![no_main]

use libfuzzer_sys::fuzz_target;
use outbound::*;
use std::ffi::{c_char, CStr, CString};
use std::ptr::{null, null_mut};
use std::sync::OnceLock;

/// One client for the whole run: both destinations configured (so both encoders run),
/// sending off (so nothing leaves the process), a queue large enough never to fill.
fn client() -> *const outbound_client {
    static CLIENT: OnceLock<usize> = OnceLock::new();
    *CLIENT.get_or_init(|| unsafe {
        let o = outbound_options_new();
        assert_eq!(
            outbound_options_set_write_key(o, c"wk".as_ptr()),
            outbound_result::Ok
        );
        assert_eq!(
            outbound_options_add_webhook(o, c"http://127.0.0.1:9/hook".as_ptr(), null()),
            outbound_result::Ok
        );
        assert_eq!(outbound_options_set_send(o, false), outbound_result::Ok);
        assert_eq!(outbound_options_set_debug(o, false), outbound_result::Ok);
        assert_eq!(
            outbound_options_set_max_queue_size(o, 1 << 30),
            outbound_result::Ok
        );
        let mut c = null_mut();
        assert_eq!(outbound_client_new(o, &mut c), outbound_result::Ok);
        c as usize
    }) as *const outbound_client
}

/// A C string from the bytes up to the first NUL (C cannot pass more).
fn c_text(bytes: &[u8]) -> CString {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    CString::new(&bytes[..end]).unwrap()
}

fn check(rc: outbound_result) {
    assert_ne!(
        rc,
        outbound_result::Panic,
        "contained panic: {}",
        last_error()
    );
    if rc != outbound_result::Ok {
        // Every failure leaves a readable text.
        assert!(!last_error().is_empty(), "no text for {rc:?}");
    }
}

fn last_error() -> String {
    let mut buf = [0 as c_char; 512];
    unsafe { outbound_last_error(buf.as_mut_ptr(), buf.len()) };
    unsafe { CStr::from_ptr(buf.as_ptr()) }
        .to_string_lossy()
        .into_owned()
}

/// Calls one enqueue entry point through an id buffer of `id_len` bytes and checks what the
/// documentation promises about it.
fn with_id(id_len: usize, call: impl FnOnce(*mut c_char, usize, *mut usize) -> outbound_result) {
    let mut buf = vec![0x55 as c_char; id_len.max(1)];
    let mut written = usize::MAX;
    let rc = call(buf.as_mut_ptr(), id_len, &mut written);
    check(rc);
    match rc {
        outbound_result::Ok => {
            assert!(written < id_len);
            assert_eq!(buf[written], 0, "id not NUL-terminated");
        }
        outbound_result::InsufficientSize => assert!(written >= id_len),
        _ => {}
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let c = client();
    // A small id buffer now and then, to reach INSUFFICIENT_SIZE.
    let id_len = if selector & 0x80 != 0 { 8 } else { 64 };
    let text = c_text(rest);
    let t = text.as_ptr();
    unsafe {
        match selector % 17 {
            0 => {
                with_id(id_len, |b, l, w| outbound_enqueue_json(c, t, b, l, w));
                // The same bytes as a packed message (a byte range, not a C string).
                with_id(id_len, |b, l, w| {
                    outbound_enqueue_packed(c, rest.as_ptr(), rest.len(), b, l, w)
                });
            }
            1 => with_id(id_len, |b, l, w| {
                outbound_track(
                    c,
                    c"u".as_ptr(),
                    null(),
                    c"E".as_ptr(),
                    t,
                    null(),
                    null(),
                    null(),
                    null(),
                    b,
                    l,
                    w,
                )
            }),
            2 => with_id(id_len, |b, l, w| {
                outbound_track(
                    c,
                    c"u".as_ptr(),
                    null(),
                    c"E".as_ptr(),
                    null(),
                    t,
                    null(),
                    null(),
                    null(),
                    b,
                    l,
                    w,
                )
            }),
            3 => with_id(id_len, |b, l, w| {
                outbound_track(
                    c,
                    c"u".as_ptr(),
                    null(),
                    c"E".as_ptr(),
                    null(),
                    null(),
                    t,
                    null(),
                    null(),
                    b,
                    l,
                    w,
                )
            }),
            4 => with_id(id_len, |b, l, w| {
                outbound_identify(
                    c,
                    c"u".as_ptr(),
                    null(),
                    t,
                    null(),
                    null(),
                    null(),
                    null(),
                    b,
                    l,
                    w,
                )
            }),
            5 => with_id(id_len, |b, l, w| {
                outbound_group(
                    c,
                    c"u".as_ptr(),
                    null(),
                    c"g".as_ptr(),
                    t,
                    null(),
                    null(),
                    null(),
                    null(),
                    b,
                    l,
                    w,
                )
            }),
            6 => with_id(id_len, |b, l, w| {
                outbound_page(
                    c,
                    null(),
                    c"a".as_ptr(),
                    null(),
                    null(),
                    t,
                    null(),
                    null(),
                    null(),
                    null(),
                    b,
                    l,
                    w,
                )
            }),
            7 => with_id(id_len, |b, l, w| {
                outbound_screen(
                    c,
                    c"u".as_ptr(),
                    null(),
                    c"S".as_ptr(),
                    null(),
                    null(),
                    t,
                    null(),
                    null(),
                    null(),
                    b,
                    l,
                    w,
                )
            }),
            8 => with_id(id_len, |b, l, w| {
                outbound_alias(
                    c,
                    c"p".as_ptr(),
                    c"u".as_ptr(),
                    t,
                    t,
                    null(),
                    null(),
                    b,
                    l,
                    w,
                )
            }),
            9 => {
                // Webhook headers and a subscription as JSON, then building a client from
                // them (refused or not).
                let o = outbound_options_new();
                check(outbound_options_add_webhook(
                    o,
                    c"http://127.0.0.1:9/h".as_ptr(),
                    t,
                ));
                check(outbound_options_add_subscription_json(o, t));
                check(outbound_options_set_send(o, false));
                let mut client = null_mut();
                let rc = outbound_client_new(o, &mut client);
                check(rc);
                if rc == outbound_result::Ok {
                    check(outbound_client_close(client, 1000));
                    outbound_client_free(client);
                }
            }
            10 | 11 => {
                // verify / sign over three byte ranges cut from the input.
                let cut1 = rest.first().map_or(0, |&b| b as usize).min(rest.len());
                let (secret, tail) = rest.split_at(cut1);
                let cut2 = tail.len().min(40);
                let (signature, body) = tail.split_at(cut2);
                let rc = outbound_verify(
                    secret.as_ptr(),
                    secret.len(),
                    body.as_ptr(),
                    body.len(),
                    signature.as_ptr().cast(),
                    signature.len(),
                );
                check(rc);
                assert!(matches!(
                    rc,
                    outbound_result::Ok | outbound_result::BadSignature
                ));
                let mut sig = [0 as c_char; OUTBOUND_SIGNATURE_BUFFER_LEN];
                let mut n = 0;
                let out_len = if selector % 16 == 11 { 40 } else { sig.len() };
                let rc = outbound_sign(
                    secret.as_ptr(),
                    secret.len(),
                    body.as_ptr(),
                    body.len(),
                    sig.as_mut_ptr(),
                    out_len,
                    &mut n,
                );
                check(rc);
                if rc == outbound_result::Ok {
                    // What sign makes, verify accepts.
                    assert_eq!(n, 40);
                    let ok = outbound_verify(
                        secret.as_ptr(),
                        secret.len(),
                        body.as_ptr(),
                        body.len(),
                        sig.as_ptr(),
                        n,
                    );
                    assert_eq!(ok, outbound_result::Ok);
                }
                // The hmac-sha256 scheme's pair on the same ranges (71-character values).
                let cut2 = tail.len().min(71);
                let (signature, body) = tail.split_at(cut2);
                let rc = outbound_verify_sha256(
                    secret.as_ptr(),
                    secret.len(),
                    body.as_ptr(),
                    body.len(),
                    signature.as_ptr().cast(),
                    signature.len(),
                );
                check(rc);
                assert!(matches!(
                    rc,
                    outbound_result::Ok | outbound_result::BadSignature
                ));
                let mut sig = [0 as c_char; OUTBOUND_SIGNATURE_SHA256_BUFFER_LEN];
                let mut n = 0;
                let out_len = if selector % 16 == 11 { 71 } else { sig.len() };
                let rc = outbound_sign_sha256(
                    secret.as_ptr(),
                    secret.len(),
                    body.as_ptr(),
                    body.len(),
                    sig.as_mut_ptr(),
                    out_len,
                    &mut n,
                );
                check(rc);
                if rc == outbound_result::Ok {
                    assert_eq!(n, 71);
                    let ok = outbound_verify_sha256(
                        secret.as_ptr(),
                        secret.len(),
                        body.as_ptr(),
                        body.len(),
                        sig.as_ptr(),
                        n,
                    );
                    assert_eq!(ok, outbound_result::Ok);
                }
            }
            12 => with_id(id_len, |b, l, w| {
                // Every plain text argument at once: ids, event, timestamp, message id.
                outbound_track(c, t, t, t, null(), null(), null(), t, t, b, l, w)
            }),
            13 => with_id(id_len, |b, l, w| {
                outbound_delete(c, c"u".as_ptr(), t, t, b, l, w)
            }),
            14 => with_id(id_len, |b, l, w| {
                outbound_page(
                    c,
                    c"u".as_ptr(),
                    null(),
                    t,
                    t,
                    null(),
                    null(),
                    null(),
                    null(),
                    null(),
                    b,
                    l,
                    w,
                )
            }),
            16 => {
                // Audience and trait sync: members and values as JSON, the name as text.
                let mut a = null_mut();
                assert_eq!(outbound_audience_new(null(), &mut a), outbound_result::Ok);
                check(outbound_audience_sync(a, c, t, t, null_mut()));
                check(outbound_audience_sync(a, c, c"A".as_ptr(), t, null_mut()));
                check(outbound_trait_sync(a, c, c"T".as_ptr(), t, null_mut()));
                outbound_audience_free(a);
            }
            _ => {
                // Options taking text, then a build that may be refused.
                let o = outbound_options_new();
                check(outbound_options_set_write_key(o, t));
                check(outbound_options_set_endpoint(o, t));
                check(outbound_options_set_webhook_user_agent(o, t));
                check(outbound_options_set_shared_secret(o, t));
                check(outbound_options_set_send(o, false));
                // A webhook's endpoint settings, each from the same text (the last auth wins).
                check(outbound_options_add_webhook(
                    o,
                    c"http://127.0.0.1:9/h".as_ptr(),
                    null(),
                ));
                check(outbound_options_set_webhook_auth_basic(o, 0, t, t));
                check(outbound_options_set_webhook_auth_bearer(o, 0, t));
                if selector & 0x40 != 0 {
                    check(outbound_options_set_webhook_auth_oauth2(
                        o, 0, t, t, t, t, t,
                    ));
                }
                if selector & 0x20 != 0 {
                    check(outbound_options_set_webhook_auth_oauth2_assertion(
                        o, 0, t, t, t, t, t,
                    ));
                }
                check(outbound_options_set_webhook_tls(o, 0, null(), null(), t));
                check(outbound_options_set_webhook_signature_header(o, 0, t));
                check(outbound_options_set_webhook_signature_scheme(o, 0, t));
                check(outbound_options_set_webhook_rate_limit(
                    o,
                    0,
                    u32::from(selector),
                    u32::from(selector),
                ));
                let mut client = null_mut();
                let rc = outbound_client_new(o, &mut client);
                check(rc);
                outbound_client_free(client);
            }
        }
    }
});
