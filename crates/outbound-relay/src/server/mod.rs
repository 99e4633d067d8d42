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
//! request within `request_timeout` or 408 (`layers.rs`, with the request's metrics), an
//! answer's writes stalled no longer than `write_timeout` (`write_timeout.rs`). Bodies are
//! limited while read (`body.rs`).
//!
//! What a request sees is [`Live`]: loaded once per request, so a reload (`reload.rs`)
//! never changes the sources under a request in flight.

mod layers;

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
use hyper::header::{HeaderValue, CONTENT_LENGTH, CONTENT_TYPE};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, StatusCode, Uri};
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::{GracefulShutdown, Watcher};
use layers::{label, LabelLayer, Metered, MetricsLayer, Timeout, TimeoutLayer};
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

tokio::task_local! {
    /// The arrival of the request being routed: set around the routing of each request, so
    /// that it travels without an extension (a map allocated for every request).
    static ARRIVAL: Arrival;
}

/// The relay's routes inside its request layers: the metrics (outermost, so a 408 is
/// counted) and `request_timeout`.
pub type App = Metered<Timeout<axum::Router>>;

/// Every route of the relay: the admin API (typed, with its document: `control::router`),
/// the operations routes, and by path the rest: Segment's tracking API, its settings and
/// telemetry paths (which the SDKs write in several forms), and the console. Each names its
/// requests' metrics label as it takes them: the admin API and the operations routes by a
/// layer, the tracking API and `by_path` where they decide what a request is.
pub fn app(state: Arc<State>) -> App {
    use axum::routing::{any, get};
    let admin = control::router(
        state.control.clone(),
        state.registry.clone(),
        state.live.clone(),
        state.ops.clone(),
    )
    .method_not_allowed_fallback(|| async { use_method("a method this route takes") })
    .route_layer(LabelLayer("admin"));
    let use_get = || async { use_method("GET") };
    // Segment's tracking paths as routes of their own (each name, with and without a
    // trailing slash), each knowing its endpoint, so that the hot path is matched once.
    let mut tracking_routes = axum::Router::new();
    for name in tracking::PATH_NAMES {
        for path in [format!("/v1/{name}"), format!("/v1/{name}/")] {
            // A name `endpoint` did not take would still reach it through `by_path`.
            let Some(endpoint) = tracking::endpoint(&path) else {
                continue;
            };
            let route = any(move |AxState(state): AxState<Arc<State>>, req| {
                tracking_api(state, endpoint, req)
            });
            tracking_routes = tracking_routes.route(&path, route);
        }
    }
    let ops_route = |route: axum::routing::MethodRouter<Arc<State>>, name: &'static str| {
        route.fallback(use_get).layer(LabelLayer(name))
    };
    let routes = axum::Router::new()
        .route("/healthz", ops_route(get(healthz).head(healthz), "healthz"))
        .route("/readyz", ops_route(get(readyz).head(readyz), "readyz"))
        .route("/metrics", ops_route(get(metrics_text), "metrics"))
        .merge(tracking_routes)
        .fallback(by_path)
        .with_state(state.clone())
        .merge(admin);
    let timeout = TimeoutLayer {
        bound: state.limits.request_timeout,
        log_rate: state.ops.log_rate.clone(),
    };
    tower::ServiceBuilder::new()
        .layer(MetricsLayer(state.ops.metrics.clone()))
        .layer(timeout)
        .service(routes)
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
        let (status, kind, why, message) = match state.control.is_source_token(&headers, &sources) {
            true => (
                StatusCode::FORBIDDEN,
                "metrics_forbidden",
                "metrics request refused: a source token",
                "a source token reaches its own source only",
            ),
            false => (
                StatusCode::UNAUTHORIZED,
                "metrics_unauthorized",
                "metrics request refused: bad or missing token",
                "metrics or admin token required",
            ),
        };
        control::log_refused(&state.ops.log_rate, kind, "", path, why);
        return control::refusal(status, "authorization", message);
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

/// Segment's tracking API at `endpoint`: a POST's events to their source, a preflight, or 405.
async fn tracking_api(
    state: Arc<State>,
    endpoint: tracking::Endpoint,
    req: axum::extract::Request,
) -> Answer {
    let (parts, body) = req.into_parts();
    if parts.method == Method::OPTIONS {
        label("preflight");
        let sources = state.registry.current();
        return tracking::preflight(&state.ops.log_rate, &sources, &parts.headers);
    }
    label("tracking");
    if parts.method != Method::POST {
        return use_method("POST");
    }
    // A declared length over the limit is refused before the body is taken in: what arrives
    // is read and thrown away (at most twice the limit, within `request_timeout`) so that an
    // SDK still sending gets to read the 413.
    let declared = (parts.headers.get(CONTENT_LENGTH))
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if declared.is_some_and(|n| n > tracking::MAX_BODY_BYTES as u64) {
        let (most, bound) = (2 * tracking::MAX_BODY_BYTES, state.limits.request_timeout);
        tokio::spawn(discard(body, most, bound));
        let too_large = format!(
            "body is over the limit of {} bytes",
            tracking::MAX_BODY_BYTES
        );
        return reply::error(StatusCode::PAYLOAD_TOO_LARGE, too_large);
    }
    let arrival = ARRIVAL.with(|a| *a);
    let facts = RequestOrigin {
        peer: arrival.peer,
        headers: &parts.headers,
        trusted: &state.trusted_proxies,
    };
    let received = Received {
        at: arrival.at,
        client_ip: Some(facts.client_ip()),
    };
    let sources = state.registry.current();
    let (ops, headers, deadline) = (&state.ops, &parts.headers, arrival.deadline);
    tracking::handle(ops, sources, endpoint, headers, body, received, deadline).await
}

/// What no typed route takes, by its path: Segment's tracking API (its paths are written in
/// several forms: `/v1/t`, `/v1/track//`), its settings and telemetry paths, the console, an
/// unknown admin path (after the token is checked), or 404.
async fn by_path(AxState(state): AxState<Arc<State>>, req: axum::extract::Request) -> Answer {
    if let Some(endpoint) = tracking::endpoint(req.uri().path()) {
        return tracking_api(state, endpoint, req).await;
    }
    let sources = state.registry.current();
    let (parts, body) = req.into_parts();
    let path = parts.uri.path();
    if telemetry::is_telemetry(path) {
        if parts.method == Method::OPTIONS {
            label("preflight");
            return tracking::preflight(&state.ops.log_rate, &sources, &parts.headers);
        }
        label("telemetry");
        return match parts.method {
            Method::POST => telemetry::drop(&state.ops, &sources, &parts.headers, body).await,
            _ => use_method("POST"),
        };
    }
    if let Some(key) = settings::write_key_of(path) {
        label("settings");
        if !matches!(parts.method, Method::GET | Method::HEAD) {
            return use_method("GET");
        }
        let facts = RequestOrigin {
            peer: ARRIVAL.with(|a| a.peer),
            headers: &parts.headers,
            trusted: &state.trusted_proxies,
        };
        let public = facts.public(state.public_url.as_ref(), state.tls.is_some());
        return settings::answer(&sources, key, public);
    }
    if path == "/admin" || path.starts_with("/admin/") {
        label("admin");
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
        label("console");
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

/// A request through the app (within `request_timeout`, counted and timed by its layers),
/// its arrival at hand for the routes.
async fn answer(
    app: App,
    bound: Duration,
    req: Request<Incoming>,
    peer: IpAddr,
) -> axum::response::Response {
    use tower::ServiceExt;
    let arrival = Arrival {
        peer,
        at: OffsetDateTime::now_utc(),
        deadline: Instant::now() + bound,
    };
    let req = req.map(axum::body::Body::new);
    match ARRIVAL.scope(arrival, app.oneshot(req)).await {
        Ok(r) => r,
        Err(never) => match never {},
    }
}

/// Serves one connection (plain or TLS) with the listener's limits.
async fn connection<I>(
    io: I,
    state: Arc<State>,
    app: App,
    watcher: Watcher,
    peer: std::net::SocketAddr,
) where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let limits = state.limits.clone();
    let bound = limits.request_timeout;
    let service = service_fn(move |req| {
        let app = app.clone();
        async move { Ok::<_, Infallible>(answer(app, bound, req, peer.ip()).await) }
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

/// Serves connection `stream` from `peer` on a task of its own, holding `permit` until it ends.
fn take(
    stream: tokio::net::TcpStream,
    peer: std::net::SocketAddr,
    permit: tokio::sync::OwnedSemaphorePermit,
    state: &Arc<State>,
    app: &App,
    graceful: &GracefulShutdown,
) {
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
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => take(stream, peer, permit, &state, &app, &graceful),
                Err(e) => {
                    // Out of descriptors and the like: pause instead of spinning.
                    failures.failed(&e);
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            },
            () = &mut stop => break,
        }
    }
    // Connections already made when the stop came are served, not reset: their clients sent
    // before the signal (the cap still holds).
    while let Ok(permit) = permits.clone().try_acquire_owned() {
        let waiting = tokio::select! {
            biased;
            accepted = listener.accept() => accepted.ok(),
            () = std::future::ready(()) => None,
        };
        let Some((stream, peer)) = waiting else { break };
        take(stream, peer, permit, &state, &app, &graceful);
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
