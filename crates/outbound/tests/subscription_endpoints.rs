//! A subscription's endpoint called as it requires, as a webhook's is: Basic and bearer auth,
//! OAuth2 client credentials, mutual TLS, a rate limit and a signature header of its own,
//! set through our JSON settings or `Subscription::with_endpoint`, against real HTTP(S)
//! servers on 127.0.0.1.

mod support;

use outbound::subscription::{BatchSignature, Settings, Subscription};
use outbound::{
    Auth, Client, Config, Endpoint, Error, HealthState, Message, OutcomeKind, RateLimit, Reason,
    RetryPolicy, SignatureScheme,
};
use serde_json::{json, Value};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};
use support::endpoint::{guarded, TokenServer};
use support::{Outcomes, Reply, Server};

const WAIT: Duration = Duration::from_secs(10);

/// A subscription to every track event, from our JSON settings with `extra` in them.
fn every_track(name: &str, url: &str, extra: Value) -> Subscription {
    let mut s = json!({"name": name, "trigger": "type = \"track\"", "url": url});
    for (k, v) in extra.as_object().unwrap() {
        s[k] = v.clone();
    }
    Subscription::from_settings(&s).unwrap()
}

fn with(subs: Vec<Subscription>) -> Config {
    support::config().subscriptions(subs)
}

fn config_error(result: Result<(), Error>) -> String {
    match result {
        Err(Error::Config { setting, reason }) => format!("{setting}: {reason}"),
        other => panic!("expected a config error, got {other:?}"),
    }
}

#[test]
fn basic_and_bearer_auth_reach_a_subscription_s_endpoint() {
    let basic = guarded("Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==");
    let bearer = guarded("Bearer t0k.en");
    // Segment's export has no such settings: the setter gives them. Its auth wins over an
    // Authorization its headers map per event: one is sent.
    let from_segment = Subscription::from_segment(&json!({
        "name": "bearer", "subscribe": "type = \"track\"",
        "mapping": {"url": bearer.url, "method": "POST",
                    "headers": {"Authorization": {"@template": "Bearer {{userId}}"}}}
    }))
    .unwrap()
    .with_endpoint(Endpoint::new().auth(Auth::bearer("t0k.en")));
    let outcomes = Outcomes::default();
    let client = Client::new(
        with(vec![
            every_track(
                "basic",
                &basic.url,
                json!({"auth": {"type": "basic", "user": "Aladdin", "password": "open sesame"}}),
            ),
            from_segment,
        ])
        .on_outcome(outcomes.callback()),
    )
    .unwrap();
    client.enqueue(&Message::track("u", "Signed Up")).unwrap();
    assert!(client.flush(Some(WAIT)));
    // A wrong or missing header would have been a 401 (final) at that receiver.
    let all = outcomes.wait_for(2, WAIT);
    assert_eq!(all.len(), 2, "{all:#?}");
    assert!(
        all.iter().all(|o| o.kind == OutcomeKind::Delivered),
        "{all:#?}"
    );
    assert_eq!((basic.count(), bearer.count()), (1, 1));
    let sent = &bearer.requests()[0];
    let auths = (sent.headers.iter()).filter(|(k, _)| k.eq_ignore_ascii_case("authorization"));
    assert_eq!(auths.count(), 1, "{:?}", sent.headers);
    // The secrets never show in the settings' Debug.
    let shown = format!("{:?}", client.config().subscriptions);
    assert!(
        !shown.contains("open sesame") && !shown.contains("t0k.en"),
        "{shown}"
    );
    client.close(None).unwrap();
}

#[test]
fn an_oauth2_subscription_asks_one_token_keeps_it_and_renews_it_once_when_refused() {
    let tokens = TokenServer::start();
    // The endpoint takes the newest token only (an older one was revoked).
    let issued = tokens.issued.clone();
    let endpoint = Server::start(move |r| {
        let current = format!("Bearer tok-{}", issued.load(Ordering::SeqCst));
        match r.header("authorization") {
            Some(a) if a == current => Reply::Status(200),
            _ => Reply::Status(401),
        }
    });
    let auth = json!({"type": "oauth2", "token_url": format!("{}/token", tokens.server.url),
        "client_id": "client id", "client_secret": "s&cret", "scope": "events:write"});
    let sub = every_track("oauth", &endpoint.url, json!({ "auth": auth }));
    assert_eq!(sub.endpoint().auth, Some(tokens.oauth()), "as a webhook's");
    let outcomes = Outcomes::default();
    let client = Client::new(with(vec![sub]).on_outcome(outcomes.callback())).unwrap();
    for i in 0..5 {
        client
            .enqueue(&Message::track(format!("u{i}"), "E"))
            .unwrap();
    }
    assert!(client.flush(Some(WAIT)));
    assert_eq!(
        tokens.issued.load(Ordering::SeqCst),
        1,
        "one token for five"
    );
    // Revoked: the next request gets a 401, asks a new token once, and is delivered.
    tokens.issued.fetch_add(1, Ordering::SeqCst);
    client.enqueue(&Message::track("u", "After")).unwrap();
    assert!(client.flush(Some(WAIT)));
    assert_eq!(tokens.issued.load(Ordering::SeqCst), 3);
    let all = outcomes.all();
    assert_eq!(all.len(), 6);
    assert!(
        all.iter()
            .all(|o| o.kind == OutcomeKind::Delivered && o.subscription.as_deref() == Some("oauth")),
        "{all:#?}"
    );
    assert_eq!(
        endpoint.count(),
        7,
        "the refused request, then once with the new token"
    );
    client.close(None).unwrap();
}

#[test]
fn a_subscription_behind_mutual_tls_is_refused_without_its_certificate_and_delivered_with_it() {
    let (server_ca, leaf, key) = support::ca_and_leaf();
    let (client_ca, client_cert, client_key) = support::client_ca_and_cert();
    let server = Server::start_mtls(vec![leaf], key, client_ca, |_| Reply::Status(200));
    let send = |tls: Value| {
        let outcomes = Outcomes::default();
        let config = with(vec![every_track(
            "mtls",
            &server.url,
            json!({ "tls": tls }),
        )])
        .retry(RetryPolicy {
            max_retry_duration: Duration::from_millis(300),
            base: Duration::from_millis(20),
            ..RetryPolicy::default()
        })
        .on_outcome(outcomes.callback());
        let client = Client::new(config).unwrap();
        client.enqueue(&Message::track("u", "E")).unwrap();
        client.flush(Some(WAIT));
        let attempts = client.subscription("mtls").unwrap().webhook_attempts(0);
        (outcomes.all().remove(0), attempts.unwrap())
    };
    // The server trusted (its CA as the endpoint's roots), no certificate shown.
    let (refused, attempts) = send(json!({ "ca_certs": server_ca }));
    assert_eq!(refused.kind, OutcomeKind::Failed, "{refused:?}");
    assert_eq!(refused.reason, Some(Reason::Certificate), "{refused:?}");
    assert!(
        attempts[0].detail.contains("requires a client certificate"),
        "{}",
        attempts[0].detail
    );
    assert_eq!(server.count(), 0, "nothing reached the handler");
    // With the client certificate (PEM text) and its key (a path).
    let dir = std::env::temp_dir().join(format!("outbound-sub-mtls-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let key_path = dir.join("key.pem");
    std::fs::write(&key_path, &client_key).unwrap();
    let (delivered, _) = send(json!({"client_cert": client_cert, "ca_certs": server_ca,
        "client_key": key_path.to_string_lossy()}));
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(delivered.kind, OutcomeKind::Delivered, "{delivered:?}");
    assert_eq!(server.count(), 1);
}

#[test]
fn a_rate_limited_subscription_is_throttled_and_shows_it() {
    let limited = Server::answering(200);
    let free = Server::answering(200);
    let client = Client::new(with(vec![
        every_track(
            "limited",
            &limited.url,
            json!({"rate_limit": {"per_second": 20, "burst": 5}}),
        ),
        every_track("free", &free.url, json!({})),
    ]))
    .unwrap();
    let start = Instant::now();
    for i in 0..45 {
        client
            .enqueue(&Message::track(format!("u{i}"), "E"))
            .unwrap();
    }
    assert!(free.wait_for(45, WAIT));
    let sub = client.subscription("limited").unwrap();
    assert_eq!(sub.webhook_health()[0].state, HealthState::Throttled);
    assert!(limited.count() < 45, "the free one done first");
    assert!(limited.wait_for(45, WAIT));
    // 5 at once, then 20 a second: the 45th no sooner than 2 s after the start.
    let last = limited.requests()[44].at.duration_since(start);
    assert!(last >= Duration::from_millis(1900), "{last:?}");
    assert!(client.flush(Some(WAIT)));
    let health = sub.webhook_health();
    assert!(health[0].throttled >= 30, "{health:?}");
    assert_eq!(health[0].state, HealthState::Healthy);
    let free_health = client.subscription("free").unwrap().webhook_health();
    assert_eq!(free_health[0].throttled, 0);
    client.close(None).unwrap();
}

#[test]
fn a_subscription_s_signature_goes_in_its_own_header_unless_its_headers_sign_themselves() {
    let server = Server::answering(200);
    let url = |path: &str| format!("{}/{path}", server.url);
    let mut batch = Settings::new("batch", r#"type = "track""#, &url("batch"));
    batch.batch_size = Some(2);
    batch.batch_signature = BatchSignature::FirstElement;
    batch.data = Some(json!({"n": {"@path": "$.properties.n"}}));
    let batch = Subscription::new(batch)
        .unwrap()
        .with_endpoint(Endpoint::new().signature_header("X-Acme-Sig"));
    let subs = vec![
        every_track(
            "acme",
            &url("acme"),
            json!({"signature_header": "X-Acme-Sig"}),
        ),
        every_track(
            "sha",
            &url("sha"),
            json!({"signature_header": "X-Hub-Signature-256", "signature_scheme": "hmac-sha256"}),
        ),
        // Headers that give X-Signature themselves are not signed by the sender.
        every_track(
            "own",
            &url("own"),
            json!({"signature_header": "X-Acme-Sig", "headers": {"X-Signature": "theirs"}}),
        ),
        // Nor are those that set the endpoint's signature header.
        every_track(
            "own-header",
            &url("own-header"),
            json!({"signature_header": "X-Acme-Sig", "headers": {"X-Acme-Sig": "theirs"}}),
        ),
        batch,
    ];
    let client = Client::new(
        with(subs)
            .shared_secret("s3cret")
            .flush_interval(Duration::from_millis(100)),
    )
    .unwrap();
    for n in 0..2 {
        client
            .enqueue(&Message::track("u", "E").property("n", n))
            .unwrap();
    }
    assert!(client.flush(Some(WAIT)));
    assert!(server.wait_for(9, WAIT), "2 events at 4 endpoints, 1 batch");
    let at = |path: &str| {
        let all = server.requests();
        all.into_iter()
            .find(|r| r.path == format!("/{path}"))
            .unwrap()
    };
    let acme = at("acme");
    let sig = acme
        .header("x-acme-sig")
        .expect("the signature in X-Acme-Sig");
    assert!(outbound::verify(b"s3cret", &acme.body, sig), "{sig}");
    assert!(acme.header("x-signature").is_none());
    let sha = at("sha");
    let sig = sha.header("x-hub-signature-256").unwrap();
    assert!(outbound::verify_sha256(b"s3cret", &sha.body, sig), "{sig}");
    assert!(sha.header("x-signature").is_none() && sha.header("x-signature-256").is_none());
    let own = at("own");
    assert_eq!(own.header("x-signature"), Some("theirs"));
    assert!(own.header("x-acme-sig").is_none());
    let own_header = at("own-header");
    assert_eq!(own_header.header("x-acme-sig"), Some("theirs"));
    assert!(own_header.header("x-signature").is_none());
    // Segment's quirk with the header of its own: the first element signed.
    let batch = at("batch");
    let head = serde_json::to_vec(&batch.json()[0]).unwrap();
    let sig = batch.header("x-acme-sig").expect("the batch's signature");
    assert!(outbound::verify(b"s3cret", &head, sig), "{sig}");
    assert!(batch.header("x-signature").is_none());
    client.close(None).unwrap();
}

#[test]
fn a_subscription_s_endpoint_settings_are_checked_and_named_as_its_own() {
    let url = "http://127.0.0.1:9/x";
    let check =
        |extra: Value| config_error(Client::validate(&with(vec![every_track("s", url, extra)])));
    let cases = [
        (
            json!({"auth": {"type": "bearer", "token": ""}}),
            "subscriptions[0].auth.token",
        ),
        (
            json!({"auth": {"type": "basic", "user": "a:b", "password": "p"}}),
            "subscriptions[0].auth.user",
        ),
        (
            json!({"auth": {"type": "oauth2", "token_url": "ftp://x", "client_id": "i",
                "client_secret": "s"}}),
            "subscriptions[0].auth.token_url",
        ),
        (
            json!({"rate_limit": {"per_second": 0}}),
            "subscriptions[0].rate_limit.per_second",
        ),
        (
            json!({"signature_header": "Content-Type"}),
            "subscriptions[0].signature_header",
        ),
        (
            json!({"signature_scheme": "standard-webhooks", "signature_header": "X-S"}),
            "subscriptions[0].signature_header",
        ),
        // Its PEM files are read by a check, as a start would.
        (
            json!({"tls": {"client_cert": "/nonexistent/c.pem", "client_key": "/nonexistent/k.pem"}}),
            "subscriptions[0].tls.client_cert",
        ),
        (
            json!({"tls": {"client_cert": "-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----"}}),
            "subscriptions[0].tls.client_key",
        ),
        (
            json!({"auth": {"type": "oauth2", "token_url": "http://127.0.0.1:9/t", "client_id": "i",
                "client_assertion_key": "not a key"}}),
            "subscriptions[0].auth.client_assertion_key",
        ),
        // One Authorization: its headers' or its auth's.
        (
            json!({"auth": {"type": "bearer", "token": "t"}, "headers": {"Authorization": "Bearer x"}}),
            "subscriptions[0].auth",
        ),
    ];
    for (extra, want) in cases {
        let got = check(extra.clone());
        assert!(got.starts_with(want), "{extra}: {got}");
        assert!(!got.contains("webhooks[0]"), "{got}");
    }
    // The same from Client::new, and a shape refused as the settings are read.
    let e = match Client::new(with(vec![
        every_track("a", url, json!({})),
        Subscription::new(Settings::new("b", r#"type = "track""#, url))
            .unwrap()
            .with_endpoint(Endpoint::new().rate_limit(RateLimit::per_second(1).burst(0))),
    ])) {
        Err(e) => e.to_string(),
        Ok(_) => panic!("accepted"),
    };
    assert!(e.contains("subscriptions[1].rate_limit.burst"), "{e}");
    let shape = Subscription::from_settings(&json!({"name": "s", "trigger": "type = \"track\"",
        "url": url, "auth": {"type": "bearer", "token": "s3cret", "tokn": 1}}))
    .unwrap_err()
    .to_string();
    assert!(
        shape.contains("auth.tokn") && !shape.contains("s3cret"),
        "{shape}"
    );
    let bad = Subscription::from_settings(&json!({"name": "s", "trigger": "type = \"track\"",
        "url": url, "signature_scheme": "md5"}))
    .unwrap_err()
    .to_string();
    assert!(bad.contains("signature_scheme"), "{bad}");
    // A scheme of its own signs with the client's secret, as a webhook's does.
    let sub = every_track("s", url, json!({"signature_scheme": "standard-webhooks"}));
    assert_eq!(
        sub.endpoint().signature_scheme,
        Some(SignatureScheme::StandardWebhooks)
    );
    let e = config_error(Client::validate(&with(vec![sub]).shared_secret("short")));
    assert!(e.starts_with("subscriptions[0].signature_scheme"), "{e}");
}
