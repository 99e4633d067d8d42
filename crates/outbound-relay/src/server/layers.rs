//! What wraps every request, as tower layers around the routes: its metrics label, named by
//! the route that matched it ([`label`], [`LabelLayer`]); `request_timeout` over the whole
//! routed request, its body's reads included ([`TimeoutLayer`]: 408 and `Connection: close`);
//! and its metrics ([`MetricsLayer`]: in flight while answered, then counted by label and
//! status, and timed).

use crate::http::reply;
use crate::operations::log_rate::LogRate;
use crate::operations::metrics::Metrics;
use axum::extract::Request;
use axum::response::{IntoResponse, Response};
use hyper::header::{HeaderValue, CONNECTION};
use hyper::StatusCode;
use std::cell::Cell;
use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tower::{Layer, Service};

tokio::task_local! {
    /// The label of the request being answered: set around it by [`Metered`], named by the
    /// route that matched before its first await (so a 408 knows it too).
    static ROUTE: Cell<&'static str>;
}

/// The label of a request no route named (a path the relay does not have).
const UNROUTED: &str = "other";

/// Names the part of the relay that answers the request being routed: a fixed word, since it
/// is a metrics label.
pub fn label(route: &'static str) {
    let _ = ROUTE.try_with(|r| r.set(route));
}

fn current() -> &'static str {
    ROUTE.try_with(Cell::get).unwrap_or(UNROUTED)
}

type Answering = Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send>>;

/// Labels every request of the routes it wraps.
#[derive(Clone, Copy)]
pub struct LabelLayer(pub &'static str);

impl<S> Layer<S> for LabelLayer {
    type Service = Labelled<S>;

    fn layer(&self, inner: S) -> Labelled<S> {
        Labelled {
            inner,
            route: self.0,
        }
    }
}

#[derive(Clone)]
pub struct Labelled<S> {
    inner: S,
    route: &'static str,
}

impl<S: Service<Request>> Service<Request> for Labelled<S> {
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request) -> S::Future {
        label(self.route);
        self.inner.call(req)
    }
}

/// `request_timeout`: a request not answered within `bound` is dropped (its body's reads
/// with it) and answered 408, and its connection closed.
#[derive(Clone)]
pub struct TimeoutLayer {
    pub bound: Duration,
    pub log_rate: LogRate,
}

impl<S> Layer<S> for TimeoutLayer {
    type Service = Timeout<S>;

    fn layer(&self, inner: S) -> Timeout<S> {
        Timeout {
            inner,
            bound: self.bound,
            log_rate: self.log_rate.clone(),
        }
    }
}

#[derive(Clone)]
pub struct Timeout<S> {
    inner: S,
    bound: Duration,
    log_rate: LogRate,
}

impl<S> Service<Request> for Timeout<S>
where
    S: Service<Request, Response = Response, Error = Infallible>,
    S::Future: Send + 'static,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Answering;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request) -> Answering {
        let routed = self.inner.call(req);
        let (bound, log_rate) = (self.bound, self.log_rate.clone());
        Box::pin(async move {
            match tokio::time::timeout(bound, routed).await {
                Ok(answered) => answered,
                Err(_) => Ok(timed_out(bound, &log_rate)),
            }
        })
    }
}

fn timed_out(bound: Duration, log_rate: &LogRate) -> Response {
    let route = current();
    if let Some(held_back) = log_rate.allow("request_timeout", route) {
        tracing::info!(
            route,
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

/// Every request's metrics, under the label its route named.
#[derive(Clone)]
pub struct MetricsLayer(pub Metrics);

impl<S> Layer<S> for MetricsLayer {
    type Service = Metered<S>;

    fn layer(&self, inner: S) -> Metered<S> {
        Metered {
            inner,
            metrics: self.0.clone(),
        }
    }
}

#[derive(Clone)]
pub struct Metered<S> {
    inner: S,
    metrics: Metrics,
}

impl<S> Service<Request> for Metered<S>
where
    S: Service<Request, Response = Response, Error = Infallible> + Clone + Send + 'static,
    S::Future: Send + 'static,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Answering;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request) -> Answering {
        // The service made ready goes with the request (called inside the label's scope, so
        // routing names it); a clone takes its place.
        let ready = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, ready);
        let metrics = self.metrics.clone();
        Box::pin(ROUTE.scope(Cell::new(UNROUTED), async move {
            let _in_flight = metrics.in_flight();
            let started = Instant::now();
            let Ok(answer) = inner.call(req).await;
            metrics.request(current(), answer.status().as_u16(), started.elapsed());
            Ok(answer)
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tower::ServiceExt;

    fn answering(
        route: Option<&'static str>,
        wait: Duration,
    ) -> impl Service<Request, Response = Response, Error = Infallible, Future = Answering> + Clone
    {
        tower::service_fn(move |_req: Request| -> Answering {
            Box::pin(async move {
                if let Some(r) = route {
                    label(r);
                }
                tokio::time::sleep(wait).await;
                Ok(StatusCode::NO_CONTENT.into_response())
            })
        })
    }

    #[tokio::test]
    async fn a_label_named_by_the_route_outlives_a_timeout() {
        let bound = Duration::from_millis(20);
        let slow = answering(Some("tracking"), Duration::from_secs(5));
        let timeout = TimeoutLayer {
            bound,
            log_rate: LogRate::default(),
        };
        let app = ROUTE.scope(Cell::new(UNROUTED), async move {
            let r = timeout
                .layer(slow)
                .oneshot(Request::new(Default::default()))
                .await;
            (r, current())
        });
        let (Ok(r), route) = app.await;
        assert_eq!(r.status(), StatusCode::REQUEST_TIMEOUT);
        assert_eq!(r.headers()[CONNECTION], "close");
        assert_eq!(route, "tracking");
    }

    #[tokio::test]
    async fn an_unnamed_request_is_other_and_labels_outside_a_request_are_ignored() {
        label("tracking");
        let quick = answering(None, Duration::ZERO);
        let scoped = ROUTE.scope(Cell::new(UNROUTED), async move {
            let r = LabelLayer("admin")
                .layer(quick.clone())
                .oneshot(Request::new(Default::default()))
                .await;
            let named = current();
            ROUTE.with(|c| c.set(UNROUTED));
            let _ = quick.oneshot(Request::new(Default::default())).await;
            (r, named, current())
        });
        let (Ok(r), named, unnamed) = scoped.await;
        assert_eq!(r.status(), StatusCode::NO_CONTENT);
        assert_eq!((named, unnamed), ("admin", "other"));
    }
}
