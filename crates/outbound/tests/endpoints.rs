//! Endpoints called as they require: Basic, bearer and OAuth2 client-credentials
//! authentication, mutual TLS and an endpoint's own roots, the signature's header and scheme,
//! and a rate limit per endpoint, against real HTTP(S) servers on 127.0.0.1.

mod support;

use outbound::{
    Auth, Client, Config, EndpointTls, Error, HealthState, Message, OAuth2, OutcomeKind, RateLimit,
    Reason, RetryPolicy, SignatureScheme, Webhook,
};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::endpoint::{guarded, wait_until, TokenServer};
use support::{Outcomes, Reply, Server};

const WAIT: Duration = Duration::from_secs(10);

fn with(hooks: Vec<Webhook>) -> Config {
    support::config().webhooks(hooks)
}

fn config_error(config: Config) -> String {
    match Client::new(config) {
        Err(e @ Error::Config { .. }) => e.to_string(),
        Err(e) => panic!("expected a config error, got {e}"),
        Ok(_) => panic!("expected a config error"),
    }
}

#[test]
fn basic_and_bearer_auth_arrive_as_the_authorization_header() {
    let basic = guarded("Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==");
    let bearer = guarded("Bearer t0k.en");
    let outcomes = Outcomes::default();
    let config = with(vec![
        Webhook::new(&basic.url).auth(Auth::basic("Aladdin", "open sesame")),
        Webhook::new(&bearer.url).auth(Auth::bearer("t0k.en")),
    ])
    .on_outcome(outcomes.callback());
    let client = Client::new(config).unwrap();
    client.enqueue(&Message::track("u", "Signed Up")).unwrap();
    assert!(client.flush(Some(WAIT)));
    // Both answered 200: a wrong header would have been a 401 (permanent) at that URL.
    wait_until("both URLs' answers", || {
        (client.webhook_health().iter()).all(|h| h.attempts_5m == 1)
    });
    for h in client.webhook_health() {
        assert_eq!(h.delivered_5m, 1, "{h:?}");
    }
    assert_eq!(outcomes.all()[0].kind, OutcomeKind::Delivered);
}

#[test]
fn auth_settings_are_checked_and_name_their_field() {
    let e = config_error(with(vec![
        Webhook::new("http://127.0.0.1:1/a").auth(Auth::basic("a:b", "p"))
    ]));
    assert!(e.contains("webhooks[0].auth.user"), "{e}");
    let e = config_error(with(vec![Webhook::new("http://127.0.0.1:1/a")
        .header("Authorization", "Bearer x")
        .auth(Auth::bearer("y"))]));
    assert!(e.contains("webhooks[0].auth"), "{e}");
    let e = config_error(with(vec![
        Webhook::new("http://127.0.0.1:1/a"),
        Webhook::new("http://127.0.0.1:1/b").rate_limit(RateLimit::per_second(0)),
    ]));
    assert!(e.contains("webhooks[1].rate_limit.per_second"), "{e}");
    let e = config_error(with(vec![Webhook::new("http://127.0.0.1:1/a").tls(
        EndpointTls {
            client_cert: Some("/nonexistent/cert.pem".into()),
            client_key: Some("/nonexistent/key.pem".into()),
            ca_certs: None,
        },
    )]));
    assert!(e.contains("webhooks[0].tls.client_cert"), "{e}");
    // What a start would read is read by a check too (a service's `check` command).
    let e = Client::validate(&with(vec![Webhook::new("http://127.0.0.1:1/a").tls(
        EndpointTls {
            client_cert: Some("/nonexistent/cert.pem".into()),
            client_key: Some("/nonexistent/key.pem".into()),
            ca_certs: None,
        },
    )]))
    .unwrap_err()
    .to_string();
    assert!(e.contains("webhooks[0].tls.client_cert"), "{e}");
    let e = Client::validate(&with(vec![Webhook::new("http://127.0.0.1:1/a").auth(
        Auth::oauth2(OAuth2::with_assertion_key(
            "http://127.0.0.1:1/t",
            "id",
            "not a key",
        )),
    )]))
    .unwrap_err()
    .to_string();
    assert!(e.contains("webhooks[0].auth.client_assertion_key"), "{e}");
    // A secret never shows in the config's Debug.
    let config = with(vec![Webhook::new("http://127.0.0.1:1/a").auth(
        Auth::oauth2(OAuth2::new("http://127.0.0.1:1/t", "id", "s3cr3t")),
    )]);
    assert!(!format!("{:?}", config.webhooks).contains("s3cr3t"));
}

#[test]
fn a_webhook_s_signature_header_and_scheme_are_its_own() {
    let server = Server::answering(200);
    let config = with(vec![
        Webhook::new(format!("{}/sha", server.url))
            .signature_scheme(SignatureScheme::HmacSha256)
            .signature_header("X-Hub-Signature-256"),
        Webhook::new(format!("{}/classic", server.url)).signature_header("X-Acme-Sig"),
        Webhook::new(format!("{}/default", server.url)),
    ])
    .shared_secret("s3cret");
    let client = Client::new(config).unwrap();
    client.enqueue(&Message::track("u", "E")).unwrap();
    assert!(client.flush(Some(WAIT)));
    assert!(server.wait_for(3, WAIT));
    let at = |path: &str| {
        let r = server.requests();
        r.into_iter().find(|r| r.path == path).unwrap()
    };
    let sha = at("/sha");
    let sig = sha.header("x-hub-signature-256").unwrap();
    assert!(outbound::verify_sha256(b"s3cret", &sha.body, sig), "{sig}");
    assert!(sha.header("x-signature").is_none() && sha.header("x-signature-256").is_none());
    let classic = at("/classic");
    assert!(outbound::verify(
        b"s3cret",
        &classic.body,
        classic.header("x-acme-sig").unwrap()
    ));
    assert!(classic.header("x-signature").is_none());
    let plain = at("/default");
    assert!(outbound::verify(
        b"s3cret",
        &plain.body,
        plain.header("x-signature").unwrap()
    ));
}

#[test]
fn mutual_tls_is_refused_without_the_client_certificate_and_delivered_with_it() {
    let (server_ca, leaf, key) = support::ca_and_leaf();
    let (client_ca, client_cert, client_key) = support::client_ca_and_cert();
    let server = Server::start_mtls(vec![leaf], key, client_ca, |_| Reply::Status(200));
    let send = |tls: EndpointTls| {
        let outcomes = Outcomes::default();
        let config = with(vec![Webhook::new(&server.url).tls(tls)])
            .retry(RetryPolicy {
                max_retry_duration: Duration::from_millis(300),
                base: Duration::from_millis(20),
                ..RetryPolicy::default()
            })
            .on_outcome(outcomes.callback());
        let client = Client::new(config).unwrap();
        client.enqueue(&Message::identify("u")).unwrap();
        client.flush(Some(WAIT));
        let attempts = client.webhook_attempts(0).unwrap();
        (outcomes.all().remove(0), attempts)
    };
    // Trusting the server (its CA as the endpoint's roots) but showing no certificate.
    let (refused, attempts) = send(EndpointTls {
        ca_certs: Some(server_ca.clone()),
        ..EndpointTls::default()
    });
    assert_eq!(refused.kind, OutcomeKind::Failed, "{refused:?}");
    assert_eq!(
        refused.reason,
        Some(Reason::Certificate),
        "final at once: {refused:?}"
    );
    assert_eq!(server.count(), 0, "nothing reached the handler");
    assert_eq!(attempts.len(), 1, "{attempts:?}");
    assert_eq!(
        attempts[0].detail,
        "certificate: the endpoint requires a client certificate (set tls.client_cert and \
         tls.client_key)"
    );
    // A client certificate from a CA the endpoint does not trust.
    let (_, stranger_cert, stranger_key) = support::client_ca_and_cert();
    let (refused, attempts) = send(EndpointTls {
        client_cert: Some(stranger_cert),
        client_key: Some(stranger_key),
        ca_certs: Some(server_ca.clone()),
    });
    assert_eq!(refused.reason, Some(Reason::Certificate), "{refused:?}");
    assert!(
        attempts[0]
            .detail
            .starts_with("certificate: the endpoint refused our client certificate (alert"),
        "{}",
        attempts[0].detail
    );
    assert_eq!(server.count(), 0);
    // With the client certificate and its key (PEM text; a path works the same).
    let dir = std::env::temp_dir().join(format!("outbound-mtls-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("key.pem"), &client_key).unwrap();
    let (delivered, _) = send(EndpointTls {
        client_cert: Some(client_cert),
        client_key: Some(dir.join("key.pem").to_string_lossy().into_owned()),
        ca_certs: Some(server_ca),
    });
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(delivered.kind, OutcomeKind::Delivered, "{delivered:?}");
    assert_eq!(server.count(), 1);
}

#[test]
fn an_endpoint_s_own_roots_replace_the_others() {
    let (ca, leaf, key) = support::ca_and_leaf();
    let (other_ca, _, _) = support::ca_and_leaf();
    let server = Server::start_tls(vec![leaf], key, |_| Reply::Status(200));
    let outcomes = Outcomes::default();
    // The client trusts the server's CA; the endpoint's own roots name another CA only.
    let config = with(vec![Webhook::new(&server.url).tls(EndpointTls {
        ca_certs: Some(other_ca),
        ..EndpointTls::default()
    })])
    .ca_certs(ca)
    .on_outcome(outcomes.callback());
    let client = Client::new(config).unwrap();
    client.enqueue(&Message::identify("u")).unwrap();
    assert!(!client.flush(Some(WAIT)), "a failure");
    let outcome = outcomes.all().remove(0);
    assert_eq!(outcome.kind, OutcomeKind::Failed);
    assert_eq!(outcome.reason, Some(Reason::Certificate), "{outcome:?}");
    let attempt = client.webhook_attempts(0).unwrap().remove(0);
    // Both CAs bear the same name: the server's chain names an issuer whose signature the
    // endpoint's roots do not bear out.
    assert!(
        attempt.detail.starts_with("certificate: ")
            && (attempt.detail.contains("BadSignature")
                || attempt.detail.contains("UnknownIssuer")),
        "{}",
        attempt.detail
    );
    assert_eq!(server.count(), 0);
}

#[test]
fn oauth2_tokens_are_asked_once_kept_and_renewed_when_refused() {
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
    let outcomes = Outcomes::default();
    let config = with(vec![Webhook::new(&endpoint.url).auth(tokens.oauth())])
        .on_outcome(outcomes.callback());
    let client = Client::new(config).unwrap();
    for i in 0..5 {
        client
            .enqueue(&Message::track(format!("u{i}"), "E"))
            .unwrap();
    }
    assert!(client.flush(Some(WAIT)));
    assert_eq!(
        tokens.issued.load(Ordering::SeqCst),
        1,
        "one token for five requests"
    );
    // The server revokes it (issues another elsewhere): the next request gets a 401, asks
    // for a new token once and is delivered with it.
    tokens.issued.fetch_add(1, Ordering::SeqCst);
    client
        .enqueue(&Message::track("u", "After revocation"))
        .unwrap();
    assert!(client.flush(Some(WAIT)));
    assert_eq!(tokens.issued.load(Ordering::SeqCst), 3);
    let all = outcomes.all();
    assert_eq!(all.len(), 6);
    assert!(
        all.iter().all(|o| o.kind == OutcomeKind::Delivered),
        "{all:?}"
    );
}

#[test]
fn a_token_endpoint_s_failures_are_retried_or_final_like_a_delivery_s_and_never_shown() {
    let tokens = TokenServer::start();
    let endpoint = Server::answering(200);
    let outcomes = Outcomes::default();
    let config = with(vec![Webhook::new(&endpoint.url).auth(tokens.oauth())])
        .on_outcome(outcomes.callback());
    let client = Client::new(config).unwrap();
    // A 503 is retried: once the server recovers, the message is delivered.
    tokens.status.store(503, Ordering::SeqCst);
    client.enqueue(&Message::track("u", "E")).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    tokens.status.store(0, Ordering::SeqCst);
    assert!(client.flush(Some(WAIT)));
    assert_eq!(outcomes.all()[0].kind, OutcomeKind::Delivered);
    let attempts = client.webhook_attempts(0).unwrap();
    assert!(attempts.len() >= 2, "{attempts:?}");
    // Newest first: the delivery, then the refused token requests.
    assert!(
        attempts[1]
            .detail
            .contains("OAuth2 token endpoint answered 503"),
        "{attempts:?}"
    );
    drop(client);

    // A 401 (the client refused) is final, and its answer (which echoes a secret) is kept
    // nowhere.
    let outcomes = Outcomes::default();
    let config = with(vec![Webhook::new(&endpoint.url).auth(tokens.oauth())])
        .on_outcome(outcomes.callback());
    let client = Client::new(config).unwrap();
    tokens.status.store(401, Ordering::SeqCst);
    client.enqueue(&Message::track("u", "E")).unwrap();
    assert!(!client.flush(Some(WAIT)), "a failure");
    let outcome = outcomes.all().remove(0);
    assert_eq!(outcome.kind, OutcomeKind::Failed, "{outcome:?}");
    let attempt = client.webhook_attempts(0).unwrap().remove(0);
    assert!(
        attempt.detail.contains("answered 401"),
        "{}",
        attempt.detail
    );
    let shown = format!("{outcome:?} {attempt:?}");
    assert!(
        !shown.contains("s&cret") && !shown.contains("s%26cret"),
        "{shown}"
    );
    assert_eq!(
        endpoint.count(),
        1,
        "only the first client's message reached it"
    );
}

#[test]
fn a_rate_limited_endpoint_gets_no_more_than_its_limit_and_the_others_keep_their_pace() {
    let limited = Server::answering(200);
    let free = Server::answering(200);
    let config = with(vec![
        Webhook::new(&limited.url).rate_limit(RateLimit::per_second(20).burst(5)),
        Webhook::new(&free.url),
    ]);
    let client = Client::new(config).unwrap();
    let start = Instant::now();
    for i in 0..45 {
        client
            .enqueue(&Message::track(format!("u{i}"), "E"))
            .unwrap();
    }
    // The free endpoint has them all while the limited one is still draining.
    assert!(free.wait_for(45, WAIT));
    let free_done = start.elapsed();
    let health = client.webhook_health();
    assert_eq!(health[0].state, HealthState::Throttled, "{health:?}");
    assert!(
        limited.count() < 45,
        "free done in {free_done:?}, limited had all"
    );
    assert!(limited.wait_for(45, WAIT));
    // 5 at once, then 20 a second: the 45th no sooner than 2 s after the start; and no
    // second held more than the burst plus 20.
    let times: Vec<Duration> = (limited.requests().iter())
        .map(|r| r.at.duration_since(start))
        .collect();
    assert!(times[44] >= Duration::from_millis(1900), "{times:?}");
    for (i, t) in times.iter().enumerate() {
        let in_window = times[i..]
            .iter()
            .take_while(|u| **u < *t + Duration::from_secs(1))
            .count();
        assert!(in_window <= 25, "{in_window} within a second of {t:?}");
    }
    assert!(client.flush(Some(WAIT)));
    let health = client.webhook_health();
    assert!(health[0].throttled >= 30, "{health:?}");
    assert_eq!(health[1].throttled, 0);
    assert_eq!(health[0].state, HealthState::Healthy);
}

#[test]
fn an_oauth2_client_can_prove_itself_with_a_signed_jwt_instead_of_a_secret() {
    use base64::Engine as _;
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let key = rcgen::KeyPair::generate().unwrap(); // P-256: ES256
    let public = key.public_key_raw().to_vec();
    let asked = Arc::new(std::sync::Mutex::new(Vec::<serde_json::Value>::new()));
    let seen = asked.clone();
    let tokens = Server::start(move |r| {
        let form: std::collections::HashMap<String, String> =
            url_form(&String::from_utf8_lossy(&r.body));
        let jwt = form.get("client_assertion").cloned().unwrap_or_default();
        let parts: Vec<&str> = jwt.split('.').collect();
        let verified = parts.len() == 3
            && form.get("client_assertion_type").map(String::as_str)
                == Some("urn:ietf:params:oauth:client-assertion-type:jwt-bearer")
            && r.header("authorization").is_none()
            && ring::signature::UnparsedPublicKey::new(
                &ring::signature::ECDSA_P256_SHA256_FIXED,
                &public,
            )
            .verify(
                format!("{}.{}", parts[0], parts[1]).as_bytes(),
                &b64.decode(parts[2]).unwrap_or_default(),
            )
            .is_ok();
        if !verified {
            return Reply::Status(401);
        }
        let header: serde_json::Value =
            serde_json::from_slice(&b64.decode(parts[0]).unwrap()).unwrap();
        let claims: serde_json::Value =
            serde_json::from_slice(&b64.decode(parts[1]).unwrap()).unwrap();
        seen.lock()
            .unwrap()
            .push(serde_json::json!({"header": header, "claims": claims}));
        Reply::Full {
            status: 200,
            headers: vec![],
            body: br#"{"access_token":"jwt-made","expires_in":60}"#.to_vec(),
        }
    });
    let endpoint = guarded("Bearer jwt-made");
    let token_url = format!("{}/oauth/token", tokens.url);
    let auth = OAuth2::with_assertion_key(&token_url, "svc-42", key.serialize_pem());
    let config = with(vec![Webhook::new(&endpoint.url).auth(Auth::oauth2(auth))]);
    let client = Client::new(config).unwrap();
    client.enqueue(&Message::track("u", "E")).unwrap();
    assert!(client.flush(Some(WAIT)), "{:?}", client.webhook_attempts(0));
    let asked = asked.lock().unwrap();
    assert_eq!(asked.len(), 1);
    let (header, claims) = (&asked[0]["header"], &asked[0]["claims"]);
    assert_eq!(header["alg"], "ES256");
    assert_eq!(
        (claims["iss"].as_str(), claims["sub"].as_str()),
        (Some("svc-42"), Some("svc-42"))
    );
    assert_eq!(claims["aud"], token_url.as_str());
    let (iat, exp) = (
        claims["iat"].as_u64().unwrap(),
        claims["exp"].as_u64().unwrap(),
    );
    assert_eq!(exp - iat, 300);
    assert_eq!(claims["jti"].as_str().map(str::len), Some(36));
    // A secret and a key together are refused, naming the field.
    let mut both = OAuth2::with_assertion_key(&token_url, "svc-42", key.serialize_pem());
    both.client_secret = "s".into();
    let e = config_error(with(vec![
        Webhook::new(&endpoint.url).auth(Auth::oauth2(both))
    ]));
    assert!(e.contains("webhooks[0].auth.client_secret"), "{e}");
}

/// `application/x-www-form-urlencoded` text as pairs.
fn url_form(text: &str) -> std::collections::HashMap<String, String> {
    let decode = |s: &str| {
        let s = s.replace('+', " ");
        let mut out = Vec::new();
        let b = s.as_bytes();
        let mut i = 0;
        while i < b.len() {
            if b[i] == b'%' && i + 2 < b.len() {
                out.push(u8::from_str_radix(&s[i + 1..i + 3], 16).unwrap());
                i += 3;
            } else {
                out.push(b[i]);
                i += 1;
            }
        }
        String::from_utf8(out).unwrap()
    };
    (text.split('&'))
        .filter_map(|p| p.split_once('='))
        .map(|(k, v)| (decode(k), decode(v)))
        .collect()
}
