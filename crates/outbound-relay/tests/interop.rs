//! The core's interop corpus (crates/outbound/tests/support/gen.rs: the numbers, keys and
//! strings JavaScript writes its own way) sent through the relay as SDKs send events, in
//! properties, traits, context and fields the core does not know, with Segment's timestamps:
//! every webhook body must verify at the spec's Node receiver
//! (crates/outbound/tests/node/receiver.js), which signs `JSON.stringify(JSON.parse(body))`,
//! so each body is JS-canonical and signed.

#[path = "../../outbound/tests/support/gen.rs"]
#[allow(dead_code)]
mod gen;
mod support;

use gen::Gen;
use serde_json::{json, Map, Value};
use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Stdio};
use support::{basic, post, temp_dir, Relay};

const SECRET: &str = "s3cr€t-ünïcode";
const N: usize = 600;
const CALLS: [&str; 6] = ["track", "identify", "page", "screen", "group", "alias"];

/// A top-level field name the relay keeps as it came (not one of a call's, nor an array
/// index, which no canonical body could keep in its place).
fn other_key(gen: &mut Gen) -> Option<String> {
    let k = gen.key();
    let known = [
        "type",
        "userId",
        "anonymousId",
        "messageId",
        "timestamp",
        "sentAt",
        "context",
        "integrations",
        "event",
        "name",
        "category",
        "groupId",
        "previousId",
        "properties",
        "traits",
        "writeKey",
        "_metadata",
        "version",
        "receivedAt",
        "originalTimestamp",
        "Previous ID",
        "User ID",
    ];
    let index = k
        .parse::<u64>()
        .is_ok_and(|n| n < 4_294_967_295 && n.to_string() == k);
    (!known.contains(&k.as_str()) && !index).then_some(k)
}

fn event(gen: &mut Gen, i: usize) -> Value {
    let call = CALLS[i % CALLS.len()];
    let mut e = Map::new();
    e.insert("type".into(), json!(call));
    e.insert("userId".into(), json!(format!("user-{i}-{}", gen.string())));
    e.insert("messageId".into(), json!(format!("m-{i}")));
    match call {
        "track" => drop(e.insert("event".into(), json!(gen.string() + "x"))),
        "group" => drop(e.insert("groupId".into(), json!(format!("g{i}")))),
        "alias" => drop(e.insert("previousId".into(), json!(format!("anon-{i}")))),
        _ => {}
    }
    let object = Value::Object(gen.object(1));
    match call {
        "identify" | "group" => drop(e.insert("traits".into(), object)),
        "alias" => {}
        _ => drop(e.insert("properties".into(), object)),
    }
    let mut context = gen.object(1);
    if i.is_multiple_of(2) {
        context.insert(
            "library".into(),
            json!({"name": "analytics.js", "version": "next-1"}),
        );
    }
    e.insert("context".into(), Value::Object(context));
    for _ in 0..2 {
        if let Some(k) = other_key(gen) {
            e.insert(k, gen.value(1));
        }
    }
    e.insert("timestamp".into(), json!("2026-11-27T10:00:00.000+01:00"));
    e.insert("sentAt".into(), json!("2026-11-27T09:00:01.500Z"));
    Value::Object(e)
}

#[test]
fn the_interop_corpus_comes_out_of_the_relay_canonical_and_signed() {
    let mut node = Command::new("node")
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../outbound/tests/node/receiver.js"
        ))
        .arg(SECRET)
        .arg(N.to_string())
        .stdout(Stdio::piped())
        .spawn()
        .expect("node is on PATH");
    let mut out = BufReader::new(node.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    let port = line
        .trim()
        .strip_prefix("port ")
        .expect("the receiver's port");
    let dir = temp_dir();
    let cfg = format!(
        "listen = \"127.0.0.1:0\"\ndata_dir = \"data\"\nallowed_networks = [\"127.0.0.0/8\"]\n\
         [[sources]]\nname = \"web\"\nwrite_keys = [\"wk_web\"]\nshared_secret = \"{SECRET}\"\n\
         [[sources.webhooks]]\nurl = \"http://127.0.0.1:{port}/hook\"\n"
    );
    let relay = Relay::start(dir.path(), &cfg);
    let mut gen = Gen::new(44);
    let events: Vec<Value> = (0..N).map(|i| event(&mut gen, i)).collect();
    for chunk in events.chunks(50) {
        let a = post(
            &relay.url("/v1/batch"),
            &[("Authorization", &basic("wk_web"))],
            json!({ "batch": chunk }).to_string().as_bytes(),
        );
        assert_eq!(a.status, 200, "{}", a.body);
        assert_eq!(a.json(), json!({"success": true}), "{}", a.body);
    }
    let status = node.wait().unwrap();
    let mut rest = String::new();
    out.read_to_string(&mut rest).unwrap();
    assert!(status.success(), "node receiver: {rest}\n{}", relay.log());
    assert!(rest.starts_with(&format!("verified {N} ")), "{rest}");
}
