//! Running the relay: liveness and readiness (`health`), the metrics registry and
//! `/metrics` (`metrics`), log lines (`logging`; those about requests at most one of a kind
//! every 10 s: `log_rate`), the open-files limit (`open_files`), free
//! heap pages back to the system (`memory`), SIGHUP (`reload`), each source's last hour
//! of outcomes, minute by minute (`activity`), `data_dir` kept the process's own
//! (`data_dir`), `outbound-relay check` (`check`), the operator's alerts (`alerts`), and the
//! events of the sources someone looks at (`recent`).

pub mod activity;
pub mod alerts;
pub mod check;
pub mod data_dir;
pub mod health;
pub mod log_rate;
pub mod logging;
pub mod memory;
pub mod metrics;
pub mod open_files;
pub mod recent;
pub mod reload;

/// What the relay keeps of its own running (no process globals): counters and gauges, the
/// request lines' rate, each source's last hour. Cheap to clone.
#[derive(Clone, Default)]
pub struct Ops {
    pub metrics: metrics::Metrics,
    pub log_rate: log_rate::LogRate,
    pub activities: activity::Activities,
    /// The operator's alerts (off without `alert_url`).
    pub alerts: alerts::Alerts,
    /// The recent events of the sources someone looks at.
    pub recent: recent::Recent,
}

impl Ops {
    /// The outcome callback of a source's client (`metrics::on_outcome`), from its name and
    /// its tenant.
    pub fn on_outcome(&self, source: &str, tenant: &str) -> outbound::OutcomeCallback {
        metrics::on_outcome(&self.metrics, &self.activities, source, tenant)
    }
}
