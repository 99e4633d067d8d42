//! The operator's alerts (`alert_url`): a URL's circuit opening and closing, a source's
//! messages waiting and dead letters crossing their thresholds and going back, its spool
//! nearing its cap, each delivered to a real receiver on 127.0.0.1 as a Standard Webhooks
//! request whose signature the test verifies with the operator's secret; and
//! `GET /admin/alerts`, the admin's and a source token's.

mod support;

use base64::Engine as _;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::sync::atomic::Ordering::SeqCst;
use std::time::{Duration, Instant};
use support::{basic, delete, get, post, temp_dir, Addr, Hit, InProcess, Receiver};

const ADMIN: (&str, &str) = ("Authorization", "Bearer adm");
/// The operator's key (24 bytes), as Standard Webhooks writes it.
const KEY: &[u8] = b"operator-alert-key-24byt";

fn secret() -> String {
    format!(
        "whsec_{}",
        base64::engine::general_purpose::STANDARD.encode(KEY)
    )
}

/// HMAC-SHA256 (RFC 2104), written out: the test depends on no signing code of the relay.
fn hmac_sha256(key: &[u8], data: &[u8]) -> Vec<u8> {
    let mut k = [0u8; 64];
    k[..key.len()].copy_from_slice(key);
    let pad = |b: u8| k.iter().map(|x| x ^ b).collect::<Vec<u8>>();
    let inner = Sha256::new()
        .chain_update(pad(0x36))
        .chain_update(data)
        .finalize();
    Sha256::new()
        .chain_update(pad(0x5c))
        .chain_update(inner)
        .finalize()
        .to_vec()
}

/// The request's Standard Webhooks signature, checked: `v1,base64(HMAC(id.timestamp.body))`.
fn verified(hit: &Hit) -> Value {
    let id = hit.header("webhook-id").expect("webhook-id");
    let ts = hit.header("webhook-timestamp").expect("webhook-timestamp");
    let signed = format!("{id}.{ts}.{}", String::from_utf8_lossy(&hit.body));
    let want =
        base64::engine::general_purpose::STANDARD.encode(hmac_sha256(KEY, signed.as_bytes()));
    let got = hit.header("webhook-signature").expect("webhook-signature");
    assert!(
        got.split(' ').any(|s| s == format!("v1,{want}")),
        "signature {got:?} is not v1,{want}"
    );
    assert!(hit.header("x-signature").is_none());
    let body = hit.json();
    assert_eq!(body["messageId"].as_str(), Some(id));
    body
}

/// Waits for the alert `event` at the operator's receiver; its body, signature checked.
fn alert(ops: &Receiver, event: &str) -> Value {
    let end = Instant::now() + Duration::from_secs(40);
    loop {
        let found = (ops.hits().iter())
            .map(verified)
            .find(|b| b["event"] == event);
        if let Some(b) = found {
            return b;
        }
        assert!(
            Instant::now() < end,
            "no {event} alert; got {:?}",
            (ops.hits().iter())
                .map(|h| h.json()["event"].clone())
                .collect::<Vec<_>>()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn track(relay: &impl Addr, n: usize, from: usize) -> usize {
    let mut taken = 0;
    for i in from..from + n {
        let body = format!(r#"{{"userId":"u1","event":"E","messageId":"m-{i}"}}"#);
        let a = post(
            &relay.url("/v1/track"),
            &[("Authorization", &basic("wk_web"))],
            body.as_bytes(),
        );
        taken += usize::from(a.status == 200);
    }
    taken
}

#[test]
fn the_operator_is_told_of_circuits_thresholds_and_the_spool_by_signed_webhooks() {
    let (ops, rx) = (Receiver::start(), Receiver::start());
    rx.status.store(503, SeqCst);
    let dir = temp_dir();
    let config = format!(
        "listen = \"127.0.0.1:0\"\ndata_dir = \"data\"\nadmin_token = \"adm\"\n\
         allowed_networks = [\"127.0.0.0/8\"]\nmax_backoff = 0.05\n\
         alert_url = \"{}\"\nalert_secret = \"{}\"\nalert_interval = 0.1\n\
         alert_waiting = 10\nalert_dead_letters = 3\nalert_spool_percent = 20\n\
         [[sources]]\nname = \"web\"\nwrite_keys = [\"wk_web\"]\nspool_max_bytes = 20000\n\
         [[sources.webhooks]]\nurl = \"{}\"\n",
        ops.url,
        secret(),
        rx.url
    );
    let relay = InProcess::start(dir.path(), &config);
    // The receiver fails every request: messages wait, the spool fills, the circuit opens.
    assert!(track(&relay, 30, 0) >= 10);
    let waiting = alert(&ops, "source.waiting_above");
    assert_eq!(waiting["type"], "track");
    let p = &waiting["properties"];
    assert_eq!(
        (p["source"].as_str(), p["threshold"].as_u64()),
        (Some("web"), Some(10))
    );
    assert!(
        p["waiting"].as_u64().unwrap() >= 10 && p["relay"].is_string(),
        "{p}"
    );
    let spool = alert(&ops, "source.spool_near_full");
    assert_eq!(spool["properties"]["spool_max_bytes"], 20000);
    assert!(spool["properties"]["percent"].as_u64().unwrap() >= 20);
    let opened = alert(&ops, "webhook.circuit_opened");
    let p = &opened["properties"];
    assert_eq!(
        (p["source"].as_str(), p["webhook"].as_u64()),
        (Some("web"), Some(0))
    );
    assert!(p["consecutive_failures"].as_u64().unwrap() >= 20, "{p}");
    assert!(p["url"].as_str().unwrap().starts_with("http://127.0.0.1:"));
    // Back: the circuit closes, and what waited drains.
    rx.status.store(200, SeqCst);
    alert(&ops, "webhook.circuit_closed");
    alert(&ops, "source.waiting_below");
    alert(&ops, "source.spool_ok");
    // Refused for good: dead letters past the threshold, then discarded, back under it.
    rx.status.store(400, SeqCst);
    assert_eq!(track(&relay, 3, 100), 3);
    let dead = alert(&ops, "source.dead_letters_above");
    assert_eq!(dead["properties"]["dead_letters"], 3);
    for i in 100..103 {
        let path = format!("/admin/sources/web/dead-letters/m-{i}");
        assert_eq!(delete(&relay.url(&path), &[ADMIN]).status, 200);
    }
    alert(&ops, "source.dead_letters_below");
    // Each crossing once: no alert sent twice for one crossing.
    let events: Vec<String> = (ops.hits().iter())
        .map(|h| h.json()["event"].as_str().unwrap().to_string())
        .collect();
    let mut unique = events.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), events.len(), "{events:?}");

    // The console's view: every alert for the admin, with where they go; a source's token
    // its own source's, without the operator's URL.
    let list = get(&relay.url("/admin/alerts"), &[ADMIN]).json();
    assert_eq!(list["on"], true);
    assert!(list["url"]
        .as_str()
        .unwrap()
        .starts_with("http://127.0.0.1:"));
    assert_eq!(list["state"], "healthy");
    let shown: Vec<&str> = (list["alerts"].as_array().unwrap().iter())
        .map(|a| a["event"].as_str().unwrap())
        .collect();
    assert_eq!(shown.len(), events.len());
    assert_eq!(shown[0], "source.dead_letters_below", "newest first");
    let ids: Vec<&str> = (list["alerts"].as_array().unwrap().iter())
        .map(|a| a["message_id"].as_str().unwrap())
        .collect();
    assert!(ops
        .hits()
        .iter()
        .all(|h| ids.contains(&h.header("webhook-id").unwrap())));
    let token = post(&relay.url("/admin/sources/web/tokens"), &[ADMIN], b"").json();
    let bearer = format!("Bearer {}", token["token"].as_str().unwrap());
    let mine = get(&relay.url("/admin/alerts"), &[("Authorization", &bearer)]).json();
    assert_eq!(mine["alerts"].as_array().unwrap().len(), events.len());
    assert!(mine["url"].is_null() && mine["state"].is_null());
    let other = get(
        &relay.url("/admin/alerts?source=shop"),
        &[("Authorization", &bearer)],
    );
    assert_eq!(other.status, 403);
}

#[test]
fn alert_settings_are_checked_at_start() {
    let dir = temp_dir();
    let base = "listen = \"127.0.0.1:0\"\ndata_dir = \"data\"\nadmin_token = \"adm\"\n";
    for (extra, key) in [
        ("alert_url = \"http://127.0.0.1:9/ops\"\n", "alert_secret"),
        ("alert_secret = \"s\"\n", "alert_secret"),
        (
            "alert_url = \"ftp://127.0.0.1/ops\"\nalert_secret = \"s\"\nalert_signature_scheme = \"x-signature\"\n",
            "alert_url",
        ),
        (
            "alert_url = \"http://127.0.0.1:9/ops\"\nalert_secret = \"not-whsec\"\n",
            "alert_secret",
        ),
        (
            "alert_url = \"http://127.0.0.1:9/ops\"\nalert_secret = \"s\"\nalert_signature_scheme = \"x-signature\"\nalert_spool_percent = 101\n",
            "alert_spool_percent",
        ),
    ] {
        let path = dir.path().join("relay.toml");
        std::fs::write(&path, format!("{base}{extra}")).unwrap();
        let Err(e) = outbound_relay::Relay::load(Some(&path)) else {
            panic!("{extra}: accepted")
        };
        assert_eq!(e.key, key, "{extra}: {e}");
    }
}
