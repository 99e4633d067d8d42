//! Standard Webhooks signing against real HTTP servers on 127.0.0.1:
//! the headers each request carries, key rotation, the checks at build time and at the
//! call, and that the body is the same bytes under both schemes.

mod support;

use outbound::{
    verify_standard, Client, Config, Error, Message, SignatureError, SignatureScheme, Webhook,
    DEFAULT_TOLERANCE,
};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use support::{Reply, Server};

const WAIT: Duration = Duration::from_secs(10);
/// 24 random-looking bytes, as the spec asks of a secret.
const NEW: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const OLD: &str = "whsec_QUJDREVGR0hJSktMTU5PUFFSU1RVVldY";

fn standard(url: &str, secret: Option<&str>) -> Config {
    {
        let mut c = support::config()
            .webhooks(vec![Webhook::new(url)])
            .signature_scheme(SignatureScheme::StandardWebhooks);
        c.shared_secret = secret.map(Into::into);
        c
    }
}

fn config_error(config: Config) -> String {
    match Client::new(config) {
        Err(e @ Error::Config { .. }) => e.to_string(),
        Err(e) => panic!("expected a config error, got {e}"),
        Ok(_) => panic!("expected a config error"),
    }
}

fn now_secs() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

#[test]
fn requests_carry_webhook_id_timestamp_and_a_v1_signature_and_no_x_signature() {
    let server = Server::answering(200);
    let client = Client::new(standard(&server.url, Some(NEW))).unwrap();
    let before = now_secs();
    let id = client.enqueue(&Message::track("u", "E")).unwrap();
    assert!(client.flush(Some(WAIT)));
    let req = &server.requests()[0];
    assert_eq!(req.header("webhook-id"), Some(id.as_str()));
    assert_eq!(req.json()["messageId"], id.as_str());
    let ts: i64 = req.header("webhook-timestamp").unwrap().parse().unwrap();
    assert!(
        (before..=now_secs()).contains(&ts),
        "{ts} is the time of the attempt"
    );
    let sig = req.header("webhook-signature").unwrap();
    assert!(sig.starts_with("v1,") && !sig.contains(' '), "{sig}");
    assert_eq!(req.header("x-signature"), None);
    let ts = ts.to_string();
    assert_eq!(
        verify_standard(NEW, &id, &ts, &req.body, sig, DEFAULT_TOLERANCE),
        Ok(())
    );
    // The signature covers the id, the timestamp and the body.
    assert_eq!(
        verify_standard(NEW, "other", &ts, &req.body, sig, DEFAULT_TOLERANCE),
        Err(SignatureError::NoMatch)
    );
    let mut body = req.body.clone();
    body.push(b' ');
    assert_eq!(
        verify_standard(NEW, &id, &ts, &body, sig, DEFAULT_TOLERANCE),
        Err(SignatureError::NoMatch)
    );
}

#[test]
fn two_secrets_give_two_signatures_and_each_verifies_with_its_own_secret() {
    let server = Server::answering(200);
    let client = Client::new(standard(&server.url, Some(&format!("{NEW} {OLD}")))).unwrap();
    let id = client.enqueue(&Message::identify("u")).unwrap();
    assert!(client.flush(Some(WAIT)));
    let req = &server.requests()[0];
    let ts = req.header("webhook-timestamp").unwrap();
    let header = req.header("webhook-signature").unwrap();
    let sigs: Vec<&str> = header.split(' ').collect();
    assert_eq!(sigs.len(), 2, "{header}");
    for (secret, sig) in [(NEW, sigs[0]), (OLD, sigs[1])] {
        assert_eq!(
            verify_standard(secret, &id, ts, &req.body, sig, DEFAULT_TOLERANCE),
            Ok(())
        );
    }
    assert_eq!(
        verify_standard(OLD, &id, ts, &req.body, sigs[0], DEFAULT_TOLERANCE),
        Err(SignatureError::NoMatch)
    );
    // A receiver still on the old secret accepts the whole header.
    assert_eq!(
        verify_standard(OLD, &id, ts, &req.body, header, DEFAULT_TOLERANCE),
        Ok(())
    );
}

#[test]
fn the_body_is_the_same_bytes_under_both_schemes() {
    let server = Server::answering(200);
    let ts = outbound::timestamp::parse("2026-11-21T09:30:00.123Z").unwrap();
    let msg = Message::track("u", "E")
        .property("n", 1.5)
        .message_id("m1")
        .timestamp(ts);
    for config in [
        standard(&server.url, Some(NEW)),
        support::config()
            .webhooks(vec![Webhook::new(&server.url)])
            .shared_secret("s3cret"),
    ] {
        let client = Client::new(config).unwrap();
        client.enqueue(&msg).unwrap();
        assert!(client.flush(Some(WAIT)));
    }
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    assert_eq!(reqs[0].body, reqs[1].body);
    assert!(reqs[0].header("webhook-signature").is_some());
    assert!(reqs[1].header("x-signature").is_some());
}

#[test]
fn without_a_secret_id_and_timestamp_are_sent_unsigned() {
    let server = Server::answering(200);
    let client = Client::new(standard(&server.url, None)).unwrap();
    let id = client.enqueue(&Message::identify("u")).unwrap();
    assert!(client.flush(Some(WAIT)));
    let req = &server.requests()[0];
    assert_eq!(req.header("webhook-id"), Some(id.as_str()));
    assert!(req.header("webhook-timestamp").is_some());
    assert_eq!(req.header("webhook-signature"), None);
    assert_eq!(req.header("x-signature"), None);
}

#[test]
fn each_attempt_is_stamped_and_signed_at_its_own_time() {
    let n = Arc::new(AtomicUsize::new(0));
    let server = Server::start(move |_| {
        if n.fetch_add(1, Ordering::SeqCst) == 0 {
            // Retry-After pauses the lane past the next second.
            Reply::Full {
                status: 503,
                headers: vec![("Retry-After".into(), "2".into())],
                body: Vec::new(),
            }
        } else {
            Reply::Status(200)
        }
    });
    let client = Client::new(standard(&server.url, Some(NEW))).unwrap();
    let id = client.enqueue(&Message::identify("u")).unwrap();
    assert!(client.flush(Some(WAIT)));
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    let stamp = |i: usize| reqs[i].header("webhook-timestamp").unwrap().to_string();
    assert_ne!(stamp(0), stamp(1), "a retry carries a fresh timestamp");
    assert_eq!(reqs[0].header("webhook-id"), reqs[1].header("webhook-id"));
    for r in &reqs {
        let ts = r.header("webhook-timestamp").unwrap();
        let sig = r.header("webhook-signature").unwrap();
        assert_eq!(
            verify_standard(NEW, &id, ts, &r.body, sig, DEFAULT_TOLERANCE),
            Ok(())
        );
    }
}

#[test]
fn secrets_must_be_whsec_base64_of_24_to_64_bytes() {
    let url = "http://127.0.0.1:1/h";
    for (secret, needle) in [
        ("whsec_!!!", "secret 1 is not a whsec_ secret"),
        (&*format!("{NEW} nope!"), "secret 2 is not a whsec_ secret"),
        ("whsec_c2hvcnQ=", "decodes to 5 bytes"),
        ("   ", "no secret given"),
    ] {
        let e = config_error(standard(url, Some(secret)));
        assert!(
            e.contains("shared_secret") && e.contains(needle),
            "{secret}: {e}"
        );
    }
    // Without the prefix is accepted, as by the spec's libraries.
    assert!(Client::new(standard(url, Some(&NEW[6..]))).is_ok());
    // The seed's scheme keeps taking any text.
    assert!(Client::new(
        support::config()
            .webhooks(vec![Webhook::new(url)])
            .shared_secret("whsec_!!!")
    )
    .is_ok());
}

#[test]
fn the_signature_headers_cannot_be_set_by_a_webhook() {
    for name in ["webhook-id", "Webhook-Timestamp", "WEBHOOK-SIGNATURE"] {
        let e = config_error(
            support::config()
                .webhooks(vec![Webhook::new("http://127.0.0.1:1/h").header(name, "x")]),
        );
        assert!(e.contains("cannot be overridden"), "{name}: {e}");
    }
}

#[test]
fn scheme_names_parse_and_unknown_ones_are_refused() {
    assert_eq!(
        SignatureScheme::parse("standard-webhooks").unwrap(),
        SignatureScheme::StandardWebhooks
    );
    assert_eq!(
        SignatureScheme::parse("x-signature").unwrap(),
        SignatureScheme::XSignature
    );
    assert_eq!(SignatureScheme::default(), SignatureScheme::XSignature);
    let e = SignatureScheme::parse("svix").unwrap_err().to_string();
    assert!(e.contains("signature_scheme"), "{e}");
}

#[test]
fn a_message_id_that_cannot_be_a_webhook_id_is_refused_at_the_call() {
    let server = Server::answering(200);
    let client = Client::new(standard(&server.url, Some(NEW))).unwrap();
    for bad in ["a.b", "has space", "caf\u{e9}"] {
        match client.enqueue(&Message::identify("u").message_id(bad)) {
            Err(Error::InvalidField { field, .. }) => assert_eq!(field, "message_id"),
            other => panic!("{bad:?}: {other:?}"),
        }
    }
    assert!(client
        .enqueue(&Message::identify("u").message_id("msg_2KWPBgLlAfxdpx2AI54pPJ85f4W"))
        .is_ok());
    // The seed's scheme has no such rule.
    let plain = Client::new(support::config().webhooks(vec![Webhook::new(&server.url)])).unwrap();
    assert!(plain
        .enqueue(&Message::identify("u").message_id("a.b"))
        .is_ok());
}
