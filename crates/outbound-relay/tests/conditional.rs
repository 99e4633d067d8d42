//! Conditional writes of the admin API's sources: `GET` answers an `ETag`, and a `PUT` or
//! `DELETE` with a stale `If-Match` is 412 and changes nothing. The defect this prevents: a
//! console (or any editor) that read a source, then saved it after someone else had added a
//! webhook through the API, removed that webhook without a word.

mod support;

use serde_json::{json, Value};
use support::{delete, get, post, put, temp_dir, Addr, InProcess, Receiver};

const ADMIN: (&str, &str) = ("Authorization", "Bearer adm");

fn relay(dir: &std::path::Path) -> InProcess {
    InProcess::start(
        dir,
        "listen = \"127.0.0.1:0\"\ndata_dir = \"data\"\nadmin_token = \"adm\"\n\
         block_private_networks = false\n\
         [[sources]]\nname = \"filed\"\nwrite_keys = [\"wk_filed\"]\nshared_secret = \"file-secret\"\n\
         [[sources.webhooks]]\nurl = \"http://127.0.0.1:9/in\"\n",
    )
}

fn body(hooks: &[&str]) -> Vec<u8> {
    let hooks: Vec<Value> = hooks.iter().map(|u| json!({"url": u})).collect();
    json!({"write_keys": ["wk_web"], "shared_secret": "s3cret", "webhooks": hooks})
        .to_string()
        .into_bytes()
}

fn urls(v: &Value) -> Vec<&str> {
    (v["webhooks"].as_array().unwrap().iter())
        .map(|w| w["url"].as_str().unwrap())
        .collect()
}

#[test]
fn a_stale_if_match_is_412_and_changes_nothing() {
    let dir = temp_dir();
    let (a, b) = (Receiver::start(), Receiver::start());
    let relay = relay(dir.path());
    let path = relay.url("/admin/sources/web");
    let made = put(&path, &[ADMIN], &body(&[&a.url]));
    assert_eq!(made.status, 201, "{}", made.body);
    let first = made.header("etag").expect("an ETag").to_string();
    // GET answers the same tag, until the source changes.
    let read = get(&path, &[ADMIN]);
    assert_eq!(read.header("etag"), Some(first.as_str()));

    // An editor read the source (tag `first`); meanwhile a script adds a webhook.
    let added = put(&path, &[ADMIN], &body(&[&a.url, &b.url]));
    assert_eq!(added.status, 200, "{}", added.body);
    let second = added.header("etag").unwrap().to_string();
    assert_ne!(second, first);
    assert_eq!(get(&path, &[ADMIN]).header("etag"), Some(second.as_str()));

    // The editor's save, made from what it read: refused, naming the header, with the tag now.
    let stale = put(&path, &[ADMIN, ("If-Match", &first)], &body(&[&a.url]));
    assert_eq!(stale.status, 412, "{}", stale.body);
    assert_eq!(stale.json()["field"], "if-match");
    assert!(
        stale.json()["message"]
            .as_str()
            .unwrap()
            .starts_with("if-match: "),
        "{}",
        stale.body
    );
    assert_eq!(stale.header("etag"), Some(second.as_str()));
    let now = get(&path, &[ADMIN]).json();
    assert_eq!(
        urls(&now),
        [a.url.as_str(), b.url.as_str()],
        "nothing changed"
    );

    // Read again, saved with the tag it read: applied, and a new tag.
    let fresh = put(&path, &[ADMIN, ("If-Match", &second)], &body(&[&b.url]));
    assert_eq!(fresh.status, 200, "{}", fresh.body);
    let third = fresh.header("etag").unwrap().to_string();
    assert_eq!(urls(&fresh.json()), [b.url.as_str()]);
    // Any of several tags, or `*`, matches; a weak tag never does.
    let list = format!("\"nope\", {third}");
    let again = put(&path, &[ADMIN, ("If-Match", &list)], &body(&[&b.url]));
    assert_eq!(again.status, 200, "{}", again.body);
    let fourth = again.header("etag").unwrap().to_string();
    let weak = format!("W/{fourth}");
    assert_eq!(
        put(&path, &[ADMIN, ("If-Match", &weak)], &body(&[&b.url])).status,
        412
    );
    let star = put(&path, &[ADMIN, ("If-Match", "*")], &body(&[&b.url]));
    assert_eq!(star.status, 200);
    let fifth = star.header("etag").unwrap().to_string();

    // Without If-Match a write goes ahead as before (scripts).
    let plain = put(&path, &[ADMIN], &body(&[&a.url]));
    assert_eq!(plain.status, 200);
    let sixth = plain.header("etag").unwrap().to_string();

    // A source's own token is held to the same rule.
    let token = post(&relay.url("/admin/sources/web/tokens"), &[ADMIN], b"").json();
    let bearer = format!("Bearer {}", token["token"].as_str().unwrap());
    let own = ("Authorization", bearer.as_str());
    let theirs = put(&path, &[own, ("If-Match", &fifth)], &body(&[&b.url]));
    assert_eq!(
        (theirs.status, theirs.json()["field"].clone()),
        (412, json!("if-match"))
    );
    let mine = put(&path, &[own, ("If-Match", &sixth)], &body(&[&b.url]));
    assert_eq!(mine.status, 200, "{}", mine.body);
    let seventh = mine.header("etag").unwrap().to_string();

    // DELETE: a stale tag deletes nothing; the tag of now deletes.
    let gone = delete(&path, &[ADMIN, ("If-Match", &sixth)]);
    assert_eq!(
        (gone.status, gone.json()["field"].clone()),
        (412, json!("if-match"))
    );
    assert_eq!(get(&path, &[ADMIN]).status, 200);
    assert_eq!(delete(&path, &[ADMIN, ("If-Match", &seventh)]).status, 204);
    // A tag of the source deleted never matches one made again under its name.
    assert_eq!(put(&path, &[ADMIN], &body(&[&a.url])).status, 201);
    let reborn = put(&path, &[ADMIN, ("If-Match", &seventh)], &body(&[&b.url]));
    assert_eq!(reborn.status, 412, "{}", reborn.body);
    let other = get(&path, &[ADMIN]).header("etag").unwrap().to_string();
    assert_ne!(other, seventh);
    // No source: If-Match is 412 (not a 201 that makes one).
    let nowhere = relay.url("/admin/sources/none");
    let absent = put(&nowhere, &[ADMIN, ("If-Match", "*")], &body(&[&a.url]));
    assert_eq!(absent.status, 412, "{}", absent.body);
    assert_eq!(get(&nowhere, &[ADMIN]).status, 404);
}

#[test]
fn if_none_match_creates_only_and_file_sources_have_a_tag_without_their_secrets() {
    let dir = temp_dir();
    let a = Receiver::start();
    let relay = relay(dir.path());
    let path = relay.url("/admin/sources/new");
    let create = ("If-None-Match", "*");
    assert_eq!(put(&path, &[ADMIN, create], &body(&[&a.url])).status, 201);
    let twice = put(&path, &[ADMIN, create], &body(&[&a.url]));
    assert_eq!(twice.status, 412, "{}", twice.body);
    assert_eq!(twice.json()["field"], "if-none-match");
    // relay.toml's source: a tag from what GET shows, the same at each read.
    let filed = get(&relay.url("/admin/sources/filed"), &[ADMIN]);
    let tag = filed.header("etag").expect("a tag").to_string();
    assert!(tag.starts_with("\"f"), "{tag}");
    assert_eq!(
        get(&relay.url("/admin/sources/filed"), &[ADMIN]).header("etag"),
        Some(tag.as_str())
    );
    assert!(!tag.contains("file-secret"));
    // A write to it is still the file's (409), whatever its condition.
    let put_file = put(
        &relay.url("/admin/sources/filed"),
        &[ADMIN, ("If-Match", &tag)],
        &body(&[&a.url]),
    );
    assert_eq!(put_file.status, 409);
}
