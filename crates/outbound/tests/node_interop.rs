//! Byte-exactness against the receivers the spec describes, run in real Node:
//! every body we write is a fixed point of `JSON.stringify(JSON.parse(body))`, and every
//! signature we send verifies the way the spec's Node receiver checks it.

mod support;

use outbound::{Client, Config, Kind, Message, Webhook};
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::Duration;
use support::gen::{Gen, EDGE_KEYS, EDGE_NUMBERS, EDGE_STRINGS};

fn node_script(name: &str) -> String {
    format!("{}/tests/node/{name}", env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn ten_thousand_generated_bodies_survive_a_javascript_round_trip() {
    let mut gen = Gen::new(0x0b7b0d);
    let mut bodies: Vec<Vec<u8>> = Vec::new();
    // Every edge case on its own, as a value and as a key.
    for n in EDGE_NUMBERS {
        let v: serde_json::Value = serde_json::from_str(n).unwrap();
        bodies.push(
            outbound::canonical_json::to_vec(&outbound::json!({ "n": v, "a": [v] })).unwrap(),
        );
    }
    for k in EDGE_KEYS.iter().chain(EDGE_STRINGS) {
        let mut m = serde_json::Map::new();
        m.insert("z".into(), 1.into());
        m.insert(k.to_string(), k.to_string().into());
        m.insert("5".into(), 2.into());
        bodies.push(outbound::canonical_json::to_vec(&serde_json::Value::Object(m)).unwrap());
    }
    while bodies.len() < 10_500 {
        let v = serde_json::Value::Object(gen.object(0));
        bodies.push(outbound::canonical_json::to_vec(&v).unwrap());
    }
    let path = std::env::temp_dir().join(format!("outbound-roundtrip-{}.txt", std::process::id()));
    let mut file = std::fs::File::create(&path).unwrap();
    for b in &bodies {
        assert!(!b.contains(&b'\n'), "a raw newline would split a body");
        file.write_all(b).unwrap();
        file.write_all(b"\n").unwrap();
    }
    drop(file);
    let out = Command::new("node")
        .arg(node_script("roundtrip.js"))
        .arg(&path)
        .output()
        .expect("node is on PATH");
    let _ = std::fs::remove_file(&path);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        text.trim(),
        format!("round-tripped {} bodies", bodies.len())
    );
}

fn message(gen: &mut Gen, kind: Kind, i: usize) -> Message {
    let uid = format!("user-{i}-{}", gen.string());
    let m = match kind {
        Kind::Identify => Message::identify(uid).traits(gen.object(1)),
        Kind::Track => Message::track(uid, gen.string() + "x").properties(gen.object(1)),
        Kind::Page => Message::page(uid)
            .name(gen.string())
            .properties(gen.object(1)),
        Kind::Screen => Message::screen(uid)
            .name(gen.string())
            .properties(gen.object(1)),
        Kind::Group => Message::group(uid, format!("g{i}")).traits(gen.object(1)),
        Kind::Alias => Message::alias(format!("anon-{i}"), uid),
        Kind::Delete => return Message::delete(uid),
    };
    if i.is_multiple_of(3) {
        m.context(gen.object(1))
    } else {
        m
    }
}

#[test]
fn the_spec_node_receiver_verifies_every_signature_of_every_call_type() {
    const SECRET: &str = "s3cr€t-ünïcode";
    const N: usize = 1050;
    let mut node = Command::new("node")
        .arg(node_script("receiver.js"))
        .arg(SECRET)
        .arg(N.to_string())
        .stdout(Stdio::piped())
        .spawn()
        .expect("node is on PATH");
    let mut out = BufReader::new(node.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    let port: u16 = line
        .trim()
        .strip_prefix("port ")
        .expect("receiver prints its port")
        .parse()
        .unwrap();
    let config = Config::default()
        .webhooks(vec![Webhook::new(format!("http://127.0.0.1:{port}/hook"))])
        .shared_secret(SECRET)
        .max_queue_size(2000)
        .proxy_from_env(false);
    let client = Client::new(config).unwrap();
    let mut gen = Gen::new(42);
    for i in 0..N {
        let kind = Kind::ALL[i % Kind::ALL.len()];
        client.enqueue(&message(&mut gen, kind, i)).unwrap();
    }
    let delivered = client.flush(Some(Duration::from_secs(60)));
    let status = node.wait().unwrap();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut out, &mut rest).unwrap();
    assert!(status.success(), "node receiver: {rest}");
    assert!(delivered, "{:?}", client.stats());
    assert!(rest.starts_with(&format!("verified {N} ")), "{rest}");
    for t in [
        "identify", "track", "page", "screen", "group", "alias", "delete",
    ] {
        assert!(rest.contains(&format!("\"{t}\":150")), "{t} in {rest}");
    }
}
