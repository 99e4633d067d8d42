//! The HTTP server: accepts connections (HTTP/1.1, keep-alive; HTTPS with `tls_cert`),
//! routes each request to the tracking API, the admin API, the console or the operations
//! routes, and shuts down in order on SIGTERM/SIGINT: stop accepting, let requests in flight finish
//! (bounded by `shutdown_timeout`), then close every client (bounded too; what is not
//! delivered stays in the spool for the next start).
//!
//! Hostile clients meet the limits here: at most `max_connections` connections (more wait
//! in the listen backlog, unaccepted), a request head of at most `max_header_bytes` and
//! `max_headers` fields (hyper answers 431 while reading it), the whole head within
//! `header_read_timeout` (and a TLS handshake too) or the connection is closed, the whole
//! request within `request_timeout` or 408, an answer's writes stalled no longer than
//! `write_timeout` (`write_timeout.rs`). Bodies are limited while read (`body.rs`).
//!
//! What a request sees is [`Live`]: loaded once per request, so a reload (`reload.rs`)
//! never changes the sources under a request in flight.

use crate::config::Limits;
use crate::console;
use crate::control;
use crate::http::auth::bearer_is;
use crate::http::reply::{self, Answer};
use crate::http::write_timeout::WriteTimeout;
use crate::operations::health;
use crate::operations::metrics;
pub use crate::operations::reload::Live;
use crate::sources::registry::Registry;
use crate::tracking;
use crate::tracking::forwarded::{Facts, PublicUrl};
use crate::tracking::settings;
use crate::tracking::telemetry;
use arc_swap::ArcSwap;
use hyper::body::Incoming;
use hyper::header::{HeaderValue, CONNECTION, CONTENT_LENGTH, CONTENT_TYPE};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::{GracefulShutdown, Watcher};
use outbound::{Cidr, OffsetDateTime, Received};
use std::convert::Infallible;
use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

/// What every request sees.
pub struct State {
    pub live: Arc<ArcSwap<Live>>,
    /// The running sources (loaded once per request) and every change to them.
    pub registry: Arc<Registry>,
    /// The admin API's state: its store, the per-source tokens.
    pub control: Arc<crate::control::Control>,
    /// `data_dir/spool`: `/readyz` writes there, `/metrics` measures it.
    pub spool_dir: PathBuf,
    pub limits: Limits,
    pub tls: Option<tokio_rustls::TlsAcceptor>,
    /// Whose `X-Forwarded-*` headers count (`forwarded.rs`).
    pub trusted_proxies: Vec<Cidr>,
    pub public_url: Option<PublicUrl>,
}

/// A request's arrival: from where, when, and when `request_timeout` answers it.
#[derive(Clone, Copy)]
pub struct Arrival {
    pub peer: IpAddr,
    pub at: OffsetDateTime,
    pub deadline: Instant,
}

/// The metrics label of a path.
fn route_label(path: &str, method: &Method) -> &'static str {
    if tracking::endpoint(path).is_some() || telemetry::is_telemetry(path) {
        return match (method, telemetry::is_telemetry(path)) {
            (&Method::OPTIONS, _) => "preflight",
            (_, true) => "telemetry",
            _ => "tracking",
        };
    }
    if settings::write_key_of(path).is_some() {
        return "settings";
    }
    match path {
        "/healthz" => "healthz",
        "/readyz" => "readyz",
        "/metrics" => "metrics",
        p if p == "/admin" || p.starts_with("/admin/") => "admin",
        p if console::is_console(p) => "console",
        _ => "other",
    }
}

/// One request, routed.
pub async fn route(state: Arc<State>, req: Request<Incoming>, arrival: Arrival) -> Answer {
    let live = state.live.load_full();
    let sources = state.registry.current();
    let (parts, body) = req.into_parts();
    let path = parts.uri.path();
    if let Some(endpoint) = tracking::endpoint(path) {
        return match parts.method {
            Method::POST => {
                // A declared length over the limit is refused before the body is taken in:
                // what arrives is read and thrown away (at most twice the limit, within
                // `request_timeout`) so that an SDK still sending gets to read the 413.
                let declared = parts
                    .headers
                    .get(CONTENT_LENGTH)
                    .and_then(|v| v.to_str().ok())
                    .and_then(|v| v.trim().parse::<u64>().ok());
                if declared.is_some_and(|n| n > tracking::MAX_BODY_BYTES as u64) {
                    tokio::spawn(discard(
                        body,
                        2 * tracking::MAX_BODY_BYTES,
                        state.limits.request_timeout,
                    ));
                    return reply::error(
                        StatusCode::PAYLOAD_TOO_LARGE,
                        format!(
                            "body is over the limit of {} bytes",
                            tracking::MAX_BODY_BYTES
                        ),
                    );
                }
                let sources = sources.clone();
                let facts = Facts {
                    peer: arrival.peer,
                    headers: &parts.headers,
                    trusted: &state.trusted_proxies,
                };
                let received = Received {
                    at: arrival.at,
                    client_ip: Some(facts.client_ip()),
                };
                let (headers, deadline) = (&parts.headers, arrival.deadline);
                tracking::handle(sources, endpoint, headers, body, received, deadline).await
            }
            Method::OPTIONS => tracking::preflight(&sources, &parts.headers),
            _ => reply::error(StatusCode::METHOD_NOT_ALLOWED, "use POST"),
        };
    }
    if telemetry::is_telemetry(path) {
        return match parts.method {
            Method::POST => telemetry::drop(&sources, &parts.headers, body).await,
            Method::OPTIONS => tracking::preflight(&sources, &parts.headers),
            _ => reply::error(StatusCode::METHOD_NOT_ALLOWED, "use POST"),
        };
    }
    if let Some(key) = settings::write_key_of(path) {
        if !matches!(parts.method, Method::GET | Method::HEAD) {
            return reply::error(StatusCode::METHOD_NOT_ALLOWED, "use GET");
        }
        let facts = Facts {
            peer: arrival.peer,
            headers: &parts.headers,
            trusted: &state.trusted_proxies,
        };
        let public = facts.public(state.public_url.as_ref(), state.tls.is_some());
        return settings::answer(&sources, key, public);
    }
    match (path, &parts.method) {
        ("/healthz", &Method::GET | &Method::HEAD) => return health::healthz(),
        ("/readyz", &Method::GET | &Method::HEAD) => {
            let dir = state.spool_dir.clone();
            let failing: Vec<String> = (sources.iter())
                .filter(|s| s.slot.current().is_some_and(|c| !c.spool_ok()))
                .map(|s| s.name.clone())
                .collect();
            return tokio::task::spawn_blocking(move || health::readyz(&dir, &failing))
                .await
                .unwrap_or_else(|_| {
                    reply::error(StatusCode::SERVICE_UNAVAILABLE, "readiness check failed")
                });
        }
        ("/metrics", &Method::GET) => {
            let tokens = [live.metrics_token.as_deref(), live.admin_token.as_deref()];
            if tokens.iter().all(Option::is_none) {
                return reply::error(
                    StatusCode::NOT_FOUND,
                    "/metrics is off (no metrics_token or admin_token)",
                );
            }
            if !tokens
                .iter()
                .flatten()
                .any(|t| bearer_is(&parts.headers, t))
            {
                if state.control.is_source_token(&parts.headers, &sources) {
                    let why = "metrics request refused: a source token";
                    control::log_refused("metrics_forbidden", "", path, why);
                    return control::refusal(
                        StatusCode::FORBIDDEN,
                        "authorization",
                        "a source token reaches its own source only",
                    );
                }
                let why = "metrics request refused: bad or missing token";
                control::log_refused("metrics_unauthorized", "", path, why);
                return control::refusal(
                    StatusCode::UNAUTHORIZED,
                    "authorization",
                    "metrics or admin token required",
                );
            }
            let sources = sources.clone();
            let text = tokio::task::spawn_blocking(move || metrics::render(&sources))
                .await
                .unwrap_or_default();
            let mut r = Answer::new(text.into());
            r.headers_mut().insert(
                CONTENT_TYPE,
                HeaderValue::from_static(
                    "application/openmetrics-text; version=1.0.0; charset=utf-8",
                ),
            );
            return r;
        }
        ("/healthz" | "/readyz" | "/metrics", _) => {
            return reply::error(StatusCode::METHOD_NOT_ALLOWED, "use GET")
        }
        _ => {}
    }
    if path == "/admin" || path.starts_with("/admin/") {
        return control::handle(
            &state.control,
            &state.registry,
            &sources,
            live.admin_token.as_deref(),
            &parts.method,
            path,
            parts.uri.query(),
            &parts.headers,
            body,
        )
        .await;
    }
    if console::is_console(path) {
        let admin_on = live.admin_token.is_some();
        return console::answer(&parts.method, path, &parts.headers, admin_on);
    }
    reply::error(StatusCode::NOT_FOUND, "no such path")
}

/// Reads and drops at most `most` bytes of `body` within `bound`; then the body is dropped
/// (hyper closes the connection after the answer).
async fn discard(mut body: Incoming, most: usize, bound: Duration) {
    use http_body_util::BodyExt;
    let _ = tokio::time::timeout(bound, async {
        let mut seen = 0usize;
        while let Some(Ok(frame)) = body.frame().await {
            seen += frame.data_ref().map_or(0, |d| d.len());
            if seen > most {
                break;
            }
        }
    })
    .await;
}

/// [`route`] within `request_timeout`, counted and timed.
async fn answer(state: Arc<State>, req: Request<Incoming>, peer: IpAddr) -> Answer {
    let _in_flight = metrics::InFlight::start();
    let started = Instant::now();
    let at = OffsetDateTime::now_utc();
    let label = route_label(req.uri().path(), req.method());
    let bound = state.limits.request_timeout;
    let arrival = Arrival {
        peer,
        at,
        deadline: started + bound,
    };
    let r = match tokio::time::timeout(bound, route(state, req, arrival)).await {
        Ok(r) => r,
        Err(_) => {
            if let Some(held_back) = crate::operations::log_rate::allow("request_timeout", label) {
                tracing::info!(
                    route = label,
                    held_back,
                    "request timed out after {bound:?}: answered 408"
                );
            }
            let mut r = reply::error(
                StatusCode::REQUEST_TIMEOUT,
                format!("the request took longer than {bound:?}"),
            );
            r.headers_mut()
                .insert(CONNECTION, HeaderValue::from_static("close"));
            r
        }
    };
    metrics::request(label, r.status().as_u16(), started.elapsed());
    r
}

/// Serves one connection (plain or TLS) with the listener's limits.
async fn connection<I>(io: I, state: Arc<State>, watcher: Watcher, peer: std::net::SocketAddr)
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let limits = state.limits.clone();
    let service = service_fn(move |req| {
        let state = state.clone();
        async move { Ok::<_, Infallible>(answer(state, req, peer.ip()).await) }
    });
    let conn = http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout)
        .max_header_size(limits.max_header_bytes)
        .max_headers(limits.max_headers)
        .serve_connection(
            TokioIo::new(WriteTimeout::new(io, limits.write_timeout)),
            service,
        );
    if let Err(e) = watcher.watch(conn).await {
        tracing::debug!(%peer, "connection ended: {e}");
    }
}

/// Serves `listener` until `stop` resolves; then waits at most `grace` for the requests in
/// flight. Returns whether they all finished in time.
pub async fn serve(
    listener: TcpListener,
    state: Arc<State>,
    stop: impl std::future::Future<Output = ()>,
    grace: Duration,
) -> bool {
    let graceful = GracefulShutdown::new();
    let permits = Arc::new(Semaphore::new(state.limits.max_connections));
    let mut failures = AcceptFailures::default();
    tokio::pin!(stop);
    loop {
        // At the cap, the next connection waits in the backlog until one closes.
        let permit = tokio::select! {
            p = permits.clone().acquire_owned() => match p {
                Ok(p) => p,
                Err(_) => break,
            },
            () = &mut stop => break,
        };
        tokio::select! {
            accepted = listener.accept() => {
                let (stream, peer) = match accepted {
                    Ok(a) => a,
                    Err(e) => {
                        // Out of descriptors and the like: pause instead of spinning.
                        failures.failed(&e);
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                let _ = stream.set_nodelay(true);
                let state = state.clone();
                let watcher = graceful.watcher();
                tokio::spawn(async move {
                    let _permit = permit;
                    let _open = metrics::Connection::open();
                    match state.tls.clone() {
                        None => connection(stream, state, watcher, peer).await,
                        Some(acceptor) => {
                            // The handshake is part of the head: same bound.
                            let bound = state.limits.header_read_timeout;
                            match tokio::time::timeout(bound, acceptor.accept(stream)).await {
                                Ok(Ok(tls)) => connection(tls, state, watcher, peer).await,
                                Ok(Err(e)) => tracing::debug!(%peer, "TLS handshake failed: {e}"),
                                Err(_) => tracing::debug!(%peer, "TLS handshake timed out"),
                            }
                        }
                    }
                });
            }
            () = &mut stop => break,
        }
    }
    // Stop accepting: the listener closes here, before the wait.
    drop(listener);
    tokio::select! {
        () = graceful.shutdown() => true,
        () = tokio::time::sleep(grace) => false,
    }
}

/// Failed accepts, logged at most once every 10 s with their count (they come every 50 ms
/// while the process is out of descriptors).
#[derive(Default)]
struct AcceptFailures {
    since_logged: u64,
    logged: Option<Instant>,
}

impl AcceptFailures {
    fn failed(&mut self, e: &std::io::Error) {
        self.since_logged += 1;
        if self
            .logged
            .is_some_and(|t| t.elapsed() < Duration::from_secs(10))
        {
            return;
        }
        tracing::warn!(failures = self.since_logged, "accept failed: {e}");
        self.since_logged = 0;
        self.logged = Some(Instant::now());
    }
}

/// SIGTERM and SIGINT, caught from [`Signals::install`] on (before the address is printed,
/// so a signal sent right after it is never the default action's).
pub struct Signals {
    term: tokio::signal::unix::Signal,
    int: tokio::signal::unix::Signal,
}

impl Signals {
    /// Must run inside the runtime.
    pub fn install() -> std::io::Result<Signals> {
        use tokio::signal::unix::{signal, SignalKind};
        Ok(Signals {
            term: signal(SignalKind::terminate())?,
            int: signal(SignalKind::interrupt())?,
        })
    }

    /// Resolves at the first of them.
    pub async fn wait(mut self) {
        let name = tokio::select! {
            _ = self.term.recv() => "SIGTERM",
            _ = self.int.recv() => "SIGINT",
        };
        tracing::info!("{name}: stopping (no new connections; finishing requests in flight)");
    }
}
