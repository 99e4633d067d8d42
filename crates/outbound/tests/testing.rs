//! The recording client: the real client's checks, bytes, signatures and
//! outcomes, with nothing sent. Compared byte for byte with what the real client sends to a
//! server on 127.0.0.1.

mod support;

use outbound::testing::{self, Destination};
use outbound::{Client, Config, Error, Message, OutcomeKind, Reason, SignatureScheme, Webhook};
use std::time::Duration;
use support::Server;

const WAIT: Duration = Duration::from_secs(10);

fn both(endpoint: &str, hook: &str) -> Config {
    support::config()
        .write_key("wk_test")
        .endpoint(endpoint)
        .webhooks(vec![Webhook::new(hook).header("X-Team", "growth")])
        .shared_secret("s3cret")
        .flush_at(1)
}

fn message() -> Message {
    let ts = outbound::timestamp::parse("2026-11-21T09:30:00.123Z").unwrap();
    Message::track("u1", "Order Completed")
        .property("total", 19.99)
        .property("items", serde_json::json!([{"sku": "a"}]))
        .message_id("m-1")
        .timestamp(ts)
}

#[test]
fn records_the_bytes_the_real_client_sends_and_sends_nothing() {
    let server = Server::answering(200);
    let hook_url = format!("{}/hook", server.url);

    let real = Client::new(both(&server.url, &hook_url)).unwrap();
    real.enqueue(&message()).unwrap();
    assert!(real.flush(Some(WAIT)));
    let sent = server.requests();
    assert_eq!(sent.len(), 2);

    let (client, recording) = testing::recording(both(&server.url, &hook_url)).unwrap();
    client.enqueue(&message()).unwrap();
    assert!(client.flush(Some(WAIT)));
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(server.count(), 2, "the recording client sent nothing");

    let recorded = recording.requests();
    assert_eq!(recorded.len(), 2);
    let hook = recorded
        .iter()
        .find(|r| r.destination == Destination::Webhook)
        .unwrap();
    let real_hook = sent.iter().find(|r| r.path == "/hook").unwrap();
    assert_eq!(hook.url, hook_url);
    assert_eq!(hook.body, real_hook.body, "the webhook body, byte for byte");
    for name in ["x-signature", "content-type", "user-agent", "x-team"] {
        assert_eq!(hook.header(name), real_hook.header(name), "{name}");
    }
    assert!(outbound::verify(
        b"s3cret",
        &hook.body,
        hook.header("X-Signature").unwrap()
    ));

    let batch = recorded
        .iter()
        .find(|r| r.destination == Destination::Ingestion)
        .unwrap();
    let real_batch = sent.iter().find(|r| r.path == "/v1/batch").unwrap();
    assert_eq!(batch.url, format!("{}/v1/batch", server.url));
    assert_eq!(
        batch.header("authorization"),
        real_batch.header("authorization")
    );
    // The batch differs only in its sentAt (the time of sending).
    let strip = |body: &[u8]| {
        let mut v: serde_json::Value = serde_json::from_slice(body).unwrap();
        v.as_object_mut().unwrap().remove("sentAt");
        v
    };
    assert_eq!(strip(&batch.body), strip(&real_batch.body));

    let outcomes = recording.outcomes();
    assert_eq!(outcomes.len(), 1);
    assert_eq!(&*outcomes[0].message_id, "m-1");
    assert_eq!(outcomes[0].kind, OutcomeKind::Delivered);
}

#[test]
fn standard_webhooks_headers_are_recorded_and_verify() {
    let (client, recording) = testing::recording(
        support::config()
            .webhooks(vec![Webhook::new("https://hooks.example.com/in")])
            .shared_secret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
            .signature_scheme(SignatureScheme::StandardWebhooks),
    )
    .unwrap();
    let id = client.enqueue(&Message::identify("u1")).unwrap();
    assert!(client.flush(Some(WAIT)));
    let r = &recording.requests()[0];
    assert_eq!(r.header("webhook-id"), Some(id.as_str()));
    assert_eq!(
        outbound::verify_standard(
            "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
            &id,
            r.header("webhook-timestamp").unwrap(),
            &r.body,
            r.header("webhook-signature").unwrap(),
            outbound::DEFAULT_TOLERANCE,
        ),
        Ok(())
    );
}

#[test]
fn respond_with_plays_failures_through_the_real_rules() {
    let (client, recording) = testing::recording(
        support::config().webhooks(vec![Webhook::new("https://hooks.example.com/in")]),
    )
    .unwrap();
    recording.respond_with(410);
    client.enqueue(&Message::identify("u1")).unwrap();
    assert!(!client.flush(Some(WAIT)));
    let o = &recording.outcomes()[0];
    assert_eq!(
        (o.kind, o.reason.clone()),
        (OutcomeKind::Failed, Some(Reason::Gone))
    );
    recording.clear();
    assert!(recording.requests().is_empty() && recording.outcomes().is_empty());
    recording.respond_with(200);
    client.enqueue(&Message::identify("u2")).unwrap();
    assert!(client.flush(Some(WAIT)));
    assert_eq!(recording.requests().len(), 1);
}

#[test]
fn calls_are_checked_as_by_the_real_client_and_the_callback_still_runs() {
    let seen = support::Outcomes::default();
    let (client, recording) = testing::recording(
        support::config()
            .webhooks(vec![Webhook::new("https://hooks.example.com/in")])
            .on_outcome(seen.callback()),
    )
    .unwrap();
    assert!(matches!(
        client.enqueue(&Message::track("u1", "")),
        Err(Error::MissingField { .. })
    ));
    client.enqueue(&Message::identify("u1")).unwrap();
    assert!(client.flush(Some(WAIT)));
    assert_eq!(recording.requests().len(), 1);
    assert_eq!(seen.all().len(), 1);
    assert!(matches!(
        testing::recording(Config::default()),
        Err(Error::Config { .. })
    ));
}

/// The outcome of one identify through `client` (a real or a recording one), as (kind,
/// reason, detail); the flush must report a failure.
fn one_outcome(client: &Client, seen: &support::Outcomes) -> (OutcomeKind, Option<Reason>, String) {
    client.enqueue(&Message::identify("u1")).unwrap();
    assert!(!client.flush(Some(WAIT)));
    let o = seen.wait_for(1, WAIT).remove(0);
    (o.kind, o.reason, o.detail)
}

#[test]
fn the_network_guard_refuses_a_webhook_as_the_real_client_does() {
    let server = Server::answering(200);
    let hook = format!("{}/hook", server.url); // http://127.0.0.1:PORT/hook
    let guarded = |seen: &support::Outcomes| {
        support::config()
            .webhooks(vec![Webhook::new(&hook)])
            .block_private_networks(true)
            .on_outcome(seen.callback())
    };
    let real_seen = support::Outcomes::default();
    let real = Client::new(guarded(&real_seen)).unwrap();
    let real_outcome = one_outcome(&real, &real_seen);
    assert_eq!(server.count(), 0, "the guard let a request through");

    let seen = support::Outcomes::default();
    let (client, recording) = testing::recording(guarded(&seen)).unwrap();
    let recorded = one_outcome(&client, &seen);
    assert_eq!(recorded, real_outcome);
    assert_eq!(recorded.0, OutcomeKind::Failed);
    assert_eq!(recorded.1, Some(Reason::Blocked));
    assert!(
        recorded
            .2
            .contains("blocked: 127.0.0.1 is a loopback address"),
        "{}",
        recorded.2
    );
    assert!(
        recording.requests().is_empty(),
        "a blocked request was recorded"
    );

    // allowed_networks makes the exception for both.
    let seen = support::Outcomes::default();
    let (client, recording) =
        testing::recording(guarded(&seen).allowed_networks(vec!["127.0.0.0/8".into()])).unwrap();
    client.enqueue(&Message::identify("u1")).unwrap();
    assert!(client.flush(Some(WAIT)));
    assert_eq!(recording.requests().len(), 1);
}
