//! A source as the admin API reads and shows it. A body is read through the same path as a
//! `[[sources]]` table of `relay.toml` (written out as that table, parsed by the file's
//! serde shape, converted by `config::Base`, checked by the core), so a refusal names the
//! field as the file's errors do (`webhooks[0].url: ...`), without the file's `sources[i].`.
//!
//! Write-only fields (`shared_secret`, `forward.write_key`): never shown; left out of a PUT,
//! the current value stays; `null` clears it.

use crate::config::{self, Base, ManagedBy, SourceFile};
use serde_json::{json, Map, Value};

/// Settings the relay's operator keeps: the storage and its logs, the egress path, and a
/// file read on the relay's host.
const OPERATOR_ONLY: [&str; 4] = ["spool", "spool_commit_interval", "debug", "proxy_from_env"];
/// Read-only fields of an answer, accepted back (a console PUTs what it got) and ignored.
const SHOWN_ONLY: [&str; 3] = ["managed_by", "has_shared_secret", "name"];

/// A refusal: the field and why.
pub type Refusal = (String, String);

/// The body of a PUT for source `name`, with what the store holds of it now (`current`):
/// what to store (secrets included) and the source to run.
pub fn read(
    name: &str,
    body: &Value,
    current: Option<&Value>,
    base: &Base,
) -> Result<(Value, config::Source), Refusal> {
    let Value::Object(given) = body else {
        return Err((String::new(), "body must be a JSON object".into()));
    };
    if let Some(n) = given.get("name").filter(|n| n.as_str() != Some(name)) {
        return Err((
            "name".into(),
            format!("{n} is not the name in the path ({name:?})"),
        ));
    }
    let mut table = Map::new();
    for (k, v) in given {
        if OPERATOR_ONLY.contains(&k.as_str()) {
            return Err((
                k.clone(),
                "set in relay.toml by the relay's operator, not through the API".into(),
            ));
        }
        if k == "ca_certs"
            && v.as_str()
                .is_some_and(|t| !t.trim_start().starts_with("-----BEGIN"))
        {
            return Err((
                k.clone(),
                "must be PEM text through the API (a path would be read on the relay's host)"
                    .into(),
            ));
        }
        if !SHOWN_ONLY.contains(&k.as_str()) {
            table.insert(k.clone(), v.clone());
        }
    }
    keep_secret(&mut table, current, &["shared_secret"]);
    if let Some(Value::Object(forward)) = table.get_mut("forward") {
        forward.remove("has_write_key");
        let now = current.and_then(|c| c.get("forward"));
        keep_secret(forward, now, &["write_key"]);
    }
    strip_nulls(&mut table);
    let mut stored = table.clone();
    stored.insert("name".into(), Value::String(name.into()));
    let stored = Value::Object(stored);
    let file = parse(&stored)?;
    let source = base.source(&file, "", ManagedBy::Api)?;
    Ok((stored, source))
}

/// A stored body back into its source (at start, and a fleet's changes).
pub fn load(stored: &Value, base: &Base) -> Result<config::Source, Refusal> {
    base.source(&parse(stored)?, "", ManagedBy::Api)
}

/// `key` from `current` when the body leaves it out (`null` clears it).
fn keep_secret(table: &mut Map<String, Value>, current: Option<&Value>, keys: &[&str]) {
    for key in keys {
        if !table.contains_key(*key) {
            if let Some(v) = current.and_then(|c| c.get(*key)) {
                table.insert(key.to_string(), v.clone());
            }
        }
    }
}

/// TOML has no null: a null is a value left out.
fn strip_nulls(map: &mut Map<String, Value>) {
    map.retain(|_, v| !v.is_null());
    for v in map.values_mut() {
        match v {
            Value::Object(m) => strip_nulls(m),
            Value::Array(items) => {
                for item in items {
                    if let Value::Object(m) = item {
                        strip_nulls(m);
                    }
                }
            }
            _ => {}
        }
    }
}

/// The body as one `[[sources]]` table of a file, parsed by the file's own shape: its
/// errors keyed as the file's are, `sources[0].` taken off.
fn parse(table: &Value) -> Result<SourceFile, Refusal> {
    let doc = json!({"listen": "-", "sources": [table]});
    let text = toml::to_string(&doc)
        .map_err(|e| (String::new(), format!("cannot be read as a source: {e}")))?;
    match config::File::parse("admin API", &text) {
        Ok(mut file) => Ok(file.sources.remove(0)),
        Err(e) => {
            let key = e.key.strip_prefix("sources[0]").unwrap_or(&e.key);
            Err((key.trim_start_matches('.').to_string(), e.reason))
        }
    }
}

/// Seconds as the file writes them.
fn secs(d: std::time::Duration) -> Value {
    json!(d.as_secs_f64())
}

/// What the API shows of `spec`: every field a PUT takes but the secrets (whether each is
/// set instead), the delivery settings the source sets itself, and who manages it.
pub fn view(spec: &config::Source) -> Value {
    let c = &spec.core;
    let webhooks: Vec<Value> = (c.webhooks.iter())
        .map(|w| {
            let headers: Map<String, Value> = (w.headers.iter())
                .map(|(k, v)| (k.clone(), Value::String(v.clone())))
                .collect();
            json!({"url": w.url, "headers": headers, "enabled": w.enabled})
        })
        .collect();
    let forward = c
        .write_key
        .as_ref()
        .map(|_| json!({"endpoint": c.endpoint, "has_write_key": true}));
    let mut out = json!({
        "name": spec.name,
        "managed_by": spec.managed_by.as_str(),
        "write_keys": spec.write_keys,
        "allowed_origins": spec.allowed_origins,
        "webhooks": webhooks,
        "has_shared_secret": c.shared_secret.is_some(),
        "forward": forward,
    });
    let Value::Object(map) = &mut out else {
        unreachable!("an object")
    };
    for key in &spec.own_keys {
        let value = match *key {
            "timeout" => secs(c.timeout),
            "max_retry_duration" => secs(c.retry.max_retry_duration),
            "max_backoff" => secs(c.retry.max_backoff),
            "max_retry_after" => secs(c.retry.max_retry_after),
            "max_in_flight" => json!(c.max_in_flight),
            "workers" => json!(c.workers),
            "signature_scheme" => json!(c.signature_scheme.as_str()),
            "webhook_user_agent" => json!(c.webhook_user_agent),
            "gzip" => json!(c.gzip),
            "flush_at" => json!(c.flush_at),
            "max_batch_messages" => json!(c.max_batch_messages),
            "flush_interval" => secs(c.flush_interval),
            "max_queue_size" => json!(c.max_queue_size),
            "queue_full_wait" => secs(c.queue_full_wait),
            "ca_certs" => json!(c.ca_certs),
            "proxy_from_env" => json!(c.proxy_from_env),
            "spool_max_bytes" => json!(c.spool_max_bytes),
            "spool_commit_interval" => secs(c.spool_commit_interval),
            "debug" => json!(c.debug),
            // The storage is the operator's: not shown (a Redis URL holds a password).
            _ => continue,
        };
        map.insert(key.to_string(), value);
    }
    out
}
