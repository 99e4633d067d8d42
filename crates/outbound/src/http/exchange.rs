//! One request out, classified (`attempt.rs`): over the network (a kept-alive connection or
//! a new one from `connect.rs`, hyper's HTTP/1.1 client on it, the whole exchange within
//! `timeout`: lookup, connect, TLS, request, answer and the first 64 KiB of its body), or
//! into a recording client's record (`recorder.rs`) with the same headers, body bytes and
//! network guard. Redirects are not followed.

use crate::error::Error;
use crate::http::attempt::{
    classify_status, keep_excerpt, shown_headers, Attempt, Seen, SeenHeaders, MAX_ANSWER,
};
use crate::http::connect::{ConnectError, Connector, ParsedUrl};
use crate::http::frames::Frames;
use crate::http::io::Io;
use crate::http::oauth::Tokens;
use crate::http::pool::{Key, Pool, Sender, KEEP_PER_HOST};
use crate::http::recorder::{Destination, Record, Recorder};
use crate::model::attempts::ErrorClass;
use crate::model::config::{Auth, Config, EndpointTls};
use crate::model::outcome::Reason;
use crate::model::retry::parse_retry_after;
use ::http::{HeaderName, HeaderValue, Method, Request};
use http_body_util::BodyExt;
use hyper::header::{AUTHORIZATION, CONTENT_LENGTH, HOST};
use hyper_util::rt::TokioIo;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How one client's requests of one kind (its batches, or its webhooks) go out: to each of
/// its URLs, read once, over the network or into its record.
pub(crate) struct Exchange {
    /// The URLs [`post`](Self::post) is given the index of.
    targets: Vec<ParsedUrl>,
    via: Via,
}

enum Via {
    Network(Network),
    /// A recording client's: nothing is sent.
    Record(Record),
}

impl Exchange {
    /// Webhook requests to `config.webhooks` (webhook `i` is `post`'s `to == i`), under the
    /// client's network guard (`block_private_networks`), each with its own TLS and
    /// OAuth2 tokens; into `record` when given.
    pub(crate) fn webhooks(
        config: &Config,
        io: &Io,
        record: Option<&Arc<Recorder>>,
    ) -> Result<Exchange, Error> {
        let ends: Vec<End> = (config.webhooks.iter().enumerate())
            .map(|(i, w)| End {
                url: &w.url,
                tls: &w.tls,
                auth: w.auth.as_ref(),
                name: format!("webhooks[{i}]"),
            })
            .collect();
        Exchange::new(config, io, &ends, Destination::Webhook, record)
    }

    /// Batch requests to `url` (`to == 0`), under the endpoint's own guard
    /// (`block_private_endpoint`, `endpoint_allowed_networks`), not the webhooks'.
    pub(crate) fn ingestion(
        config: &Config,
        io: &Io,
        url: &str,
        record: Option<&Arc<Recorder>>,
    ) -> Result<Exchange, Error> {
        let endpoint = Config {
            block_private_networks: config.block_private_endpoint,
            allowed_networks: config.endpoint_allowed_networks.clone(),
            ..config.clone()
        };
        let end = End {
            url,
            tls: &EndpointTls::default(),
            auth: None,
            name: "endpoint".into(),
        };
        Exchange::new(&endpoint, io, &[end], Destination::Ingestion, record)
    }

    fn new(
        config: &Config,
        io: &Io,
        ends: &[End<'_>],
        destination: Destination,
        record: Option<&Arc<Recorder>>,
    ) -> Result<Exchange, Error> {
        let setting = match destination {
            Destination::Webhook => "webhooks",
            Destination::Ingestion => "endpoint",
        };
        let mut targets = Vec::with_capacity(ends.len());
        for end in ends {
            targets.push(ParsedUrl::parse(end.url).map_err(|why| Error::config(setting, why))?);
        }
        let via = match record {
            Some(recorder) => {
                let urls: Vec<&str> = ends.iter().map(|e| e.url).collect();
                Via::Record(Record::new(
                    recorder.clone(),
                    destination,
                    config.network_guard()?,
                    &urls,
                ))
            }
            None => {
                let mut ways = Vec::with_capacity(ends.len());
                for end in ends {
                    let tokens = match end.auth {
                        Some(Auth::OAuth2(o)) => Some(Arc::new(Tokens::new(o, &end.name)?)),
                        _ => None,
                    };
                    ways.push(Way {
                        connector: io.connector(config, end.tls, &end.name)?,
                        tokens,
                    });
                }
                Via::Network(Network {
                    pool: io.pool.clone(),
                    timeout: config.timeout,
                    keep: KEEP_PER_HOST,
                    method: (config.send_as.as_ref()).map_or(Method::POST, |s| s.method.clone()),
                    ways: ways.into_boxed_slice(),
                })
            }
        };
        Ok(Exchange { targets, via })
    }

    /// POSTs `body` to URL `to` with `headers` (`Host` and `Content-Length` are added) and
    /// classifies what happened; with what the exchange showed (its duration, status or
    /// kind of error, and the start of a failure's answer).
    pub(crate) async fn post(
        &self,
        to: usize,
        headers: &[(HeaderName, HeaderValue)],
        body: Frames,
    ) -> (Attempt, Seen) {
        match &self.via {
            Via::Record(r) => r.post(to, headers, body),
            Via::Network(n) => n.post(to, &self.targets[to], headers, body).await,
        }
    }
}

/// One URL as an exchange is made for it.
struct End<'a> {
    url: &'a str,
    tls: &'a EndpointTls,
    auth: Option<&'a Auth>,
    /// How errors name it (`webhooks[2]`, `endpoint`).
    name: String,
}

/// How requests go over the network: the engine's pool, the client's timeout and method
/// (the same for all its URLs, so held once), and each URL's own way out.
struct Network {
    pool: Arc<Pool>,
    timeout: Duration,
    /// Idle connections kept per host ([`KEEP_PER_HOST`]).
    keep: usize,
    /// `POST`, or a subscription's method.
    method: Method,
    /// URL `i`'s is `ways[i]`.
    ways: Box<[Way]>,
}

/// What differs between one client's URLs: the connector (TLS roots, guard, proxy) and
/// the OAuth2 tokens.
struct Way {
    connector: Arc<Connector>,
    /// OAuth2 client credentials: each request carries the token.
    tokens: Option<Arc<Tokens>>,
}

impl Network {
    async fn post(
        &self,
        to: usize,
        t: &ParsedUrl,
        headers: &[(HeaderName, HeaderValue)],
        body: Frames,
    ) -> (Attempt, Seen) {
        let way = &self.ways[to];
        let Some(tokens) = &way.tokens else {
            return self.post_once(way, t, headers, body).await;
        };
        let started = Instant::now();
        let mut refused = None;
        loop {
            let token = tokens
                .authorization(&way.connector, self.timeout, refused.as_ref())
                .await;
            let token = match token {
                Ok(token) => token,
                Err(attempt) => {
                    let seen = Seen {
                        took: started.elapsed(),
                        status: None,
                        error: Some(ErrorClass::Other),
                        excerpt: None,
                        headers: None,
                    };
                    return (attempt, seen);
                }
            };
            let mut with = Vec::with_capacity(headers.len() + 1);
            with.extend_from_slice(headers);
            with.push((AUTHORIZATION, token.clone()));
            let (attempt, seen) = self.post_once(way, t, &with, body.clone()).await;
            // A 401 with a token that was good a moment ago: revoked or expired early. Once
            // more with a new one.
            if seen.status == Some(401) && refused.is_none() {
                refused = Some(token);
                continue;
            }
            return (attempt, seen);
        }
    }

    async fn post_once(
        &self,
        way: &Way,
        t: &ParsedUrl,
        headers: &[(HeaderName, HeaderValue)],
        body: Frames,
    ) -> (Attempt, Seen) {
        let started = Instant::now();
        let mut answer = Answered::default();
        let exchange = self.exchange(way, t, headers, body, &mut answer);
        let attempt = match tokio::time::timeout(self.timeout, exchange).await {
            Ok(attempt) => attempt,
            Err(_) => {
                answer.error = Some(ErrorClass::Timeout);
                Attempt::Retryable {
                    reason: Reason::Timeout,
                    detail: format!("timeout: no complete answer within {:?}", self.timeout),
                    retry_after: None,
                }
            }
        };
        let seen = Seen {
            took: started.elapsed(),
            status: answer.status,
            error: match (&attempt, answer.status) {
                (Attempt::Success, _) => None,
                (_, Some(_)) if answer.error.is_none() => None,
                _ => answer
                    .error
                    .or_else(|| Seen::of(&attempt, Duration::ZERO).error),
            },
            excerpt: None,
            headers: None,
        };
        if !answer.excerpt.is_empty() && way.connector.excepted(t).await {
            answer.excerpt =
                b"(not kept: the receiver is in a network allowed by allowed_networks)".to_vec();
            answer.headers.clear();
        }
        let mut seen = seen.with_answer(&attempt, answer.excerpt);
        if !matches!(attempt, Attempt::Success) {
            let request = headers.iter().map(|(k, v)| (k.as_str(), v.as_bytes()));
            seen.headers = Some(Box::new(SeenHeaders {
                request: shown_headers(request),
                answer: answer.headers,
            }));
        }
        (attempt, seen)
    }

    async fn exchange(
        &self,
        way: &Way,
        t: &ParsedUrl,
        headers: &[(HeaderName, HeaderValue)],
        body: Frames,
        seen: &mut Answered,
    ) -> Attempt {
        let key: Key = (way.connector.key(), t.https, t.host.clone(), t.port);
        // A kept-alive connection the receiver closed meanwhile fails before the request is
        // sent ("canceled"): then a new connection, once.
        let mut reused = true;
        loop {
            let pooled = if reused { self.pool.take(&key) } else { None };
            let mut tx = match pooled {
                Some(tx) => tx,
                None => {
                    reused = false;
                    // Boxed: connecting (and TLS) is rare with keep-alive, and inline its
                    // state would make every request's future that much larger to move.
                    match Box::pin(open(&way.connector, t)).await {
                        Ok(tx) => tx,
                        Err(e) => {
                            seen.error = Some(match &e {
                                ConnectError::Blocked(_) => ErrorClass::Blocked,
                                ConnectError::Certificate(_) => ErrorClass::Tls,
                                ConnectError::Unsupported(_) => ErrorClass::Other,
                                ConnectError::Io(why) => ErrorClass::of_text(why),
                            });
                            return e.attempt();
                        }
                    }
                }
            };
            if tx.ready().await.is_err() {
                if reused {
                    reused = false;
                    continue;
                }
                seen.error = Some(ErrorClass::Reset);
                return retry_connection("connection closed before the request".into());
            }
            let request = request(&self.method, t, headers, body.clone());
            let answer = match tx.send_request(request).await {
                Ok(answer) => answer,
                Err(e) if reused && e.is_canceled() => {
                    reused = false;
                    continue;
                }
                Err(e) => {
                    if let Some(why) = client_certificate_refused(&e) {
                        seen.error = Some(ErrorClass::Tls);
                        return Attempt::Permanent {
                            reason: Reason::Certificate,
                            detail: format!("certificate: {why}"),
                        };
                    }
                    seen.error = Some(class_of(&e));
                    return retry_connection(describe(&e));
                }
            };
            let status = answer.status().as_u16();
            seen.status = Some(status);
            let retry_after = answer
                .headers()
                .get("retry-after")
                .and_then(|v| v.to_str().ok())
                .and_then(parse_retry_after);
            // Read (a bounded part of) the body so the connection can be reused; a body
            // that drips or never ends is cut off by the timeout or the limit. A failure's
            // first bytes are kept for its record.
            let failed = !(200..300).contains(&status);
            if failed {
                let kept = answer
                    .headers()
                    .iter()
                    .map(|(k, v)| (k.as_str(), v.as_bytes()));
                seen.headers = shown_headers(kept);
            }
            let mut body = answer.into_body();
            let mut read = 0u64;
            let whole = loop {
                match body.frame().await {
                    None => break true,
                    Some(Ok(frame)) => {
                        let data = frame.data_ref().map_or(&[][..], |d| &d[..]);
                        if failed {
                            keep_excerpt(&mut seen.excerpt, data);
                        }
                        read += data.len() as u64;
                        if read > MAX_ANSWER {
                            break false;
                        }
                    }
                    Some(Err(e)) => {
                        if !failed {
                            // The receiver accepted it; a broken body does not undo that.
                            return Attempt::Success;
                        }
                        seen.error = Some(class_of(&e));
                        return retry_connection(describe(&e));
                    }
                }
            };
            if whole {
                self.pool.put(key, tx, self.keep);
            }
            return classify_status(status, retry_after);
        }
    }
}

/// A new connection through `connector` with hyper's HTTP/1.1 client on it; its driver
/// runs as a task of its own until the connection closes.
async fn open(connector: &Connector, t: &ParsedUrl) -> Result<Sender, ConnectError> {
    let stream = connector.connect(t).await?;
    let (tx, conn) = hyper::client::conn::http1::Builder::new()
        .handshake(TokioIo::new(stream))
        .await
        .map_err(|e| ConnectError::Io(describe(&e)))?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    Ok(tx)
}

fn request(
    method: &Method,
    t: &ParsedUrl,
    headers: &[(HeaderName, HeaderValue)],
    body: Frames,
) -> Request<Frames> {
    let len = HeaderValue::from(body.len());
    let mut req = Request::new(body);
    *req.method_mut() = method.clone();
    *req.uri_mut() = t.path.clone().into();
    let map = req.headers_mut();
    map.reserve(headers.len() + 2);
    map.append(HOST, t.authority.clone());
    map.append(CONTENT_LENGTH, len);
    for (k, v) in headers {
        map.append(k.clone(), v.clone());
    }
    req
}

fn retry_connection(detail: String) -> Attempt {
    Attempt::Retryable {
        reason: Reason::Connection,
        detail,
        retry_after: None,
    }
}

/// What an exchange showed as it went: its answer's status and first bytes, or the kind of
/// error that ended it.
#[derive(Default)]
struct Answered {
    status: Option<u16>,
    error: Option<ErrorClass>,
    excerpt: Vec<u8>,
    /// A failure's answer headers, as a log shows them.
    headers: Vec<(String, String)>,
}

/// The kind of an error of hyper's: a reset or closed connection by the I/O error under it
/// (or hyper's own "connection closed before message completed"), else by its words.
fn class_of(e: &(dyn std::error::Error + 'static)) -> ErrorClass {
    let mut source = Some(e);
    while let Some(s) = source {
        if let Some(io) = s.downcast_ref::<std::io::Error>() {
            use std::io::ErrorKind::*;
            match io.kind() {
                ConnectionReset | ConnectionAborted | BrokenPipe | UnexpectedEof => {
                    return ErrorClass::Reset
                }
                ConnectionRefused => return ErrorClass::Refused,
                TimedOut => return ErrorClass::Timeout,
                _ => {}
            }
        }
        source = s.source();
    }
    if e.downcast_ref::<hyper::Error>()
        .is_some_and(|h| h.is_incomplete_message() || h.is_closed())
    {
        return ErrorClass::Reset;
    }
    ErrorClass::of_text(&describe(e))
}

/// The endpoint's refusal of our client certificate, or of its absence (mutual TLS): TLS
/// 1.3 sends it after the handshake, so it comes with the request. Retrying cannot help.
fn client_certificate_refused(e: &(dyn std::error::Error + 'static)) -> Option<String> {
    use tokio_rustls::rustls::{AlertDescription as A, Error as TlsError};
    let mut source = Some(e);
    while let Some(s) = source {
        let tls = (s.downcast_ref::<std::io::Error>())
            .and_then(|io| io.get_ref())
            .and_then(|inner| inner.downcast_ref::<TlsError>());
        if let Some(TlsError::AlertReceived(alert)) = tls {
            return match alert {
                A::CertificateRequired => Some(
                    "the endpoint requires a client certificate (set tls.client_cert and \
                     tls.client_key)"
                        .into(),
                ),
                A::BadCertificate
                | A::UnsupportedCertificate
                | A::CertificateRevoked
                | A::CertificateExpired
                | A::CertificateUnknown
                | A::UnknownCA
                // A chain that names a trusted CA but whose signature does not check out.
                | A::DecryptError
                | A::AccessDenied => Some(format!(
                    "the endpoint refused our client certificate (alert {alert:?})"
                )),
                _ => None,
            };
        }
        source = s.source();
    }
    None
}

/// An error and what caused it, in one line (hyper's own text alone says little: "connection
/// error").
fn describe(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::connect::Names;
    use crate::http::proxy::Proxy;
    use bytes::Bytes;
    use std::io::{Read, Write};
    use std::net::{TcpListener, TcpStream};
    use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};

    /// Reads one request (head and `Content-Length` body) from `s`; `None` at end of stream.
    fn read_request(s: &mut TcpStream) -> Option<String> {
        let mut head = Vec::new();
        let mut byte = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") {
            if s.read(&mut byte).ok()? == 0 {
                return None;
            }
            head.push(byte[0]);
        }
        let head = String::from_utf8(head).ok()?;
        let len: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length: "))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0);
        let mut body = vec![0u8; len];
        s.read_exact(&mut body).ok()?;
        Some(head)
    }

    /// A receiver on 127.0.0.1 answering every request on a connection with `answer`, then
    /// closing the connection after `per_connection` requests; counts connections.
    fn receiver(answer: &'static [u8], per_connection: usize) -> (String, Arc<AtomicUsize>) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/hook", listener.local_addr().unwrap());
        let conns = Arc::new(AtomicUsize::new(0));
        let n = conns.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(mut s) = conn else { return };
                n.fetch_add(1, SeqCst);
                std::thread::spawn(move || {
                    for _ in 0..per_connection {
                        if read_request(&mut s).is_none() || s.write_all(answer).is_err() {
                            return;
                        }
                    }
                });
            }
        });
        (url, conns)
    }

    /// A network exchange of one URL (`to == 0`).
    fn exchange(config: &Config, proxy: Option<Proxy>) -> Network {
        let way = Way {
            connector: Arc::new(
                Connector::with_proxy(
                    config,
                    &EndpointTls::default(),
                    "webhooks[0]",
                    Arc::new(Names::default()),
                    proxy,
                )
                .unwrap(),
            ),
            tokens: None,
        };
        Network {
            pool: Arc::new(Pool::default()),
            timeout: Duration::from_secs(5),
            keep: 8,
            method: Method::POST,
            ways: Box::new([way]),
        }
    }

    const NO_CONTENT: &[u8] = b"HTTP/1.1 204 No Content\r\n\r\n";

    #[tokio::test]
    async fn a_connection_is_kept_alive_between_requests_to_a_host() {
        let (url, conns) = receiver(NO_CONTENT, usize::MAX);
        let ex = exchange(&Config::default(), None);
        let t = ParsedUrl::parse(&url).unwrap();
        for _ in 0..3 {
            let a = ex
                .post(0, &t, &[], Frames::one(Bytes::from_static(b"{}")))
                .await
                .0;
            assert_eq!(a, Attempt::Success);
        }
        assert_eq!(conns.load(SeqCst), 1, "one connection for three requests");
        assert_eq!(ex.pool.idle(), 1);
    }

    #[tokio::test]
    async fn a_kept_connection_the_receiver_closed_is_replaced_without_a_failure() {
        // One request per connection, then the receiver closes it.
        let (url, conns) = receiver(NO_CONTENT, 1);
        let ex = exchange(&Config::default(), None);
        let t = ParsedUrl::parse(&url).unwrap();
        for _ in 0..3 {
            assert_eq!(
                ex.post(0, &t, &[], Frames::one(Bytes::from_static(b"{}")))
                    .await
                    .0,
                Attempt::Success
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert_eq!(conns.load(SeqCst), 3);
    }

    #[tokio::test]
    async fn an_answer_over_64_kib_is_cut_off_and_its_connection_not_kept() {
        static BIG: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
        let big = BIG.get_or_init(|| {
            let body = vec![b'x'; 200 * 1024];
            let mut a =
                format!("HTTP/1.1 200 OK\r\ncontent-length: {}\r\n\r\n", body.len()).into_bytes();
            a.extend(body);
            a
        });
        let (url, _) = receiver(big, usize::MAX);
        let ex = exchange(&Config::default(), None);
        let t = ParsedUrl::parse(&url).unwrap();
        assert_eq!(
            ex.post(0, &t, &[], Frames::one(Bytes::from_static(b"{}")))
                .await
                .0,
            Attempt::Success
        );
        assert_eq!(
            ex.pool.idle(),
            0,
            "not reused: the rest of its answer is unread"
        );
    }

    /// A CONNECT proxy on 127.0.0.1 that tunnels to the address it is asked for and reports
    /// each CONNECT line.
    fn proxy() -> (Proxy, std::sync::mpsc::Receiver<String>) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(mut client) = conn else { return };
                let Some(head) = read_request(&mut client) else {
                    continue;
                };
                let line = head.lines().next().unwrap_or("").to_string();
                let to = line.split(' ').nth(1).unwrap_or("").to_string();
                tx.send(line).unwrap();
                let Ok(upstream) = TcpStream::connect(&to) else {
                    let _ = client.write_all(b"HTTP/1.1 502 Bad Gateway\r\n\r\n");
                    continue;
                };
                client
                    .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
                    .unwrap();
                let (mut c2, mut u2) = (client.try_clone().unwrap(), upstream.try_clone().unwrap());
                let (mut c, mut u) = (client, upstream);
                std::thread::spawn(move || std::io::copy(&mut c2, &mut u2));
                std::thread::spawn(move || std::io::copy(&mut u, &mut c));
            }
        });
        (Proxy::parse(&url).unwrap(), rx)
    }

    #[tokio::test]
    async fn through_a_proxy_the_request_goes_in_a_connect_tunnel() {
        let (url, conns) = receiver(NO_CONTENT, usize::MAX);
        let (proxy, seen) = proxy();
        let ex = exchange(&Config::default(), Some(proxy));
        let url = url.replace("127.0.0.1", "localhost");
        let t = ParsedUrl::parse(&url).unwrap();
        assert_eq!(
            ex.post(0, &t, &[], Frames::one(Bytes::from_static(b"{}")))
                .await
                .0,
            Attempt::Success
        );
        let connect = seen.try_recv().unwrap();
        let port = t.port;
        assert_eq!(connect, format!("CONNECT localhost:{port} HTTP/1.1"));
        assert_eq!(conns.load(SeqCst), 1);
    }

    #[tokio::test]
    async fn with_the_guard_the_proxy_is_given_the_address_the_guard_approved() {
        let (url, _) = receiver(NO_CONTENT, usize::MAX);
        let (proxy, seen) = proxy();
        let config = Config {
            block_private_networks: true,
            allowed_networks: vec!["127.0.0.0/8".into()],
            ..Config::default()
        };
        let ex = exchange(&config, Some(proxy));
        let t = ParsedUrl::parse(&url.replace("127.0.0.1", "localhost")).unwrap();
        assert_eq!(
            ex.post(0, &t, &[], Frames::one(Bytes::from_static(b"{}")))
                .await
                .0,
            Attempt::Success
        );
        let connect = seen.try_recv().unwrap();
        assert_eq!(
            connect,
            format!("CONNECT 127.0.0.1:{} HTTP/1.1", t.port),
            "an IP: the proxy cannot resolve the name to somewhere else"
        );
        // Without the allowance the guard refuses before the proxy hears of it.
        let guarded = Config {
            block_private_networks: true,
            ..Config::default()
        };
        let (proxy, seen) = self::proxy();
        let ex = exchange(&guarded, Some(proxy));
        let a = ex
            .post(0, &t, &[], Frames::one(Bytes::from_static(b"{}")))
            .await
            .0;
        assert!(
            matches!(
                &a,
                Attempt::Permanent {
                    reason: Reason::Blocked,
                    ..
                }
            ),
            "{a:?}"
        );
        assert!(seen.try_recv().is_err(), "nothing reached the proxy");
    }

    /// A receiver answering every request with `answer` after reading it, or (`None`)
    /// closing the connection without a word.
    fn answering(answer: Option<&'static [u8]>) -> String {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/hook", listener.local_addr().unwrap());
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(mut s) = conn else { return };
                std::thread::spawn(move || {
                    if read_request(&mut s).is_some() {
                        if let Some(a) = answer {
                            let _ = s.write_all(a);
                        }
                    }
                });
            }
        });
        url
    }

    #[tokio::test]
    async fn an_exchange_shows_its_duration_status_and_the_start_of_a_failure_s_answer() {
        static BAD: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
        let bad = BAD.get_or_init(|| {
            let body: Vec<u8> = (0..3000).map(|i| b'a' + (i % 26) as u8).collect();
            let mut a = format!(
                "HTTP/1.1 400 Bad Request\r\ncontent-length: {}\r\n\r\n",
                3000
            )
            .into_bytes();
            a.extend(body);
            a
        });
        let ex = exchange(&Config::default(), None);
        let t = ParsedUrl::parse(&answering(Some(bad))).unwrap();
        let (a, seen) = ex
            .post(0, &t, &[], Frames::one(Bytes::from_static(b"{}")))
            .await;
        // The classification is the one it always was.
        assert_eq!(a, classify_status(400, None));
        assert_eq!((seen.status, seen.error), (Some(400), None));
        assert!(seen.took > Duration::ZERO);
        let excerpt = seen.excerpt.unwrap();
        assert_eq!(
            &excerpt[..],
            &bad[bad.len() - 3000..],
            "the whole answer, within 64 KiB"
        );
        let headers = seen.headers.unwrap();
        assert_eq!(headers.answer, [("content-length".into(), "3000".into())]);
        // A delivery keeps no answer.
        let t = ParsedUrl::parse(&answering(Some(NO_CONTENT))).unwrap();
        let (a, seen) = ex
            .post(0, &t, &[], Frames::one(Bytes::from_static(b"{}")))
            .await;
        assert_eq!(
            (a, seen.status, seen.excerpt),
            (Attempt::Success, Some(204), None)
        );
    }

    #[tokio::test]
    async fn a_failure_without_an_answer_is_classed_refused_reset_timeout_tls_or_blocked() {
        let class = |ex: Network, url: String| async move {
            let t = ParsedUrl::parse(&url).unwrap();
            let (a, seen) = ex
                .post(0, &t, &[], Frames::one(Bytes::from_static(b"{}")))
                .await;
            assert_eq!(seen.status, None, "{a:?}");
            seen.error
        };
        let quick = || Network {
            timeout: Duration::from_millis(300),
            ..exchange(&Config::default(), None)
        };
        // Nothing listens: refused.
        let closed = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/hook", closed.local_addr().unwrap());
        drop(closed);
        assert_eq!(class(quick(), url).await, Some(ErrorClass::Refused));
        // The receiver reads the request and hangs up: reset.
        assert_eq!(
            class(quick(), answering(None)).await,
            Some(ErrorClass::Reset)
        );
        // It never answers: timeout.
        let silent = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/hook", silent.local_addr().unwrap());
        assert_eq!(class(quick(), url).await, Some(ErrorClass::Timeout));
        drop(silent);
        // HTTPS to a receiver that speaks plain HTTP at once: the handshake fails.
        let plain = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("https://{}/hook", plain.local_addr().unwrap());
        std::thread::spawn(move || {
            for conn in plain.incoming() {
                let Ok(mut s) = conn else { return };
                let _ = s.write_all(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n");
            }
        });
        assert_eq!(class(quick(), url).await, Some(ErrorClass::Tls));
        // The guard refuses the address: blocked, nothing sent.
        let guarded = Config {
            block_private_networks: true,
            ..Config::default()
        };
        let ex = exchange(&guarded, None);
        let url = answering(Some(NO_CONTENT));
        assert_eq!(class(ex, url).await, Some(ErrorClass::Blocked));
    }

    fn post_once(io: &Io, ex: &Exchange) -> (Attempt, Seen) {
        let body = Frames::one(Bytes::from_static(b"{}"));
        io.handle().block_on(ex.post(0, &[], body))
    }

    /// `block_private_endpoint` puts the ingestion endpoint behind the guard, with its own
    /// exceptions; the webhooks' exceptions do not apply to it.
    #[test]
    fn the_endpoint_guard_refuses_a_private_endpoint_unless_its_network_is_allowed() {
        let io = Io::start(1, "outbound-test").unwrap();
        let (url, conns) = receiver(NO_CONTENT, usize::MAX);
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
        let refused = Exchange::ingestion(&config(&[]), &io, &url, None).unwrap();
        let (a, _) = post_once(&io, &refused);
        assert!(
            matches!(&a, Attempt::Permanent { reason: Reason::Blocked, detail }
                if detail.starts_with("blocked: 127.0.0.1 is a loopback address")),
            "{a:?}"
        );
        assert_eq!(conns.load(SeqCst), 0);
        let allowed = Exchange::ingestion(&config(&["127.0.0.0/8"]), &io, &url, None).unwrap();
        assert_eq!(post_once(&io, &allowed).0, Attempt::Success);
        assert_eq!(conns.load(SeqCst), 1);
    }

    /// A recording exchange keeps what the network one would send (the headers given, the
    /// body's bytes, the URL as given), under the same guard, and sends nothing.
    #[test]
    fn a_recording_exchange_records_under_the_guard_and_sends_nothing() {
        let io = Io::start(1, "outbound-test").unwrap();
        let (url, conns) = receiver(NO_CONTENT, usize::MAX);
        let recorder = Arc::new(Recorder::default());
        let guarded = Config {
            block_private_networks: true,
            webhooks: vec![crate::Webhook::new(&url)].into(),
            ..Config::default()
        };
        let ex = Exchange::webhooks(&guarded, &io, Some(&recorder)).unwrap();
        let (a, seen) = post_once(&io, &ex);
        assert!(
            matches!(&a, Attempt::Permanent { reason: Reason::Blocked, detail }
                if detail.starts_with("blocked: 127.0.0.1 is a loopback address")),
            "{a:?}"
        );
        assert_eq!(seen.error, Some(ErrorClass::Blocked));
        assert!(
            recorder.requests.lock().unwrap().is_empty(),
            "nothing recorded"
        );
        let open = Config::default().webhooks(vec![crate::Webhook::new(&url)]);
        let ex = Exchange::webhooks(&open, &io, Some(&recorder)).unwrap();
        let mut body = Frames::one(Bytes::from_static(b"{\"a\""));
        body.push(Bytes::from_static(b":1}"));
        let headers = [(
            HeaderName::from_static("x-team"),
            HeaderValue::from_static("growth"),
        )];
        let (a, _) = io.handle().block_on(ex.post(0, &headers, body));
        assert_eq!(a, Attempt::Success);
        let recorded = recorder.requests.lock().unwrap().clone();
        assert_eq!(recorded.len(), 1);
        assert_eq!(recorded[0].url, url);
        assert_eq!(recorded[0].body, b"{\"a\":1}");
        assert_eq!(recorded[0].header("X-Team"), Some("growth"));
        assert_eq!(recorded[0].destination, Destination::Webhook);
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(conns.load(SeqCst), 0, "nothing sent");
    }
}
