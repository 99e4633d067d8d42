//! Subscriptions (Segment's Webhooks (Actions)), each given as JSON and read by the core
//! (`outbound::subscription::Subscription::from_json`); their number, names and the rest are
//! checked with the whole configuration by `outbound_client_new`.

use super::*;
use outbound::subscription::Subscription;
use outbound::Error;

/// Adds a subscription (at most 50; more is refused by `outbound_client_new`): the events its
/// trigger matches go to its URL as its mapping says, each in a request of its own (unless
/// batched), signed with the shared secret as webhook requests are, retried, counted and
/// recorded on its own.
///
/// - `json`: one subscription as a JSON object, in either of two forms:
///   - as Segment exports it: `{"name":"orders","subscribe":"type = \"track\"",
///     "mapping":{"url":"https://...","method":"PUT","headers":{...},"data":{...}}}`;
///   - in outbound's own settings: `{"name":"orders","trigger":"type = \"track\"",
///     "url":"https://...","method":"PUT","headers":{...},"data":{...},"enabled":true}`.
///
///   `name` is required and unique among the client's subscriptions (its outcomes and stats
///   go by it). The trigger is Segment's FQL; `headers` and `data` are Segment's mappings
///   (`{"@path":"$.properties.total"}`, `{"@template":"{{userId}}"}`, ...); without `data`
///   the body is the whole event. With `batch_size` (1 to 4000; Segment's
///   `enable_batching`), events go in batches instead: a JSON array of mapped bodies per
///   request, signed over the whole body (`"batch_signature":"first-element"`: over the
///   first element, as Segment signs).
///
///   Its endpoint is called as a webhook's may be (`outbound_options_set_webhook_auth_*`
///   and the rest), with these keys beside the others, in either form: `auth`
///   (`{"type":"basic","user":...,"password":...}`, `{"type":"bearer","token":...}`,
///   `{"type":"oauth2","token_url":...,"client_id":...,"client_secret":...}` or with
///   `"client_assertion_key"` instead of the secret, `"scope"` and `"audience"` optional),
///   `tls` (`{"client_cert":...,"client_key":...,"ca_certs":...}`, each PEM text or a
///   path), `signature_header`, `signature_scheme` (`"x-signature"`, `"hmac-sha256"`,
///   `"standard-webhooks"`) and `rate_limit` (`{"per_second":10,"burst":20}`). A value the
///   endpoint cannot take is refused by `outbound_client_new` (`subscriptions[0].auth.token`).
///
/// The text is copied. On failure nothing is added, and the text names the field as
/// `subscriptions[i].<field>`, `i` being the index this subscription would have had
/// (`subscriptions[0].mapping.url`, `subscriptions[1].trigger`).
///
/// Returns `OUTBOUND_RESULT_OK`, `_NULL_ARGUMENT` (options, json), `_INVALID_UTF8`,
/// `_INVALID_JSON`, `_WRONG_TYPE` (not an object), `_CONFIG` (a field refused), `_PANIC`.
///
/// # Safety
/// `options` is NULL or live; `json` is NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn outbound_options_add_subscription_json(
    options: *mut outbound_options,
    json: *const c_char,
) -> outbound_result {
    ffi!({
        unsafe {
            with_config(options, |c| {
                let i = c.subscriptions.len();
                let at = format!("subscriptions[{i}]");
                let object = outbound::parse_object(&at, req_str(json, "json")?)?;
                let sub = Subscription::from_json(&outbound::Value::Object(object))
                    .map_err(|e| named(i, e))?;
                c.subscriptions.push(sub);
                Ok(())
            })
        }
    })
}

/// The core names a subscription's fields on their own (`mapping.url`): here they are named
/// as the client's settings name them (`subscriptions[0].mapping.url`).
fn named(i: usize, e: Error) -> Error {
    match e {
        Error::Config { setting, reason } => Error::Config {
            setting: match setting.as_str() {
                "subscription" => format!("subscriptions[{i}]"),
                field => format!("subscriptions[{i}].{field}"),
            },
            reason,
        },
        e => e,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::last_error_text;

    fn add(o: *mut outbound_options, json: &std::ffi::CStr) -> outbound_result {
        unsafe { outbound_options_add_subscription_json(o, json.as_ptr()) }
    }

    #[test]
    fn refusals_name_the_subscription_and_its_field() {
        let o = outbound_options_new();
        let ok = c"{\"name\":\"a\",\"trigger\":\"type = \\\"track\\\"\",\"url\":\"http://127.0.0.1:9/a\"}";
        assert_eq!(add(o, ok), outbound_result::Ok);
        let segment =
            c"{\"name\":\"b\",\"subscribe\":\"type = \\\"track\\\"\",\"mapping\":{\"url\":7}}";
        assert_eq!(add(o, segment), outbound_result::Config);
        assert!(
            last_error_text().contains("subscriptions[1].mapping.url"),
            "{}",
            last_error_text()
        );
        assert_eq!(add(o, c"[1]"), outbound_result::WrongType);
        assert!(last_error_text().contains("subscriptions[1]"));
        assert_eq!(add(o, c"{"), outbound_result::InvalidJson);
        unsafe {
            assert_eq!(
                outbound_options_add_subscription_json(o, std::ptr::null()),
                outbound_result::NullArgument
            );
            assert_eq!(
                outbound_options_add_subscription_json(o, c"\xff".as_ptr()),
                outbound_result::InvalidUtf8
            );
            assert_eq!(
                outbound_options_add_subscription_json(std::ptr::null_mut(), ok.as_ptr()),
                outbound_result::NullArgument
            );
            assert_eq!((*o).config.subscriptions.len(), 1, "refusals add nothing");
            outbound_options_free(o);
        }
    }
}
