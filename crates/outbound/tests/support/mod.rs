//! A real HTTP(S) receiver on 127.0.0.1 for the integration tests: records every request
//! and answers as the test's handler says (status, headers, body, delays, drips, hangs).
#![allow(dead_code)]

pub mod endpoint;
pub mod gen;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// A receiver that takes `delay` over each request before answering 200, and the most
/// requests it held at once: what a client had in memory to send, at most.
pub fn holding(delay: Duration) -> (Server, Arc<std::sync::atomic::AtomicUsize>) {
    use std::sync::atomic::AtomicUsize;
    let (now, most) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let m = most.clone();
    let server = Server::start(move |_| {
        m.fetch_max(now.fetch_add(1, Ordering::SeqCst) + 1, Ordering::SeqCst);
        std::thread::sleep(delay);
        now.fetch_sub(1, Ordering::SeqCst);
        Reply::Status(200)
    });
    (server, most)
}

/// `n` tracks `m-000`, `m-001`, ... each with a property of `pad` bytes.
pub fn padded_tracks(n: usize, pad: usize) -> Vec<outbound::Message> {
    let mut props = serde_json::Map::new();
    props.insert("pad".into(), "x".repeat(pad).into());
    (0..n)
        .map(|i| {
            outbound::Message::track("u1", "E")
                .message_id(format!("m-{i:03}"))
                .properties(props.clone())
        })
        .collect()
}

/// One request as the server read it.
#[derive(Clone, Debug)]
pub struct Request {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub at: Instant,
    /// 0-based position among all requests this server received.
    pub index: usize,
}

impl Request {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).expect("request body is JSON")
    }
}

/// What to answer.
#[derive(Clone, Debug)]
pub enum Reply {
    Status(u16),
    Full {
        status: u16,
        headers: Vec<(String, String)>,
        body: Vec<u8>,
    },
    /// Wait, then answer with the status.
    After(Duration, u16),
    /// Send headers announcing `len` bytes, then one byte per second.
    Drip {
        len: usize,
    },
    /// Never answer (until the server stops).
    Hang,
}

type Handler = dyn Fn(&Request) -> Reply + Send + Sync;

pub struct Server {
    pub url: String,
    pub port: u16,
    log: Arc<(Mutex<Vec<Request>>, Condvar)>,
    stop: Arc<AtomicBool>,
}

impl Server {
    /// A plain HTTP server.
    pub fn start(handler: impl Fn(&Request) -> Reply + Send + Sync + 'static) -> Server {
        Self::spawn(Arc::new(handler), None)
    }

    /// An HTTPS server presenting `chain` with `key` (PKCS#8 DER).
    pub fn start_tls(
        chain: Vec<Vec<u8>>,
        key: Vec<u8>,
        handler: impl Fn(&Request) -> Reply + Send + Sync + 'static,
    ) -> Server {
        use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
        let config = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(
            chain.into_iter().map(CertificateDer::from).collect(),
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key)),
        )
        .unwrap();
        Self::spawn(Arc::new(handler), Some(Arc::new(config)))
    }

    /// An HTTPS server presenting `chain` with `key` (PKCS#8 DER) that requires a client
    /// certificate issued by `client_ca` (DER): without one, the handshake fails.
    pub fn start_mtls(
        chain: Vec<Vec<u8>>,
        key: Vec<u8>,
        client_ca: Vec<u8>,
        handler: impl Fn(&Request) -> Reply + Send + Sync + 'static,
    ) -> Server {
        use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut roots = rustls::RootCertStore::empty();
        roots.add(CertificateDer::from(client_ca)).unwrap();
        let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
            Arc::new(roots),
            provider.clone(),
        )
        .build()
        .unwrap();
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_client_cert_verifier(verifier)
            .with_single_cert(
                chain.into_iter().map(CertificateDer::from).collect(),
                PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key)),
            )
            .unwrap();
        Self::spawn(Arc::new(handler), Some(Arc::new(config)))
    }

    /// Always answers `status`.
    pub fn answering(status: u16) -> Server {
        Self::start(move |_| Reply::Status(status))
    }

    fn spawn(handler: Arc<Handler>, tls: Option<Arc<rustls::ServerConfig>>) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let scheme = if tls.is_some() { "https" } else { "http" };
        let log: Arc<(Mutex<Vec<Request>>, Condvar)> = Default::default();
        let stop = Arc::new(AtomicBool::new(false));
        let (l, s) = (log.clone(), stop.clone());
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                if s.load(Ordering::SeqCst) {
                    return;
                }
                let Ok(conn) = conn else { continue };
                let (h, l, s, tls) = (handler.clone(), l.clone(), s.clone(), tls.clone());
                std::thread::spawn(move || match tls {
                    None => serve(conn, &*h, &l, &s),
                    Some(cfg) => {
                        let Ok(tls_conn) = rustls::ServerConnection::new(cfg) else {
                            return;
                        };
                        serve(rustls::StreamOwned::new(tls_conn, conn), &*h, &l, &s)
                    }
                });
            }
        });
        Server {
            url: format!("{scheme}://127.0.0.1:{port}"),
            port,
            log,
            stop,
        }
    }

    pub fn requests(&self) -> Vec<Request> {
        self.log.0.lock().unwrap().clone()
    }

    pub fn count(&self) -> usize {
        self.log.0.lock().unwrap().len()
    }

    /// Waits until at least `n` requests arrived; true if they did within `timeout`.
    pub fn wait_for(&self, n: usize, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let mut g = self.log.0.lock().unwrap();
        while g.len() < n {
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            g = self.log.1.wait_timeout(g, deadline - now).unwrap().0;
        }
        true
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

fn serve<S: Read + Write>(
    stream: S,
    handler: &Handler,
    log: &(Mutex<Vec<Request>>, Condvar),
    stop: &AtomicBool,
) {
    let mut reader = BufReader::new(stream);
    loop {
        let mut line = String::new();
        match reader.read_line(&mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        let mut parts = line.split_whitespace();
        let method = parts.next().unwrap_or("").to_string();
        let path = parts.next().unwrap_or("").to_string();
        let mut headers = Vec::new();
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
                headers.push((k.trim().to_string(), v.trim().to_string()));
            }
        }
        let len = headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
            .and_then(|(_, v)| v.parse::<usize>().ok())
            .unwrap_or(0);
        let mut body = vec![0; len];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let req = {
            let mut g = log.0.lock().unwrap();
            let req = Request {
                method,
                path,
                headers,
                body,
                at: Instant::now(),
                index: g.len(),
            };
            g.push(req.clone());
            log.1.notify_all();
            req
        };
        let reply = handler(&req);
        let out = reader.get_mut();
        let ok = match reply {
            Reply::Status(status) => respond(out, status, &[], b"ok"),
            Reply::Full {
                status,
                headers,
                body,
            } => respond(out, status, &headers, &body),
            Reply::After(wait, status) => {
                sleep_unless_stopped(wait, stop);
                respond(out, status, &[], b"ok")
            }
            Reply::Drip { len } => {
                let head = format!("HTTP/1.1 200 OK\r\nContent-Length: {len}\r\n\r\n");
                let mut ok = out.write_all(head.as_bytes()).is_ok();
                for _ in 0..len {
                    if !ok || stop.load(Ordering::SeqCst) {
                        break;
                    }
                    ok = out.write_all(b"x").and_then(|_| out.flush()).is_ok();
                    std::thread::sleep(Duration::from_secs(1));
                }
                false
            }
            Reply::Hang => {
                sleep_unless_stopped(Duration::from_secs(60), stop);
                false
            }
        };
        if !ok {
            return;
        }
    }
}

fn sleep_unless_stopped(d: Duration, stop: &AtomicBool) {
    // Coarse steps: hundreds of stalled connections must not cost the machine's CPU.
    let end = Instant::now() + d;
    while !stop.load(Ordering::SeqCst) {
        let now = Instant::now();
        if now >= end {
            return;
        }
        std::thread::sleep((end - now).min(Duration::from_millis(100)));
    }
}

fn respond<W: Write>(out: &mut W, status: u16, headers: &[(String, String)], body: &[u8]) -> bool {
    let mut head = format!("HTTP/1.1 {status} X\r\nContent-Length: {}\r\n", body.len());
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    // One write: a head and a body written apart wait on Nagle and the client's delayed ACK
    // (up to 40 ms a response), which made throughput tests measure the server.
    let mut whole = head.into_bytes();
    whole.extend_from_slice(body);
    out.write_all(&whole).is_ok() && out.flush().is_ok()
}

/// Outcomes as the callback saw them.
#[derive(Clone, Default)]
pub struct Outcomes(pub Arc<Mutex<Vec<outbound::Outcome>>>);

impl Outcomes {
    pub fn callback(&self) -> outbound::OutcomeCallback {
        let v = self.0.clone();
        Arc::new(move |o: &outbound::Outcome| v.lock().unwrap().push(o.clone()))
    }

    pub fn all(&self) -> Vec<outbound::Outcome> {
        self.0.lock().unwrap().clone()
    }

    pub fn wait_for(&self, n: usize, timeout: Duration) -> Vec<outbound::Outcome> {
        let deadline = Instant::now() + timeout;
        while self.0.lock().unwrap().len() < n && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        self.all()
    }
}

/// A config for tests: no proxy from the environment, fast retries.
pub fn config() -> outbound::Config {
    outbound::Config::default()
        .proxy_from_env(false)
        .debug(false)
        .retry(outbound::RetryPolicy {
            base: Duration::from_millis(20),
            max_backoff: Duration::from_millis(200),
            ..Default::default()
        })
}

/// An ingestion client for `server`.
pub fn ingestion(server: &Server) -> outbound::Config {
    config().write_key("wk_test").endpoint(server.url.clone())
}

/// A test CA and a leaf for 127.0.0.1 signed by it: (ca_pem, leaf_der, leaf_key_der).
pub fn ca_and_leaf() -> (String, Vec<u8>, Vec<u8>) {
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "outbound test CA");
    let ca =
        rcgen::CertifiedIssuer::self_signed(params, rcgen::KeyPair::generate().unwrap()).unwrap();
    let leaf_key = rcgen::KeyPair::generate().unwrap();
    let leaf = rcgen::CertificateParams::new(vec!["127.0.0.1".to_string()])
        .unwrap()
        .signed_by(&leaf_key, &ca)
        .unwrap();
    let ca_pem = AsRef::<rcgen::Certificate>::as_ref(&ca).pem();
    (ca_pem, leaf.der().to_vec(), leaf_key.serialize_der())
}

/// A CA and a client certificate it issued, for mutual TLS: (ca_der, client_cert_pem,
/// client_key_pem).
pub fn client_ca_and_cert() -> (Vec<u8>, String, String) {
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "outbound test client CA");
    let ca =
        rcgen::CertifiedIssuer::self_signed(params, rcgen::KeyPair::generate().unwrap()).unwrap();
    let key = rcgen::KeyPair::generate().unwrap();
    let mut leaf = rcgen::CertificateParams::new(vec!["client.test".to_string()]).unwrap();
    leaf.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
    let cert = leaf.signed_by(&key, &ca).unwrap();
    let ca_der = AsRef::<rcgen::Certificate>::as_ref(&ca).der().to_vec();
    (ca_der, cert.pem(), key.serialize_pem())
}

/// A self-signed certificate for 127.0.0.1: (der, key_der).
pub fn self_signed() -> (Vec<u8>, Vec<u8>) {
    let ck = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_string()]).unwrap();
    (ck.cert.der().to_vec(), ck.signing_key.serialize_der())
}
