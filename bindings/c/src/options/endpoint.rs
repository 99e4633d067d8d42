//! How one webhook's endpoint wants to be called, set on webhook `i` of the options (its
//! index: 0 for the first `outbound_options_add_webhook`): its authentication, its TLS
//! (client certificate, roots of its own), the header and scheme of its signature, and its
//! rate limit. Each setter stores what it is given; `outbound_client_new` checks it (the
//! core's rules), its refusal naming the field (`webhooks[0].auth.user`).

use super::*;
use outbound::{Auth, EndpointTls, OAuth2, RateLimit};

/// Runs `f` on webhook `webhook` of the options; an index not added is refused naming
/// `webhooks[i].<field>`.
///
/// # Safety
/// As [`with_config`].
unsafe fn with_webhook(
    options: *mut outbound_options,
    webhook: usize,
    field: &str,
    f: impl FnOnce(&mut Webhook) -> Result<(), Failure>,
) -> outbound_result {
    // SAFETY: the caller's contract.
    unsafe { with_config(options, |c| f(webhook_mut(c, webhook, field)?)) }
}

/// Webhook `webhook` authenticates with HTTP Basic (RFC 7617): every request to it carries
/// `Authorization: Basic base64(user:password)`. Replaces any auth set before on it. Checked
/// by `outbound_client_new` (`OUTBOUND_RESULT_CONFIG`, the text naming the field): `user`
/// not empty and without `:`, neither with control characters, at most 4096 bytes each; and
/// the webhook may not also have an `Authorization` static header. Both texts are copied.
///
/// Returns `OUTBOUND_RESULT_OK`, `_NULL_ARGUMENT` (options, user, password), `_INVALID_UTF8`,
/// `_CONFIG` (no webhook of that index; the text names `webhooks[i].auth`), `_PANIC`.
///
/// # Safety
/// `options` is NULL or live; `user` and `password` are NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn outbound_options_set_webhook_auth_basic(
    options: *mut outbound_options,
    webhook: usize,
    user: *const c_char,
    password: *const c_char,
) -> outbound_result {
    ffi!({
        unsafe {
            with_webhook(options, webhook, "auth", |hook| {
                let user = req_str(user, "user")?;
                let password = req_str(password, "password")?;
                hook.auth = Some(Auth::basic(user, password));
                Ok(())
            })
        }
    })
}

/// Webhook `webhook` authenticates with a bearer token (RFC 6750): every request to it
/// carries `Authorization: Bearer <token>`, the token as given. Replaces any auth set before
/// on it. Checked by `outbound_client_new`: not empty, visible ASCII, at most 4096 bytes; no
/// `Authorization` static header besides. The text is copied.
///
/// Returns `OUTBOUND_RESULT_OK`, `_NULL_ARGUMENT` (options, token), `_INVALID_UTF8`,
/// `_CONFIG` (no webhook of that index), `_PANIC`.
///
/// # Safety
/// `options` is NULL or live; `token` is NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn outbound_options_set_webhook_auth_bearer(
    options: *mut outbound_options,
    webhook: usize,
    token: *const c_char,
) -> outbound_result {
    ffi!({
        unsafe {
            with_webhook(options, webhook, "auth", |hook| {
                hook.auth = Some(Auth::bearer(req_str(token, "token")?));
                Ok(())
            })
        }
    })
}

/// Webhook `webhook` authenticates with OAuth2 client credentials (RFC 6749 §4.4): a token is
/// asked of `token_url` (a form POST of `grant_type=client_credentials`, with `scope` and
/// `audience` when given, authenticated with HTTP Basic of the client id and secret), kept
/// until shortly before it expires, sent as `Authorization: Bearer <token>`, and asked again
/// once when the endpoint answers 401. The token request goes under the webhook's network
/// guard, TLS settings and the client's timeout; a failed one fails the attempt as the
/// delivery's would (a 5xx or a timeout is retried, a 4xx is permanent). Replaces any auth
/// set before on it.
///
/// - `token_url`: absolute `http://` or `https://` URL. Required.
/// - `client_id`, `client_secret`: required, not empty (a JWT client assertion instead of a
///   secret: `outbound_options_set_webhook_auth_oauth2_assertion`).
/// - `scope` (space separated), `audience`: NULL when the server wants none.
///
/// Checked by `outbound_client_new`, the text naming the field (`webhooks[i].auth.token_url`,
/// ...). Every text is copied.
///
/// Returns `OUTBOUND_RESULT_OK`, `_NULL_ARGUMENT` (options, token_url, client_id,
/// client_secret), `_INVALID_UTF8`, `_CONFIG` (no webhook of that index), `_PANIC`.
///
/// # Safety
/// `options` is NULL or live; each text is NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn outbound_options_set_webhook_auth_oauth2(
    options: *mut outbound_options,
    webhook: usize,
    token_url: *const c_char,
    client_id: *const c_char,
    client_secret: *const c_char,
    scope: *const c_char,
    audience: *const c_char,
) -> outbound_result {
    ffi!({
        unsafe {
            set_oauth2(options, webhook, scope, audience, || {
                Ok(OAuth2::new(
                    req_str(token_url, "token_url")?,
                    req_str(client_id, "client_id")?,
                    req_str(client_secret, "client_secret")?,
                ))
            })
        }
    })
}

/// Webhook `webhook`'s auth becomes the OAuth2 credentials `made` reads, with `scope` and
/// `audience` (NULL: none).
///
/// # Safety
/// `options` is NULL or live; `scope` and `audience` are NULL or NUL-terminated.
unsafe fn set_oauth2(
    options: *mut outbound_options,
    webhook: usize,
    scope: *const c_char,
    audience: *const c_char,
    made: impl FnOnce() -> Result<OAuth2, Failure>,
) -> outbound_result {
    unsafe {
        with_webhook(options, webhook, "auth", |hook| {
            let mut o = made()?;
            o.scope = opt_string(scope, "scope")?;
            o.audience = opt_string(audience, "audience")?;
            hook.auth = Some(Auth::oauth2(o));
            Ok(())
        })
    }
}

/// Webhook `webhook` authenticates with OAuth2 client credentials (RFC 6749 §4.4) as
/// `outbound_options_set_webhook_auth_oauth2` does, the client proving who it is with a JWT
/// client assertion (RFC 7523) instead of a secret: the token request's form carries
/// `client_id`, `client_assertion_type=urn:ietf:params:oauth:client-assertion-type:jwt-bearer`
/// and `client_assertion`, a JWT signed anew for each request (RS256 with an RSA key, ES256
/// with a P-256 key; `iss` and `sub` the client id, `aud` the token URL, valid 5 minutes,
/// a fresh `jti`), and no `Authorization`. Replaces any auth set before on it.
///
/// - `token_url`: absolute `http://` or `https://` URL. Required.
/// - `client_id`: required, not empty.
/// - `client_assertion_key`: the private key that signs the assertion (RSA or P-256; PKCS#8,
///   PKCS#1 or SEC1), PEM text (starting with `-----BEGIN`) or the path of a PEM file, read
///   when the client is built. Required.
/// - `scope` (space separated), `audience`: NULL when the server wants none.
///
/// Checked by `outbound_client_new`, the text naming the field (`webhooks[i].auth.token_url`,
/// `webhooks[i].auth.client_assertion_key` for a key that cannot be read or used, ...). Every
/// text is copied.
///
/// Returns `OUTBOUND_RESULT_OK`, `_NULL_ARGUMENT` (options, token_url, client_id,
/// client_assertion_key), `_INVALID_UTF8`, `_CONFIG` (no webhook of that index), `_PANIC`.
///
/// # Safety
/// `options` is NULL or live; each text is NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn outbound_options_set_webhook_auth_oauth2_assertion(
    options: *mut outbound_options,
    webhook: usize,
    token_url: *const c_char,
    client_id: *const c_char,
    client_assertion_key: *const c_char,
    scope: *const c_char,
    audience: *const c_char,
) -> outbound_result {
    ffi!({
        unsafe {
            set_oauth2(options, webhook, scope, audience, || {
                Ok(OAuth2::with_assertion_key(
                    req_str(token_url, "token_url")?,
                    req_str(client_id, "client_id")?,
                    req_str(client_assertion_key, "client_assertion_key")?,
                ))
            })
        }
    })
}

/// Sets webhook `webhook`'s TLS, each part PEM text (starting with `-----BEGIN`) or the path
/// of a PEM file, read when the client is built; NULL leaves that part unset. All three NULL
/// restores the default (the client's TLS).
///
/// - `client_cert`: the client certificate (and its chain) shown to the endpoint, for mutual
///   TLS. Needs `client_key`.
/// - `client_key`: its private key (PKCS#8, PKCS#1 or SEC1). Needs `client_cert`.
/// - `ca_certs`: the only roots the endpoint's certificate may chain to (a private CA): they
///   replace the web's roots and the client's `outbound_options_set_ca_certs` for this
///   webhook.
///
/// Checked by `outbound_client_new` (`webhooks[i].tls.client_key`, ...). The texts are copied.
///
/// Returns `OUTBOUND_RESULT_OK`, `_NULL_ARGUMENT` (options), `_INVALID_UTF8`, `_CONFIG` (no
/// webhook of that index), `_PANIC`.
///
/// # Safety
/// `options` is NULL or live; each text is NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn outbound_options_set_webhook_tls(
    options: *mut outbound_options,
    webhook: usize,
    client_cert: *const c_char,
    client_key: *const c_char,
    ca_certs: *const c_char,
) -> outbound_result {
    ffi!({
        unsafe {
            with_webhook(options, webhook, "tls", |hook| {
                hook.tls = EndpointTls {
                    client_cert: opt_string(client_cert, "client_cert")?,
                    client_key: opt_string(client_key, "client_key")?,
                    ca_certs: opt_string(ca_certs, "ca_certs")?,
                };
                Ok(())
            })
        }
    })
}

/// Puts webhook `webhook`'s signature in header `name` instead of the scheme's own
/// (`X-Signature`, `X-Signature-256`), e.g. `"X-Hub-Signature-256"`; the value is the same.
/// NULL restores the scheme's header. Checked by `outbound_client_new`: an HTTP token, not a
/// header outbound sets (`Content-Type`, `Authorization`, ...) nor one of the webhook's
/// static headers, and not with the `"standard-webhooks"` scheme (its headers are fixed).
/// The text is copied.
///
/// Returns `OUTBOUND_RESULT_OK`, `_NULL_ARGUMENT` (options), `_INVALID_UTF8`, `_CONFIG` (no
/// webhook of that index), `_PANIC`.
///
/// # Safety
/// `options` is NULL or live; `name` is NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn outbound_options_set_webhook_signature_header(
    options: *mut outbound_options,
    webhook: usize,
    name: *const c_char,
) -> outbound_result {
    ffi!({
        unsafe {
            with_webhook(options, webhook, "signature_header", |hook| {
                hook.signature_header = opt_string(name, "name")?;
                Ok(())
            })
        }
    })
}

/// Signs webhook `webhook`'s requests with `scheme` instead of the client's
/// (`outbound_options_set_signature_scheme`): `"x-signature"`, `"standard-webhooks"` or
/// `"hmac-sha256"` (`X-Signature-256: sha256=<lowercase hex HMAC-SHA256 of the body>`, keyed
/// with the shared secret as given; receivers check it with `outbound_verify_sha256`). NULL
/// restores the client's scheme. The shared secret is the client's.
///
/// Returns `OUTBOUND_RESULT_OK`, `_CONFIG` (an unknown name, the text naming
/// `webhooks[i].signature_scheme`, nothing changed; or no webhook of that index),
/// `_NULL_ARGUMENT` (options), `_INVALID_UTF8`, `_PANIC`.
///
/// # Safety
/// `options` is NULL or live; `scheme` is NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn outbound_options_set_webhook_signature_scheme(
    options: *mut outbound_options,
    webhook: usize,
    scheme: *const c_char,
) -> outbound_result {
    ffi!({
        unsafe {
            with_webhook(options, webhook, "signature_scheme", |hook| {
                hook.signature_scheme = match opt_str(scheme, "scheme")? {
                    Some(name) => Some(SignatureScheme::parse(name).map_err(|e| {
                        rename_setting(e, format!("webhooks[{webhook}].signature_scheme"))
                    })?),
                    None => None,
                };
                Ok(())
            })
        }
    })
}

/// Sends at most `per_second` requests a second to webhook `webhook`, with bursts of up to
/// `burst` after a quiet spell (a token bucket; pass `per_second` for bursts of as many). A
/// request carries one message, so this is messages a second too. Messages past it wait in
/// the webhook's queue, inside their retry window (counted in the health's `throttled`, its
/// state `"throttled"` meanwhile); none is dropped for it. Each process enforces it on its
/// own deliveries. Unlimited by default. Checked by `outbound_client_new`: each at least 1
/// (`webhooks[i].rate_limit.per_second`, `webhooks[i].rate_limit.burst`).
///
/// Returns `OUTBOUND_RESULT_OK`, `_NULL_ARGUMENT` (options), `_CONFIG` (no webhook of that
/// index), `_PANIC`.
///
/// # Safety
/// `options` is NULL or a live `outbound_options`.
#[no_mangle]
pub unsafe extern "C" fn outbound_options_set_webhook_rate_limit(
    options: *mut outbound_options,
    webhook: usize,
    per_second: u32,
    burst: u32,
) -> outbound_result {
    ffi!({
        unsafe {
            with_webhook(options, webhook, "rate_limit", |hook| {
                hook.rate_limit = Some(RateLimit::per_second(per_second).burst(burst));
                Ok(())
            })
        }
    })
}

/// The core's error about a setting, said of `setting` (a per-webhook one).
fn rename_setting(e: outbound::Error, setting: String) -> Failure {
    match e {
        outbound::Error::Config { reason, .. } => {
            Failure::Core(outbound::Error::Config { setting, reason })
        }
        other => Failure::Core(other),
    }
}
