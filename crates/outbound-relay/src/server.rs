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
use crate::tracking::forwarded::{PublicUrl, RequestOrigin};
use crate::tracking::settings;
use crate::tracking::telemetry;
use arc_swap::ArcSwap;
use axum::extract::State as AxState;
use hyper::body::Incoming;
use hyper::header::HeaderMap;
use hyper::header::{HeaderValue, CONNECTION, CONTENT_LENGTH, CONTENT_TYPE};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, StatusCode, Uri};
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
    /// The relay's counters, log rate and activity.
    pub ops: crate::operations::Ops,
    /// The engine every source runs on.
    pub engine: Arc<crate::sources::engine::SharedEngine>,
}

/// A request's arrival: from where, when, and when `request_timeout` answers it.
#[derive(Clone, Copy)]
pub struct Arrival {
    pub peer: IpAddr,
    pub at: OffsetDateTime,
    pub deadline: Instant,
}

/// The metrics label of a request, from its method and path: which part of the relay
/// answers it (decided before routing, so no answer has to carry it).
fn route_label(method: &Method, path: &str) -> &'static str {
    if tracking::endpoint(path).is_some() || telemetry::is_telemetry(path) {
        return match *method {
            Method::OPTIONS => "preflight",
            _ if telemetry::is_telemetry(path) => "telemetry",
            _ => "tracking",
        };
    }
    match path {
        "/healthz" => "healthz",
        "/readyz" => "readyz",
        "/metrics" => "metrics",
        p if p == "/admin" || p.starts_with("/admin/") => "admin",
        p if console::is_console(p) => "console",
        p if settings::write_key_of(p).is_some() => "settings",
        _ => "other",
    }
}

tokio::task_local! {
    /// The arrival of the request being routed: set around the routing of each request, so
    /// that it travels without an extension (a map allocated for every request).
    static ARRIVAL: Arrival;
}

/// Every route of the relay: the admin API (typed, with its document: `control::router`),
/// the operations routes, and by path the rest: Segment's tracking API, its settings and
/// telemetry paths (which the SDKs write in several forms), and the console.
pub fn app(state: Arc<State>) -> axum::Router {
    use axum::routing::get;
    let admin = control::router(
        state.control.clone(),
        state.registry.clone(),
        state.live.clone(),
        state.ops.clone(),
    )
    .method_not_allowed_fallback(|| async { use_method("a method this route takes") });
    let use_get = || async { use_method("GET") };
    // Segment's tracking paths as routes of their own (each name, with and without a
    // trailing slash), so that the hot path is matched once and not again as the fallback.
    let mut tracking_routes = axum::Router::new();
    for name in tracking::PATH_NAMES {
        for path in [format!("/v1/{name}"), format!("/v1/{name}/")] {
            tracking_routes = tracking_routes.route(&path, axum::routing::any(by_path));
        }
    }
    axum::Router::new()
        .route("/healthz", get(healthz).head(healthz).fallback(use_get))
        .route("/readyz", get(readyz).head(readyz).fallback(use_get))
        .route("/metrics", get(metrics_text).fallback(use_get))
        .merge(tracking_routes)
        .fallback(by_path)
        .with_state(state)
        .merge(admin)
}

fn use_method(which: &str) -> Answer {
    reply::error(StatusCode::METHOD_NOT_ALLOWED, format!("use {which}"))
}

async fn healthz() -> Answer {
    health::healthz()
}

async fn readyz(AxState(state): AxState<Arc<State>>) -> Answer {
    let sources = state.registry.current();
    let dir = state.spool_dir.clone();
    let failing: Vec<String> = (sources.iter())
        .filter(|s| s.slot.current().is_some_and(|c| !c.spool_ok()))
        .map(|s| s.name.clone())
        .collect();
    let rate = state.ops.log_rate.clone();
    let answer = tokio::task::spawn_blocking(move || health::readyz(&dir, &failing, &rate))
        .await
        .unwrap_or_else(|_| {
            reply::error(StatusCode::SERVICE_UNAVAILABLE, "readiness check failed")
        });
    answer
}

async fn metrics_text(AxState(state): AxState<Arc<State>>, uri: Uri, headers: HeaderMap) -> Answer {
    let live = state.live.load_full();
    let sources = state.registry.current();
    let path = uri.path();
    let tokens = [live.metrics_token.as_deref(), live.admin_token.as_deref()];
    if tokens.iter().all(Option::is_none) {
        let off = "/metrics is off (no metrics_token or admin_token)";
        return control::refusal(StatusCode::NOT_FOUND, "path", off);
    }
    if !tokens.iter().flatten().any(|t| bearer_is(&headers, t)) {
        if state.control.is_source_token(&headers, &sources) {
            let why = "metrics request refused: a source token";
            control::log_refused(&state.ops.log_rate, "metrics_forbidden", "", path, why);
            let answer = control::refusal(
                StatusCode::FORBIDDEN,
                "authorization",
                "a source token reaches its own source only",
            );
            return answer;
        }
        let why = "metrics request refused: bad or missing token";
        control::log_refused(&state.ops.log_rate, "metrics_unauthorized", "", path, why);
        let answer = control::refusal(
            StatusCode::UNAUTHORIZED,
            "authorization",
            "metrics or admin token required",
        );
        return answer;
    }
    let (m, engine) = (state.ops.metrics.clone(), state.engine.clone());
    let text = tokio::task::spawn_blocking(move || metrics::render(&m, &sources, &engine))
        .await
        .unwrap_or_default();
    let mut r = Answer::new(text.into());
    r.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("application/openmetrics-text; version=1.0.0; charset=utf-8"),
    );
    r
}

/// What no typed route takes, by its path: Segment's tracking API (its paths are written in
/// several forms: `/v1/t`, `/v1/track/`), its settings and telemetry paths, the console, an
/// unknown admin path (after the token is checked), or 404.
async fn by_path(AxState(state): AxState<Arc<State>>, req: axum::extract::Request) -> Answer {
    let arrival = ARRIVAL.with(|a| *a);
    let sources = state.registry.current();
    let (parts, body) = req.into_parts();
    let path = parts.uri.path();
    if let Some(endpoint) = tracking::endpoint(path) {
        let answer = match parts.method {
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
                    let too_large = format!(
                        "body is over the limit of {} bytes",
                        tracking::MAX_BODY_BYTES
                    );
                    return reply::error(StatusCode::PAYLOAD_TOO_LARGE, too_large);
                }
                let facts = RequestOrigin {
                    peer: arrival.peer,
                    headers: &parts.headers,
                    trusted: &state.trusted_proxies,
                };
                let received = Received {
                    at: arrival.at,
                    client_ip: Some(facts.client_ip()),
                };
                let (headers, deadline) = (&parts.headers, arrival.deadline);
                let ops = &state.ops;
                tracking::handle(ops, sources, endpoint, headers, body, received, deadline).await
            }
            Method::OPTIONS => {
                let rate = &state.ops.log_rate;
                return tracking::preflight(rate, &sources, &parts.headers);
            }
            _ => use_method("POST"),
        };
        return answer;
    }
    if telemetry::is_telemetry(path) {
        return match parts.method {
            Method::POST => telemetry::drop(&state.ops, &sources, &parts.headers, body).await,
            Method::OPTIONS => tracking::preflight(&state.ops.log_rate, &sources, &parts.headers),
            _ => use_method("POST"),
        };
    }
    if let Some(key) = settings::write_key_of(path) {
        if !matches!(parts.method, Method::GET | Method::HEAD) {
            return use_method("GET");
        }
        let facts = RequestOrigin {
            peer: arrival.peer,
            headers: &parts.headers,
            trusted: &state.trusted_proxies,
        };
        let public = facts.public(state.public_url.as_ref(), state.tls.is_some());
        return settings::answer(&sources, key, public);
    }
    if path == "/admin" || path.starts_with("/admin/") {
        let live = state.live.load();
        let answer = control::unknown(
            &state.ops.log_rate,
            &state.control,
            &sources,
            live.admin_token.as_deref(),
            &parts.headers,
            path,
        );
        return answer;
    }
    if console::is_console(path) {
        let admin_on = state.live.load().admin_token.is_some();
        return console::answer(&parts.method, path, &parts.headers, admin_on);
    }
    reply::error(StatusCode::NOT_FOUND, "no such path")
}

/// Reads and drops at most `most` bytes of `body` within `bound`; then the body is dropped
/// (hyper closes the connection after the answer).
async fn discard(mut body: axum::body::Body, most: usize, bound: Duration) {
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

/// A request through the routes within `request_timeout`, counted and timed.
async fn answer(
    state: Arc<State>,
    app: axum::Router,
    req: Request<Incoming>,
    peer: IpAddr,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    use tower::ServiceExt;
    let _in_flight = state.ops.metrics.in_flight();
    let started = Instant::now();
    let at = OffsetDateTime::now_utc();
    let bound = state.limits.request_timeout;
    let arrival = Arrival {
        peer,
        at,
        deadline: started + bound,
    };
    let label = route_label(req.method(), req.uri().path());
    let req = req.map(axum::body::Body::new);
    let routed = ARRIVAL.scope(arrival, async move {
        match app.oneshot(req).await {
            Ok(r) => r,
            Err(never) => match never {},
        }
    });
    let r = match tokio::time::timeout(bound, routed).await {
        Ok(r) => r,
        Err(_) => {
            if let Some(held_back) = state.ops.log_rate.allow("request_timeout", label) {
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
            r.into_response()
        }
    };
    state
        .ops
        .metrics
        .request(label, r.status().as_u16(), started.elapsed());
    r
}

/// Serves one connection (plain or TLS) with the listener's limits.
async fn connection<I>(
    io: I,
    state: Arc<State>,
    app: axum::Router,
    watcher: Watcher,
    peer: std::net::SocketAddr,
) where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let limits = state.limits.clone();
    let service = service_fn(move |req| {
        let (state, app) = (state.clone(), app.clone());
        async move { Ok::<_, Infallible>(answer(state, app, req, peer.ip()).await) }
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
    let app = app(state.clone());
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
                let (state, app) = (state.clone(), app.clone());
                let watcher = graceful.watcher();
                tokio::spawn(async move {
                    let _permit = permit;
                    let _open = state.ops.metrics.connection();
                    match state.tls.clone() {
                        None => connection(stream, state, app, watcher, peer).await,
                        Some(acceptor) => {
                            // The handshake is part of the head: same bound.
                            let bound = state.limits.header_read_timeout;
                            match tokio::time::timeout(bound, acceptor.accept(stream)).await {
                                Ok(Ok(tls)) => connection(tls, state, app, watcher, peer).await,
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
