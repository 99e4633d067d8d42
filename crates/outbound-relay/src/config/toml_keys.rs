//! toml's errors as `file: key: reason`, the key path found from where the error is.

use super::ConfigError;
use std::collections::HashMap;

/// toml's error as `file: key: reason`, the key found from where the error is (the tables
/// above it and the key on its line): `relay.toml: sources[1].webhooks[0].url: ...`.
pub(super) fn toml_error(file: &str, text: &str, e: toml::de::Error) -> ConfigError {
    let reason = e.message().trim().to_string();
    let key = e
        .span()
        .map(|span| key_at(text, span.start.min(text.len())))
        .unwrap_or_default();
    ConfigError {
        file: file.to_string(),
        key,
        reason,
    }
}

/// The dotted key path at byte `at` of `text`, with array-of-tables indices.
fn key_at(text: &str, mut at: usize) -> String {
    // A span starts at a character; be sure, since slicing inside one would panic.
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    let line = text[line_start..].lines().next().unwrap_or("");
    let here = line.trim();
    // A header's own line counts (a missing key is reported at its table).
    let scanned = if here.starts_with('[') {
        &text[..line_start + line.len()]
    } else {
        &text[..line_start]
    };
    let mut counts: HashMap<String, usize> = HashMap::new();
    let mut table = String::new();
    for line in scanned.lines() {
        let t = line.trim();
        if let Some(name) = t.strip_prefix("[[").and_then(|r| r.split("]]").next()) {
            let name = name.trim().to_string();
            // A new element of an array of tables resets the arrays nested in it.
            counts.retain(|k, _| !k.starts_with(&format!("{name}.")));
            counts
                .entry(name.clone())
                .and_modify(|n| *n += 1)
                .or_insert(0);
            table = name;
        } else if let Some(name) = t.strip_prefix('[').and_then(|r| r.split(']').next()) {
            table = name.trim().to_string();
        }
    }
    // `sources.webhooks` -> `sources[i].webhooks[j]`.
    let mut path = String::new();
    let mut prefix = String::new();
    for part in table.split('.').filter(|p| !p.is_empty()) {
        prefix = if prefix.is_empty() {
            part.to_string()
        } else {
            format!("{prefix}.{part}")
        };
        if !path.is_empty() {
            path.push('.');
        }
        path.push_str(part);
        if let Some(n) = counts.get(&prefix) {
            path.push_str(&format!("[{n}]"));
        }
    }
    if !here.starts_with('[') {
        if let Some(key) = here
            .split('=')
            .next()
            .map(str::trim)
            .filter(|k| !k.is_empty())
        {
            if !path.is_empty() {
                path.push('.');
            }
            path.push_str(key.trim_matches('"'));
        }
    }
    path
}
