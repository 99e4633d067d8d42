//! Python binding for outbound: the module `outbound._native`. It converts Python values and
//! errors to and from the core's and decides nothing; the Pythonic surface (keyword
//! defaults, `Webhook`, fork and exit hooks, `logging`) is `python/outbound/__init__.py`.

mod convert;
mod endpoint;
mod errors;
mod records;
mod signatures;
mod subscription;

#[pyo3::pymodule]
mod _native {
    use crate::convert::{self, CallError, Path};
    use crate::endpoint::WebhookArgs;
    use crate::errors::{self, to_py};
    use crate::records;
    use outbound::{
        Config, Error, Kind, Level, Message, Outcome, RetryPolicy, SignatureScheme, Spool,
    };
    use pyo3::prelude::*;
    use pyo3::types::{PyBytes, PyDict, PyList};
    use std::sync::Arc;
    use std::time::Duration;

    #[pymodule_init]
    fn init(m: &Bound<'_, PyModule>) -> PyResult<()> {
        // Referenced so the linker keeps the marker's bytes.
        std::hint::black_box(crate::BUILD_PROFILE);
        m.add("__version__", outbound::VERSION)
    }

    /// The core client. Use `outbound.Client`, which gives every setting its default.
    #[pyclass(frozen, module = "outbound._native")]
    pub struct NativeClient {
        inner: outbound::Client,
        /// A recording client's record (`outbound.testing.RecordingClient`).
        recording: Option<outbound::testing::Recording>,
    }

    pub(crate) fn seconds(setting: &str, v: f64) -> PyResult<Duration> {
        Duration::try_from_secs_f64(v)
            .map_err(|_| errors::config(setting, format!("{v} is not a valid number of seconds")))
    }

    /// Counts below zero become 0, which the core refuses with its own message.
    fn count(v: i64) -> usize {
        usize::try_from(v).unwrap_or(0)
    }

    /// A bound where 0 is a value of its own (no header at all): below zero is refused
    /// naming the setting, not made 0.
    fn limit(setting: &str, v: i64) -> PyResult<usize> {
        usize::try_from(v)
            .map_err(|_| errors::config(setting, format!("must not be negative, got {v}")))
    }

    /// Runs the callback with the GIL on the scheduler thread. The Python layer wraps user
    /// callbacks so their exceptions are logged; anything escaping that is reported as
    /// unraisable. Nothing runs once the interpreter is shutting down.
    fn outcome_callback(cb: Py<PyAny>) -> outbound::OutcomeCallback {
        Arc::new(move |o: &Outcome| {
            Python::try_attach(|py| {
                let args = (
                    &*o.message_id,
                    o.kind.as_str(),
                    o.detail.as_str(),
                    o.subscription.as_deref(),
                );
                if let Err(e) = cb.call1(py, args) {
                    e.write_unraisable(py, Some(cb.bind(py)));
                }
            });
        })
    }

    fn log_sink(sink: Py<PyAny>) -> outbound::LogSink {
        Arc::new(move |level: Level, line: &str| {
            Python::try_attach(|py| {
                if let Err(e) = sink.call1(py, (level.as_str(), line)) {
                    e.write_unraisable(py, Some(sink.bind(py)));
                }
            });
        })
    }

    #[pymethods]
    impl NativeClient {
        #[new]
        #[pyo3(signature = (*, write_key, endpoint, webhooks, shared_secret, signature_scheme,
            webhook_user_agent,
            flush_at, max_batch_messages, flush_interval, max_queue_size, queue_full_wait, timeout, max_retry_duration, gzip,
            ca_certs, workers, max_in_flight, on_outcome, log_sink, debug, send, proxy_from_env,
            block_private_networks, allowed_networks,
            spool, spool_max_bytes, spool_commit_interval, redis_ack="auto",
            dead_letters=false, dead_letter_retention=14.0 * 86400.0,
            dead_letter_max_bytes=256 << 20,
            attempt_log_size=100, attempt_retention=86400.0,
            max_webhook_headers=outbound::DEFAULT_MAX_WEBHOOK_HEADERS as i64,
            max_webhook_header_bytes=outbound::DEFAULT_MAX_WEBHOOK_HEADER_BYTES as i64,
            record=false, subscriptions=Vec::new()))]
        #[allow(clippy::too_many_arguments)]
        fn new<'py>(
            write_key: Option<String>,
            endpoint: String,
            webhooks: Vec<WebhookArgs<'py>>,
            shared_secret: Option<String>,
            signature_scheme: &str,
            webhook_user_agent: String,
            flush_at: i64,
            max_batch_messages: Option<i64>,
            flush_interval: f64,
            max_queue_size: i64,
            queue_full_wait: f64,
            timeout: f64,
            max_retry_duration: f64,
            gzip: bool,
            ca_certs: Option<String>,
            workers: i64,
            max_in_flight: i64,
            on_outcome: Option<Py<PyAny>>,
            log_sink: Option<Py<PyAny>>,
            debug: Option<bool>,
            send: bool,
            proxy_from_env: bool,
            block_private_networks: bool,
            allowed_networks: Vec<String>,
            spool: Option<std::path::PathBuf>,
            spool_max_bytes: u64,
            spool_commit_interval: f64,
            redis_ack: &str,
            dead_letters: bool,
            dead_letter_retention: f64,
            dead_letter_max_bytes: u64,
            attempt_log_size: i64,
            attempt_retention: f64,
            max_webhook_headers: i64,
            max_webhook_header_bytes: i64,
            record: bool,
            subscriptions: Vec<Bound<'py, PyAny>>,
        ) -> PyResult<Self> {
            let mut config = Config::default();
            config.write_key = write_key;
            config.endpoint = endpoint;
            config.webhooks = (webhooks.into_iter().enumerate())
                .map(|(i, hook)| crate::endpoint::webhook(i, hook))
                .collect::<PyResult<Vec<_>>>()?
                .into();
            config.subscriptions = (subscriptions.iter().enumerate())
                .map(|(i, sub)| crate::subscription::subscription(i, sub))
                .collect::<PyResult<_>>()?;
            config.shared_secret = shared_secret;
            config.signature_scheme = SignatureScheme::parse(signature_scheme).map_err(to_py)?;
            config.webhook_user_agent = webhook_user_agent;
            config.flush_at = count(flush_at);
            config.max_batch_messages = max_batch_messages.map(count);
            config.flush_interval = seconds("flush_interval", flush_interval)?;
            config.max_queue_size = count(max_queue_size);
            config.queue_full_wait = seconds("queue_full_wait", queue_full_wait)?;
            // A call waiting for room lets the GIL go: outcomes (the callback, the log
            // sink) need it to free the room.
            config.room_wait = Some(Arc::new(|wait: &mut (dyn FnMut() -> bool + Send)| {
                Python::attach(|py| py.detach(wait))
            }));
            config.timeout = seconds("timeout", timeout)?;
            config.retry = RetryPolicy {
                max_retry_duration: seconds("max_retry_duration", max_retry_duration)?,
                ..RetryPolicy::default()
            };
            config.gzip = gzip;
            config.ca_certs = ca_certs;
            config.workers = count(workers);
            config.max_in_flight = count(max_in_flight);
            config.on_outcome = on_outcome.map(outcome_callback);
            config.debug = debug;
            config.log_sink = log_sink.map(self::log_sink);
            config.send = send;
            config.proxy_from_env = proxy_from_env;
            config.block_private_networks = block_private_networks;
            config.allowed_networks = allowed_networks;
            config.spool = spool.map(Spool::from);
            config.spool_max_bytes = spool_max_bytes;
            config.spool_commit_interval = seconds("spool_commit_interval", spool_commit_interval)?;
            config.redis_ack = redis_ack.parse().map_err(to_py)?;
            config.dead_letters = dead_letters;
            config.dead_letter_retention = seconds("dead_letter_retention", dead_letter_retention)?;
            config.dead_letter_max_bytes = dead_letter_max_bytes;
            config.attempt_log_size = count(attempt_log_size);
            config.attempt_retention = seconds("attempt_retention", attempt_retention)?;
            config.max_webhook_headers = limit("max_webhook_headers", max_webhook_headers)?;
            config.max_webhook_header_bytes =
                limit("max_webhook_header_bytes", max_webhook_header_bytes)?;
            if record {
                let (inner, recording) = outbound::testing::recording(config).map_err(to_py)?;
                return Ok(NativeClient {
                    inner,
                    recording: Some(recording),
                });
            }
            let inner = outbound::Client::new(config).map_err(to_py)?;
            Ok(NativeClient {
                inner,
                recording: None,
            })
        }

        /// Validates and queues one message; returns its id, or None when the queue is full
        /// (the drop is counted in `stats()` and logged). Every argument is positional (the
        /// quickest call); `outbound.Client` gives them names and defaults.
        #[pyo3(signature = (kind, user_id, anonymous_id, message_id, timestamp, context,
            integrations, event, name, category, group_id, previous_id, properties, traits, /))]
        #[allow(clippy::too_many_arguments)]
        fn enqueue<'py>(
            &self,
            kind: &str,
            user_id: Option<&Bound<'py, PyAny>>,
            anonymous_id: Option<&Bound<'py, PyAny>>,
            message_id: Option<&Bound<'py, PyAny>>,
            timestamp: Option<&Bound<'py, PyAny>>,
            context: Option<&Bound<'py, PyAny>>,
            integrations: Option<&Bound<'py, PyAny>>,
            event: Option<&Bound<'py, PyAny>>,
            name: Option<&Bound<'py, PyAny>>,
            category: Option<&Bound<'py, PyAny>>,
            group_id: Option<&Bound<'py, PyAny>>,
            previous_id: Option<&Bound<'py, PyAny>>,
            properties: Option<&Bound<'py, PyAny>>,
            traits: Option<&Bound<'py, PyAny>>,
        ) -> PyResult<Option<String>> {
            let kind = Kind::parse(kind).ok_or_else(|| {
                pyo3::exceptions::PyValueError::new_err(format!("unknown call {kind:?}"))
            })?;
            let msg = Message {
                kind,
                user_id: convert::id(user_id, "user_id")?,
                anonymous_id: convert::id(anonymous_id, "anonymous_id")?,
                message_id: convert::text(message_id, "message_id")?,
                timestamp: convert::timestamp(timestamp)?,
                context: convert::json_object(context, "context")?,
                integrations: convert::object(integrations, "integrations")?,
                event: convert::text(event, "event")?,
                name: convert::text(name, "name")?,
                category: convert::text(category, "category")?,
                group_id: convert::id(group_id, "group_id")?,
                previous_id: convert::id(previous_id, "previous_id")?,
                properties: convert::json_object(properties, "properties")?,
                traits: convert::json_object(traits, "traits")?,
                collected: None,
            };
            match self.inner.enqueue_with(&msg) {
                Ok(id) => Ok(Some(id)),
                Err(CallError::Core(Error::QueueFull { .. } | Error::SpoolFull { .. })) => Ok(None),
                Err(CallError::Core(e)) => Err(to_py(e)),
                Err(CallError::Python(e)) => Err(e),
            }
        }

        /// Waits (without the GIL) until every accepted message has an outcome or `timeout`
        /// seconds pass (None: the core's default).
        #[pyo3(signature = (timeout=None))]
        fn flush(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<bool> {
            let wait = timeout.map(|t| seconds("timeout", t)).transpose()?;
            Ok(py.detach(|| self.inner.flush(wait)))
        }

        /// Flushes, then stops the threads (without the GIL). Closing twice raises.
        #[pyo3(signature = (timeout=None))]
        fn close(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<bool> {
            let wait = timeout.map(|t| seconds("timeout", t)).transpose()?;
            py.detach(|| self.inner.close(wait)).map_err(to_py)
        }

        /// The counters, as a dict of ints.
        fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
            stats_dict(py, self.inner.stats())
        }

        /// Subscription `name`'s counters, as `stats()` gives the client's; ValidationError
        /// (naming `name`) when the client has no subscription of that name.
        fn subscription_stats<'py>(
            &self,
            py: Python<'py>,
            name: &str,
        ) -> PyResult<Bound<'py, PyDict>> {
            let sub = self.inner.subscription(name).ok_or_else(|| {
                to_py(Error::InvalidField {
                    field: "name".into(),
                    reason: format!("the client has no subscription named {name:?}"),
                })
            })?;
            stats_dict(py, sub.stats())
        }

        /// Messages no subscription matched that had no destination of the client's own.
        fn unmatched(&self) -> u64 {
            self.inner.unmatched()
        }

        /// True once `close` was called.
        #[getter]
        fn closed(&self) -> bool {
            self.inner.is_closed()
        }

        /// False while the spool cannot be written (see `Client.spool_ok`).
        #[getter]
        fn spool_ok(&self) -> bool {
            self.inner.spool_ok()
        }

        /// Webhook `webhook`'s kept attempts that the filters ask for, newest first (times in
        /// Unix seconds; `result` by name, an unknown one a ValidationError naming `result`).
        #[pyo3(signature = (webhook, result=None, status=None, message_id=None, since=None, until=None, limit=100))]
        #[allow(clippy::too_many_arguments)]
        fn webhook_attempts<'py>(
            &self,
            py: Python<'py>,
            webhook: usize,
            result: Option<&str>,
            status: Option<u16>,
            message_id: Option<String>,
            since: Option<f64>,
            until: Option<f64>,
            limit: usize,
        ) -> PyResult<Bound<'py, PyList>> {
            let result = result
                .map(|r| {
                    outbound::AttemptResult::parse(r).ok_or_else(|| {
                        to_py(Error::InvalidField {
                            field: "result".into(),
                            reason: format!("must be delivered, retryable or permanent, got {r:?}"),
                        })
                    })
                })
                .transpose()?;
            let q = outbound::AttemptQuery {
                result,
                status,
                message_id,
                since: since.and_then(records::time),
                until: until.and_then(records::time),
                limit,
            };
            let list = (self.inner.webhook_attempts_where(webhook, &q)).map_err(to_py)?;
            records::attempts(py, &list)
        }

        /// Each webhook's health.
        fn webhook_health<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyDict>>> {
            (self.inner.webhook_health().iter())
                .map(|h| records::health(py, h))
                .collect()
        }

        /// A page of dead letters, newest first (times in Unix seconds).
        #[pyo3(signature = (limit, cursor, since, until, contains=None))]
        fn dead_letters<'py>(
            &self,
            py: Python<'py>,
            limit: usize,
            cursor: Option<String>,
            since: Option<f64>,
            until: Option<f64>,
            contains: Option<String>,
        ) -> PyResult<Bound<'py, PyDict>> {
            let q = outbound::DeadLetterQuery {
                limit,
                cursor,
                since: since.and_then(records::time),
                until: until.and_then(records::time),
                contains,
            };
            let page = py.detach(|| self.inner.dead_letters(&q)).map_err(to_py)?;
            records::page(py, &page)
        }

        /// One dead letter with its body, or None.
        fn dead_letter<'py>(
            &self,
            py: Python<'py>,
            message_id: &str,
        ) -> PyResult<Option<Bound<'py, PyDict>>> {
            let found = py
                .detach(|| self.inner.dead_letter(message_id))
                .map_err(to_py)?;
            found.map(|l| records::letter(py, &l)).transpose()
        }

        /// Discards one dead letter; whether there was one.
        fn delete_dead_letter(&self, py: Python<'_>, message_id: &str) -> PyResult<bool> {
            py.detach(|| self.inner.delete_dead_letter(message_id))
                .map_err(to_py)
        }

        /// Replays one dead letter; its replay, or None (none, or replaying already).
        #[pyo3(signature = (message_id, webhook))]
        fn replay_dead_letter<'py>(
            &self,
            py: Python<'py>,
            message_id: &str,
            webhook: Option<usize>,
        ) -> PyResult<Option<Bound<'py, PyDict>>> {
            let p = py
                .detach(|| self.inner.replay_dead_letter(message_id, webhook))
                .map_err(to_py)?;
            p.map(|p| records::progress(py, &p)).transpose()
        }

        /// Replays the dead letters of a time range, in the background.
        #[pyo3(signature = (since, until, webhook))]
        fn replay_dead_letters<'py>(
            &self,
            py: Python<'py>,
            since: Option<f64>,
            until: Option<f64>,
            webhook: Option<usize>,
        ) -> PyResult<Bound<'py, PyDict>> {
            let (since, until) = (since.and_then(records::time), until.and_then(records::time));
            let p = py
                .detach(|| self.inner.replay_dead_letters(since, until, webhook))
                .map_err(to_py)?;
            records::progress(py, &p)
        }

        /// A replay's progress, or None.
        fn replay_progress<'py>(
            &self,
            py: Python<'py>,
            replay_id: u64,
        ) -> PyResult<Option<Bound<'py, PyDict>>> {
            let p = py
                .detach(|| self.inner.replay_progress(replay_id))
                .map_err(to_py)?;
            p.map(|p| records::progress(py, &p)).transpose()
        }

        /// How many dead letters are kept, their bytes, and how many the limits dropped.
        fn dead_letter_stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
            let s = py
                .detach(|| self.inner.dead_letter_stats())
                .map_err(to_py)?;
            records::stats(py, &s)
        }

        /// In a forked child: new threads and an empty queue.
        fn reset_after_fork(&self) -> PyResult<()> {
            self.inner.reset_after_fork().map_err(to_py)
        }

        /// A recording client's requests: (destination, url, headers, body) each.
        #[allow(clippy::type_complexity)]
        fn recorded_requests<'py>(
            &self,
            py: Python<'py>,
        ) -> PyResult<
            Vec<(
                &'static str,
                String,
                Vec<(String, String)>,
                Bound<'py, PyBytes>,
            )>,
        > {
            Ok(self
                .recording()?
                .requests()
                .into_iter()
                .map(|r| {
                    let dest = match r.destination {
                        outbound::testing::Destination::Ingestion => "ingestion",
                        outbound::testing::Destination::Webhook => "webhook",
                    };
                    (dest, r.url, r.headers, PyBytes::new(py, &r.body))
                })
                .collect())
        }

        /// A recording client's outcomes: (message_id, outcome, detail, subscription) each.
        #[allow(clippy::type_complexity)]
        fn recorded_outcomes(
            &self,
        ) -> PyResult<Vec<(String, &'static str, String, Option<String>)>> {
            Ok(self
                .recording()?
                .outcomes()
                .into_iter()
                .map(|o| {
                    let sub = o.subscription.map(|s| s.to_string());
                    (o.message_id.to_string(), o.kind.as_str(), o.detail, sub)
                })
                .collect())
        }

        /// Answers a recording client's later requests with `status`.
        fn respond_with(&self, status: u16) -> PyResult<()> {
            self.recording()?.respond_with(status);
            Ok(())
        }

        /// Forgets a recording client's requests and outcomes.
        fn clear_recording(&self) -> PyResult<()> {
            self.recording()?.clear();
            Ok(())
        }
    }

    fn stats_dict(py: Python<'_>, s: outbound::Stats) -> PyResult<Bound<'_, PyDict>> {
        let d = PyDict::new(py);
        for (k, v) in [
            ("accepted", s.accepted),
            ("queued", s.queued),
            ("in_flight", s.in_flight),
            ("delivered", s.delivered),
            ("failed", s.failed),
            ("dropped", s.dropped),
            ("queue_full", s.queue_full),
            ("retries", s.retries),
            ("spooled", s.spooled),
            ("resumed", s.resumed),
        ] {
            d.set_item(k, v)?;
        }
        Ok(d)
    }

    impl NativeClient {
        fn recording(&self) -> PyResult<&outbound::testing::Recording> {
            self.recording
                .as_ref()
                .ok_or_else(|| pyo3::exceptions::PyRuntimeError::new_err("not a recording client"))
        }
    }

    impl Drop for NativeClient {
        // The core's Drop closes with a bounded wait; do it here without the GIL so the
        // scheduler can still run Python callbacks meanwhile.
        fn drop(&mut self) {
            if self.inner.is_closed() {
                return;
            }
            let inner = &self.inner;
            let wait = Some(inner.config().timeout);
            let done = Python::try_attach(|py| py.detach(|| inner.close(wait).is_ok()));
            if done.is_none() {
                let _ = inner.close(wait);
            }
        }
    }

    /// The core's audience and computed-trait sync. Use `outbound.AudienceSync`.
    #[pyclass(frozen, module = "outbound._native")]
    pub struct NativeAudienceSync {
        // rusqlite's connection may move between threads but not be shared: one call at a time.
        inner: std::sync::Mutex<outbound::AudienceSync>,
    }

    #[pymethods]
    impl NativeAudienceSync {
        /// State in the SQLite file at `state_path`, or in memory when None.
        #[new]
        #[pyo3(signature = (state_path=None))]
        fn new(state_path: Option<std::path::PathBuf>) -> PyResult<Self> {
            let inner = outbound::AudienceSync::new(state_path.as_deref()).map_err(to_py)?;
            Ok(NativeAudienceSync {
                inner: std::sync::Mutex::new(inner),
            })
        }

        /// Members: any iterable of ids. Returns (joined, left, unchanged).
        fn sync_audience(
            &self,
            py: Python<'_>,
            client: &NativeClient,
            name: &str,
            members: &Bound<'_, PyAny>,
        ) -> PyResult<(u64, u64, u64)> {
            let mut ids = Vec::new();
            for member in members.try_iter()? {
                ids.push(convert::id(Some(&member?), "members")?.unwrap_or_default());
            }
            let counts = py
                .detach(|| self.lock().sync_audience(&client.inner, name, ids))
                .map_err(to_py)?;
            Ok((counts.joined, counts.left, counts.unchanged))
        }

        /// Values: any mapping of id -> JSON-able value. Returns (set, cleared, unchanged).
        fn sync_trait(
            &self,
            py: Python<'_>,
            client: &NativeClient,
            name: &str,
            values: &Bound<'_, PyAny>,
        ) -> PyResult<(u64, u64, u64)> {
            let mut pairs = Vec::new();
            for item in values.call_method0("items")?.try_iter()? {
                let (key, value): (Bound<'_, PyAny>, Bound<'_, PyAny>) = item?.extract()?;
                let id = convert::id(Some(&key), "values")?.unwrap_or_default();
                let value = convert::to_value(&value, &mut Path::new("values"))?;
                pairs.push((id, value));
            }
            let counts = py
                .detach(|| self.lock().sync_trait(&client.inner, name, pairs))
                .map_err(to_py)?;
            Ok((counts.set, counts.cleared, counts.unchanged))
        }
    }

    impl NativeAudienceSync {
        fn lock(&self) -> std::sync::MutexGuard<'_, outbound::AudienceSync> {
            self.inner.lock().unwrap_or_else(|e| e.into_inner())
        }
    }

    /// True when the `DEBUG` environment variable asks for logs (the core's rule).
    #[pyfunction]
    fn debug_from_env() -> bool {
        outbound::debug_from_env()
    }

    /// The core's defaults, for the Python layer's tests (its keyword defaults must match).
    #[pyfunction]
    fn defaults(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
        let c = Config::default();
        let d = PyDict::new(py);
        d.set_item("endpoint", &c.endpoint)?;
        d.set_item("webhook_user_agent", &c.webhook_user_agent)?;
        d.set_item("signature_scheme", c.signature_scheme.as_str())?;
        d.set_item("flush_at", c.flush_at)?;
        d.set_item("max_batch_messages", c.max_batch_messages)?;
        d.set_item("flush_interval", c.flush_interval.as_secs_f64())?;
        d.set_item("max_queue_size", c.max_queue_size)?;
        d.set_item("queue_full_wait", c.queue_full_wait.as_secs_f64())?;
        d.set_item("timeout", c.timeout.as_secs_f64())?;
        d.set_item(
            "max_retry_duration",
            c.retry.max_retry_duration.as_secs_f64(),
        )?;
        d.set_item("gzip", c.gzip)?;
        d.set_item("workers", c.workers)?;
        d.set_item("max_in_flight", c.max_in_flight)?;
        d.set_item("spool_max_bytes", c.spool_max_bytes)?;
        d.set_item(
            "spool_commit_interval",
            c.spool_commit_interval.as_secs_f64(),
        )?;
        d.set_item("redis_ack", c.redis_ack.to_string())?;
        d.set_item("send", c.send)?;
        d.set_item("proxy_from_env", c.proxy_from_env)?;
        d.set_item("block_private_networks", c.block_private_networks)?;
        d.set_item("dead_letters", c.dead_letters)?;
        d.set_item(
            "dead_letter_retention",
            c.dead_letter_retention.as_secs_f64(),
        )?;
        d.set_item("dead_letter_max_bytes", c.dead_letter_max_bytes)?;
        d.set_item("attempt_log_size", c.attempt_log_size)?;
        d.set_item("attempt_retention", c.attempt_retention.as_secs_f64())?;
        d.set_item("max_webhook_headers", c.max_webhook_headers)?;
        d.set_item("max_webhook_header_bytes", c.max_webhook_header_bytes)?;
        Ok(d)
    }

    // The receivers' signature helpers (`signatures.rs`).
    #[pymodule_export]
    use crate::signatures::{
        sign, sign_sha256, sign_standard_webhook, standard_webhook_tolerance, verify,
        verify_sha256, verify_standard_webhook, verify_value,
    };
}

/// Which cargo profile built this module, kept in the binary (it survives `strip`) so
/// scripts/check-wheel.sh can refuse a debug build, which is about 10x slower per call.
static BUILD_PROFILE: &[u8] = if cfg!(debug_assertions) {
    b"outbound-build-profile:debug"
} else {
    b"outbound-build-profile:release"
};
