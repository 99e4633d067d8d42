//! docs/relay.md's configuration reference against the code: every key the file's serde
//! shapes take is in the table at the level it takes it, and nothing else is; whether a
//! reload applies it and whether a source token may change it say what the code does; the
//! numeric defaults are the core's.

#[cfg(test)]
mod tests {
    use crate::config::{File, DELIVERY_KEYS};
    use crate::control::sources::SELF_SERVICE;
    use crate::operations::reload::START_ONLY_KEYS;
    use std::collections::BTreeSet;

    const DOC: &str = include_str!("../../../../docs/relay.md");

    /// The fields a table of relay.toml takes, as serde names them when it refuses one
    /// (`expected one of ...`): read from the code, not written down twice.
    fn fields(text: &str) -> BTreeSet<String> {
        let e = toml::from_str::<File>(text).expect_err("refused");
        let msg = e.message().to_string();
        // "expected one of `a`, `b`", "expected `a` or `b`", "expected `a`".
        let list = msg.split("expected").nth(1).expect(&msg);
        list.split('`')
            .skip(1)
            .step_by(2)
            .map(str::to_string)
            .collect()
    }

    struct Row {
        keys: Vec<String>,
        at: String,
        default: String,
        reload: String,
        token: String,
    }

    fn rows() -> Vec<Row> {
        let start = DOC.find("<!-- reference:start -->").expect("start marker");
        let end = DOC.find("<!-- reference:end -->").expect("end marker");
        (DOC[start..end].lines())
            .filter(|l| l.starts_with("| `"))
            .map(|l| {
                let cells: Vec<&str> = l.split(" | ").map(|c| c.trim_matches(['|', ' '])).collect();
                Row {
                    keys: (cells[0].split(", "))
                        .map(|k| k.trim_matches('`').to_string())
                        .collect(),
                    at: cells[1].to_string(),
                    default: cells[3].to_string(),
                    reload: cells[4].to_string(),
                    token: cells[5].to_string(),
                }
            })
            .collect()
    }

    #[test]
    fn the_reference_names_every_key_at_its_level_and_nothing_else() {
        let top = fields("zz_unknown = 1\n");
        let source = fields("listen = \"-\"\n[[sources]]\nzz_unknown = 1\n");
        let webhook = fields(
            "listen = \"-\"\n[[sources]]\nname = \"a\"\nwrite_keys = [\"k\"]\n\
             [[sources.webhooks]]\nzz_unknown = 1\n",
        );
        let forward = fields(
            "listen = \"-\"\n[[sources]]\nname = \"a\"\nwrite_keys = [\"k\"]\n\
             [sources.forward]\nzz_unknown = 1\n",
        );
        let delivery: BTreeSet<String> = DELIVERY_KEYS.iter().map(|k| k.to_string()).collect();
        let mut want: BTreeSet<(String, String)> = BTreeSet::new();
        for k in &top {
            let at = if delivery.contains(k) {
                "top, source"
            } else {
                "top"
            };
            want.insert((at.into(), k.clone()));
        }
        for k in source.difference(&delivery) {
            want.insert(("source".into(), k.clone()));
        }
        // Secrets read from files: read into their key before the file's shape sees them.
        use crate::config::env::{SOURCE_SECRET_FILES, TOP_SECRET_FILES};
        want.extend(
            TOP_SECRET_FILES
                .iter()
                .map(|k| ("top".to_string(), format!("{k}_file"))),
        );
        want.extend(
            (SOURCE_SECRET_FILES.iter()).map(|k| ("source".to_string(), format!("{k}_file"))),
        );
        want.extend(webhook.iter().map(|k| ("webhook".to_string(), k.clone())));
        want.extend(forward.iter().map(|k| ("forward".to_string(), k.clone())));
        assert!(
            source.is_superset(&delivery),
            "every delivery key is a source's too"
        );
        let got: BTreeSet<(String, String)> = (rows().iter())
            .flat_map(|r| r.keys.iter().map(|k| (r.at.clone(), k.clone())))
            .collect();
        let missing: Vec<_> = want.difference(&got).collect();
        let extra: Vec<_> = got.difference(&want).collect();
        assert!(
            missing.is_empty() && extra.is_empty(),
            "missing {missing:?}; not keys {extra:?}"
        );
    }

    #[test]
    fn reload_and_token_columns_say_what_the_code_does() {
        for row in rows() {
            for key in &row.keys {
                // A secret read from a file is applied as its key is.
                let of = key.strip_suffix("_file").unwrap_or(key);
                let start = START_ONLY_KEYS.contains(&of) && row.at == "top";
                let reload = if start { "start" } else { "yes" };
                assert_eq!(row.reload, reload, "{key} ({}): reload", row.at);
                let token = match row.at.as_str() {
                    "webhook" | "forward" => true,
                    "top" => false,
                    _ => SELF_SERVICE.contains(&key.as_str()) && key != "name",
                };
                let token = if token { "yes" } else { "no" };
                assert_eq!(row.token, token, "{key} ({}): token", row.at);
            }
        }
    }

    #[test]
    fn numeric_defaults_are_the_cores() {
        let core = outbound::Config::default();
        let secs = |d: std::time::Duration| d.as_secs().to_string();
        let want = [
            ("timeout", secs(core.timeout)),
            ("max_retry_duration", secs(core.retry.max_retry_duration)),
            ("max_backoff", secs(core.retry.max_backoff)),
            ("max_retry_after", secs(core.retry.max_retry_after)),
            ("max_in_flight", core.max_in_flight.to_string()),
            ("workers", core.workers.to_string()),
            ("flush_at", core.flush_at.to_string()),
            ("flush_interval", secs(core.flush_interval)),
            ("max_queue_size", core.max_queue_size.to_string()),
            ("dead_letter_retention", secs(core.dead_letter_retention)),
            ("attempt_log_size", core.attempt_log_size.to_string()),
            ("attempt_retention", secs(core.attempt_retention)),
            ("max_webhook_headers", core.max_webhook_headers.to_string()),
            (
                "max_webhook_header_bytes",
                core.max_webhook_header_bytes.to_string(),
            ),
        ];
        let rows = rows();
        for (key, value) in want {
            let row = (rows.iter())
                .find(|r| r.keys.iter().any(|k| k == key))
                .expect(key);
            let shown: String = (row.default.chars())
                .skip_while(|c| !c.is_ascii_digit())
                .take_while(|c| c.is_ascii_digit())
                .collect();
            assert_eq!(shown, value, "{key}: the reference says {}", row.default);
        }
    }
}
