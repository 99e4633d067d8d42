//! `block_private_networks`: a webhook URL that points at a non-public
//! address fails at once with reason `blocked` and nothing reaches it; `allowed_networks`
//! makes exceptions; ingestion is never guarded. The only blocked target used is 127.0.0.1
//! (directly, or through the name `localhost`).

mod support;

use outbound::{Client, Config, Error, Message, OutcomeKind, Reason, Webhook};
use std::time::Duration;
use support::{Outcomes, Server};

const WAIT: Duration = Duration::from_secs(10);

fn guarded(url: &str, outcomes: &Outcomes) -> Config {
    support::config()
        .webhooks(vec![Webhook::new(url)])
        .block_private_networks(true)
        .on_outcome(outcomes.callback())
}

#[test]
fn a_webhook_at_127_0_0_1_is_blocked_and_gets_nothing() {
    let server = Server::answering(200);
    let outcomes = Outcomes::default();
    let client = Client::new(guarded(&server.url, &outcomes)).unwrap();
    client.enqueue(&Message::identify("u")).unwrap();
    assert!(!client.flush(Some(WAIT)));
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(server.count(), 0, "nothing is sent");
    let o = &outcomes.all()[0];
    assert_eq!(
        (o.kind, o.reason.clone()),
        (OutcomeKind::Failed, Some(Reason::Blocked))
    );
    assert_eq!(Reason::Blocked.to_string(), "blocked");
    assert!(
        o.detail
            .starts_with("webhooks: blocked: 127.0.0.1 is a loopback address"),
        "{}",
        o.detail
    );
    assert_eq!(client.stats().retries, 0, "a refusal is not retried");
}

#[test]
fn a_name_that_resolves_to_loopback_is_blocked_after_resolution() {
    let server = Server::answering(200);
    let outcomes = Outcomes::default();
    let url = format!("http://localhost:{}/hook", server.port);
    let client = Client::new(guarded(&url, &outcomes)).unwrap();
    client.enqueue(&Message::identify("u")).unwrap();
    assert!(!client.flush(Some(WAIT)));
    assert_eq!(server.count(), 0);
    let o = &outcomes.all()[0];
    assert_eq!(o.reason, Some(Reason::Blocked), "{o:?}");
    assert!(o.detail.contains("loopback"), "{}", o.detail);
}

#[test]
fn an_allowed_network_is_delivered_to() {
    let server = Server::answering(200);
    let outcomes = Outcomes::default();
    let client =
        Client::new(guarded(&server.url, &outcomes).allowed_networks(vec!["127.0.0.0/8".into()]))
            .unwrap();
    client.enqueue(&Message::identify("u")).unwrap();
    assert!(client.flush(Some(WAIT)));
    assert_eq!(server.count(), 1);
    assert_eq!(outcomes.all()[0].kind, OutcomeKind::Delivered);
}

#[test]
fn ingestion_is_not_guarded() {
    let ingestion = Server::answering(200);
    let hook = Server::answering(200);
    let outcomes = Outcomes::default();
    let client = Client::new(
        guarded(&hook.url, &outcomes)
            .write_key("wk")
            .endpoint(ingestion.url.clone())
            .flush_at(1),
    )
    .unwrap();
    client.enqueue(&Message::identify("u")).unwrap();
    assert!(!client.flush(Some(WAIT)));
    assert_eq!(ingestion.count(), 1, "the operator's own endpoint");
    assert_eq!(hook.count(), 0);
    assert_eq!(outcomes.all()[0].reason, Some(Reason::Blocked));
}

#[test]
fn off_by_default() {
    assert!(!Config::default().block_private_networks);
    let server = Server::answering(200);
    let client = Client::new(support::config().webhooks(vec![Webhook::new(&server.url)])).unwrap();
    client.enqueue(&Message::identify("u")).unwrap();
    assert!(client.flush(Some(WAIT)));
    assert_eq!(server.count(), 1);
}

#[test]
fn allowed_networks_must_be_networks() {
    for bad in ["10.0.0.0/33", "intranet", "10.0.0/8"] {
        match Client::new(
            guarded("http://127.0.0.1:1/h", &Outcomes::default())
                .allowed_networks(vec![bad.into()]),
        ) {
            Err(e @ Error::Config { .. }) => {
                assert!(e.to_string().contains("allowed_networks"), "{e}")
            }
            Err(e) => panic!("{bad}: {e}"),
            Ok(_) => panic!("{bad} accepted"),
        }
    }
}

/// A receiver the guard lets through only by an exception is inside the operator's networks:
/// its answers stay out of the attempts a tenant reads (the status stays). With the guard
/// off (a library's own endpoints) they are kept.
#[test]
fn answers_of_a_receiver_in_an_allowed_network_are_not_kept_in_attempts() {
    let server = Server::start(|_| support::Reply::Full {
        status: 400,
        headers: Vec::new(),
        body: b"{\"db_password\":\"hunter2\"}".to_vec(),
    });
    let answer_of = |config: Config| {
        let client = Client::new(config).unwrap();
        client.enqueue(&Message::identify("u")).unwrap();
        client.flush(Some(WAIT));
        let attempts = client.webhook_attempts(0).unwrap();
        let a = attempts.last().expect("an attempt").clone();
        (
            a.status,
            String::from_utf8_lossy(a.answer.as_deref().unwrap_or(&[])).to_string(),
        )
    };
    let outcomes = Outcomes::default();
    let (status, answer) =
        answer_of(guarded(&server.url, &outcomes).allowed_networks(vec!["127.0.0.0/8".into()]));
    assert_eq!(status, Some(400));
    assert!(!answer.contains("hunter2"), "{answer}");
    assert!(answer.contains("allowed_networks"), "{answer}");
    let (status, answer) = answer_of(support::config().webhooks(vec![Webhook::new(&server.url)]));
    assert_eq!(status, Some(400));
    assert!(answer.contains("hunter2"), "{answer}");
}
