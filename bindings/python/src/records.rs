//! The core's delivery records as Python dicts: attempts, health, dead letters, replays.
//! Times are Unix seconds (floats) and durations seconds; `outbound.Client` turns the
//! times into aware `datetime`s.

use outbound::{
    DeadLetter, DeadLetterPage, DeadLetterStats, ReplayProgress, WebhookAttempt, WebhookHealth,
};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};
use std::time::{SystemTime, UNIX_EPOCH};

/// Unix seconds of `t`.
pub(crate) fn secs(t: SystemTime) -> f64 {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => d.as_secs_f64(),
        Err(e) => -e.duration().as_secs_f64(),
    }
}

/// The time of Unix seconds `s`.
pub(crate) fn time(s: f64) -> Option<SystemTime> {
    let d = std::time::Duration::try_from_secs_f64(s.abs()).ok()?;
    match s >= 0.0 {
        true => UNIX_EPOCH.checked_add(d),
        false => UNIX_EPOCH.checked_sub(d),
    }
}

pub(crate) fn attempt<'py>(py: Python<'py>, a: &WebhookAttempt) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("webhook", a.webhook)?;
    d.set_item("message_id", &*a.message_id)?;
    d.set_item("at", secs(a.at))?;
    d.set_item("duration", a.duration.as_secs_f64())?;
    d.set_item("result", a.result.as_str())?;
    d.set_item("status", a.status)?;
    d.set_item("error", a.error.map(|e| e.as_str()))?;
    d.set_item("detail", &a.detail)?;
    d.set_item("answer", a.answer.as_deref().map(|b| PyBytes::new(py, b)))?;
    d.set_item("request_headers", &a.request_headers)?;
    d.set_item("answer_headers", &a.answer_headers)?;
    Ok(d)
}

pub(crate) fn attempts<'py>(
    py: Python<'py>,
    list: &[WebhookAttempt],
) -> PyResult<Bound<'py, PyList>> {
    let items = list
        .iter()
        .map(|a| attempt(py, a))
        .collect::<PyResult<Vec<_>>>()?;
    PyList::new(py, items)
}

pub(crate) fn health<'py>(py: Python<'py>, h: &WebhookHealth) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("webhook", h.webhook)?;
    d.set_item("url", &h.url)?;
    d.set_item("state", h.state.as_str())?;
    d.set_item("attempts_5m", h.attempts_5m)?;
    d.set_item("delivered_5m", h.delivered_5m)?;
    d.set_item("success_rate_5m", h.success_rate_5m)?;
    d.set_item("p50_5m", h.p50_5m.map(|p| p.as_secs_f64()))?;
    d.set_item("p99_5m", h.p99_5m.map(|p| p.as_secs_f64()))?;
    d.set_item("consecutive_failures", h.consecutive_failures)?;
    d.set_item(
        "last_error",
        h.last_error
            .as_ref()
            .map(|(at, why)| (secs(*at), why.as_str())),
    )?;
    d.set_item("last_success", h.last_success.map(secs))?;
    d.set_item("waiting", h.waiting)?;
    d.set_item("throttled", h.throttled)?;
    let m = PyDict::new(py);
    m.set_item("delivered", h.messages.delivered)?;
    m.set_item("failed", h.messages.failed)?;
    m.set_item("retrying", h.messages.retrying)?;
    m.set_item("abandoned", h.messages.abandoned)?;
    d.set_item("messages", m)?;
    Ok(d)
}

pub(crate) fn letter<'py>(py: Python<'py>, l: &DeadLetter) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("message_id", &l.message_id)?;
    d.set_item("failed_at", secs(l.failed_at))?;
    d.set_item("reason", l.reason.to_string())?;
    d.set_item("detail", &l.detail)?;
    d.set_item("rounds", l.rounds)?;
    d.set_item("first_attempt", l.first_attempt.map(secs))?;
    d.set_item("last_attempts", attempts(py, &l.last_attempts)?)?;
    d.set_item("size", l.size)?;
    d.set_item("replaying", l.replaying)?;
    d.set_item("body", l.body.as_deref().map(|b| PyBytes::new(py, b)))?;
    Ok(d)
}

pub(crate) fn page<'py>(py: Python<'py>, p: &DeadLetterPage) -> PyResult<Bound<'py, PyDict>> {
    let letters = p
        .letters
        .iter()
        .map(|l| letter(py, l))
        .collect::<PyResult<Vec<_>>>()?;
    let d = PyDict::new(py);
    d.set_item("dead_letters", PyList::new(py, letters)?)?;
    d.set_item("next", p.next.as_deref())?;
    Ok(d)
}

pub(crate) fn stats<'py>(py: Python<'py>, s: &DeadLetterStats) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("count", s.count)?;
    d.set_item("bytes", s.bytes)?;
    d.set_item("evicted", s.evicted)?;
    d.set_item("expired", s.expired)?;
    Ok(d)
}

pub(crate) fn progress<'py>(py: Python<'py>, p: &ReplayProgress) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("id", p.id)?;
    d.set_item("total", p.total)?;
    d.set_item("sent", p.sent)?;
    d.set_item("delivered", p.delivered)?;
    d.set_item("failed", p.failed)?;
    d.set_item("skipped", p.skipped)?;
    d.set_item("done", p.done())?;
    d.set_item("started", secs(p.started))?;
    Ok(d)
}
