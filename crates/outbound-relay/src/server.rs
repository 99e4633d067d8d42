//! The HTTP server: accepts connections (HTTP/1.1, keep-alive), routes each request to the
//! tracking API or the admin API, and shuts down in order on SIGTERM/SIGINT: stop accepting,
//! let requests in flight finish (bounded by `shutdown_timeout`), then close every client
//! (bounded too; what is not delivered stays in the spool for the next start).
//!
//! Issue 25 lands here and beside it: `GET /healthz`, `/readyz` and `/metrics` are routes
//! of [`route`] (a `health.rs` and a `metrics.rs` module), the TLS listener wraps the
//! accepted stream in [`serve`] before hyper sees it (`tls.rs`), the connection cap and
//! slow-client timeouts are settings of the accept loop and of hyper's builder here, and
//! SIGHUP reload swaps the `Sources` held by [`State`].

use crate::admin;
use crate::reply::{self, Answer};
use crate::sources::Sources;
use crate::tracking;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, StatusCode};
use hyper_util::rt::TokioIo;
use hyper_util::server::graceful::GracefulShutdown;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;

/// What every request sees.
pub struct State {
    pub sources: Arc<Sources>,
    pub admin_token: Option<String>,
}

/// One request, routed.
pub async fn route(state: Arc<State>, req: Request<Incoming>) -> Answer {
    let (parts, body) = req.into_parts();
    let path = parts.uri.path();
    if let Some(endpoint) = tracking::endpoint(path) {
        return match parts.method {
            Method::POST => tracking::handle(&state.sources, endpoint, &parts.headers, body).await,
            Method::OPTIONS => tracking::preflight(&state.sources, &parts.headers),
            _ => reply::error(StatusCode::METHOD_NOT_ALLOWED, "use POST"),
        };
    }
    if path == "/admin" || path.starts_with("/admin/") {
        return admin::handle(
            &state.sources,
            state.admin_token.as_deref(),
            &parts.method,
            path,
            &parts.headers,
            body,
        )
        .await;
    }
    reply::error(StatusCode::NOT_FOUND, format!("no such path: {path}"))
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
    tokio::pin!(stop);
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let (stream, peer) = match accepted {
                    Ok(a) => a,
                    Err(e) => {
                        // Out of descriptors and the like: pause instead of spinning.
                        tracing::warn!("accept failed: {e}");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                let _ = stream.set_nodelay(true);
                let state = state.clone();
                let service = service_fn(move |req| {
                    let state = state.clone();
                    async move { Ok::<_, Infallible>(route(state, req).await) }
                });
                let conn = http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service);
                let conn = graceful.watch(conn);
                tokio::spawn(async move {
                    if let Err(e) = conn.await {
                        tracing::debug!(%peer, "connection ended: {e}");
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
