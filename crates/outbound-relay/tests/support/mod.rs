//! The real parts for the relay's tests: the `outbound-relay` binary started with a config
//! in a temp dir, webhook receivers on 127.0.0.1 (a small HTTP/1.1 server on a std
//! `TcpListener`), and requests with `ureq`.
#![allow(dead_code)]

pub mod mtls;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU16, Ordering::SeqCst};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// One request a receiver took.
#[derive(Clone, Debug)]
pub struct Hit {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Hit {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).expect("webhook body is JSON")
    }
}

/// A webhook receiver: records every request, answers `status` (200 unless changed).
pub struct Receiver {
    pub url: String,
    hits: Arc<(Mutex<Vec<Hit>>, Condvar)>,
    pub status: Arc<AtomicU16>,
    /// The body of its answers when they are not 2xx (empty unless set).
    pub answer: Arc<Mutex<String>>,
}

impl Receiver {
    pub fn start() -> Receiver {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/hook", listener.local_addr().unwrap());
        let hits: Arc<(Mutex<Vec<Hit>>, Condvar)> = Arc::default();
        let status = Arc::new(AtomicU16::new(200));
        let answer = Arc::new(Mutex::new(String::new()));
        let (h, st, an) = (hits.clone(), status.clone(), answer.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (h, st, an) = (h.clone(), st.clone(), an.clone());
                std::thread::spawn(move || serve(stream, &h, &st, &an));
            }
        });
        Receiver {
            url,
            hits,
            status,
            answer,
        }
    }

    pub fn hits(&self) -> Vec<Hit> {
        self.hits.0.lock().unwrap().clone()
    }

    /// Waits until at least `n` requests arrived (answered 2xx or not); panics after 20 s.
    pub fn wait_for(&self, n: usize) -> Vec<Hit> {
        let deadline = Instant::now() + Duration::from_secs(20);
        let mut hits = self.hits.0.lock().unwrap();
        while hits.len() < n {
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(
                !left.is_zero(),
                "waited 20 s for {n} requests, got {}",
                hits.len()
            );
            hits = self.hits.1.wait_timeout(hits, left).unwrap().0;
        }
        hits.clone()
    }

    /// Bodies of the requests taken so far, as JSON.
    pub fn bodies(&self) -> Vec<serde_json::Value> {
        self.hits().iter().map(Hit::json).collect()
    }
}

fn serve(
    stream: TcpStream,
    hits: &(Mutex<Vec<Hit>>, Condvar),
    status: &AtomicU16,
    answer: &Mutex<String>,
) {
    let mut writer = stream.try_clone().unwrap();
    let mut reader = BufReader::new(stream);
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let method = line.split_whitespace().next().unwrap_or("").to_string();
        let path = line.split_whitespace().nth(1).unwrap_or("").to_string();
        let mut headers = Vec::new();
        let mut len = 0;
        loop {
            let mut h = String::new();
            if reader.read_line(&mut h).unwrap_or(0) == 0 {
                return;
            }
            let h = h.trim_end();
            if h.is_empty() {
                break;
            }
            if let Some((k, v)) = h.split_once(':') {
                let (k, v) = (k.trim().to_string(), v.trim().to_string());
                if k.eq_ignore_ascii_case("content-length") {
                    len = v.parse().unwrap_or(0);
                }
                headers.push((k, v));
            }
        }
        let mut body = vec![0; len];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let code = status.load(SeqCst);
        {
            let mut all = hits.0.lock().unwrap();
            all.push(Hit {
                method,
                path,
                headers,
                body,
            });
            hits.1.notify_all();
        }
        let text = match code {
            200..=299 => String::new(),
            _ => answer.lock().unwrap().clone(),
        };
        let answer = format!(
            "HTTP/1.1 {code} X\r\ncontent-length: {}\r\n\r\n{text}",
            text.len()
        );
        if writer.write_all(answer.as_bytes()).is_err() {
            return;
        }
    }
}

/// The relay binary, running; SIGKILLed when dropped.
pub struct Relay {
    pub addr: String,
    pub child: Child,
    pub dir: PathBuf,
    pub stderr: Arc<Mutex<String>>,
}

/// The binary under test: this build's, or `OUTBOUND_RELAY_BIN` (another build, e.g. an
/// older one, to see a test fail without its fix).
pub fn relay_bin() -> String {
    std::env::var("OUTBOUND_RELAY_BIN")
        .unwrap_or_else(|_| env!("CARGO_BIN_EXE_outbound-relay").to_string())
}

/// The binary under test, without the test process's `RUST_LOG` and `OUTBOUND_RELAY_*`
/// variables: a developer's shell (or the test command's `OUTBOUND_RELAY_BIN`) must not
/// change what a test sees; a test gives the relay its own with `.env`.
pub fn relay_command() -> Command {
    let mut cmd = Command::new(relay_bin());
    for (k, _) in std::env::vars() {
        if k == "RUST_LOG" || k.starts_with("OUTBOUND_RELAY_") {
            cmd.env_remove(k);
        }
    }
    cmd
}

/// A temp dir for one test (kept while the value lives).
pub fn temp_dir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("outbound-relay-test-")
        .tempdir()
        .unwrap()
}

impl Relay {
    /// Writes `config` as `relay.toml` in `dir` and starts the relay on it; waits for the
    /// first line of stdout (the address).
    pub fn start(dir: &Path, config: &str) -> Relay {
        Relay::start_with(dir, config, &[], &[])
    }

    /// [`Relay::start`] with extra arguments and environment variables.
    pub fn start_with(dir: &Path, config: &str, args: &[&str], env: &[(&str, &str)]) -> Relay {
        let path = dir.join("relay.toml");
        std::fs::write(&path, config).unwrap();
        let mut child = relay_command()
            .arg("--config")
            .arg(&path)
            .args(args)
            .envs(env.iter().copied())
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
                log.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
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
        // Keep stdout drained.
        std::thread::spawn(move || {
            let mut sink = Vec::new();
            let _ = out.read_to_end(&mut sink);
        });
        Relay {
            addr,
            child,
            dir: dir.to_path_buf(),
            stderr,
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// What the relay wrote to stderr so far.
    pub fn log(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// Waits until stderr holds `text` (panics after 20 s).
    pub fn wait_log(&self, text: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let log = self.log();
            if log.contains(text) {
                return log;
            }
            assert!(Instant::now() < deadline, "no {text:?} in the log: {log}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The relay's resident set size now and at its peak, KiB (`/proc/PID/status`).
    pub fn rss_kib(&self) -> (u64, u64) {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        let field = |name: &str| {
            status
                .lines()
                .find(|l| l.starts_with(name))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
                .unwrap()
        };
        (field("VmRSS:"), field("VmHWM:"))
    }

    /// CPU time (ns) of each of the relay's request threads (`relay-io`: the runtime's workers
    /// and blocking pool) now, from /proc/PID/task/*/schedstat.
    pub fn io_cpu(&self) -> std::collections::HashMap<u32, u64> {
        let base = format!("/proc/{}/task", self.child.id());
        let mut out = std::collections::HashMap::new();
        for task in std::fs::read_dir(&base).unwrap().flatten() {
            let dir = task.path();
            let comm = std::fs::read_to_string(dir.join("comm")).unwrap_or_default();
            let stat = std::fs::read_to_string(dir.join("schedstat")).unwrap_or_default();
            let (Ok(tid), Some(Ok(ns))) = (
                task.file_name().to_string_lossy().parse::<u32>(),
                stat.split_whitespace().next().map(str::parse::<u64>),
            ) else {
                continue;
            };
            if comm.trim() == "relay-io" {
                out.insert(tid, ns);
            }
        }
        out
    }

    /// The CPU time the request threads used since `before` (an [`Relay::io_cpu`]).
    pub fn io_cpu_since(&self, before: &std::collections::HashMap<u32, u64>) -> Duration {
        let ns = (self.io_cpu().iter())
            .map(|(tid, ns)| ns.saturating_sub(before.get(tid).copied().unwrap_or(0)))
            .sum();
        Duration::from_nanos(ns)
    }

    pub fn signal(&self, sig: i32) {
        // SAFETY: a plain kill(2) on our own child's pid.
        unsafe { libc::kill(self.child.id() as i32, sig) };
    }

    /// SIGKILL and reap.
    pub fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Waits for the exit after a signal; panics after `within`.
    pub fn wait_exit(&mut self, within: Duration) -> std::process::ExitStatus {
        let deadline = Instant::now() + within;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "the relay did not exit within {within:?}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A finished HTTP exchange.
pub struct Answer {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Answer {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("{e}: {}", self.body))
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

fn agent() -> ureq::Agent {
    ureq::Agent::new_with_config(
        ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(30)))
            .build(),
    )
}

fn finish(r: Result<ureq::http::Response<ureq::Body>, ureq::Error>) -> Answer {
    let mut r = r.expect("the request reached the relay");
    let headers = r
        .headers()
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or("").to_string()))
        .collect();
    Answer {
        status: r.status().as_u16(),
        headers,
        body: r.body_mut().read_to_string().unwrap_or_default(),
    }
}

/// `POST url` with `headers` and `body`.
pub fn post(url: &str, headers: &[(&str, &str)], body: &[u8]) -> Answer {
    let mut req = agent().post(url);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    finish(req.send(body))
}

/// `GET url`.
pub fn get(url: &str, headers: &[(&str, &str)]) -> Answer {
    let mut req = agent().get(url);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    finish(req.call())
}

/// `PUT url`.
pub fn put(url: &str, headers: &[(&str, &str)], body: &[u8]) -> Answer {
    let mut req = agent().put(url);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    finish(req.send(body))
}

/// `DELETE url`.
pub fn delete(url: &str, headers: &[(&str, &str)]) -> Answer {
    let mut req = agent().delete(url);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    finish(req.call())
}

/// `OPTIONS url`.
pub fn options(url: &str, headers: &[(&str, &str)]) -> Answer {
    let mut req = agent().options(url);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    finish(req.call())
}

/// `Authorization: Basic base64(key:)`.
pub fn basic(key: &str) -> String {
    use base64::Engine as _;
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("{key}:"))
    )
}

/// A config with one source per `(name, write key, receiver)`, signed with `s3cret`,
/// `127.0.0.0/8` allowed (to webhooks and forwards), admin token `adm`, plus `extra`
/// top-level lines.
pub fn config(sources: &[(&str, &str, &Receiver)], extra: &str) -> String {
    // Every source's metrics under its own name, as the tests read them.
    let named: Vec<String> = sources.iter().map(|(n, _, _)| format!("{n:?}")).collect();
    let metrics = match extra.contains("metrics_sources") {
        true => String::new(),
        false => format!("metrics_sources = [{}]\n", named.join(", ")),
    };
    let mut c = format!(
        "listen = \"127.0.0.1:0\"\ndata_dir = \"data\"\nadmin_token = \"adm\"\n\
         allowed_networks = [\"127.0.0.0/8\"]\nforward_allowed_networks = [\"127.0.0.0/8\"]\n\
         max_backoff = 0.2\n{metrics}{extra}\n"
    );
    for (name, key, receiver) in sources {
        c.push_str(&format!(
            "[[sources]]\nname = \"{name}\"\nwrite_keys = [\"{key}\"]\nshared_secret = \"s3cret\"\n\
             allowed_origins = [\"https://shop.example.com\"]\n\
             [[sources.webhooks]]\nurl = \"{}\"\nheaders = {{ \"X-Team\" = \"growth\" }}\n",
            receiver.url
        ));
    }
    c
}

/// Where a relay answers: one run as its own process ([`Relay`]), or in this one
/// ([`InProcess`]).
pub trait Addr {
    fn url(&self, path: &str) -> String;
}

impl Addr for Relay {
    fn url(&self, path: &str) -> String {
        Relay::url(self, path)
    }
}

/// A relay run in this test's process (`outbound_relay::App`), on its own runtime thread:
/// for tests that need no process boundary (no signal, no kill, no log read).
pub struct InProcess {
    /// `host:port`.
    pub addr: String,
    stop: Option<std::sync::mpsc::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl InProcess {
    /// Writes `config` as `relay.toml` in `dir` and starts a relay on it in this process.
    pub fn start(dir: &Path, config: &str) -> InProcess {
        let path = dir.join("relay.toml");
        std::fs::write(&path, config).unwrap();
        let relay = outbound_relay::Relay::load(Some(&path)).unwrap();
        let (addr_tx, addr_rx) = std::sync::mpsc::channel();
        let (stop_tx, stop_rx) = std::sync::mpsc::channel::<()>();
        let thread = std::thread::spawn(move || {
            let app = outbound_relay::App::start(&relay).unwrap();
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async {
                let listener = tokio::net::TcpListener::bind(&relay.listen).await.unwrap();
                addr_tx
                    .send(listener.local_addr().unwrap().to_string())
                    .unwrap();
                let stop = async move {
                    let _ = tokio::task::spawn_blocking(move || stop_rx.recv()).await;
                };
                app.serve(listener, stop).await;
            });
            rt.shutdown_timeout(Duration::from_millis(100));
            app.close();
        });
        let addr = addr_rx.recv_timeout(Duration::from_secs(30)).unwrap();
        InProcess {
            addr,
            stop: Some(stop_tx),
            thread: Some(thread),
        }
    }
}

impl Addr for InProcess {
    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }
}

impl Drop for InProcess {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
