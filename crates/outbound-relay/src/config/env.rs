//! Settings from the environment and secrets from files, over `relay.toml`.
//!
//! - `OUTBOUND_RELAY_<KEY>` sets the top-level key `<key>` (upper case; `LISTEN`,
//!   `ADMIN_TOKEN`, `SPOOL`, `ALLOWED_NETWORKS`, ...), overriding the file's value.
//! - `OUTBOUND_RELAY_<KEY>_FILE` sets it from a file's contents (the Docker and Kubernetes
//!   secrets convention); in the file, `admin_token_file`, `metrics_token_file` and a
//!   source's `shared_secret_file` do the same. Trailing line breaks are not part of a value.
//! - Without `--config`, the environment is the whole config: `OUTBOUND_RELAY_LISTEN` and an
//!   admin token are then needed (the sources come from the admin API).
//!
//! The values are written into the file's TOML before it is read, so every rule of the file
//! applies to them; an error about a key the environment set names its variable
//! (`OUTBOUND_RELAY_LISTEN: ...`). Files named by `*_file` keys are read again at each
//! reload (SIGHUP), so a rotated secret needs no restart.

use super::toml_keys::toml_error;
use super::{ConfigError, File, Relay};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use toml::{Table, Value};

/// The variables' prefix.
pub const PREFIX: &str = "OUTBOUND_RELAY_";

/// What a file's config is called in messages when there is no file.
const NO_FILE: &str = "environment";

/// How a variable's text becomes the key's TOML value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Kind {
    Text,
    /// A path: a relative one is relative to the working directory (in the file, to the
    /// file's directory).
    Path,
    Bool,
    Count,
    Seconds,
    /// Comma-separated, or a TOML array (`["10.0.0.0/8", "127.0.0.0/8"]`).
    List,
    /// `true`, `false` or a Redis URL.
    Spool,
}

/// Every top-level key of relay.toml but `sources`, with its kind. A unit test checks this
/// against the file's shape, so a new key cannot be left out.
pub const KEYS: &[(&str, Kind)] = &[
    ("listen", Kind::Text),
    ("data_dir", Kind::Path),
    ("admin_token", Kind::Text),
    ("block_private_networks", Kind::Bool),
    ("allowed_networks", Kind::List),
    ("forward_allowed_networks", Kind::List),
    ("log_url_paths", Kind::Bool),
    ("trusted_proxies", Kind::List),
    ("public_url", Kind::Text),
    ("shutdown_timeout", Kind::Seconds),
    ("close_timeout", Kind::Seconds),
    ("max_connections", Kind::Count),
    ("max_header_bytes", Kind::Count),
    ("max_headers", Kind::Count),
    ("header_read_timeout", Kind::Seconds),
    ("request_timeout", Kind::Seconds),
    ("write_timeout", Kind::Seconds),
    ("tls_cert", Kind::Path),
    ("tls_key", Kind::Path),
    ("metrics_token", Kind::Text),
    ("log_format", Kind::Text),
    ("redis_ack", Kind::Text),
    ("io_threads", Kind::Count),
    ("memory_window", Kind::Count),
    ("memory_window_bytes", Kind::Count),
    ("spool_max_total_bytes", Kind::Count),
    ("metrics_sources", Kind::List),
    ("metrics_top_sources", Kind::Count),
    ("max_webhook_headers", Kind::Count),
    ("max_webhook_header_bytes", Kind::Count),
    ("audit_max_entries", Kind::Count),
    ("audit_retention", Kind::Seconds),
    ("alert_url", Kind::Text),
    ("alert_secret", Kind::Text),
    ("alert_signature_scheme", Kind::Text),
    ("alert_dead_letters", Kind::Count),
    ("alert_waiting", Kind::Count),
    ("alert_spool_percent", Kind::Count),
    ("alert_interval", Kind::Seconds),
    ("timeout", Kind::Seconds),
    ("max_retry_duration", Kind::Seconds),
    ("max_backoff", Kind::Seconds),
    ("retry_base", Kind::Seconds),
    ("max_retry_after", Kind::Seconds),
    ("max_in_flight", Kind::Count),
    ("workers", Kind::Count),
    ("signature_scheme", Kind::Text),
    ("webhook_user_agent", Kind::Text),
    ("gzip", Kind::Bool),
    ("flush_at", Kind::Count),
    ("max_batch_messages", Kind::Count),
    ("flush_interval", Kind::Seconds),
    ("max_queue_size", Kind::Count),
    ("queue_full_wait", Kind::Seconds),
    ("ca_certs", Kind::Text),
    ("proxy_from_env", Kind::Bool),
    ("spool", Kind::Spool),
    ("spool_max_bytes", Kind::Count),
    ("spool_commit_interval", Kind::Seconds),
    ("debug", Kind::Bool),
    ("dead_letters", Kind::Bool),
    ("dead_letter_retention", Kind::Seconds),
    ("dead_letter_max_bytes", Kind::Count),
    ("attempt_log_size", Kind::Count),
    ("attempt_retention", Kind::Seconds),
];

/// The keys whose value a file may give by naming a file that holds it (`admin_token_file`).
pub const TOP_SECRET_FILES: &[&str] = &["admin_token", "metrics_token", "alert_secret"];
/// The same for a source.
pub const SOURCE_SECRET_FILES: &[&str] = &["shared_secret"];
/// The same for a webhook's `auth` (a `tls` key is a path already).
pub const AUTH_SECRET_FILES: &[&str] = &["password", "token", "client_secret"];

/// The variable of `key`: `listen` -> `OUTBOUND_RELAY_LISTEN`.
pub fn var_name(key: &str) -> String {
    format!("{PREFIX}{}", key.to_ascii_uppercase())
}

/// One setting the environment gives.
#[derive(Debug)]
struct Given {
    key: &'static str,
    /// The variable it came from (`OUTBOUND_RELAY_ADMIN_TOKEN_FILE`).
    var: String,
    value: Value,
}

/// Reads the config: `path`'s file (or none) under the process's environment.
pub fn load(path: Option<&Path>) -> Result<Relay, ConfigError> {
    load_with(path, &process_vars(), None)
}

/// [`load`] for `outbound-relay check`: the relay with the sources that could be read, and
/// every refusal of the others.
pub fn load_all(path: Option<&Path>) -> Result<(Relay, Vec<ConfigError>), ConfigError> {
    let mut more = Vec::new();
    let relay = load_with(path, &process_vars(), Some(&mut more))?;
    Ok((relay, more))
}

/// The process's `OUTBOUND_RELAY_*` variables.
fn process_vars() -> Vec<(String, OsString)> {
    std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v)))
        .filter(|(k, _)| k.starts_with(PREFIX))
        .collect()
}

/// [`load`] with the variables given (tests).
fn load_with(
    path: Option<&Path>,
    vars: &[(String, OsString)],
    more: Option<&mut Vec<ConfigError>>,
) -> Result<Relay, ConfigError> {
    let (label, base_dir, text) = match path {
        Some(p) => {
            let label = p.display().to_string();
            let text = std::fs::read_to_string(p).map_err(|e| ConfigError {
                file: label.clone(),
                key: String::new(),
                reason: format!("cannot read: {e}"),
            })?;
            let dir = p.parent().unwrap_or(Path::new(".")).to_path_buf();
            (label, dir, text)
        }
        None => (NO_FILE.to_string(), PathBuf::from("."), String::new()),
    };
    let given = given(vars)?;
    let mut table: Table = text.parse().map_err(|e| toml_error(&label, &text, e))?;
    let file_keys = secret_file_keys(&table);
    if given.is_empty() && file_keys.is_empty() && path.is_some() {
        // Nothing to merge: the file is read exactly as it is written.
        let f = File::parse(&label, &text)?;
        return Relay::read(f, &label, &base_dir, more);
    }
    for g in &given {
        table.remove(&format!("{}_file", g.key));
        table.insert(g.key.to_string(), g.value.clone());
    }
    read_secret_files(&mut table, &label, &base_dir)?;
    if path.is_none() {
        needed_without_a_file(&table)?;
    }
    let merged = toml::to_string(&table).map_err(|e| ConfigError {
        file: label.clone(),
        key: String::new(),
        reason: format!("cannot be merged with the environment: {e}"),
    })?;
    File::parse(&label, &merged)
        .and_then(|f| Relay::read(f, &label, &base_dir, more))
        .map_err(|e| name_variable(e, &given))
}

/// Without a file, what a start cannot do without.
fn needed_without_a_file(table: &Table) -> Result<(), ConfigError> {
    let missing = |key: &str, why: &str| ConfigError {
        file: var_name(key),
        key: String::new(),
        reason: format!("is needed when no --config file is given ({why})"),
    };
    if !table.contains_key("listen") {
        return Err(missing("listen", "e.g. 0.0.0.0:8088"));
    }
    if !table.contains_key("admin_token") {
        return Err(missing(
            "admin_token",
            "or OUTBOUND_RELAY_ADMIN_TOKEN_FILE: the sources are then set up through the admin API",
        ));
    }
    Ok(())
}

/// The settings the variables give, each checked and converted; variables that name no
/// setting are left for [`warn_unknown`].
fn given(vars: &[(String, OsString)]) -> Result<Vec<Given>, ConfigError> {
    let bad = |var: &str, reason: String| ConfigError {
        file: var.to_string(),
        key: String::new(),
        reason,
    };
    let mut out: Vec<Given> = Vec::new();
    let mut vars: Vec<&(String, OsString)> = vars.iter().collect();
    // Sorted, so that of a pair set together the same one is named, whatever the order.
    vars.sort_by(|a, b| a.0.cmp(&b.0));
    for (var, raw) in vars {
        let Some(name) = var.strip_prefix(PREFIX) else {
            continue;
        };
        if name.eq_ignore_ascii_case("sources") {
            return Err(bad(
                var,
                "sources cannot be set from the environment: give them in the --config file \
                 or through the admin API"
                    .into(),
            ));
        }
        let Some((key, kind, from_file)) = classify(var) else {
            continue;
        };
        let Some(raw) = raw.to_str() else {
            return Err(bad(var, "is not UTF-8".into()));
        };
        if let Some(other) = out.iter().find(|g| g.key == key) {
            return Err(bad(
                var,
                format!("{} sets {key} too: set one of them", other.var),
            ));
        }
        let text = match from_file {
            false => raw.to_string(),
            true if kind == Kind::Path => {
                return Err(bad(
                    var,
                    format!("{key} is a path already: set {} to it", var_name(key)),
                ))
            }
            true => read_secret(Path::new(raw)).map_err(|why| bad(var, why))?,
        };
        let value = convert(&text, kind).map_err(|why| bad(var, why))?;
        out.push(Given {
            key,
            var: var.clone(),
            value,
        });
    }
    Ok(out)
}

fn lookup(lower: &str) -> Option<(&'static str, Kind)> {
    KEYS.iter().find(|(k, _)| *k == lower).copied()
}

/// The key a variable sets, its kind, and whether the variable names a file holding the value
/// (`OUTBOUND_RELAY_ADMIN_TOKEN_FILE`); `None` for a variable that names no setting.
fn classify(var: &str) -> Option<(&'static str, Kind, bool)> {
    let lower = var.strip_prefix(PREFIX)?.to_ascii_lowercase();
    match lookup(&lower) {
        Some((key, kind)) => Some((key, kind, false)),
        None => lower
            .strip_suffix("_file")
            .and_then(lookup)
            .map(|(key, kind)| (key, kind, true)),
    }
}

/// A variable's text as the TOML value of a key of `kind`.
fn convert(text: &str, kind: Kind) -> Result<Value, String> {
    let t = text.trim();
    Ok(match kind {
        Kind::Text => Value::String(text.to_string()),
        Kind::Path => {
            let p = PathBuf::from(text);
            // The file's relative paths are its directory's; the environment's, the process's.
            let p = match p.is_relative() {
                true => std::env::current_dir().map(|d| d.join(&p)).unwrap_or(p),
                false => p,
            };
            Value::String(p.to_string_lossy().into_owned())
        }
        Kind::Bool => {
            Value::Boolean(bool_of(t).ok_or_else(|| format!("{t:?} is not true or false"))?)
        }
        Kind::Count => {
            let n: i64 = t
                .parse()
                .ok()
                .filter(|n| *n >= 0)
                .ok_or_else(|| format!("{t:?} is not a whole number of 0 or more"))?;
            Value::Integer(n)
        }
        Kind::Seconds => match t.parse::<i64>() {
            Ok(n) => Value::Integer(n),
            Err(_) => Value::Float(
                t.parse::<f64>()
                    .ok()
                    .filter(|f| f.is_finite())
                    .ok_or_else(|| format!("{t:?} is not a number of seconds (e.g. 5 or 0.25)"))?,
            ),
        },
        Kind::List if t.starts_with('[') => {
            let v: Table = format!("v = {t}")
                .parse()
                .map_err(|_| format!("{t:?} is not a TOML array of strings"))?;
            match v.get("v") {
                Some(Value::Array(a)) if a.iter().all(Value::is_str) => Value::Array(a.clone()),
                _ => return Err(format!("{t:?} is not a TOML array of strings")),
            }
        }
        Kind::List => Value::Array(
            t.split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(|s| Value::String(s.to_string()))
                .collect(),
        ),
        Kind::Spool => match bool_of(t) {
            Some(b) => Value::Boolean(b),
            None => Value::String(t.to_string()),
        },
    })
}

fn bool_of(t: &str) -> Option<bool> {
    match t.to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" | "on" => Some(true),
        "false" | "0" | "no" | "off" => Some(false),
        _ => None,
    }
}

/// A secret's file: its text without the line break(s) an editor or `echo` leaves at the end.
fn read_secret(path: &Path) -> Result<String, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    Ok(text.trim_end_matches(['\n', '\r']).to_string())
}

/// The `*_file` keys the table holds, as (key path, key of the value).
fn secret_file_keys(table: &Table) -> Vec<String> {
    let mut found: Vec<String> = TOP_SECRET_FILES
        .iter()
        .map(|k| format!("{k}_file"))
        .filter(|k| table.contains_key(k))
        .collect();
    if let Some(Value::Array(sources)) = table.get("sources") {
        for (i, s) in sources.iter().enumerate() {
            for k in SOURCE_SECRET_FILES {
                if s.get(format!("{k}_file")).is_some() {
                    found.push(format!("sources[{i}].{k}_file"));
                }
            }
            for (j, auth) in webhook_auths(s) {
                for k in AUTH_SECRET_FILES {
                    if auth.contains_key(&format!("{k}_file")) {
                        found.push(format!("sources[{i}].webhooks[{j}].auth.{k}_file"));
                    }
                }
            }
        }
    }
    found
}

/// Each webhook's `auth` table of source table `s`, with the webhook's index.
fn webhook_auths(s: &Value) -> impl Iterator<Item = (usize, &Table)> {
    let hooks = s.get("webhooks").and_then(Value::as_array);
    (hooks.into_iter().flatten().enumerate())
        .filter_map(|(j, w)| Some((j, w.get("auth")?.as_table()?)))
}

/// Replaces each `<key>_file` of the file (top level and sources) by `<key>` = its file's
/// text. A relative path is relative to the file's directory.
fn read_secret_files(table: &mut Table, label: &str, base_dir: &Path) -> Result<(), ConfigError> {
    fn one(t: &mut Table, key: &str, at: &str, label: &str, dir: &Path) -> Result<(), ConfigError> {
        let file_key = format!("{key}_file");
        let Some(v) = t.remove(&file_key) else {
            return Ok(());
        };
        let err = |reason: String| ConfigError {
            file: label.to_string(),
            key: super::join(at, &file_key),
            reason,
        };
        let Value::String(p) = v else {
            return Err(err("expected a path (a string)".into()));
        };
        if t.contains_key(key) {
            return Err(err(format!("set {key} or {file_key}, not both")));
        }
        let secret = read_secret(&dir.join(&p)).map_err(err)?;
        t.insert(key.to_string(), Value::String(secret));
        Ok(())
    }
    for k in TOP_SECRET_FILES {
        one(table, k, "", label, base_dir)?;
    }
    if let Some(Value::Array(sources)) = table.get_mut("sources") {
        for (i, s) in sources.iter_mut().enumerate() {
            if let Value::Table(s) = s {
                for k in SOURCE_SECRET_FILES {
                    one(s, k, &format!("sources[{i}]"), label, base_dir)?;
                }
                let hooks = s.get_mut("webhooks").and_then(Value::as_array_mut);
                for (j, w) in hooks.into_iter().flatten().enumerate() {
                    let Some(auth) = w.get_mut("auth").and_then(Value::as_table_mut) else {
                        continue;
                    };
                    let at = format!("sources[{i}].webhooks[{j}].auth");
                    for k in AUTH_SECRET_FILES {
                        one(auth, k, &at, label, base_dir)?;
                    }
                }
            }
        }
    }
    Ok(())
}

/// `e` named by its variable when the environment set its (top-level) key.
fn name_variable(e: ConfigError, given: &[Given]) -> ConfigError {
    let top = e.key.split(['.', '[']).next().unwrap_or("");
    match given.iter().find(|g| g.key == top) {
        Some(g) => ConfigError {
            file: g.var.clone(),
            key: String::new(),
            reason: e.reason,
        },
        None => e,
    }
}

/// A config error found after loading (the core's checks, binding `listen`): named by its
/// variable when the environment set the key, else by the file and key.
pub fn named(file: &str, key: &str, reason: String) -> ConfigError {
    relabel(ConfigError {
        file: file.to_string(),
        key: key.to_string(),
        reason,
    })
}

/// [`named`] for an error already made.
pub fn relabel(e: ConfigError) -> ConfigError {
    let top = e.key.split(['.', '[']).next().unwrap_or("");
    let var = process_vars()
        .into_iter()
        .map(|(var, _)| var)
        .filter(|var| classify(var).is_some_and(|(key, _, _)| key == top))
        .min();
    match var {
        Some(var) => ConfigError {
            file: var,
            key: String::new(),
            reason: e.reason,
        },
        None => e,
    }
}

/// Logs each `OUTBOUND_RELAY_*` variable that names no setting (a typo would otherwise go
/// unnoticed). Kubernetes' service links (`OUTBOUND_RELAY_SERVICE_HOST`, `_PORT`, ...: made
/// for a Service named outbound-relay) are not settings and are passed over.
pub fn warn_unknown() {
    for (var, _) in process_vars() {
        let name = var[PREFIX.len()..].to_ascii_lowercase();
        let service_link =
            name == "port" || name.starts_with("port_") || name.starts_with("service_");
        if classify(&var).is_none() && !service_link {
            tracing::warn!(variable = %var, "not a setting of outbound-relay: ignored");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load_with_vars(
        path: Option<&Path>,
        vars: &[(String, OsString)],
    ) -> Result<Relay, ConfigError> {
        load_with(path, vars, None)
    }

    fn vars(list: &[(&str, &str)]) -> Vec<(String, OsString)> {
        list.iter()
            .map(|(k, v)| (k.to_string(), OsString::from(v)))
            .collect()
    }

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    const SOURCE: &str = "[[sources]]\nname = \"web\"\nwrite_keys = [\"wk\"]\n\
                          [[sources.webhooks]]\nurl = \"https://hooks.example.com/in\"\n";

    /// Every top-level key of the file's shape has its variable, with nothing extra.
    #[test]
    fn every_top_level_key_of_the_file_has_a_variable() {
        let e = toml::from_str::<File>("listen = \"x\"\nzzz_not_a_key = 1")
            .expect_err("an unknown key is refused");
        let msg = e.message().to_string();
        let (_, expected) = msg.split_once("expected one of").expect(&msg);
        let mut file_keys: Vec<&str> = expected
            .split('`')
            .filter(|s| !s.trim().is_empty() && !s.contains(','))
            .filter(|s| *s != "sources")
            .collect();
        file_keys.sort();
        let mut ours: Vec<&str> = KEYS.iter().map(|(k, _)| *k).collect();
        ours.sort();
        assert_eq!(ours, file_keys);
    }

    /// docs/deploy.md's table names every variable with its key, and no other.
    #[test]
    fn the_docs_table_names_every_variable_and_its_key() {
        let doc = include_str!("../../../../docs/deploy.md");
        let tick = |c: &str| Some(c.strip_prefix('`')?.strip_suffix('`')?.to_string());
        let mut rows: Vec<(String, String)> = doc
            .lines()
            .filter_map(|l| {
                let cells: Vec<&str> = l.split('|').map(str::trim).collect();
                let (var, key) = (tick(cells.get(1)?)?, tick(cells.get(2)?)?);
                var.starts_with(PREFIX).then_some((var, key))
            })
            .collect();
        let mut want: Vec<(String, String)> = KEYS
            .iter()
            .map(|(k, _)| (var_name(k), k.to_string()))
            .collect();
        for k in TOP_SECRET_FILES {
            want.push((format!("{}_FILE", var_name(k)), format!("{k}_file")));
        }
        rows.sort();
        want.sort();
        assert_eq!(rows, want);
    }

    #[test]
    fn a_variable_overrides_the_files_value_and_converts_by_kind() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(
            dir.path(),
            "relay.toml",
            &format!("listen = \"127.0.0.1:1\"\nmax_connections = 5\n{SOURCE}"),
        );
        let r = load_with_vars(
            Some(&p),
            &vars(&[
                ("OUTBOUND_RELAY_LISTEN", "127.0.0.1:2"),
                ("OUTBOUND_RELAY_MAX_CONNECTIONS", "7"),
                ("OUTBOUND_RELAY_SHUTDOWN_TIMEOUT", "0.5"),
                ("OUTBOUND_RELAY_TRUSTED_PROXIES", "10.0.0.0/8, 127.0.0.0/8"),
                ("OUTBOUND_RELAY_LOG_URL_PATHS", "true"),
                ("OUTBOUND_RELAY_SPOOL", "false"),
                ("OUTBOUND_RELAY_TIMEOUT", "3"),
                ("OUTBOUND_RELAY_MEMORY_WINDOW_BYTES", "1048576"),
            ]),
        )
        .unwrap();
        assert_eq!(r.listen, "127.0.0.1:2");
        assert_eq!(r.limits.max_connections, 7);
        assert_eq!(r.shutdown_timeout, std::time::Duration::from_millis(500));
        assert_eq!(r.trusted_proxies.len(), 2);
        assert!(r.sources[0].core.spool.is_none());
        assert_eq!(r.sources[0].core.timeout, std::time::Duration::from_secs(3));
        assert_eq!(r.memory_window_bytes, 1 << 20);
    }

    #[test]
    fn a_bad_value_names_its_variable() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(
            dir.path(),
            "relay.toml",
            &format!("listen = \"x:1\"\n{SOURCE}"),
        );
        let cases = [
            (
                "OUTBOUND_RELAY_MAX_CONNECTIONS",
                "lots",
                "is not a whole number",
            ),
            ("OUTBOUND_RELAY_GZIP", "maybe", "is not true or false"),
            (
                "OUTBOUND_RELAY_LOG_FORMAT",
                "xml",
                "is not \"text\" or \"json\"",
            ),
            ("OUTBOUND_RELAY_ADMIN_TOKEN", "", "must not be empty"),
            (
                "OUTBOUND_RELAY_MAX_HEADER_BYTES",
                "10",
                "is not between 1024",
            ),
            (
                "OUTBOUND_RELAY_ALLOWED_NETWORKS",
                "[1, 2]",
                "not a TOML array of strings",
            ),
            ("OUTBOUND_RELAY_TLS_CERT_FILE", "/x", "is a path already"),
            ("OUTBOUND_RELAY_SOURCES", "x", "sources cannot be set"),
            (
                "OUTBOUND_RELAY_ADMIN_TOKEN_FILE",
                "/nonexistent/x",
                "cannot read /nonexistent/x",
            ),
        ];
        for (var, value, why) in cases {
            let e = load_with_vars(Some(&p), &vars(&[(var, value)]))
                .err()
                .expect(var);
            let text = e.to_string();
            assert!(text.starts_with(&format!("{var}: ")), "{text}");
            assert!(text.contains(why), "{text}");
        }
        let e = load_with_vars(
            Some(&p),
            &vars(&[
                ("OUTBOUND_RELAY_ADMIN_TOKEN", "a"),
                ("OUTBOUND_RELAY_ADMIN_TOKEN_FILE", "/x"),
            ]),
        )
        .err()
        .unwrap();
        assert_eq!(
            e.to_string(),
            "OUTBOUND_RELAY_ADMIN_TOKEN_FILE: OUTBOUND_RELAY_ADMIN_TOKEN sets admin_token too: \
             set one of them"
        );
    }

    #[test]
    fn secrets_come_from_files_in_the_file_and_in_the_environment() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "admin", "adm-from-file\n");
        write(dir.path(), "secret", "s3cret\r\n");
        let metrics = write(dir.path(), "metrics", "met-from-env\n");
        let p = write(
            dir.path(),
            "relay.toml",
            "listen = \"x:1\"\nadmin_token_file = \"admin\"\n[[sources]]\nname = \"web\"\n\
             write_keys = [\"wk\"]\nshared_secret_file = \"secret\"\n\
             [[sources.webhooks]]\nurl = \"https://hooks.example.com/in\"\n",
        );
        let metrics_var = metrics.to_string_lossy().into_owned();
        let r = load_with_vars(
            Some(&p),
            &vars(&[("OUTBOUND_RELAY_METRICS_TOKEN_FILE", &metrics_var)]),
        )
        .unwrap();
        assert_eq!(r.admin_token.as_deref(), Some("adm-from-file"));
        assert_eq!(r.metrics_token.as_deref(), Some("met-from-env"));
        assert_eq!(r.sources[0].core.shared_secret.as_deref(), Some("s3cret"));
        // A webhook's auth secrets too.
        write(dir.path(), "password", "pa55\n");
        let hook = write(
            dir.path(),
            "hook.toml",
            "listen = \"x:1\"\n[[sources]]\nname = \"web\"\nwrite_keys = [\"wk\"]\n\
             [[sources.webhooks]]\nurl = \"https://hooks.example.com/in\"\n\
             auth = { type = \"basic\", user = \"u\", password_file = \"password\" }\n",
        );
        let r = load_with_vars(Some(&hook), &[]).unwrap();
        let auth = r.sources[0].core.webhooks[0].auth.clone();
        assert_eq!(auth, Some(outbound::Auth::basic("u", "pa55")));
        std::fs::remove_file(dir.path().join("password")).unwrap();
        let e = load_with_vars(Some(&hook), &[]).err().unwrap().to_string();
        assert!(
            e.contains(": sources[0].webhooks[0].auth.password_file: cannot read"),
            "{e}"
        );
        // The environment's token wins over the file's token file, which is then not read.
        std::fs::remove_file(dir.path().join("admin")).unwrap();
        let r = load_with_vars(Some(&p), &vars(&[("OUTBOUND_RELAY_ADMIN_TOKEN", "env")])).unwrap();
        assert_eq!(r.admin_token.as_deref(), Some("env"));
        let e = load_with_vars(Some(&p), &[]).err().unwrap().to_string();
        assert!(e.contains(": admin_token_file: cannot read"), "{e}");
        let both = write(
            dir.path(),
            "both.toml",
            &format!(
                "listen = \"x:1\"\nadmin_token = \"a\"\nadmin_token_file = \"admin\"\n{SOURCE}"
            ),
        );
        let e = load_with_vars(Some(&both), &[]).err().unwrap().to_string();
        assert!(
            e.ends_with("admin_token_file: set admin_token or admin_token_file, not both"),
            "{e}"
        );
    }

    #[test]
    fn without_a_file_the_environment_is_the_whole_config() {
        let e = load_with_vars(None, &vars(&[("OUTBOUND_RELAY_ADMIN_TOKEN", "a")]))
            .err()
            .unwrap();
        assert!(
            e.to_string()
                .starts_with("OUTBOUND_RELAY_LISTEN: is needed"),
            "{e}"
        );
        let e = load_with_vars(None, &vars(&[("OUTBOUND_RELAY_LISTEN", "127.0.0.1:0")]))
            .err()
            .unwrap();
        assert!(
            e.to_string()
                .starts_with("OUTBOUND_RELAY_ADMIN_TOKEN: is needed"),
            "{e}"
        );
        let r = load_with_vars(
            None,
            &vars(&[
                ("OUTBOUND_RELAY_LISTEN", "127.0.0.1:0"),
                ("OUTBOUND_RELAY_ADMIN_TOKEN", "a"),
                ("OUTBOUND_RELAY_DATA_DIR", "/var/lib/x"),
            ]),
        )
        .unwrap();
        assert!(r.sources.is_empty());
        assert_eq!(r.data_dir, Path::new("/var/lib/x"));
        assert_eq!(r.file, "environment");
    }
}
