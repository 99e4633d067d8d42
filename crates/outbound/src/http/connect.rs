//! Connections of the webhooks' I/O engine: where a URL's host is (a cached lookup; IP
//! literals need none), whether the network guard lets us go there (every address, after
//! the lookup, before any connection), TCP, the environment's proxy (a CONNECT tunnel to
//! the address the guard approved, so the proxy never resolves the name again), and TLS
//! (rustls with the web roots plus `ca_certs`).

use crate::error::Error;
use crate::http::attempt::{certificate_problem, Attempt};
use crate::http::pem;
use crate::http::proxy::Proxy;
use crate::model::config::{Config, EndpointTls};
use crate::model::network_guard::{Blocked, NetworkGuard};
use crate::model::outcome::Reason;
use ::http::uri::PathAndQuery;
use ::http::{HeaderValue, Uri};
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;
use tokio_rustls::rustls::pki_types::ServerName;
use tokio_rustls::rustls::ClientConfig;
use tokio_rustls::TlsConnector;

/// How long a host name's addresses are reused before asking the system again.
const NAME_TTL: Duration = Duration::from_secs(60);
/// Names kept at most; past it the expired ones go, then all (a lookup is cheap to repeat).
const NAMES_KEPT: usize = 16_384;
/// The largest answer head a proxy may give to CONNECT.
const PROXY_HEAD: usize = 8 * 1024;

/// One webhook URL, read once: what a request to it needs.
#[derive(Debug)]
pub(crate) struct ParsedUrl {
    pub https: bool,
    /// Without IPv6 brackets (shared: the pool's key holds it for each request).
    pub host: Arc<str>,
    pub port: u16,
    /// The `Host` header.
    pub authority: HeaderValue,
    /// Path and query: the request's origin-form target (not a whole `Uri`: 48 bytes less
    /// for each of a relay's 50,000 URLs).
    pub path: PathAndQuery,
}

impl ParsedUrl {
    /// The host as a URL writes it (IPv6 in brackets), as `NO_PROXY` entries are written.
    fn url_host(&self) -> std::borrow::Cow<'_, str> {
        match self.host.contains(':') {
            true => format!("[{}]", self.host).into(),
            false => (*self.host).into(),
        }
    }

    /// `url` was checked when the client was built (absolute http or https, no credentials).
    pub(crate) fn parse(url: &str) -> Result<ParsedUrl, String> {
        let uri: Uri = url.parse().map_err(|e| format!("invalid URL: {e}"))?;
        let https = match uri.scheme_str() {
            Some("https") => true,
            Some("http") => false,
            _ => return Err("the URL must be http or https".into()),
        };
        let authority = uri.authority().ok_or("the URL has no host")?.clone();
        let host: Arc<str> = Arc::from(
            authority
                .host()
                .trim_start_matches('[')
                .trim_end_matches(']'),
        );
        let port = authority.port_u16().unwrap_or(if https { 443 } else { 80 });
        let path: PathAndQuery = uri
            .path_and_query()
            .map_or("/", |p| p.as_str())
            .parse()
            .map_err(|e| format!("invalid path: {e}"))?;
        Ok(ParsedUrl {
            https,
            host,
            port,
            authority: HeaderValue::from_str(authority.as_str())
                .map_err(|e| format!("invalid host: {e}"))?,
            path,
        })
    }
}

/// Why no connection was made.
#[derive(Debug)]
pub(crate) enum ConnectError {
    /// The network guard refused an address of the host: nothing was sent (permanent).
    Blocked(Blocked),
    /// The peer's certificate was refused, or it refused ours: nothing was sent (permanent).
    Certificate(String),
    /// This setup cannot reach the URL at all (a proxy scheme we do not speak; permanent).
    Unsupported(String),
    /// Lookup, TCP, the proxy or TLS failed in a way that may pass (retryable).
    Io(String),
}

impl ConnectError {
    /// The attempt it makes: permanent when nothing could change (blocked, a certificate,
    /// an unsupported setup), else retryable.
    pub(crate) fn attempt(self) -> Attempt {
        match self {
            ConnectError::Blocked(b) => Attempt::Permanent {
                reason: Reason::Blocked,
                detail: b.to_string(),
            },
            ConnectError::Certificate(why) => Attempt::Permanent {
                reason: Reason::Certificate,
                detail: format!("certificate: {why}"),
            },
            ConnectError::Unsupported(why) => Attempt::Permanent {
                reason: Reason::Other,
                detail: why,
            },
            ConnectError::Io(detail) => Attempt::Retryable {
                reason: Reason::Connection,
                detail,
                retry_after: None,
            },
        }
    }
}

/// A connection as hyper uses it: plain TCP, or TLS over it.
pub(crate) enum Stream {
    Plain(TcpStream),
    Tls(Box<TlsStream<TcpStream>>),
}

impl AsyncRead for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_write_vectored(cx, bufs),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match self {
            Stream::Plain(s) => s.is_write_vectored(),
            Stream::Tls(s) => s.is_write_vectored(),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_flush(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

/// A name's addresses as looked up, and when.
type Looked = (Instant, Arc<[SocketAddr]>);

/// Host names' addresses, shared by every connector of an I/O engine.
#[derive(Default)]
pub(crate) struct Names {
    cache: Mutex<HashMap<(String, u16), Looked>>,
}

impl Names {
    /// The addresses of `host:port`: an IP literal as it is, a name from the cache or the
    /// system's resolver.
    async fn resolve(&self, host: &str, port: u16) -> Result<Arc<[SocketAddr]>, ConnectError> {
        if let Ok(ip) = host.parse::<IpAddr>() {
            return Ok(Arc::from([SocketAddr::new(ip, port)]));
        }
        let key = (host.to_string(), port);
        if let Some((at, addrs)) = lock(&self.cache).get(&key) {
            if at.elapsed() < NAME_TTL {
                return Ok(addrs.clone());
            }
        }
        let found: Vec<SocketAddr> = tokio::net::lookup_host((host, port))
            .await
            .map_err(|e| ConnectError::Io(format!("cannot resolve {host}: {e}")))?
            .collect();
        if found.is_empty() {
            return Err(ConnectError::Io(format!("{host} has no address")));
        }
        let addrs: Arc<[SocketAddr]> = Arc::from(found);
        let mut cache = lock(&self.cache);
        if cache.len() >= NAMES_KEPT {
            cache.retain(|_, (at, _)| at.elapsed() < NAME_TTL);
            if cache.len() >= NAMES_KEPT {
                cache.clear();
            }
        }
        cache.insert(key, (Instant::now(), addrs.clone()));
        Ok(addrs)
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// How one client's webhooks connect: its TLS roots, its network guard, its proxy. Clients
/// with the same settings share connections ([`Connector::key`]).
pub(crate) struct Connector {
    tls: TlsConnector,
    guard: Option<NetworkGuard>,
    proxy: Option<Proxy>,
    names: Arc<Names>,
    /// Tells connections made under other settings apart in the pool.
    key: u64,
}

impl Connector {
    /// What tells connectors apart: settings that decide where a connection may go and
    /// whom it trusts. Connectors with equal keys are interchangeable (an engine builds one
    /// per key: the roots alone are ~150 certificates parsed).
    pub(crate) fn key_of(config: &Config, tls: &EndpointTls, proxy: Option<&Proxy>) -> u64 {
        let mut key = std::hash::DefaultHasher::new();
        config.ca_certs.hash(&mut key);
        (&tls.client_cert, &tls.client_key, &tls.ca_certs).hash(&mut key);
        config.block_private_networks.hash(&mut key);
        config.allowed_networks.hash(&mut key);
        proxy
            .map(|p| (&p.scheme, &p.host, p.port, &p.auth))
            .hash(&mut key);
        key.finish()
    }

    /// A connector for `config`'s settings and an endpoint's own TLS (`tls`, its client
    /// certificate and roots; `webhook` names it in errors), through `proxy` (the
    /// environment's, from [`env_proxy`], or a test's).
    pub(crate) fn with_proxy(
        config: &Config,
        tls: &EndpointTls,
        webhook: &str,
        names: Arc<Names>,
        proxy: Option<Proxy>,
    ) -> Result<Connector, Error> {
        let tls_config = Connector::tls_config(config, tls, webhook)?;
        let guard = config.network_guard()?;
        let key = Connector::key_of(config, tls, proxy.as_ref());
        Ok(Connector {
            tls: TlsConnector::from(Arc::new(tls_config)),
            guard,
            proxy,
            names,
            key,
        })
    }

    /// The TLS settings of an endpoint: `config.ca_certs` or the endpoint's own roots, and
    /// its client certificate; every PEM read and checked (a key that does not fit its
    /// certificate is refused here).
    pub(crate) fn tls_config(
        config: &Config,
        tls: &EndpointTls,
        webhook: &str,
    ) -> Result<ClientConfig, Error> {
        let roots = match &tls.ca_certs {
            Some(own) => pem::only_roots(own, &format!("{webhook}.tls.ca_certs"))?,
            None => pem::roots(config.ca_certs.as_deref())?,
        };
        let provider = Arc::new(tokio_rustls::rustls::crypto::ring::default_provider());
        let builder = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| Error::config("ca_certs", format!("TLS: {e}")))?
            .with_root_certificates(roots);
        let tls_config = match (&tls.client_cert, &tls.client_key) {
            (Some(cert), Some(key)) => {
                let chain = pem::load_certs(cert, &format!("{webhook}.tls.client_cert"))?;
                let key = pem::load_key(key, &format!("{webhook}.tls.client_key"))?;
                builder.with_client_auth_cert(chain, key).map_err(|e| {
                    Error::config(
                        format!("{webhook}.tls.client_key"),
                        format!("does not fit the client certificate: {e}"),
                    )
                })?
            }
            _ => builder.with_no_client_auth(),
        };
        Ok(tls_config)
    }

    /// Connections made by connectors with equal keys are interchangeable.
    pub(crate) fn key(&self) -> u64 {
        self.key
    }

    /// A new connection to `t`: through the guard, the proxy when one applies, and TLS
    /// for https.
    pub(crate) async fn connect(&self, t: &ParsedUrl) -> Result<Stream, ConnectError> {
        let proxy = self
            .proxy
            .as_ref()
            .filter(|p| !p.bypassed_by(&t.url_host()));
        let tcp = match proxy {
            None => {
                let addrs = self.allowed(t).await?;
                dial(&addrs).await?
            }
            Some(p) => self.tunnel(p, t).await?,
        };
        let _ = tcp.set_nodelay(true);
        if !t.https {
            return Ok(Stream::Plain(tcp));
        }
        let name = ServerName::try_from(t.host.to_string())
            .map_err(|e| ConnectError::Unsupported(format!("invalid TLS name {}: {e}", t.host)))?;
        match self.tls.connect(name, tcp).await {
            Ok(tls) => Ok(Stream::Tls(Box::new(tls))),
            Err(e) => {
                let inner = e
                    .get_ref()
                    .and_then(|i| i.downcast_ref::<tokio_rustls::rustls::Error>());
                match inner.and_then(certificate_problem) {
                    Some(why) => Err(ConnectError::Certificate(why)),
                    None => Err(ConnectError::Io(format!("TLS: {e}"))),
                }
            }
        }
    }

    /// Whether `t` is reached only thanks to an exception of the guard (`allowed_networks`):
    /// such a receiver is inside the operator's networks, and its answers are not kept in
    /// records a tenant can read. False when the guard is off (the library's own endpoints).
    pub(crate) async fn excepted(&self, t: &ParsedUrl) -> bool {
        let Some(guard) = self.guard.as_ref().filter(|g| g.has_exceptions()) else {
            return false;
        };
        match self.names.resolve(&t.host, t.port).await {
            Ok(addrs) => addrs.iter().any(|a| guard.excepts(a.ip())),
            Err(_) => false,
        }
    }

    /// The addresses of `t` the guard lets us reach: every one must pass, so a name that
    /// also resolves to a private address is refused.
    async fn allowed(&self, t: &ParsedUrl) -> Result<Arc<[SocketAddr]>, ConnectError> {
        let addrs = self.names.resolve(&t.host, t.port).await?;
        if let Some(guard) = &self.guard {
            for a in addrs.iter() {
                guard.check(a.ip()).map_err(ConnectError::Blocked)?;
            }
        }
        Ok(addrs)
    }

    /// A CONNECT tunnel to `t` through the proxy. With the guard on, the tunnel goes to the
    /// address the guard approved (the proxy gets an IP, not a name it would resolve again);
    /// the proxy itself is the operator's and is not checked.
    async fn tunnel(&self, p: &Proxy, t: &ParsedUrl) -> Result<TcpStream, ConnectError> {
        if p.scheme != "http" {
            return Err(ConnectError::Unsupported(format!(
                "the proxy {} is not an http:// CONNECT proxy (the only kind requests use)",
                p.label()
            )));
        }
        let to = match &self.guard {
            Some(_) => {
                let a = self.allowed(t).await?[0];
                match a.ip() {
                    IpAddr::V6(ip) => format!("[{ip}]:{}", a.port()),
                    IpAddr::V4(ip) => format!("{ip}:{}", a.port()),
                }
            }
            None if t.host.contains(':') => format!("[{}]:{}", t.host, t.port),
            None => format!("{}:{}", t.host, t.port),
        };
        let addrs = self.names.resolve(&p.host, p.port).await?;
        let mut tcp = dial(&addrs).await?;
        let mut head = format!("CONNECT {to} HTTP/1.1\r\nHost: {to}\r\n");
        if let Some(auth) = &p.auth {
            head.push_str(&format!("Proxy-Authorization: {auth}\r\n"));
        }
        head.push_str("\r\n");
        let proxy_io = |e: io::Error| ConnectError::Io(format!("proxy: {e}"));
        tcp.write_all(head.as_bytes()).await.map_err(proxy_io)?;
        // Byte by byte up to the blank line: what follows belongs to the tunnel.
        let mut answer = Vec::with_capacity(256);
        while !answer.ends_with(b"\r\n\r\n") {
            if answer.len() >= PROXY_HEAD {
                return Err(ConnectError::Io("proxy: answer head too large".into()));
            }
            answer.push(tcp.read_u8().await.map_err(proxy_io)?);
        }
        let line = String::from_utf8_lossy(&answer);
        let status = line.split_ascii_whitespace().nth(1).unwrap_or("");
        if !status.starts_with('2') {
            let first = line.lines().next().unwrap_or("").to_string();
            return Err(ConnectError::Io(format!(
                "proxy refused CONNECT {to}: {first}"
            )));
        }
        Ok(tcp)
    }
}

/// The environment's proxy for a client with `proxy_from_env`.
pub(crate) fn env_proxy(config: &Config) -> Option<Proxy> {
    config.proxy_from_env.then(Proxy::from_env).flatten()
}

/// TCP to the first of `addrs` that answers.
async fn dial(addrs: &[SocketAddr]) -> Result<TcpStream, ConnectError> {
    let mut last = None;
    for a in addrs {
        match TcpStream::connect(a).await {
            Ok(s) => return Ok(s),
            Err(e) => last = Some(format!("connect {a}: {e}")),
        }
    }
    Err(ConnectError::Io(
        last.unwrap_or_else(|| "no address to connect to".into()),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_target_keeps_what_a_request_needs() {
        let t = ParsedUrl::parse("https://hooks.example.com/in/x?token=1").unwrap();
        assert!(t.https);
        assert_eq!((&*t.host, t.port), ("hooks.example.com", 443));
        assert_eq!(t.authority, "hooks.example.com");
        assert_eq!(t.path, "/in/x?token=1");
        let t = ParsedUrl::parse("http://[::1]:8080").unwrap();
        assert_eq!((&*t.host, t.port, t.https), ("::1", 8080, false));
        assert_eq!(t.authority, "[::1]:8080");
        assert_eq!(t.path, "/");
    }

    #[tokio::test]
    async fn ip_literals_need_no_lookup_and_names_are_cached() {
        let names = Names::default();
        let a = names.resolve("127.0.0.1", 80).await.unwrap();
        assert_eq!(&*a, &["127.0.0.1:80".parse().unwrap()]);
        assert!(lock(&names.cache).is_empty());
        let first = names.resolve("localhost", 9).await.unwrap();
        assert!(first.iter().all(|a| a.ip().is_loopback()), "{first:?}");
        assert!(lock(&names.cache).contains_key(&("localhost".to_string(), 9)));
        let again = names.resolve("localhost", 9).await.unwrap();
        assert!(Arc::ptr_eq(&first, &again));
    }
}
