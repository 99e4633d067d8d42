//! Each webhook URL's attempt log, against real receivers on 127.0.0.1: kept by count and
//! age (`attempt_log_size`, `attempt_retention`), chosen by result, status, message and time
//! (`Client::webhook_attempts_where`), and a failure shown whole: the request's headers with
//! its credentials redacted, the answer's headers and up to 64 KiB of its body.

mod support;

use outbound::{
    AttemptQuery, AttemptResult, Client, Config, Error, Message, RetryPolicy, Webhook, ANSWER_KEPT,
};
use std::sync::atomic::{AtomicU16, Ordering::SeqCst};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};
use support::{Outcomes, Reply, Server};

fn config(server: &Server, outcomes: &Outcomes) -> Config {
    support::config()
        .webhooks(vec![Webhook::new(format!("{}/hook", server.url))
            .header("X-Team", "growth")
            .header("Authorization", "Bearer s3cr3t-token")
            .header("X-Api-Key", "k-123")])
        .shared_secret("whsec")
        .on_outcome(outcomes.callback())
        .retry(RetryPolicy {
            base: Duration::from_millis(10),
            max_backoff: Duration::from_millis(20),
            max_retry_duration: Duration::from_millis(200),
            ..Default::default()
        })
}

fn all(client: &Client, query: AttemptQuery) -> Vec<outbound::WebhookAttempt> {
    client.webhook_attempts_where(0, &query).unwrap()
}

#[test]
fn a_log_keeps_its_size_and_answers_by_result_status_message_and_time() {
    let status = Arc::new(AtomicU16::new(200));
    let s = status.clone();
    let server = Server::start(move |_| Reply::Status(s.load(SeqCst)));
    let outcomes = Outcomes::default();
    let client = Client::new(config(&server, &outcomes).attempt_log_size(500)).unwrap();
    let mut ids = Vec::new();
    for i in 0..300 {
        ids.push(
            client
                .enqueue(&Message::track(format!("u{i}"), "A"))
                .unwrap(),
        );
    }
    outcomes.wait_for(300, Duration::from_secs(20));
    let middle = SystemTime::now();
    std::thread::sleep(Duration::from_millis(20));
    status.store(422, SeqCst);
    for i in 0..10 {
        ids.push(
            client
                .enqueue(&Message::track(format!("v{i}"), "B"))
                .unwrap(),
        );
    }
    outcomes.wait_for(310, Duration::from_secs(20));

    let every = all(
        &client,
        AttemptQuery {
            limit: 10_000,
            ..Default::default()
        },
    );
    assert_eq!(every.len(), 310, "more than the default 100 kept");
    assert_eq!(
        client.webhook_attempts(0).unwrap().len(),
        100,
        "a page of 100 by default"
    );
    let refused = all(
        &client,
        AttemptQuery {
            result: Some(AttemptResult::Permanent),
            limit: 1000,
            ..Default::default()
        },
    );
    assert_eq!(refused.len(), 10);
    assert!(refused.iter().all(|a| a.status == Some(422)));
    let by_status = AttemptQuery {
        status: Some(422),
        limit: 1000,
        ..Default::default()
    };
    assert_eq!(all(&client, by_status).len(), 10);
    let since = AttemptQuery {
        since: Some(middle),
        limit: 1000,
        ..Default::default()
    };
    assert_eq!(all(&client, since).len(), 10, "only those after the middle");
    let until = AttemptQuery {
        until: Some(middle),
        limit: 1000,
        ..Default::default()
    };
    assert_eq!(all(&client, until).len(), 300);
    let one = AttemptQuery {
        message_id: Some(ids[7].clone()),
        ..Default::default()
    };
    let one = all(&client, one);
    assert_eq!((one.len(), &*one[0].message_id), (1, ids[7].as_str()));
    let three = AttemptQuery {
        limit: 3,
        ..Default::default()
    };
    assert_eq!(
        all(&client, three)[0].message_id,
        every[0].message_id,
        "newest first"
    );
    match client.webhook_attempts_where(
        0,
        &AttemptQuery {
            limit: 0,
            ..Default::default()
        },
    ) {
        Err(Error::InvalidField { field, .. }) => assert_eq!(field, "limit"),
        other => panic!("{other:?}"),
    }
    client.close(None).unwrap();

    // A smaller log keeps the newest only.
    let outcomes = Outcomes::default();
    status.store(200, SeqCst);
    let client = Client::new(config(&server, &outcomes).attempt_log_size(5)).unwrap();
    for i in 0..12 {
        client
            .enqueue(&Message::track(format!("w{i}"), "C"))
            .unwrap();
    }
    outcomes.wait_for(12, Duration::from_secs(20));
    assert_eq!(all(&client, AttemptQuery::default()).len(), 5);
    client.close(None).unwrap();
}

#[test]
fn attempts_older_than_the_retention_are_gone() {
    let server = Server::start(|_| Reply::Status(200));
    let outcomes = Outcomes::default();
    let client =
        Client::new(config(&server, &outcomes).attempt_retention(Duration::from_millis(300)))
            .unwrap();
    client.enqueue(&Message::track("u1", "Old")).unwrap();
    outcomes.wait_for(1, Duration::from_secs(10));
    assert_eq!(client.webhook_attempts(0).unwrap().len(), 1);
    let end = Instant::now() + Duration::from_secs(5);
    while !client.webhook_attempts(0).unwrap().is_empty() {
        assert!(Instant::now() < end, "the old attempt is still listed");
        std::thread::sleep(Duration::from_millis(20));
    }
    client.close(None).unwrap();
}

#[test]
fn a_failure_shows_its_headers_redacted_and_up_to_64_kib_of_its_answer() {
    let page: Vec<u8> = (0..100_000).map(|i| b'a' + (i % 26) as u8).collect();
    let body = page.clone();
    let server = Server::start(move |_| Reply::Full {
        status: 503,
        headers: vec![
            ("Content-Type".into(), "text/html".into()),
            ("X-Request-Id".into(), "req-42".into()),
            ("Set-Cookie".into(), "session=abc".into()),
        ],
        body: body.clone(),
    });
    let outcomes = Outcomes::default();
    let client = Client::new(config(&server, &outcomes)).unwrap();
    client.enqueue(&Message::track("u1", "Failing")).unwrap();
    outcomes.wait_for(1, Duration::from_secs(10));
    let a = &client.webhook_attempts(0).unwrap()[0];
    assert_eq!(a.status, Some(503));
    let answer = a.answer.as_ref().unwrap();
    assert_eq!(answer.len(), ANSWER_KEPT, "the first 64 KiB");
    assert_eq!(&answer[..], &page[..ANSWER_KEPT]);
    let header = |list: &[(String, String)], name: &str| {
        (list.iter().find(|(k, _)| k == name)).map(|(_, v)| v.clone())
    };
    let sent = &a.request_headers;
    assert_eq!(header(sent, "x-team").as_deref(), Some("growth"));
    assert_eq!(header(sent, "authorization").as_deref(), Some("[redacted]"));
    assert_eq!(header(sent, "x-api-key").as_deref(), Some("[redacted]"));
    assert_eq!(header(sent, "x-signature").as_deref(), Some("[redacted]"));
    assert!(header(sent, "content-type").is_some(), "{sent:?}");
    let flat = format!("{sent:?}");
    assert!(
        !flat.contains("s3cr3t") && !flat.contains("k-123"),
        "{flat}"
    );
    let got = &a.answer_headers;
    assert_eq!(header(got, "x-request-id").as_deref(), Some("req-42"));
    assert_eq!(header(got, "content-type").as_deref(), Some("text/html"));
    assert_eq!(header(got, "set-cookie").as_deref(), Some("[redacted]"));
    client.close(None).unwrap();

    // A delivery keeps neither.
    let ok = Server::start(|_| Reply::Status(200));
    let outcomes = Outcomes::default();
    let client = Client::new(config(&ok, &outcomes)).unwrap();
    client.enqueue(&Message::track("u1", "Taken")).unwrap();
    outcomes.wait_for(1, Duration::from_secs(10));
    let a = &client.webhook_attempts(0).unwrap()[0];
    assert!(a.request_headers.is_empty() && a.answer_headers.is_empty() && a.answer.is_none());
    client.close(None).unwrap();
}

#[test]
fn log_settings_out_of_range_are_refused_naming_them() {
    let refused = |c: Config| match Client::new(c) {
        Err(Error::Config { setting, .. }) => setting,
        other => panic!("{:?}", other.map(|_| ())),
    };
    let base = || Config::default().webhooks(vec![Webhook::new("http://127.0.0.1:9/")]);
    assert_eq!(refused(base().attempt_log_size(0)), "attempt_log_size");
    assert_eq!(refused(base().attempt_log_size(10_001)), "attempt_log_size");
    assert_eq!(
        refused(base().attempt_retention(Duration::ZERO)),
        "attempt_retention"
    );
    let month = Duration::from_secs(31 * 86_400);
    assert_eq!(
        refused(base().attempt_retention(month)),
        "attempt_retention"
    );
}
