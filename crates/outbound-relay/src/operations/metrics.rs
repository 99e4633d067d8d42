//! `GET /metrics`: the relay's counters in the OpenMetrics text format Prometheus scrapes
//! (prometheus-client).
//!
//! One registry for the relay (a reload keeps the counters), owned by it: no process global.
//!
//! A scrape's size does not grow with the number of sources: the `source` label is a source's
//! name only for the sources relay.toml's `metrics_sources` names (counters and gauges) and,
//! for the gauges, the `metrics_top_sources` sources with the most events waiting at that
//! scrape; every other source is counted under `source="_other"`. Each source's own view stays
//! in the admin API (`/admin/sources/{name}/health`, `/activity`). Labels are source names,
//! destinations, outcomes, reasons, routes and statuses: never a write key, a secret or a
//! token, and never free text (a label set stays small whatever the clients send).
//!
//! - `outbound_relay_events_accepted_total{source}`: events committed and acknowledged;
//! - `outbound_relay_events_rejected_total{source,reason}`: events refused (the reason is
//!   the kind of error: `missing_field`, `invalid_field`, `too_large`, `queue_full`, ...);
//! - `outbound_relay_requests_total{route,status}` and
//!   `outbound_relay_request_duration_seconds{route}` (a histogram): every answer;
//! - `outbound_relay_requests_in_flight`, `outbound_relay_connections`;
//! - `outbound_relay_telemetry_dropped_total`: the SDKs' telemetry requests (`/v1/m`), dropped;
//! - `outbound_relay_outcomes_total{source,destination,outcome}`: the core's `on_outcome`
//!   (the core reports one outcome per message: `destination` is the one its detail names
//!   for a failure, `ingestion` or `webhooks`, and `all` when every destination took it);
//! - `outbound_relay_queue_depth{source}`, `outbound_relay_spool_bytes{source}`, read at
//!   the scrape from the running sources (the core's `Stats`, the spool's files);
//! - `outbound_relay_dead_letters{source}`, `outbound_relay_dead_letter_bytes{source}`: the
//!   dead letters each source that keeps them holds now, and their bytes, read at the scrape
//!   with one question to the spool writer for every source on the shared spool (the counts
//!   it keeps: no query per source, so 10,000 sources cost one round trip), and the
//!   source's own question for a source on a spool of its own;
//! - `outbound_relay_webhooks_throttled{source}`: webhooks whose messages wait for their rate
//!   limit now (state `throttled`), and `outbound_relay_webhook_requests_throttled_total{source}`:
//!   requests that waited for it, since the source's settings last changed (a change starts
//!   it again from 0, as a counter reset); read at the scrape, for sources with a rate limit;
//! - `outbound_relay_dead_letters_unwritten`: dead letters the shared spool's store refused
//!   (Redis: a key of the wrong type, a full server) and holds in memory, tried again at each
//!   commit; their events stay pending in the spool meanwhile. 0 normally: above it, look at
//!   the spool writer's warning in the log.

use super::activity::{Activities, Activity, Ended};
use crate::sources::engine::SharedEngine;
use crate::sources::Sources;
use outbound::{DeadLetterStats, Error, Outcome, OutcomeKind};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;
use std::collections::HashMap;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct SourceLabel {
    source: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RejectedLabels {
    source: String,
    reason: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OutcomeLabels {
    source: String,
    destination: &'static str,
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    route: &'static str,
    status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RouteLabel {
    route: &'static str,
}

/// The relay's counters and gauges (cheap to clone: one registry shared).
#[derive(Clone)]
pub struct Metrics(Arc<Inner>);

/// The `source` label of every source with no series of its own.
pub const OTHER: &str = "_other";

/// Which sources have series of their own.
#[derive(Clone, Debug, Default)]
pub struct PerSource {
    /// Named by the operator: counters and gauges of their own.
    pub named: std::collections::HashSet<String>,
    /// This many more, the most waiting at a scrape, get gauges of their own.
    pub top: usize,
}

struct Inner {
    per_source: arc_swap::ArcSwap<PerSource>,
    registry: Registry,
    accepted: Family<SourceLabel, Counter>,
    rejected: Family<RejectedLabels, Counter>,
    outcomes: Family<OutcomeLabels, Counter>,
    requests: Family<RequestLabels, Counter>,
    latency: Family<RouteLabel, Histogram>,
    in_flight: Gauge,
    connections: Gauge,
    telemetry: Counter,
    queue_depth: Family<SourceLabel, Gauge>,
    spool_bytes: Family<SourceLabel, Gauge>,
    dead_letters: Family<SourceLabel, Gauge>,
    dead_letter_bytes: Family<SourceLabel, Gauge>,
    webhooks_throttled: Family<SourceLabel, Gauge>,
    requests_throttled: Family<SourceLabel, Counter>,
    dead_letters_unwritten: Gauge,
    /// One scrape at a time.
    rendering: std::sync::Mutex<()>,
}

fn latency_histogram() -> Histogram {
    // 0.5 ms to 8 s: an acknowledgement waits for a group commit (1 ms by default).
    Histogram::new([
        0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 8.0,
    ])
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::with_prefix("outbound_relay");
        let m = Inner {
            per_source: arc_swap::ArcSwap::from_pointee(PerSource::default()),
            accepted: Family::default(),
            rejected: Family::default(),
            outcomes: Family::default(),
            requests: Family::default(),
            latency: Family::new_with_constructor(latency_histogram),
            in_flight: Gauge::default(),
            connections: Gauge::default(),
            telemetry: Counter::default(),
            queue_depth: Family::default(),
            spool_bytes: Family::default(),
            dead_letters: Family::default(),
            dead_letter_bytes: Family::default(),
            webhooks_throttled: Family::default(),
            requests_throttled: Family::default(),
            dead_letters_unwritten: Gauge::default(),
            rendering: std::sync::Mutex::new(()),
            registry: Registry::default(),
        };
        registry.register(
            "events_accepted",
            "Events committed to the spool and acknowledged",
            m.accepted.clone(),
        );
        registry.register(
            "events_rejected",
            "Events refused, by source and reason",
            m.rejected.clone(),
        );
        registry.register(
            "outcomes",
            "Delivery outcomes reported by each source's client",
            m.outcomes.clone(),
        );
        registry.register(
            "requests",
            "Requests answered, by route and status",
            m.requests.clone(),
        );
        registry.register(
            "request_duration_seconds",
            "Time from the request's headers to its answer",
            m.latency.clone(),
        );
        registry.register(
            "requests_in_flight",
            "Requests being handled now",
            m.in_flight.clone(),
        );
        registry.register(
            "connections",
            "Open client connections",
            m.connections.clone(),
        );
        registry.register(
            "telemetry_dropped",
            "Requests of the SDKs' own telemetry (POST /v1/m) answered 200 and dropped",
            m.telemetry.clone(),
        );
        registry.register(
            "queue_depth",
            "Messages accepted and waiting (batch, worker or retry), per source",
            m.queue_depth.clone(),
        );
        registry.register(
            "spool_bytes",
            "Payload bytes (ids and bodies) each source holds in the spool",
            m.spool_bytes.clone(),
        );
        registry.register(
            "dead_letters",
            "Dead letters kept now, per source that keeps them",
            m.dead_letters.clone(),
        );
        registry.register(
            "dead_letter_bytes",
            "Bytes of the dead letters kept now (as dead_letter_max_bytes counts them), per source",
            m.dead_letter_bytes.clone(),
        );
        registry.register(
            "webhooks_throttled",
            "Webhooks whose messages wait for their rate limit now, per source",
            m.webhooks_throttled.clone(),
        );
        registry.register(
            "webhook_requests_throttled",
            "Webhook requests that waited for their rate limit since the source's settings last changed, per source",
            m.requests_throttled.clone(),
        );
        registry.register(
            "dead_letters_unwritten",
            "Dead letters the shared spool's store refused, held in memory and tried again at each commit (their events stay pending)",
            m.dead_letters_unwritten.clone(),
        );
        Metrics(Arc::new(Inner { registry, ..m }))
    }
}

impl Metrics {
    /// Which sources have series of their own (at start, and at each reload).
    pub fn set_per_source(&self, per_source: PerSource) {
        self.0.per_source.store(Arc::new(per_source));
    }

    /// The `source` label of `source`'s counters: its name when the operator named it.
    fn label(&self, source: &str) -> String {
        match self.0.per_source.load().named.contains(source) {
            true => source.to_string(),
            false => OTHER.to_string(),
        }
    }
}

impl Metrics {
    /// `n` events of `source` acknowledged.
    pub fn accepted(&self, source: &str, n: usize) {
        (self.0.accepted)
            .get_or_create(&SourceLabel {
                source: self.label(source),
            })
            .inc_by(n as u64);
    }

    /// One request of an SDK's telemetry, dropped.
    pub fn telemetry_dropped(&self) {
        self.0.telemetry.inc();
    }

    /// `events` events of `source` refused for `reason` (a fixed word, see [`reason`]).
    pub fn rejected(&self, source: &str, reason: &'static str, events: usize) {
        (self.0.rejected)
            .get_or_create(&RejectedLabels {
                source: self.label(source),
                reason,
            })
            .inc_by(events as u64);
    }
}

/// The label of a core error.
pub fn reason(e: &Error) -> &'static str {
    match e {
        Error::MissingField { .. } => "missing_field",
        Error::InvalidField { .. } => "invalid_field",
        Error::InvalidJson { .. } => "invalid_json",
        Error::WrongType { .. } => "wrong_type",
        Error::MessageTooLarge { .. } => "too_large",
        Error::QueueFull { .. } => "queue_full",
        Error::SpoolFull { .. } => "spool_full",
        Error::Closed => "closed",
        Error::Spool { .. } => "spool",
        _ => "other",
    }
}

/// The outcome callback of `source`'s client. Each of its series is made at its first
/// outcome, then kept, so an outcome costs an atomic add (no label lookup, no allocation):
/// made at start, the nine series of each of 10,000 idle sources were 8.5 MB. So is the
/// source's last hour (`activity.rs`, the console's chart), kept under its `tenant`, unless
/// a client of that tenant already has one (a settings change keeps its hour; a new source
/// of an old name starts its own).
pub fn on_outcome(
    metrics: &Metrics,
    activities: &Activities,
    source: &str,
    tenant: &str,
) -> outbound::OutcomeCallback {
    const DESTINATIONS: [&str; 3] = ["all", "webhooks", "ingestion"];
    const KINDS: [OutcomeKind; 3] = [
        OutcomeKind::Delivered,
        OutcomeKind::Failed,
        OutcomeKind::Dropped,
    ];
    // Boxed at the first outcome: an idle source's hook is a few words.
    let counters: OnceLock<Box<[OnceLock<Counter>; 9]>> = OnceLock::new();
    let hour: OnceLock<Arc<Activity>> = OnceLock::new();
    if let Some(ring) = activities.existing(tenant) {
        let _ = hour.set(ring);
    }
    let (metrics, activities) = (metrics.clone(), activities.clone());
    // Named sources' series are their own; the rest share `_other`'s (the label is decided
    // when the client starts: a change of `metrics_sources` needs a restart).
    let source: Box<str> = metrics.label(source).into();
    let tenant: Box<str> = tenant.into();
    std::sync::Arc::new(move |o: &Outcome| {
        let ended = match o.kind {
            OutcomeKind::Delivered => Some(Ended::Delivered),
            OutcomeKind::Failed => Some(Ended::Failed),
            _ => None,
        };
        if let Some(ended) = ended {
            hour.get_or_init(|| activities.of(&tenant)).record(ended);
        }
        let d = if o.detail.starts_with("webhook") {
            1
        } else if o.detail.starts_with("ingestion") {
            2
        } else {
            0
        };
        let k = KINDS.iter().position(|k| *k == o.kind).unwrap_or(0);
        counters.get_or_init(Box::default)[d * KINDS.len() + k]
            .get_or_init(|| {
                (metrics.0.outcomes)
                    .get_or_create(&OutcomeLabels {
                        source: source.to_string(),
                        destination: DESTINATIONS[d],
                        outcome: KINDS[k].as_str(),
                    })
                    .clone()
            })
            .inc();
    })
}

impl Metrics {
    /// One answered request.
    pub fn request(&self, route: &'static str, status: u16, took: Duration) {
        let m = &self.0;
        m.requests
            .get_or_create(&RequestLabels { route, status })
            .inc();
        m.latency
            .get_or_create(&RouteLabel { route })
            .observe(took.as_secs_f64());
    }

    /// A request being handled, until the guard drops.
    pub fn in_flight(&self) -> InFlight {
        self.0.in_flight.inc();
        InFlight(self.clone())
    }

    /// An open client connection, until the guard drops.
    pub fn connection(&self) -> Connection {
        self.0.connections.inc();
        Connection(self.clone())
    }
}

/// Held while a request is handled.
pub struct InFlight(Metrics);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0 .0.in_flight.dec();
    }
}

/// Held while a client connection is open.
pub struct Connection(Metrics);

impl Drop for Connection {
    fn drop(&mut self) {
        self.0 .0.connections.dec();
    }
}

/// The text of `GET /metrics`, with the gauges read from `sources` (and the `engine` they
/// run on) now.
pub fn render(metrics: &Metrics, sources: &Sources, engine: &SharedEngine) -> String {
    // One scrape at a time: each fills the per-source gauges and clears them.
    let _one = metrics
        .0
        .rendering
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    let m = &*metrics.0;
    // A source removed by a reload is no longer shown.
    clear(m);
    // The dead letters of every source on the shared spool, at once (a source of that name
    // changing this moment has two tenants for a while: they count the same letters). When
    // the writer does not answer, they are left out of this scrape rather than shown as 0.
    let dead: HashMap<String, DeadLetterStats> = (engine.dead_letter_counts().ok())
        .map(|counts| counts.into_iter().collect())
        .unwrap_or_default();
    let per_source = m.per_source.load();
    // Every source's gauges, then the named ones and the most waiting shown on their own, the
    // rest summed under `_other`.
    let mut rows: Vec<(&str, [i64; 6])> = Vec::with_capacity(sources.len());
    for s in sources.iter() {
        // A source whose settings are changing this moment shows at the next scrape.
        let Some(client) = s.slot.current() else {
            continue;
        };
        let stats = client.stats();
        // A source on a spool of its own answers for itself (a tenant of the shared spool
        // has none in its config: it is in `dead`, or left out with all of them).
        let config = client.config();
        let own = || match config.dead_letters && config.spool.is_some() {
            true => client.dead_letter_stats().ok(),
            false => None,
        };
        let d = dead.get(&s.spec.tenant).copied().or_else(own);
        // Only a rate limit throttles: the health of the rest is not read.
        let limited = (config.webhooks.iter()).any(|w| w.rate_limit.is_some());
        let (throttled_now, throttled) = match limited {
            true => (client.webhook_health().iter()).fold((0, 0), |(n, t), h| {
                let now = h.state == outbound::HealthState::Throttled;
                (n + i64::from(now), t + h.throttled as i64)
            }),
            false => (0, 0),
        };
        rows.push((
            s.name.as_str(),
            [
                stats.queued as i64,
                client.spool_bytes() as i64,
                d.map_or(-1, |d| d.count as i64),
                d.map_or(-1, |d| d.bytes as i64),
                throttled_now,
                throttled,
            ],
        ));
    }
    let top = per_source.top.min(rows.len());
    if top > 0 {
        rows.select_nth_unstable_by(top - 1, |a, b| b.1[0].cmp(&a.1[0]));
    }
    let mut other = [0i64; 6];
    let mut other_dead = false;
    for (i, (name, v)) in rows.iter().enumerate() {
        if i < top || per_source.named.contains(*name) {
            set_gauges(m, name, v);
        } else {
            for (o, x) in other.iter_mut().zip(v) {
                *o += (*x).max(0);
            }
            other_dead |= v[2] >= 0;
        }
    }
    if !other_dead {
        other[2] = -1;
    }
    if rows.len() > top {
        set_gauges(m, OTHER, &other);
    }
    m.dead_letters_unwritten
        .set(engine.dead_letters_unwritten() as i64);
    let mut out = String::new();
    // Writing to a String cannot fail.
    let _ = prometheus_client::encoding::text::encode(&mut out, &m.registry);
    // Read again at the next scrape: kept, two series of each of 10,000 sources were 2 MB.
    clear(m);
    out
}

/// One source's (or `_other`'s) gauges: waiting, spool bytes, dead letters and their bytes
/// (-1: it keeps none), webhooks throttled now and requests throttled.
fn set_gauges(m: &Inner, source: &str, v: &[i64; 6]) {
    let label = SourceLabel {
        source: source.to_string(),
    };
    m.queue_depth.get_or_create(&label).set(v[0]);
    m.spool_bytes.get_or_create(&label).set(v[1]);
    if v[2] >= 0 {
        m.dead_letters.get_or_create(&label).set(v[2]);
        m.dead_letter_bytes.get_or_create(&label).set(v[3]);
    }
    m.webhooks_throttled.get_or_create(&label).set(v[4]);
    // Read whole at each scrape (the family is cleared after it).
    (m.requests_throttled.get_or_create(&label)).inc_by(v[5].max(0) as u64);
}

/// Empties the per-source gauges (filled at each scrape).
fn clear(m: &Inner) {
    m.queue_depth.clear();
    m.spool_bytes.clear();
    m.dead_letters.clear();
    m.dead_letter_bytes.clear();
    m.webhooks_throttled.clear();
    m.requests_throttled.clear();
}
