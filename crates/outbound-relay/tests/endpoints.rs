//! How each webhook's endpoint is called, through every face of the relay: relay.toml's
//! `auth`, `tls`, `signature_header`, `signature_scheme` and `rate_limit` reach real receivers
//! on 127.0.0.1; the admin API takes the same fields with their secrets write-only; health and
//! metrics show a throttled webhook; `retry_base` reaches the core.

mod support;

use base64::Engine as _;
use serde_json::{json, Value};
use std::time::{Duration, Instant};
use support::mtls::Mtls;
use support::{basic, get, post, put, temp_dir, Addr, Answer, InProcess, Receiver};

const ADMIN: (&str, &str) = ("Authorization", "Bearer adm");

fn top(extra: &str) -> String {
    format!(
        "listen = \"127.0.0.1:0\"\ndata_dir = \"data\"\nadmin_token = \"adm\"\n\
         allowed_networks = [\"127.0.0.0/8\"]\nmax_backoff = 0.2\n{extra}\n"
    )
}

fn send(relay: &impl Addr, key: &str, id: &str) {
    let body = json!({"batch": [{"type": "track", "userId": "u1", "event": "E", "messageId": id}]});
    let a = post(
        &relay.url("/v1/batch"),
        &[("Authorization", &basic(key))],
        body.to_string().as_bytes(),
    );
    assert_eq!(a.status, 200, "{}", a.body);
}

fn put_as(relay: &impl Addr, auth: &str, name: &str, body: &Value) -> Answer {
    put(
        &relay.url(&format!("/admin/sources/{name}")),
        &[("Authorization", auth)],
        body.to_string().as_bytes(),
    )
}

fn shown(relay: &impl Addr, name: &str) -> Value {
    let a = get(&relay.url(&format!("/admin/sources/{name}")), &[ADMIN]);
    assert_eq!(a.status, 200, "{}", a.body);
    a.json()
}

fn until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !done() {
        assert!(Instant::now() < deadline, "waited 20 s for {what}");
        std::thread::sleep(Duration::from_millis(25));
    }
}

/// A certificate and its key, as PEM text (a client's identity for mutual TLS).
fn client_identity() -> (String, String) {
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = rcgen::CertificateParams::new(vec!["relay.test".to_string()])
        .unwrap()
        .self_signed(&key)
        .unwrap();
    (cert.pem(), key.serialize_pem())
}

#[test]
fn relay_toml_basic_and_bearer_webhooks_arrive_with_their_authorization() {
    let (a, b) = (Receiver::start(), Receiver::start());
    let dir = temp_dir();
    let config = format!(
        "{}[[sources]]\nname = \"web\"\nwrite_keys = [\"wk_web\"]\n\
         [[sources.webhooks]]\nurl = \"{}\"\n\
         auth = {{ type = \"basic\", user = \"Aladdin\", password = \"open sesame\" }}\n\
         [[sources.webhooks]]\nurl = \"{}\"\nauth = {{ type = \"bearer\", token = \"t0k-123\" }}\n",
        top(""),
        a.url,
        b.url
    );
    let relay = InProcess::start(dir.path(), &config);
    send(&relay, "wk_web", "m-1");
    let (hit_a, hit_b) = (&a.wait_for(1)[0], &b.wait_for(1)[0]);
    assert_eq!(
        hit_a.header("authorization"),
        Some("Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==")
    );
    assert_eq!(hit_b.header("authorization"), Some("Bearer t0k-123"));
    // Shown through the API without the secrets.
    let web = shown(&relay, "web");
    assert_eq!(
        web["webhooks"][0]["auth"],
        json!({"type": "basic", "user": "Aladdin", "password": {"has_value": true}})
    );
    assert_eq!(
        web["webhooks"][1]["auth"],
        json!({"type": "bearer", "token": {"has_value": true}})
    );
    let text = web.to_string();
    assert!(
        !text.contains("open sesame") && !text.contains("t0k-123"),
        "{text}"
    );
}

#[test]
fn a_webhooks_own_signature_header_and_hmac_sha256_verify() {
    let (rx, plain) = (Receiver::start(), Receiver::start());
    let dir = temp_dir();
    let config = format!(
        "{}[[sources]]\nname = \"web\"\nwrite_keys = [\"wk_web\"]\nshared_secret = \"s3cret\"\n\
         [[sources.webhooks]]\nurl = \"{}\"\nsignature_header = \"X-Hub-Signature-256\"\n\
         signature_scheme = \"hmac-sha256\"\n\
         [[sources.webhooks]]\nurl = \"{}\"\n",
        top(""),
        rx.url,
        plain.url
    );
    let relay = InProcess::start(dir.path(), &config);
    send(&relay, "wk_web", "m-1");
    let hit = &rx.wait_for(1)[0];
    let signature = hit
        .header("x-hub-signature-256")
        .expect("the signature's own header");
    assert!(outbound::verify_sha256(b"s3cret", &hit.body, signature));
    assert!(!outbound::verify_sha256(b"other", &hit.body, signature));
    assert!(hit.header("x-signature").is_none() && hit.header("x-signature-256").is_none());
    // The source's other webhook keeps the source's scheme.
    let other = &plain.wait_for(1)[0];
    let sig = other.header("x-signature").expect("X-Signature");
    assert!(outbound::verify(b"s3cret", &other.body, sig), "{sig}");
    let web = shown(&relay, "web");
    assert_eq!(
        web["webhooks"][0]["signature_header"],
        json!("X-Hub-Signature-256")
    );
    assert_eq!(web["webhooks"][0]["signature_scheme"], json!("hmac-sha256"));
    assert!(web["webhooks"][1].get("signature_scheme").is_none());
}

/// Each endpoint setting through a PUT and back: secrets never shown, the marker keeps the
/// stored value (for the same URL, auth type and token URL), `null` clears it; a source's own
/// token may set them (webhooks are self-service).
#[test]
fn the_admin_api_round_trips_every_endpoint_setting_with_secrets_write_only() {
    let (rx, other) = (Receiver::start(), Receiver::start());
    let dir = temp_dir();
    let relay = InProcess::start(dir.path(), &top(""));
    let (cert, key) = client_identity();
    let body = json!({"write_keys": ["wk_api"], "allowed_networks": ["127.0.0.0/8"],
        "shared_secret": "s3cret",
        "webhooks": [{"url": rx.url,
            "auth": {"type": "basic", "user": "me", "password": "pa55-SECRET"},
            "tls": {"client_cert": cert, "client_key": key, "ca_certs": cert},
            "signature_header": "X-Sig", "signature_scheme": "hmac-sha256",
            "rate_limit": {"per_second": 50}}]});
    let made = put_as(&relay, "Bearer adm", "api", &body);
    assert_eq!(made.status, 201, "{}", made.body);
    let got = shown(&relay, "api");
    let hook = &got["webhooks"][0];
    assert_eq!(
        hook["auth"],
        json!({"type": "basic", "user": "me", "password": {"has_value": true}})
    );
    assert_eq!(
        hook["tls"],
        json!({"client_cert": cert, "client_key": {"has_value": true}, "ca_certs": cert})
    );
    assert_eq!(hook["signature_header"], json!("X-Sig"));
    assert_eq!(hook["signature_scheme"], json!("hmac-sha256"));
    assert_eq!(
        hook["rate_limit"],
        json!({"per_second": 50, "burst": 50}),
        "burst defaults to per_second"
    );
    let text = got.to_string();
    assert!(
        !text.contains("pa55-SECRET") && !text.contains("PRIVATE KEY"),
        "{text}"
    );

    // What GET shows, PUT back by the source's own token: the secrets stay.
    let made = post(&relay.url("/admin/sources/api/tokens"), &[ADMIN], b"");
    let token = format!("Bearer {}", made.json()["token"].as_str().unwrap());
    let a = put_as(&relay, &token, "api", &got);
    assert_eq!(a.status, 200, "{}", a.body);
    assert_eq!(shown(&relay, "api"), got);
    send(&relay, "wk_api", "m-1");
    let hit = &rx.wait_for(1)[0];
    let pair = base64::engine::general_purpose::STANDARD.encode("me:pa55-SECRET");
    assert_eq!(
        hit.header("authorization"),
        Some(format!("Basic {pair}").as_str())
    );
    let sig = hit.header("x-sig").expect("the signature in X-Sig");
    assert!(outbound::verify_sha256(b"s3cret", &hit.body, sig));

    // A kept secret never follows the webhook to another URL, nor to another auth type.
    let mut moved = got.clone();
    moved["webhooks"][0]["url"] = json!(other.url);
    let a = put_as(&relay, &token, "api", &moved);
    assert_eq!(a.status, 400, "{}", a.body);
    assert_eq!(a.json()["field"], json!("webhooks[0].auth.password"));
    let mut retyped = got.clone();
    retyped["webhooks"][0]["auth"] = json!({"type": "bearer", "token": {"has_value": true}});
    let a = put_as(&relay, &token, "api", &retyped);
    assert_eq!(
        a.json()["field"],
        json!("webhooks[0].auth.token"),
        "{}",
        a.body
    );

    // Bearer, then OAuth2: the token kept on a repeat; the client secret kept only for the
    // same token URL.
    let mut bearer = got.clone();
    bearer["webhooks"][0]["auth"] = json!({"type": "bearer", "token": "tok-SECRET"});
    assert_eq!(put_as(&relay, &token, "api", &bearer).status, 200);
    let again = shown(&relay, "api");
    assert_eq!(
        again["webhooks"][0]["auth"],
        json!({"type": "bearer", "token": {"has_value": true}})
    );
    assert_eq!(put_as(&relay, &token, "api", &again).status, 200);
    send(&relay, "wk_api", "m-2");
    assert_eq!(
        rx.wait_for(2)[1].header("authorization"),
        Some("Bearer tok-SECRET")
    );
    let oauth = json!({"type": "oauth2", "token_url": "https://auth.example.com/token",
        "client_id": "relay", "client_secret": "cs-SECRET", "scope": "events"});
    let mut o = again.clone();
    o["webhooks"][0]["auth"] = oauth;
    assert_eq!(put_as(&relay, &token, "api", &o).status, 200);
    let o = shown(&relay, "api");
    assert_eq!(
        o["webhooks"][0]["auth"],
        json!({"type": "oauth2", "token_url": "https://auth.example.com/token",
            "client_id": "relay", "client_secret": {"has_value": true}, "scope": "events"})
    );
    assert!(!o.to_string().contains("cs-SECRET"));
    assert_eq!(put_as(&relay, &token, "api", &o).status, 200);
    let mut elsewhere = o.clone();
    elsewhere["webhooks"][0]["auth"]["token_url"] = json!("https://evil.example.com/token");
    let a = put_as(&relay, &token, "api", &elsewhere);
    assert_eq!(a.status, 400, "{}", a.body);
    assert_eq!(a.json()["field"], json!("webhooks[0].auth.client_secret"));

    // null clears: the key (then the certificate alone is refused by the core), the auth.
    let mut cleared = o.clone();
    cleared["webhooks"][0]["tls"]["client_key"] = Value::Null;
    let a = put_as(&relay, &token, "api", &cleared);
    assert_eq!(a.status, 400, "{}", a.body);
    assert_eq!(a.json()["field"], json!("webhooks[0].tls.client_key"));
    cleared["webhooks"][0]["tls"] = Value::Null;
    cleared["webhooks"][0]["auth"] = Value::Null;
    cleared["webhooks"][0]["rate_limit"] = Value::Null;
    assert_eq!(put_as(&relay, &token, "api", &cleared).status, 200);
    let now = shown(&relay, "api");
    for k in ["auth", "tls", "rate_limit"] {
        assert!(now["webhooks"][0].get(k).is_none(), "{k}: {now}");
    }
    // A kept client key with none stored, and a path for a PEM: refused, named.
    let mut kept = now.clone();
    kept["webhooks"][0]["tls"] = json!({"client_cert": cert, "client_key": {"has_value": true}});
    let a = put_as(&relay, &token, "api", &kept);
    assert_eq!(
        a.json()["field"],
        json!("webhooks[0].tls.client_key"),
        "{}",
        a.body
    );
    kept["webhooks"][0]["tls"] = json!({"ca_certs": "/etc/ssl/private/ca.pem"});
    let a = put_as(&relay, &token, "api", &kept);
    assert_eq!(
        a.json()["field"],
        json!("webhooks[0].tls.ca_certs"),
        "{}",
        a.body
    );

    // The audit trail names what changed, never a value.
    let audit = get(&relay.url("/admin/audit?source=api"), &[ADMIN]);
    assert_eq!(audit.status, 200, "{}", audit.body);
    assert!(
        audit.body.contains("webhooks[0].auth.client_secret")
            && audit.body.contains("webhooks[0].tls"),
        "{}",
        audit.body
    );
    for secret in ["pa55-SECRET", "tok-SECRET", "cs-SECRET", "PRIVATE KEY"] {
        assert!(!audit.body.contains(secret), "{secret}: {}", audit.body);
    }
}

#[test]
fn a_bad_endpoint_value_answers_400_naming_the_field() {
    let rx = Receiver::start();
    let dir = temp_dir();
    let relay = InProcess::start(dir.path(), &top(""));
    let with = |hook: Value| {
        let mut w = json!({"url": rx.url});
        for (k, v) in hook.as_object().unwrap() {
            w[k] = v.clone();
        }
        json!({"write_keys": ["wk_api"], "allowed_networks": ["127.0.0.0/8"], "webhooks": [w]})
    };
    let cases = [
        (
            json!({"rate_limit": {"per_second": 0}}),
            "webhooks[0].rate_limit.per_second",
        ),
        (
            json!({"rate_limit": {"per_second": 5, "burst": 0}}),
            "webhooks[0].rate_limit.burst",
        ),
        (
            json!({"rate_limit": {"per_second": -1}}),
            "webhooks[0].rate_limit.per_second",
        ),
        (
            json!({"signature_scheme": "md5"}),
            "webhooks[0].signature_scheme",
        ),
        (
            json!({"signature_header": "Content-Type"}),
            "webhooks[0].signature_header",
        ),
        (
            json!({"auth": {"type": "basic", "user": "a:b", "password": "p"}}),
            "webhooks[0].auth.user",
        ),
        (
            json!({"auth": {"type": "bearer", "token": ""}}),
            "webhooks[0].auth.token",
        ),
        (
            json!({"auth": {"type": "bearer", "token": "t", "user": "u"}}),
            "webhooks[0].auth",
        ),
        (json!({"auth": {"type": "digest"}}), "webhooks[0].auth"),
        (
            json!({"auth": {"type": "oauth2", "token_url": "ftp://x", "client_id": "i",
            "client_secret": "s"}}),
            "webhooks[0].auth.token_url",
        ),
        (
            json!({"tls": {"client_cert": "-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----"}}),
            "webhooks[0].tls.client_key",
        ),
        (json!({"tls": {"ca_cert": "x"}}), "webhooks[0].tls"),
    ];
    for (hook, field) in cases {
        let a = put_as(&relay, "Bearer adm", "api", &with(hook.clone()));
        assert_eq!(a.status, 400, "{hook}: {}", a.body);
        let got = a.json()["field"].as_str().unwrap_or("").to_string();
        assert!(got.starts_with(field), "{hook}: {got} ({})", a.body);
    }
    // A PEM the core reads only as the client starts: refused the same way, naming it.
    let garbage = json!({"tls": {
        "client_cert": "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
        "client_key": "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"}});
    let a = put_as(&relay, "Bearer adm", "api", &with(garbage.clone()));
    assert_eq!(a.status, 400, "{}", a.body);
    let field = a.json()["field"].as_str().unwrap_or("").to_string();
    assert!(field.starts_with("webhooks[0].tls.client_"), "{}", a.body);
    // Nothing was made, and its write key is nobody's.
    assert_eq!(get(&relay.url("/admin/sources/api"), &[ADMIN]).status, 404);
    let good = with(json!({"auth": {"type": "bearer", "token": "t1"}}));
    assert_eq!(put_as(&relay, "Bearer adm", "other", &good).status, 201);
    // A source replaced by a refused change keeps running as it was.
    let mut worse = with(garbage);
    worse["write_keys"] = json!(["wk_other"]);
    let a = put_as(&relay, "Bearer adm", "other", &worse);
    assert_eq!(a.status, 400, "{}", a.body);
    send(&relay, "wk_api", "m-1");
    assert_eq!(rx.wait_for(1)[0].header("authorization"), Some("Bearer t1"));
    assert!(shown(&relay, "other")["webhooks"][0].get("tls").is_none());

    // relay.toml's refusals name the key in the file.
    let load = |hook: &str| {
        let text = format!(
            "{}[[sources]]\nname = \"web\"\nwrite_keys = [\"wk_web\"]\n\
             [[sources.webhooks]]\nurl = \"{}\"\n{hook}\n",
            top(""),
            rx.url
        );
        let path = dir.path().join("bad.toml");
        std::fs::write(&path, text).unwrap();
        outbound_relay::Relay::load(Some(&path))
            .and_then(|r| match r.sources[0].check() {
                Ok(()) => Ok(r),
                Err((key, reason)) => Err(outbound_relay::ConfigError {
                    file: "bad.toml".into(),
                    key,
                    reason,
                }),
            })
            .map(|_| ())
    };
    let cases = [
        (
            "rate_limit = { per_second = 0 }",
            "sources[0].webhooks[0].rate_limit.per_second",
        ),
        (
            "rate_limit = { per_second = 1, brust = 2 }",
            "sources[0].webhooks[0].rate_limit",
        ),
        (
            "signature_scheme = \"md5\"",
            "sources[0].webhooks[0].signature_scheme",
        ),
        (
            "auth = { type = \"bearer\" }",
            "sources[0].webhooks[0].auth",
        ),
        (
            "auth = { type = \"basic\", user = \"\" }",
            "sources[0].webhooks[0].auth.user",
        ),
        (
            "tls = { client_key = \"k.pem\" }",
            "sources[0].webhooks[0].tls.client_cert",
        ),
    ];
    for (hook, key) in cases {
        let e = load(hook).expect_err(hook);
        assert!(e.key.starts_with(key), "{hook}: {e}");
    }
    load("rate_limit = { per_second = 3 }").expect("a good rate limit");
}

#[test]
fn retry_base_is_read_at_the_top_and_per_source_and_set_by_the_admin_alone() {
    let rx = Receiver::start();
    let dir = temp_dir();
    let config = format!(
        "{}[[sources]]\nname = \"web\"\nwrite_keys = [\"wk_web\"]\n\
         [[sources.webhooks]]\nurl = \"{}\"\n\
         [[sources]]\nname = \"own\"\nwrite_keys = [\"wk_own\"]\nretry_base = 0.01\n\
         [[sources.webhooks]]\nurl = \"{}\"\n",
        top("retry_base = 0.05"),
        rx.url,
        rx.url
    );
    let path = dir.path().join("relay.toml");
    std::fs::write(&path, &config).unwrap();
    let loaded = outbound_relay::Relay::load(Some(&path)).unwrap();
    let base: Vec<Duration> = loaded.sources.iter().map(|s| s.core.retry.base).collect();
    assert_eq!(base, [Duration::from_millis(50), Duration::from_millis(10)]);
    let relay = InProcess::start(dir.path(), &config);
    assert_eq!(shown(&relay, "own")["retry_base"], json!(0.01));
    assert!(
        shown(&relay, "web").get("retry_base").is_none(),
        "inherited: not its own"
    );
    let body = json!({"write_keys": ["wk_api"], "webhooks": [{"url": rx.url}], "retry_base": 2});
    let a = put_as(&relay, "Bearer adm", "api", &body);
    assert_eq!(a.status, 201, "{}", a.body);
    assert_eq!(a.json()["retry_base"], json!(2.0));
    let bad = json!({"write_keys": ["wk_api"], "retry_base": "soon"});
    let a = put_as(&relay, "Bearer adm", "api", &bad);
    assert_eq!(
        (a.status, a.json()["field"].clone()),
        (400, json!("retry_base"))
    );
    let made = post(&relay.url("/admin/sources/api/tokens"), &[ADMIN], b"");
    let token = format!("Bearer {}", made.json()["token"].as_str().unwrap());
    let mut faster = shown(&relay, "api");
    faster["retry_base"] = json!(0.1);
    let a = put_as(&relay, &token, "api", &faster);
    assert_eq!(
        (a.status, a.json()["field"].clone()),
        (403, json!("retry_base"))
    );
}

/// A rate-limited webhook holds what exceeds its limit (nothing is dropped), and shows it:
/// `throttled` in its health, the source's summary and state filter, and `/metrics`.
#[test]
fn a_rate_limited_webhook_is_throttled_in_health_listing_and_metrics() {
    let rx = Receiver::start();
    let dir = temp_dir();
    let config = format!(
        "{}metrics_sources = [\"web\"]\n[[sources]]\nname = \"web\"\nwrite_keys = [\"wk_web\"]\n\
         [[sources.webhooks]]\nurl = \"{}\"\nrate_limit = {{ per_second = 2, burst = 1 }}\n",
        top(""),
        rx.url
    );
    let relay = InProcess::start(dir.path(), &config);
    let started = Instant::now();
    for i in 0..6 {
        send(&relay, "wk_web", &format!("m-{i}"));
    }
    let health = || get(&relay.url("/admin/sources/web/health"), &[ADMIN]).json();
    until("a throttled state", || {
        health()["webhooks"][0]["state"] == json!("throttled")
    });
    let list = get(&relay.url("/admin/sources?state=throttled"), &[ADMIN]);
    assert_eq!(list.status, 200, "{}", list.body);
    let listed = &list.json()["sources"][0];
    assert_eq!(listed["name"], json!("web"), "{}", list.body);
    assert_eq!(listed["summary"]["state"], json!("throttled"));
    assert_eq!(listed["summary"]["unhealthy"], json!(0));
    let metrics = get(&relay.url("/metrics"), &[ADMIN]).body;
    assert!(
        metrics.contains("outbound_relay_webhooks_throttled{source=\"web\"} 1"),
        "{metrics}"
    );
    // Every event arrives, at the limit's pace: 6 at 2 a second after a burst of 1.
    assert_eq!(rx.wait_for(6).len(), 6);
    assert!(
        started.elapsed() >= Duration::from_millis(2000),
        "{:?}",
        started.elapsed()
    );
    let h = health();
    assert!(h["webhooks"][0]["throttled"].as_u64().unwrap() >= 4, "{h}");
    let metrics = get(&relay.url("/metrics"), &[ADMIN]).body;
    let line = (metrics.lines())
        .find(|l| l.starts_with("outbound_relay_webhook_requests_throttled_total{source=\"web\"}"))
        .unwrap_or_else(|| panic!("{metrics}"));
    let n: f64 = line.rsplit(' ').next().unwrap().parse().unwrap();
    assert!(n >= 4.0, "{line}");
}

/// relay.toml's `tls`: the client certificate reaches a receiver that demands one, over roots
/// that are only the webhook's own `ca_certs` (a private CA the web's roots know nothing of);
/// the same receiver without them is a certificate failure.
#[test]
fn a_client_certificate_and_a_private_ca_reach_an_mtls_receiver() {
    let Mtls {
        receiver: rx,
        ca,
        client_cert,
        client_key,
        client_der,
    } = Mtls::start();
    let dir = temp_dir();
    let files = [
        ("client.pem", client_cert),
        ("client.key", client_key),
        ("ca.pem", ca),
    ];
    for (name, text) in &files {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    let path = |name: &str| dir.path().join(name).display().to_string();
    let config = format!(
        "{}[[sources]]\nname = \"web\"\nwrite_keys = [\"wk_web\"]\n\
         [[sources.webhooks]]\nurl = \"{}\"\n\
         tls = {{ client_cert = {:?}, client_key = {:?}, ca_certs = {:?} }}\n\
         [[sources.webhooks]]\nurl = \"{}\"\n",
        top("max_retry_duration = 1"),
        rx.url,
        path("client.pem"),
        path("client.key"),
        path("ca.pem"),
        rx.url.replace("/hook", "/no-roots")
    );
    let relay = InProcess::start(dir.path(), &config);
    send(&relay, "wk_web", "m-1");
    until("the request over mutual TLS", || {
        !rx.hits.lock().unwrap().is_empty()
    });
    assert_eq!(
        rx.hits.lock().unwrap()[0],
        client_der,
        "the client certificate"
    );
    // The second webhook has the web's roots only: the private CA's certificate is refused.
    let attempts = || {
        get(
            &relay.url("/admin/sources/web/webhooks/1/attempts"),
            &[ADMIN],
        )
        .json()["attempts"]
            .clone()
    };
    until("an attempt of the webhook without ca_certs", || {
        attempts().as_array().is_some_and(|a| !a.is_empty())
    });
    let first = &attempts()[0];
    assert_eq!(first["error"], json!("tls"), "{first}");
    assert_eq!(rx.hits.lock().unwrap().len(), 1, "nothing else arrived");
    // Shown through the API: paths as given, the key write-only.
    let shown = shown(&relay, "web");
    assert_eq!(
        shown["webhooks"][0]["tls"],
        json!({"client_cert": path("client.pem"), "client_key": {"has_value": true},
               "ca_certs": path("ca.pem")})
    );
}

/// A PEM file replaced in place (a rotated client certificate) changes the source's
/// fingerprint, so a reload starts its client again; unchanged, it keeps running.
#[test]
fn a_pem_file_replaced_in_place_is_a_change_at_the_next_reload() {
    let rx = Receiver::start();
    let dir = temp_dir();
    let (cert, key) = client_identity();
    std::fs::write(dir.path().join("client.pem"), &cert).unwrap();
    std::fs::write(dir.path().join("client.key"), &key).unwrap();
    let config = format!(
        "{}[[sources]]\nname = \"web\"\nwrite_keys = [\"wk_web\"]\n\
         [[sources.webhooks]]\nurl = \"{}\"\n\
         tls = {{ client_cert = \"client.pem\", client_key = \"client.key\" }}\n",
        top(""),
        rx.url
    );
    let path = dir.path().join("relay.toml");
    std::fs::write(
        &path,
        config.replace("client.", &format!("{}/client.", dir.path().display())),
    )
    .unwrap();
    let fingerprint = || outbound_relay::Relay::load(Some(&path)).unwrap().sources[0].fingerprint;
    let before = fingerprint();
    assert_eq!(fingerprint(), before, "nothing changed");
    let (cert, key) = client_identity();
    std::fs::write(dir.path().join("client.pem"), format!("{cert}\n")).unwrap();
    std::fs::write(dir.path().join("client.key"), key).unwrap();
    assert_ne!(fingerprint(), before, "the files were replaced");
}

/// A token endpoint on 127.0.0.1 answering every request with `{"access_token": token}`;
/// keeps each request's head and body.
fn token_server(token: &'static str) -> (String, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
    use std::io::{BufRead, BufReader, Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/oauth/token", listener.local_addr().unwrap());
    let seen: std::sync::Arc<std::sync::Mutex<Vec<String>>> = Default::default();
    let kept = seen.clone();
    std::thread::spawn(move || {
        for tcp in listener.incoming().flatten() {
            let kept = kept.clone();
            std::thread::spawn(move || {
                let mut writer = tcp.try_clone().unwrap();
                let mut reader = BufReader::new(tcp);
                loop {
                    let mut head = String::new();
                    let mut len = 0;
                    loop {
                        let mut line = String::new();
                        if reader.read_line(&mut line).unwrap_or(0) == 0 {
                            return;
                        }
                        if line.trim_end().is_empty() {
                            break;
                        }
                        let lower = line.to_ascii_lowercase();
                        if let Some(v) = lower.strip_prefix("content-length:") {
                            len = v.trim().parse().unwrap_or(0);
                        }
                        head.push_str(&line);
                    }
                    let mut body = vec![0; len];
                    if reader.read_exact(&mut body).is_err() {
                        return;
                    }
                    kept.lock()
                        .unwrap()
                        .push(format!("{head}\n{}", String::from_utf8_lossy(&body)));
                    let answer = format!("{{\"access_token\":\"{token}\",\"token_type\":\"Bearer\",\"expires_in\":3600}}");
                    let reply = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{answer}",
                        answer.len()
                    );
                    if writer.write_all(reply.as_bytes()).is_err() {
                        return;
                    }
                }
            });
        }
    });
    (url, seen)
}

/// relay.toml's OAuth2 client credentials: the token is asked of the token URL with the
/// client's id and secret, and the webhook gets it as a bearer token.
#[test]
fn an_oauth2_webhook_gets_its_token_from_the_token_url_and_sends_it_as_bearer() {
    let rx = Receiver::start();
    let (token_url, asked) = token_server("at-42");
    let dir = temp_dir();
    let config = format!(
        "{}[[sources]]\nname = \"web\"\nwrite_keys = [\"wk_web\"]\n\
         [[sources.webhooks]]\nurl = \"{}\"\n\
         auth = {{ type = \"oauth2\", token_url = \"{token_url}\", client_id = \"relay\", \
         client_secret = \"cs-1\", scope = \"events:write\" }}\n",
        top(""),
        rx.url
    );
    let relay = InProcess::start(dir.path(), &config);
    send(&relay, "wk_web", "m-1");
    send(&relay, "wk_web", "m-2");
    let hits = rx.wait_for(2);
    for hit in &hits {
        assert_eq!(hit.header("authorization"), Some("Bearer at-42"));
    }
    let asked = asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 1, "one token for both: {asked:?}");
    let basic = base64::engine::general_purpose::STANDARD.encode("relay:cs-1");
    let request = asked[0].to_ascii_lowercase();
    assert!(request.starts_with("post /oauth/token"), "{request}");
    assert!(
        request.contains(&format!(
            "authorization: basic {}",
            basic.to_ascii_lowercase()
        )),
        "{request}"
    );
    assert!(
        request.contains("grant_type=client_credentials"),
        "{request}"
    );
    assert!(request.contains("scope=events%3awrite"), "{request}");
}

/// Through the API, an OAuth2 client may prove itself with a key instead of a secret: the key
/// is write-only (shown as kept, never returned), PEM text only, and the token request
/// carries a JWT client assertion and no Basic header.
#[test]
fn an_oauth2_client_assertion_key_is_write_only_and_signs_the_token_request() {
    let rx = Receiver::start();
    let (token_url, asked) = token_server("at-jwt");
    let dir = temp_dir();
    let relay = InProcess::start(dir.path(), &top(""));
    let key = rcgen::KeyPair::generate().unwrap().serialize_pem();
    let body = |key: Value| {
        json!({"write_keys": ["wk_api"], "allowed_networks": ["127.0.0.0/8"], "webhooks": [{
            "url": rx.url,
            "auth": {"type": "oauth2", "token_url": token_url, "client_id": "relay-42",
                     "client_assertion_key": key}}]})
    };
    let a = put_as(
        &relay,
        "Bearer adm",
        "api",
        &body(json!("/etc/ssl/private/key.pem")),
    );
    assert_eq!(a.status, 400, "{}", a.body);
    assert_eq!(a.json()["field"], "webhooks[0].auth.client_assertion_key");
    let a = put_as(&relay, "Bearer adm", "api", &body(json!(key)));
    assert_eq!(a.status, 201, "{}", a.body);
    let auth = &shown(&relay, "api")["webhooks"][0]["auth"];
    assert_eq!(
        auth["client_assertion_key"],
        json!({"has_value": true}),
        "{auth}"
    );
    assert!(auth.get("client_secret").is_none(), "{auth}");
    assert!(!auth.to_string().contains("PRIVATE KEY"));
    send(&relay, "wk_api", "m-1");
    assert_eq!(
        rx.wait_for(1)[0].header("authorization"),
        Some("Bearer at-jwt")
    );
    let request = asked.lock().unwrap()[0].clone();
    assert!(
        request.contains(
            "client_assertion_type=urn%3Aietf%3Aparams%3Aoauth%3Aclient-assertion-type%3Ajwt-bearer"
        ),
        "{request}"
    );
    assert!(request.contains("client_assertion=ey"), "{request}");
    assert!(
        !request
            .to_ascii_lowercase()
            .contains("authorization: basic"),
        "{request}"
    );
    // A PUT that repeats the marker keeps the key.
    let a = put_as(
        &relay,
        "Bearer adm",
        "api",
        &body(json!({"has_value": true})),
    );
    assert_eq!(a.status, 200, "{}", a.body);
}
