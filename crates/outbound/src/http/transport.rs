//! HTTP: one ureq `Agent` per client, and the classification of every exchange into
//! success, retryable or permanent failure (design §7).

use crate::error::Error;
use crate::http::attempt::{self, classify_status, Attempt, MAX_ANSWER as MAX_BODY};
use crate::http::one_write::OneWrite;
use crate::http::recorder::{Destination, Recorder};
use crate::http::tcp::Connect;
use crate::model::config::Config;
use crate::model::network_guard::{Blocked, NetworkGuard};
use crate::model::outcome::Reason;
use crate::model::retry::parse_retry_after;
use std::collections::HashMap;
use std::io::Read;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use ureq::http::{HeaderName, HeaderValue, Request};
use ureq::tls::{Certificate, RootCerts, TlsConfig};
use ureq::unversioned::resolver::{DefaultResolver, ResolvedSocketAddrs, Resolver};
use ureq::unversioned::transport::{ConnectionDetails, Connector, NextTimeout};
use ureq::{Agent, AsSendBody, SendBody};

/// Each connection's read and write buffers (ureq's default is 128 KiB each, allocated and
/// zeroed per connection: with a lane's 512 requests in flight that was ~128 MiB of RSS).
/// Bodies are written through the buffer in pieces, and the read buffer grows for a
/// response head larger than this (up to ureq's 64 KiB limit).
const CONNECTION_BUFFER: usize = 16 * 1024;
/// The read buffer: a response head rarely needs more, and it grows when one does.
const READ_BUFFER: usize = 8 * 1024;

pub(crate) struct Transport {
    /// Ingestion's agent: through the network guard with `block_private_endpoint`.
    agent: Agent,
    /// Webhooks' agent: `agent` itself, or one whose resolver and connector refuse private
    /// addresses (`block_private_networks`).
    hooks: Agent,
    /// A recording client's record: requests are kept there and never sent.
    recorder: Option<Arc<Recorder>>,
}

impl Transport {
    pub(crate) fn new(config: &Config) -> Result<Transport, Error> {
        let roots = match &config.ca_certs {
            None => RootCerts::WebPki,
            Some(pem) => {
                let mut certs: Vec<Certificate<'static>> = webpki_root_certs::TLS_SERVER_ROOT_CERTS
                    .iter()
                    .map(|c| Certificate::from_der(c.as_ref()))
                    .collect();
                certs.extend(load_pem(pem)?);
                RootCerts::Specific(Arc::new(certs))
            }
        };
        let mut builder = Agent::config_builder()
            .tls_config(TlsConfig::builder().root_certs(roots).build())
            .timeout_global(Some(config.timeout))
            .http_status_as_error(false)
            .max_redirects(0)
            .max_redirects_will_error(false)
            .input_buffer_size(READ_BUFFER)
            .output_buffer_size(CONNECTION_BUFFER)
            .user_agent(ureq::config::AutoHeaderValue::None)
            // Keep-alive for every request a lane may have in flight (a reconnect per request
            // would cost a handshake exactly when receivers are slow).
            .max_idle_connections_per_host(config.max_in_flight)
            .max_idle_connections(config.max_in_flight * (1 + config.webhooks.len()));
        if !config.proxy_from_env {
            builder = builder.proxy(None);
        }
        let agent_config = builder.build();
        let plain = Agent::with_parts(
            agent_config.clone(),
            Connect::default().chain(OneWrite),
            Lookup::default(),
        );
        let agent_for = |guard: Option<NetworkGuard>| match guard {
            None => plain.clone(),
            Some(guard) => guarded(&agent_config, guard),
        };
        let hooks = agent_for(config.network_guard()?);
        let agent = agent_for(config.endpoint_guard()?);
        Ok(Transport {
            agent,
            hooks,
            recorder: None,
        })
    }

    /// This transport, recording into `recorder` (when given) instead of sending.
    pub(crate) fn recording_into(self, recorder: Option<Arc<Recorder>>) -> Transport {
        Transport { recorder, ..self }
    }

    /// POSTs `body` to the ingestion `url` with `headers` and classifies the result.
    pub(crate) fn post(
        &self,
        url: &str,
        headers: &[(HeaderName, HeaderValue)],
        body: &[u8],
    ) -> Attempt {
        if let Some(r) = &self.recorder {
            return classify_status(r.record(Destination::Ingestion, url, headers, body), None);
        }
        send(&self.agent, url, headers, body)
    }

    /// As [`post`](Self::post), with a body of `len` bytes read from `body` as it is sent
    /// (a batch's, straight from the queue's chunks).
    pub(crate) fn post_read(
        &self,
        url: &str,
        headers: &[(HeaderName, HeaderValue)],
        len: usize,
        body: &mut dyn Read,
    ) -> Attempt {
        if let Some(r) = &self.recorder {
            let mut bytes = Vec::with_capacity(len);
            // Reading from memory cannot fail.
            let _ = body.read_to_end(&mut bytes);
            return classify_status(r.record(Destination::Ingestion, url, headers, &bytes), None);
        }
        // With the length given, ureq sends the body as it reads it (and fails the request if
        // the reader gives more than `len` bytes; a `BatchReader` that ends short fails).
        let length = (
            HeaderName::from_static("content-length"),
            HeaderValue::from(len),
        );
        let headers = headers.iter().chain(std::iter::once(&length));
        send(&self.agent, url, headers, SendBody::from_reader(body))
    }

    /// POSTs `body` to a webhook `url`: as [`post`](Self::post), through the network guard
    /// when there is one.
    pub(crate) fn post_hook(
        &self,
        url: &str,
        headers: &[(HeaderName, HeaderValue)],
        body: &[u8],
    ) -> Attempt {
        if let Some(r) = &self.recorder {
            return match r.record_hook(url, headers, body) {
                Ok(status) => classify_status(status, None),
                Err(b) => refused(&b),
            };
        }
        send(&self.hooks, url, headers, body)
    }
}

/// An agent whose resolver and connector refuse what `guard` refuses.
fn guarded(agent_config: &ureq::config::Config, guard: NetworkGuard) -> Agent {
    let guard = Arc::new(Guarded {
        guard,
        proxy: agent_config
            .proxy()
            .map(|p| (p.host().to_owned(), p.port())),
    });
    Agent::with_parts(
        agent_config.clone(),
        GuardConnector(guard.clone())
            .chain(Connect::default())
            .chain(OneWrite),
        Lookup {
            guard: Some(guard),
            ..Lookup::default()
        },
    )
}

/// One POST through `agent`, classified.
fn send<'h>(
    agent: &Agent,
    url: &str,
    headers: impl IntoIterator<Item = &'h (HeaderName, HeaderValue)>,
    body: impl AsSendBody,
) -> Attempt {
    let mut req = Request::post(url);
    for (k, v) in headers {
        req = req.header(k, v);
    }
    let req = match req.body(body) {
        Ok(r) => r,
        Err(e) => {
            return Attempt::Permanent {
                reason: Reason::Other,
                detail: format!("invalid request: {e}"),
            }
        }
    };
    match agent.run(req) {
        Ok(mut resp) => {
            let status = resp.status().as_u16();
            let retry_after = resp
                .headers()
                .get("retry-after")
                .and_then(|v| v.to_str().ok())
                .and_then(parse_retry_after);
            // Read (a bounded part of) the body so the connection can be reused; a body
            // that drips or never ends is cut off by the global timeout or the limit.
            let mut sink = Vec::new();
            let read = resp
                .body_mut()
                .as_reader()
                .take(MAX_BODY)
                .read_to_end(&mut sink);
            if let Err(e) = read {
                if (200..300).contains(&status) {
                    // The receiver accepted it; a broken body does not undo that.
                    return Attempt::Success;
                }
                return classify_error(&ureq::Error::from(e));
            }
            classify_status(status, retry_after)
        }
        Err(e) => classify_error(&e),
    }
}

/// The network guard as the webhooks' resolver and connector use it, with the proxy from
/// the environment (the operator's own, so exempt).
#[derive(Debug)]
struct Guarded {
    guard: NetworkGuard,
    proxy: Option<(String, u16)>,
}

impl Guarded {
    fn is_proxy(&self, uri: &ureq::http::Uri) -> bool {
        let Some((host, port)) = &self.proxy else {
            return false;
        };
        let default = if uri.scheme_str() == Some("https") {
            443
        } else {
            80
        };
        uri.host() == Some(host.as_str()) && uri.port_u16().unwrap_or(default) == *port
    }

    /// Every address must pass: a name that also resolves to a private address is refused.
    fn check(&self, addrs: &[SocketAddr]) -> Result<(), ureq::Error> {
        for a in addrs {
            self.guard.check(a.ip()).map_err(|b| {
                ureq::Error::Io(std::io::Error::new(std::io::ErrorKind::PermissionDenied, b))
            })?;
        }
        Ok(())
    }
}

/// First in the webhooks' connector chain: checks the addresses about to be dialled (the
/// resolver checked them too; this also covers connections whose addresses did not come
/// from a fresh lookup). Behind a proxy that resolves the target itself, ureq gives no
/// addresses: the target's name is resolved and checked here all the same. Hands nothing on,
/// so the rest of the chain connects as usual.
#[derive(Debug)]
struct GuardConnector(Arc<Guarded>);

impl Connector<()> for GuardConnector {
    type Out = ();

    fn connect(
        &self,
        details: &ConnectionDetails,
        _chained: Option<()>,
    ) -> Result<Option<()>, ureq::Error> {
        if self.0.is_proxy(details.uri) {
            return Ok(None);
        }
        if details.addrs.is_empty() {
            details
                .resolver
                .resolve(details.uri, details.config, details.timeout)?;
        } else {
            self.0.check(&details.addrs)?;
        }
        Ok(None)
    }
}

/// The guard's refusal inside `e`, if that is what it is.
fn blocked(e: &ureq::Error) -> Option<&Blocked> {
    match e {
        ureq::Error::Io(io) => io.get_ref().and_then(|i| i.downcast_ref::<Blocked>()),
        _ => None,
    }
}

/// How long a host name's addresses are reused before asking the system again.
const NAME_TTL: Duration = Duration::from_secs(60);

/// ureq asks its resolver on every request, even over a pooled connection, and its default
/// one spawns a thread per lookup whenever a timeout is set: measured, a thread per
/// delivery. IP literals need no lookup at all; host names are cached for `NAME_TTL`.
/// (`ureq::unversioned` may change in a minor release: Cargo.lock pins the version.)
#[derive(Debug, Default)]
struct Lookup {
    fallback: DefaultResolver,
    names: Mutex<HashMap<String, (Instant, ResolvedSocketAddrs)>>,
    /// Webhooks with `block_private_networks`: every answer is checked (cached ones too).
    guard: Option<Arc<Guarded>>,
}

impl Resolver for Lookup {
    fn resolve(
        &self,
        uri: &ureq::http::Uri,
        config: &ureq::config::Config,
        timeout: NextTimeout,
    ) -> Result<ResolvedSocketAddrs, ureq::Error> {
        let addrs = self.lookup(uri, config, timeout)?;
        if let Some(g) = &self.guard {
            if !g.is_proxy(uri) {
                g.check(&addrs)?;
            }
        }
        Ok(addrs)
    }
}

impl Lookup {
    fn lookup(
        &self,
        uri: &ureq::http::Uri,
        config: &ureq::config::Config,
        timeout: NextTimeout,
    ) -> Result<ResolvedSocketAddrs, ureq::Error> {
        let (Some(authority), Some(scheme)) = (uri.authority(), uri.scheme_str()) else {
            return self.fallback.resolve(uri, config, timeout);
        };
        let port = authority
            .port_u16()
            .unwrap_or(if scheme == "https" { 443 } else { 80 });
        let host = authority.host();
        if let Ok(ip) = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<IpAddr>()
        {
            let mut addrs = self.empty();
            addrs.push(SocketAddr::new(ip, port));
            return Ok(addrs);
        }
        let key = format!("{host}:{port}");
        let mut names = self.names.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((at, addrs)) = names.get(&key) {
            if at.elapsed() < NAME_TTL {
                return Ok(addrs.clone());
            }
        }
        drop(names);
        let addrs = self.fallback.resolve(uri, config, timeout)?;
        names = self.names.lock().unwrap_or_else(|e| e.into_inner());
        names.insert(key, (Instant::now(), addrs.clone()));
        Ok(addrs)
    }
}

/// The network guard's refusal: permanent, nothing was sent.
fn refused(b: &Blocked) -> Attempt {
    Attempt::Permanent {
        reason: Reason::Blocked,
        detail: b.to_string(),
    }
}

fn classify_error(e: &ureq::Error) -> Attempt {
    if let Some(b) = blocked(e) {
        return refused(b);
    }
    if let Some(detail) = certificate_problem(e) {
        return Attempt::Permanent {
            reason: Reason::Certificate,
            detail: format!("certificate: {detail}"),
        };
    }
    let reason = match e {
        ureq::Error::Timeout(_) => Reason::Timeout,
        ureq::Error::Io(io) if io.kind() == std::io::ErrorKind::TimedOut => Reason::Timeout,
        ureq::Error::BadUri(_) | ureq::Error::Http(_) => {
            return Attempt::Permanent {
                reason: Reason::Other,
                detail: e.to_string(),
            }
        }
        _ => Reason::Connection,
    };
    Attempt::Retryable {
        reason,
        detail: e.to_string(),
        retry_after: None,
    }
}

/// The rustls certificate error inside `e`, if that is what it is.
fn certificate_problem(e: &ureq::Error) -> Option<String> {
    let tls = match e {
        ureq::Error::Rustls(t) => Some(t),
        ureq::Error::Io(io) => io.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>()),
        _ => None,
    }?;
    attempt::certificate_problem(tls)
}

/// Certificates from PEM text, or from the PEM file at that path.
pub(crate) fn load_pem(pem_or_path: &str) -> Result<Vec<Certificate<'static>>, Error> {
    let text = if pem_or_path.contains("-----BEGIN") {
        pem_or_path.as_bytes().to_vec()
    } else {
        std::fs::read(pem_or_path).map_err(|e| {
            Error::config(
                "ca_certs",
                format!("cannot read PEM file {pem_or_path:?}: {e}"),
            )
        })?
    };
    let mut certs = Vec::new();
    for item in ureq::tls::parse_pem(&text) {
        match item {
            Ok(ureq::tls::PemItem::Certificate(c)) => certs.push(c),
            Ok(_) => {}
            Err(e) => return Err(Error::config("ca_certs", format!("invalid PEM: {e}"))),
        }
    }
    if certs.is_empty() {
        return Err(Error::config("ca_certs", "no certificate found in the PEM"));
    }
    Ok(certs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lookup(l: &Lookup, url: &str) -> Vec<SocketAddr> {
        let uri: ureq::http::Uri = url.parse().unwrap();
        let config = ureq::config::Config::default();
        let timeout = NextTimeout {
            after: ureq::unversioned::transport::time::Duration::from_secs(1),
            ..NextTimeout::default()
        };
        l.resolve(&uri, &config, timeout)
            .unwrap()
            .iter()
            .copied()
            .collect()
    }

    #[test]
    fn ip_literals_are_used_as_they_are_and_names_are_cached() {
        let l = Lookup::default();
        assert_eq!(
            lookup(&l, "http://127.0.0.1:8080/x"),
            ["127.0.0.1:8080".parse().unwrap()]
        );
        assert_eq!(
            lookup(&l, "https://[::1]/x"),
            ["[::1]:443".parse().unwrap()]
        );
        assert!(
            l.names.lock().unwrap().is_empty(),
            "no lookup for IP literals"
        );
        let first = lookup(&l, "http://localhost:9/");
        assert!(
            first.iter().all(|a| a.ip().is_loopback() && a.port() == 9),
            "{first:?}"
        );
        assert!(l.names.lock().unwrap().contains_key("localhost:9"));
        assert_eq!(lookup(&l, "http://localhost:9/other"), first);
    }

    /// A listener on 127.0.0.1 that counts the connections it accepts.
    fn counting_listener() -> (String, Arc<std::sync::atomic::AtomicUsize>) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/hook", listener.local_addr().unwrap());
        let accepted = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let n = accepted.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                n.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                drop(conn);
            }
        });
        (url, accepted)
    }

    /// Reads from `s` up to and including the blank line that ends a request or response head.
    fn read_head(s: &mut std::net::TcpStream) -> String {
        let mut head = Vec::new();
        let mut byte = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") {
            s.read_exact(&mut byte).unwrap();
            head.push(byte[0]);
        }
        String::from_utf8(head).unwrap()
    }

    // tcp::Connect sends a client with a proxy through ureq's own chain: the request goes
    // through the proxy (CONNECT), never straight to the target.
    #[test]
    fn with_a_proxy_configured_requests_go_through_it() {
        use std::io::Write;
        let (target, accepted) = counting_listener();
        let proxy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let proxy_url = format!("http://{}", proxy.local_addr().unwrap());
        let seen = std::thread::spawn(move || {
            let (mut s, _) = proxy.accept().unwrap();
            let connect = read_head(&mut s);
            s.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
                .unwrap();
            // The tunnelled request: its head, then its 2-byte body.
            let post = read_head(&mut s);
            let mut body = [0u8; 2];
            s.read_exact(&mut body).unwrap();
            s.write_all(b"HTTP/1.1 204 No Content\r\n\r\n").unwrap();
            (connect, post, body)
        });
        let config = Agent::config_builder()
            .proxy(Some(ureq::Proxy::new(&proxy_url).unwrap()))
            .timeout_global(Some(Duration::from_secs(5)))
            .build();
        let agent = Agent::with_parts(
            config,
            Connect::default().chain(OneWrite),
            Lookup::default(),
        );
        assert_eq!(send(&agent, &target, &[], b"{}"), Attempt::Success);
        let (connect, post, body) = seen.join().unwrap();
        let authority = target
            .trim_start_matches("http://")
            .trim_end_matches("/hook");
        assert!(
            connect.starts_with(&format!("CONNECT {authority} HTTP/1.1\r\n")),
            "{connect:?}"
        );
        assert!(post.starts_with("POST /hook HTTP/1.1\r\n"), "{post:?}");
        assert_eq!(&body, b"{}");
        assert_eq!(accepted.load(std::sync::atomic::Ordering::SeqCst), 0);
    }

    fn loopback_guard() -> Arc<Guarded> {
        Arc::new(Guarded {
            guard: NetworkGuard::new(Vec::new()),
            proxy: None,
        })
    }

    fn ureq_config() -> ureq::config::Config {
        Agent::config_builder()
            .proxy(None)
            .timeout_global(Some(Duration::from_secs(2)))
            .build()
    }

    // Each layer on its own: the connector refuses even when the resolver lets the address
    // through, and the resolver refuses before any connector runs. No connection is made.
    #[test]
    fn the_connector_refuses_a_blocked_address_without_connecting() {
        let (url, accepted) = counting_listener();
        let agent = Agent::with_parts(
            ureq_config(),
            GuardConnector(loopback_guard()).chain(Connect::default()),
            Lookup::default(),
        );
        let attempt = send(&agent, &url, &[], b"{}");
        assert!(
            matches!(&attempt, Attempt::Permanent { reason: Reason::Blocked, detail }
                if detail.starts_with("blocked: 127.0.0.1 is a loopback address")),
            "{attempt:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
        assert_eq!(accepted.load(std::sync::atomic::Ordering::SeqCst), 0);
    }

    #[test]
    fn the_resolver_refuses_a_blocked_address_without_connecting() {
        let (url, accepted) = counting_listener();
        let agent = Agent::with_parts(
            ureq_config(),
            Connect::default(),
            Lookup {
                guard: Some(loopback_guard()),
                ..Lookup::default()
            },
        );
        let attempt = send(&agent, &url, &[], b"{}");
        assert!(
            matches!(
                attempt,
                Attempt::Permanent {
                    reason: Reason::Blocked,
                    ..
                }
            ),
            "{attempt:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
        assert_eq!(accepted.load(std::sync::atomic::Ordering::SeqCst), 0);
        // The same request without a guard does connect (the listener is real).
        let plain = Agent::with_parts(ureq_config(), Connect::default(), Lookup::default());
        let _ = send(&plain, &url, &[], b"{}");
        assert!(accepted.load(std::sync::atomic::Ordering::SeqCst) >= 1);
    }

    /// `block_private_endpoint` puts the ingestion endpoint behind the guard, with its own
    /// exceptions; the webhooks' exceptions do not apply to it.
    #[test]
    fn the_endpoint_guard_refuses_a_private_endpoint_unless_its_network_is_allowed() {
        let (url, accepted) = counting_listener();
        let config = |endpoint_allowed: &[&str]| Config {
            write_key: Some("wk".into()),
            block_private_networks: true,
            allowed_networks: vec!["127.0.0.0/8".into()],
            block_private_endpoint: true,
            endpoint_allowed_networks: endpoint_allowed.iter().map(|n| n.to_string()).collect(),
            proxy_from_env: false,
            timeout: Duration::from_secs(2),
            ..Config::default()
        };
        let transport = Transport::new(&config(&[])).unwrap();
        let attempt = transport.post(&url, &[], b"{}");
        assert!(
            matches!(&attempt, Attempt::Permanent { reason: Reason::Blocked, detail }
                if detail.starts_with("blocked: 127.0.0.1 is a loopback address")),
            "{attempt:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
        assert_eq!(accepted.load(std::sync::atomic::Ordering::SeqCst), 0);
        let allowed = Transport::new(&config(&["127.0.0.0/8"])).unwrap();
        let _ = allowed.post(&url, &[], b"{}");
        assert!(accepted.load(std::sync::atomic::Ordering::SeqCst) >= 1);
    }
}
