//! Subscriptions as a whole: settings read as Segment exports them, one event's request, a
//! batch's body and signature.

use super::*;
use serde_json::json;

fn segment(mapping: Value) -> Result<Subscription, Error> {
    Subscription::from_segment(&json!({
        "name": "Orders",
        "subscribe": "type = \"track\" and event = \"Order Completed\"",
        "mapping": mapping,
    }))
}

fn order() -> Value {
    json!({"type": "track", "event": "Order Completed", "userId": "u1",
           "properties": {"total": 9.5, "sku": "x1"}})
}

fn setting(e: Error) -> String {
    match e {
        Error::Config { setting, .. } => setting,
        other => panic!("not a configuration error: {other}"),
    }
}

#[test]
fn segment_export_is_read_with_its_defaults() {
    let s = segment(json!({"url": "https://example.com/hook"})).unwrap();
    assert_eq!(
        (s.name(), s.url(), s.method(), s.batch_size()),
        ("Orders", "https://example.com/hook", Method::Post, None)
    );
    let e = order();
    let m = s.map(&e).unwrap().unwrap();
    assert_eq!(
        m.body.as_deref(),
        Some(&e),
        "the default body is the whole event"
    );
    assert!(
        matches!(m.body, Some(Cow::Borrowed(_))),
        "and it is borrowed"
    );
    assert!(m.signed());
}

#[test]
fn an_event_the_trigger_does_not_select_has_no_request() {
    let s = segment(json!({"url": "https://example.com/hook"})).unwrap();
    assert_eq!(s.map(&json!({"type": "identify"})).unwrap(), None);
}

#[test]
fn the_data_mapping_shapes_the_body() {
    let s = segment(json!({"url": "https://x.test/", "method": "PUT",
        "data": {"id": {"@path": "$.userId"}, "total": {"@path": "$.properties.total"}}}))
    .unwrap();
    let e = order();
    let m = s.map(&e).unwrap().unwrap();
    assert_eq!(
        m.body.unwrap().into_owned(),
        json!({"id": "u1", "total": 9.5})
    );
    assert_eq!(s.method(), Method::Put);
}

#[test]
fn fixed_headers_are_checked_once_and_borrowed() {
    let s = segment(json!({"url": "https://x.test/", "headers": {"X-Team": "growth", "Content-Type": "text/plain"}})).unwrap();
    let e = order();
    let m = s.map(&e).unwrap().unwrap();
    assert_eq!(
        m.headers.as_ref(),
        [("x-team".to_owned(), "growth".to_owned())],
        "content-type is the sender's when there is a body"
    );
    assert_eq!(
        setting(
            segment(json!({"url": "https://x.test/", "headers": {"Bad Name": "x"}})).unwrap_err()
        ),
        "mapping.headers.Bad Name"
    );
}

#[test]
fn mapped_headers_are_made_per_event() {
    let s =
        segment(json!({"url": "https://x.test/", "headers": {"X-User": {"@path": "$.userId"}}}))
            .unwrap();
    let e = order();
    let m = s.map(&e).unwrap().unwrap();
    assert_eq!(m.headers.as_ref(), [("x-user".to_owned(), "u1".to_owned())]);
}

#[test]
fn a_mapped_signature_header_replaces_the_senders() {
    let s = segment(json!({"url": "https://x.test/", "headers": {"X-Signature": "mine"}})).unwrap();
    let e = order();
    let m = s.map(&e).unwrap().unwrap();
    assert!(!m.signed() && m.own_signature());
}

#[test]
fn an_event_whose_body_is_not_an_object_fails() {
    let s = segment(json!({"url": "https://x.test/", "data": {"@path": "$.properties.total"}}))
        .unwrap();
    let err = s.map(&order()).unwrap_err();
    assert!(
        matches!(err, EventError::Mapping(ref e) if e.path == "data"),
        "{err}"
    );
}

#[test]
fn a_body_mapped_to_nothing_sends_no_body_and_no_signature() {
    let s = segment(json!({"url": "https://x.test/", "data": {"@path": "$.properties.missing"}}))
        .unwrap();
    let e = order();
    let m = s.map(&e).unwrap().unwrap();
    assert!(m.body.is_none() && !m.signed());
}

#[test]
fn batching_reads_enable_batching_and_batch_size() {
    let s = segment(json!({"url": "https://x.test/", "enable_batching": true, "batch_size": 0}))
        .unwrap();
    assert_eq!(s.batch_size(), Some(DEFAULT_BATCH_SIZE));
    let s = segment(json!({"url": "https://x.test/", "enable_batching": true, "batch_size": 4000}))
        .unwrap();
    assert_eq!(s.batch_size(), Some(4000));
    assert_eq!(
        setting(
            segment(json!({"url": "https://x.test/", "enable_batching": true, "batch_size": 4001}))
                .unwrap_err()
        ),
        "mapping.batch_size"
    );
    let s = segment(json!({"url": "https://x.test/", "batch_size": 10})).unwrap();
    assert_eq!(s.batch_size(), None, "batch_size alone does not batch");
}

#[test]
fn errors_name_the_setting() {
    assert_eq!(
        setting(segment(json!({"url": "ftp://x"})).unwrap_err()),
        "mapping.url"
    );
    assert_eq!(
        setting(segment(json!({"url": "https://x.test/", "method": "GET"})).unwrap_err()),
        "mapping.method"
    );
    assert_eq!(
        setting(segment(json!({"url": {"@template": "https://{{x}}"}})).unwrap_err()),
        "mapping.url"
    );
    assert_eq!(
        setting(
            segment(json!({"url": "https://x.test/", "data": {"a": {"@nope": 1}}})).unwrap_err()
        ),
        "mapping.data.a"
    );
    assert_eq!(
        setting(segment(json!({"url": "https://x.test/", "data": {"@liquid": "x"}})).unwrap_err()),
        "mapping.data.@liquid"
    );
    assert_eq!(
        setting(segment(json!({"url": "https://x.test/", "header": {}})).unwrap_err()),
        "mapping.header"
    );
    let e = Subscription::from_segment(
        &json!({"subscribe": "type = ", "mapping": {"url": "https://x.test/"}}),
    );
    assert!(
        e.is_ok(),
        "Segment reads `type =` as a comparison with the end of the query"
    );
    let e = Subscription::from_segment(
        &json!({"subscribe": "type = \"a", "mapping": {"url": "https://x.test/"}}),
    )
    .unwrap_err();
    assert_eq!(setting(e.clone()), "subscribe");
    assert!(e.to_string().contains("at byte 7"), "{e}");
}

#[test]
fn our_settings_are_read_with_their_names() {
    let s = Subscription::from_settings(&json!({
        "name": "n", "trigger": "type = \"track\"", "url": "http://127.0.0.1:9/h",
        "method": "PATCH", "batch_size": 50, "batch_signature": "first-element", "enabled": false
    }))
    .unwrap();
    assert_eq!(
        (s.method(), s.batch_size(), s.batch_signature(), s.enabled()),
        (Method::Patch, Some(50), BatchSignature::FirstElement, false)
    );
    let e = Subscription::from_settings(
        &json!({"trigger": "type = \"track\"", "url": "http://x/", "batch_signature": "first"}),
    )
    .unwrap_err();
    assert_eq!(setting(e), "batch_signature");
    let e = Subscription::from_settings(
        &json!({"trigger": "type = \"track\"", "url": "http://x/", "data": {"@path": 1}}),
    )
    .unwrap_err();
    assert_eq!(setting(e), "data.@path");
}

#[test]
fn a_batch_body_is_an_array_signed_whole_by_default() {
    let s = segment(json!({"url": "https://x.test/", "enable_batching": true})).unwrap();
    let (body, signed) = s.batch_body(&[Some(b"{\"a\":1}"), None], false);
    assert_eq!(body, b"[{\"a\":1},null]");
    assert_eq!(signed, Some(0..body.len()));
    assert_eq!(s.batch_body(&[Some(b"{}")], true).1, None);
}

#[test]
fn first_element_signing_covers_the_first_body_only() {
    let mut settings = Settings::new("n", "type = \"track\"", "https://x.test/");
    settings.batch_size = Some(10);
    settings.batch_signature = BatchSignature::FirstElement;
    let s = Subscription::new(settings).unwrap();
    let (body, signed) = s.batch_body(&[Some(b"{\"a\":1}"), Some(b"{}")], false);
    assert_eq!(&body[signed.unwrap()], b"{\"a\":1}");
}

#[test]
fn subscriptions_can_be_shared_between_threads() {
    fn shared<T: Send + Sync>() {}
    shared::<Subscription>();
    shared::<Trigger>();
    shared::<Mapping>();
}
