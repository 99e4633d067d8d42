//! The operator's alerts (`alert_url`): a webhook URL's circuit opened or closed, a source's
//! dead letters or messages waiting past a threshold (and back under it), a source's spool
//! near its `spool_max_bytes` (and back), each sent as a signed webhook (Standard Webhooks
//! or `X-Signature`, with `alert_secret`) to the operator's URL.
//!
//! The relay sends them as it sends a source's events: through a core `Client` of its own,
//! a tenant of the sources' engine (`relay.alerts`, no source's name can be it), so they are
//! spooled, retried and signed like any webhook. A task looks at every source every
//! `alert_interval` in what the core already keeps (each webhook's health, the counters,
//! every source's dead letters in one question to the spool writer, the spool's bytes) and
//! sends an alert at each crossing only: going back under a threshold takes 90 % of it, so
//! a value near it does not alert at every look. The last alerts are kept in memory for the
//! console (`GET /admin/alerts`), and each is a log line.
//!
//! The body is a `track` event: `event` the alert (`webhook.circuit_opened`, ...), its
//! facts in `properties` (`source`, `webhook`, `url`, the value and the threshold, `relay`).

use crate::config::AlertSettings;
use crate::sources::engine::SharedEngine;
use crate::sources::registry::Registry;
use outbound::{Client, HealthState, Message, WebhookHealth};
use serde_json::{json, Map, Value};
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, SystemTime};

/// The tenant the alerts' client runs as on the engine.
pub const TENANT: &str = "relay.alerts";
/// How many alerts the console can read back.
const KEPT: usize = 500;

/// One alert sent.
#[derive(Clone, Debug)]
pub struct Alert {
    pub at: SystemTime,
    pub event: &'static str,
    pub source: String,
    /// The source's tenant (tells it from an earlier source of its name).
    pub tenant: String,
    /// Its message id at the operator's URL (`webhook-id`).
    pub message_id: String,
    pub properties: Map<String, Value>,
}

/// The alerts of a relay: off until [`Alerts::start`]. Cheap to clone.
#[derive(Clone, Default)]
pub struct Alerts(Arc<Inner>);

#[derive(Default)]
struct Inner {
    sender: OnceLock<Sender>,
    recent: Mutex<VecDeque<Alert>>,
}

struct Sender {
    client: Client,
    settings: AlertSettings,
    /// This relay's host name, in every alert (each relay of a fleet alerts on what it sees).
    relay: String,
}

/// What the last look saw of a source.
#[derive(Default)]
struct Seen {
    circuits: Vec<bool>,
    dead_letters: bool,
    waiting: bool,
    spool: bool,
}

/// Whether `value` crosses `threshold` now, from `above` before: `Some(true)` up, `Some(false)`
/// back down (under 90 % of it), `None` no crossing.
fn crossing(above: bool, value: u64, threshold: u64) -> Option<bool> {
    match above {
        false if value >= threshold => Some(true),
        true if value.saturating_mul(10) < threshold.saturating_mul(9) => Some(false),
        _ => None,
    }
}

fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "outbound-relay".into())
}

impl Alerts {
    /// Starts the alerts' client on `engine` (its spool the sources').
    pub fn start(&self, settings: &AlertSettings, engine: &SharedEngine) -> Result<(), String> {
        let mut core = settings.client_config();
        core.log_sink = Some(crate::sources::engine::log_sink(TENANT));
        let client = engine
            .tenant_client(TENANT, core)
            .map_err(|e| e.to_string())?;
        let sender = Sender {
            client,
            settings: settings.clone(),
            relay: host_name(),
        };
        let url = outbound::url_for_log(&settings.url, false);
        let _ = self.0.sender.set(sender);
        tracing::info!(url = %url, "alerts on");
        Ok(())
    }

    /// Whether alerts are on.
    pub fn on(&self) -> bool {
        self.0.sender.get().is_some()
    }

    /// The operator's URL as logs show it, and its health now.
    pub fn target(&self) -> Option<(String, Option<WebhookHealth>)> {
        let s = self.0.sender.get()?;
        let url = outbound::url_for_log(&s.settings.url, false);
        Some((url, s.client.webhook_health().into_iter().next()))
    }

    /// The alerts sent, newest first.
    pub fn recent(&self) -> Vec<Alert> {
        let kept = self.0.recent.lock().unwrap_or_else(|e| e.into_inner());
        kept.iter().rev().cloned().collect()
    }

    /// Looks at every source every `alert_interval` until the runtime stops (nothing when
    /// alerts are off).
    pub async fn run(self, registry: Arc<Registry>) {
        let Some(every) = self.0.sender.get().map(|s| s.settings.interval) else {
            return;
        };
        let seen = Arc::new(Mutex::new(HashMap::<String, Seen>::new()));
        loop {
            tokio::time::sleep(every).await;
            let (me, reg, seen) = (self.clone(), registry.clone(), seen.clone());
            let _ = tokio::task::spawn_blocking(move || {
                let mut seen = seen.lock().unwrap_or_else(|e| e.into_inner());
                me.look(&reg, &mut seen);
            })
            .await;
        }
    }

    /// One look at every source: an alert at each crossing.
    fn look(&self, registry: &Registry, seen: &mut HashMap<String, Seen>) {
        let Some(s) = self.0.sender.get() else {
            return;
        };
        let limits = &s.settings;
        let dead: HashMap<String, u64> = match registry.engine().dead_letter_counts() {
            Ok(counts) => counts.into_iter().map(|(t, c)| (t, c.count)).collect(),
            Err(e) => {
                tracing::debug!("alerts: dead letters not counted: {e}");
                HashMap::new()
            }
        };
        let sources = registry.current();
        let mut running = std::collections::HashSet::new();
        for source in sources.iter() {
            let Some(client) = source.slot.current() else {
                continue;
            };
            let tenant = &source.spec.tenant;
            running.insert(tenant.clone());
            let was = seen.entry(tenant.clone()).or_default();
            let send = |event: &'static str, facts: Value| {
                self.send(s, event, &source.name, tenant, facts);
            };
            let health = client.webhook_health();
            was.circuits.resize(health.len(), false);
            for (h, open_before) in health.iter().zip(was.circuits.iter_mut()) {
                let open = h.state == HealthState::CircuitOpen;
                if open != *open_before {
                    *open_before = open;
                    let event = match open {
                        true => "webhook.circuit_opened",
                        false => "webhook.circuit_closed",
                    };
                    let facts = json!({"webhook": h.webhook, "url": h.url,
                        "consecutive_failures": h.consecutive_failures,
                        "last_error": h.last_error.as_ref().map(|(_, why)| why)});
                    send(event, facts);
                }
            }
            if let Some(&n) = dead.get(tenant) {
                if let Some(up) = crossing(was.dead_letters, n, limits.dead_letters) {
                    was.dead_letters = up;
                    let event = match up {
                        true => "source.dead_letters_above",
                        false => "source.dead_letters_below",
                    };
                    send(
                        event,
                        json!({"dead_letters": n, "threshold": limits.dead_letters}),
                    );
                }
            }
            let waiting = client.stats().queued;
            if let Some(up) = crossing(was.waiting, waiting, limits.waiting) {
                was.waiting = up;
                let event = match up {
                    true => "source.waiting_above",
                    false => "source.waiting_below",
                };
                send(
                    event,
                    json!({"waiting": waiting, "threshold": limits.waiting}),
                );
            }
            let max = client.config().spool_max_bytes;
            if max > 0 {
                let bytes = client.spool_bytes();
                let percent = (u128::from(bytes) * 100 / u128::from(max)) as u64;
                if let Some(up) = crossing(was.spool, percent, limits.spool_percent) {
                    was.spool = up;
                    let event = match up {
                        true => "source.spool_near_full",
                        false => "source.spool_ok",
                    };
                    let facts = json!({"spool_bytes": bytes, "spool_max_bytes": max,
                        "percent": percent, "threshold_percent": limits.spool_percent});
                    send(event, facts);
                }
            }
        }
        // A source gone, or made again (another tenant), starts afresh.
        seen.retain(|tenant, _| running.contains(tenant));
    }

    fn send(&self, s: &Sender, event: &'static str, source: &str, tenant: &str, facts: Value) {
        let mut properties = Map::new();
        properties.insert("source".into(), Value::from(source));
        if let Value::Object(f) = facts {
            properties.extend(f);
        }
        properties.insert("relay".into(), Value::from(s.relay.clone()));
        let mut msg = Message::track("outbound-relay", event);
        for (k, v) in &properties {
            msg = msg.property(k.clone(), v.clone());
        }
        let message_id = match s.client.enqueue(&msg) {
            Ok(id) => id,
            Err(e) => {
                tracing::error!(event, source, "alert not sent: {e}");
                return;
            }
        };
        tracing::warn!(event, source, message_id = %message_id, "alert: {event}");
        let alert = Alert {
            at: SystemTime::now(),
            event,
            source: source.to_string(),
            tenant: tenant.to_string(),
            message_id,
            properties,
        };
        let mut kept = self.0.recent.lock().unwrap_or_else(|e| e.into_inner());
        if kept.len() == KEPT {
            kept.pop_front();
        }
        kept.push_back(alert);
    }

    /// Closes the alerts' client within `bound` (what it has not sent stays in the spool).
    pub fn close(&self, bound: Duration) {
        if let Some(s) = self.0.sender.get() {
            let _ = s.client.close(Some(bound));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_crossing_alerts_once_each_way_and_back_takes_90_percent() {
        assert_eq!(crossing(false, 99, 100), None);
        assert_eq!(crossing(false, 100, 100), Some(true));
        assert_eq!(crossing(true, 100, 100), None);
        assert_eq!(
            crossing(true, 95, 100),
            None,
            "near it: no alert at every look"
        );
        assert_eq!(crossing(true, 89, 100), Some(false));
        assert_eq!(crossing(false, 0, 1), None);
        assert_eq!(crossing(false, 1, 1), Some(true));
        assert_eq!(crossing(true, 0, 1), Some(false));
    }
}
