//! Settings from the environment and secrets from files, against the real binary: a relay
//! started with no file at all, variables over the file's values, `*_file` keys and the
//! `*_FILE` variables, a rotated secret picked up by SIGHUP, and errors named by their
//! variable.

mod support;

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use support::*;

/// The binary with `args` and exactly the `OUTBOUND_RELAY_*` variables in `env` (any the test
/// process has are removed: a developer's shell must not change the test).
fn command(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Command {
    let mut cmd = relay_command();
    cmd.current_dir(dir).args(args);
    cmd.envs(env.iter().copied());
    cmd
}

/// Starts the relay as [`command`] makes it and waits for its address.
fn start(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Relay {
    let mut child = command(dir, args, env)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = Arc::new(Mutex::new(String::new()));
    let mut err = child.stderr.take().unwrap();
    let log = stderr.clone();
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = err.read(&mut buf) {
            if n == 0 {
                break;
            }
            let text = String::from_utf8_lossy(&buf[..n]).into_owned();
            log.lock().unwrap().push_str(&text);
        }
    });
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut addr = String::new();
    out.read_line(&mut addr).unwrap();
    let addr = addr.trim().to_string();
    assert!(
        !addr.is_empty(),
        "the relay printed no address; stderr: {}",
        stderr.lock().unwrap()
    );
    std::thread::spawn(move || {
        let _ = out.read_to_end(&mut Vec::new());
    });
    Relay {
        addr,
        child,
        dir: dir.to_path_buf(),
        stderr,
    }
}

/// Runs the relay to its exit: its code and stderr.
fn refused(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> (Option<i32>, String) {
    let out = command(dir, args, env).output().unwrap();
    assert!(out.stdout.is_empty(), "no address for a refused start");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

/// Polls until `check` holds; panics after 10 s.
fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !check() {
        assert!(Instant::now() < deadline, "{what}: not within 10 s");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn with_no_file_the_environment_starts_a_relay_whose_sources_come_from_the_admin_api() {
    let dir = temp_dir();
    let token = dir.path().join("admin-token");
    std::fs::write(&token, "adm_from_a_file\n").unwrap();
    let receiver = Receiver::start();
    let mut relay = start(
        dir.path(),
        &[],
        &[
            ("OUTBOUND_RELAY_LISTEN", "127.0.0.1:0"),
            ("OUTBOUND_RELAY_DATA_DIR", "state"),
            ("OUTBOUND_RELAY_ADMIN_TOKEN_FILE", token.to_str().unwrap()),
            ("OUTBOUND_RELAY_ALLOWED_NETWORKS", "10.0.0.0/8, 127.0.0.0/8"),
            ("OUTBOUND_RELAY_MAX_BACKOFF", "0.2"),
            ("OUTBOUND_RELAY_LOG_FORMAT", "json"),
        ],
    );
    // The file's trailing line break is not part of the token.
    let who = get(
        &relay.url("/admin/whoami"),
        &[("Authorization", &bearer("adm_from_a_file"))],
    );
    assert_eq!(who.status, 200, "{}", who.body);
    // The relay-wide allowed_networks reach file sources only: an API source names its own.
    let body = format!(
        r#"{{"write_keys":["wk_env"],"shared_secret":"s3cret","allowed_networks":["127.0.0.0/8"],"webhooks":[{{"url":"{}"}}]}}"#,
        receiver.url
    );
    let made = put(
        &relay.url("/admin/sources/web"),
        &[("Authorization", &bearer("adm_from_a_file"))],
        body.as_bytes(),
    );
    assert_eq!(made.status, 201, "{}", made.body);
    let sent = post(
        &relay.url("/v1/track"),
        &[("Authorization", &basic("wk_env"))],
        br#"{"userId":"u1","event":"Signed Up","messageId":"env-1"}"#,
    );
    assert_eq!(sent.status, 200, "{}", sent.body);
    let hits = receiver.wait_for(1);
    assert_eq!(hits[0].json()["messageId"], "env-1");
    // data_dir from the environment is relative to the working directory.
    assert!(dir.path().join("state").join("control.db").exists());
    // log_format from the environment: JSON lines.
    let log = relay.log();
    let first = log.lines().next().unwrap_or("");
    assert!(first.starts_with('{'), "not JSON: {first}");
    relay.signal(libc::SIGTERM);
    assert_eq!(relay.wait_exit(Duration::from_secs(15)).code(), Some(0));
}

#[test]
fn variables_override_the_file_and_secrets_come_from_files() {
    let dir = temp_dir();
    let receiver = Receiver::start();
    std::fs::write(dir.path().join("web.secret"), "from-a-file\r\n").unwrap();
    let admin = dir.path().join("admin");
    std::fs::write(&admin, "adm_one\n").unwrap();
    // The file's listen cannot be bound and its log_format is wrong: the variables win.
    let toml = format!(
        "listen = \"203.0.113.1:1\"\ndata_dir = \"data\"\nlog_format = \"xml\"\n\
         admin_token_file = \"admin\"\nallowed_networks = [\"127.0.0.0/8\"]\n\
         [[sources]]\nname = \"web\"\nwrite_keys = [\"wk_web\"]\n\
         shared_secret_file = \"web.secret\"\n\
         [[sources.webhooks]]\nurl = \"{}\"\n",
        receiver.url
    );
    std::fs::write(dir.path().join("relay.toml"), toml).unwrap();
    let metrics = dir.path().join("metrics");
    std::fs::write(&metrics, "met_token").unwrap();
    let relay = start(
        dir.path(),
        &["--config", "relay.toml"],
        &[
            ("OUTBOUND_RELAY_LISTEN", "127.0.0.1:0"),
            ("OUTBOUND_RELAY_LOG_FORMAT", "text"),
            (
                "OUTBOUND_RELAY_METRICS_TOKEN_FILE",
                metrics.to_str().unwrap(),
            ),
            ("OUTBOUND_RELAY_NOT_A_SETTING", "1"),
            ("OUTBOUND_RELAY_SERVICE_HOST", "10.0.0.1"),
        ],
    );
    let sent = post(
        &relay.url("/v1/track"),
        &[("Authorization", &basic("wk_web"))],
        br#"{"userId":"u1","event":"E","messageId":"file-secret-1"}"#,
    );
    assert_eq!(sent.status, 200, "{}", sent.body);
    let hit = &receiver.wait_for(1)[0];
    let signature = hit.header("X-Signature").unwrap();
    assert!(outbound::verify(b"from-a-file", &hit.body, signature));
    let m = get(
        &relay.url("/metrics"),
        &[("Authorization", &bearer("met_token"))],
    );
    assert_eq!(m.status, 200);
    // A misspelt variable is named in a warning; Kubernetes' service links are passed over.
    let log = relay.wait_log("OUTBOUND_RELAY_NOT_A_SETTING");
    assert!(log.contains("not a setting"), "{log}");
    assert!(!log.contains("OUTBOUND_RELAY_SERVICE_HOST"), "{log}");

    // A rotated secret file applies at the next reload.
    std::fs::write(&admin, "adm_two\n").unwrap();
    relay.signal(libc::SIGHUP);
    eventually("the rotated admin token", || {
        get(
            &relay.url("/admin/whoami"),
            &[("Authorization", &bearer("adm_two"))],
        )
        .status
            == 200
    });
    let old = get(
        &relay.url("/admin/whoami"),
        &[("Authorization", &bearer("adm_one"))],
    );
    assert_eq!(old.status, 401);
}

/// Arguments, variables, the exit code and how stderr's error line starts.
type Case<'a> = (&'a [&'a str], &'a [(&'a str, &'a str)], i32, &'a str);

#[test]
fn a_bad_variable_is_named_in_the_error() {
    let dir = temp_dir();
    let good = "listen = \"127.0.0.1:0\"\ndata_dir = \"data\"\n[[sources]]\nname = \"web\"\n\
                write_keys = [\"wk\"]\n[[sources.webhooks]]\nurl = \"https://hooks.example.com/in\"\n";
    std::fs::write(dir.path().join("relay.toml"), good).unwrap();
    let file = ["--config", "relay.toml"];
    let cases: &[Case] = &[
        (
            &file,
            &[("OUTBOUND_RELAY_MAX_CONNECTIONS", "many")],
            2,
            "OUTBOUND_RELAY_MAX_CONNECTIONS: \"many\" is not a whole number of 0 or more",
        ),
        (
            &file,
            &[("OUTBOUND_RELAY_REDIS_ACK", "disk")],
            2,
            "OUTBOUND_RELAY_REDIS_ACK: ",
        ),
        // Checked by the core when the source's client is built, after the file is read.
        (
            &file,
            &[("OUTBOUND_RELAY_WORKERS", "0")],
            2,
            "OUTBOUND_RELAY_WORKERS: ",
        ),
        (
            &file,
            &[("OUTBOUND_RELAY_LISTEN", "not-an-address")],
            1,
            "OUTBOUND_RELAY_LISTEN: cannot listen on \"not-an-address\"",
        ),
        (
            &file,
            &[("OUTBOUND_RELAY_ADMIN_TOKEN_FILE", "/nonexistent/token")],
            2,
            "OUTBOUND_RELAY_ADMIN_TOKEN_FILE: cannot read /nonexistent/token",
        ),
        (
            &[],
            &[("OUTBOUND_RELAY_LISTEN", "127.0.0.1:0")],
            2,
            "OUTBOUND_RELAY_ADMIN_TOKEN: is needed when no --config file is given",
        ),
        (
            &[],
            &[("OUTBOUND_RELAY_ADMIN_TOKEN", "a")],
            2,
            "OUTBOUND_RELAY_LISTEN: is needed when no --config file is given",
        ),
    ];
    for (args, env, code, start) in cases {
        let (got, err) = refused(dir.path(), args, env);
        assert_eq!(got, Some(*code), "{env:?}: {err}");
        // The error is its own line (a log line may come before a bind error's).
        assert!(err.lines().any(|l| l.starts_with(start)), "{env:?}: {err}");
    }
}
