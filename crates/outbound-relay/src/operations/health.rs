//! `GET /healthz` and `GET /readyz`, open to anyone (a load balancer's probes carry no
//! token, and the answers tell nothing about the sources):
//!
//! - `/healthz`: 200 while the process serves requests (alive);
//! - `/readyz`: 200 when a config is loaded (always, once listening: a refused reload keeps
//!   the old one), the spool directory takes a write (a file created, written, synced
//!   and removed) and every source's spool is being written (a Redis spool's server
//!   reachable); 503 with the reason otherwise, so the balancer sends elsewhere while a
//!   disk is full or read-only.

use crate::http::reply::{self, Answer};
use hyper::StatusCode;
use serde_json::json;
use std::io::Write;
use std::path::Path;

pub fn healthz() -> Answer {
    reply::json(StatusCode::OK, &json!({"status": "alive"}))
}

/// Creates, writes, syncs and removes a probe file in `spool_dir`.
fn spool_writable(spool_dir: &Path) -> std::io::Result<()> {
    let probe = spool_dir.join(format!(".readyz-{}", std::process::id()));
    let result = std::fs::create_dir_all(spool_dir).and_then(|()| {
        let mut f = std::fs::File::create(&probe)?;
        f.write_all(b"ready")?;
        f.sync_all()
    });
    let _ = std::fs::remove_file(&probe);
    result
}

/// Blocking (a small file write): run off the runtime's worker threads. `failing`: the
/// sources whose spool cannot be written now (a Redis spool's server unreachable).
///
/// The answer says which check failed (`check`: `spool_dir` or `source_spools`) and why, but
/// names no source and no path: it is open to anyone. The log line names them, at most once
/// every few seconds (a balancer probes often).
pub fn readyz(spool_dir: &Path, failing: &[String], rate: &super::log_rate::LogRate) -> Answer {
    let failed = match spool_writable(spool_dir) {
        Err(e) => {
            if let Some(held_back) = rate.allow("readyz_spool_dir", "") {
                tracing::warn!(
                    held_back,
                    "readyz: spool directory {} is not writable: {e}",
                    spool_dir.display()
                );
            }
            let why = if e.raw_os_error() == Some(libc::EMFILE) {
                "the process has no file descriptor left (max_connections and the open-files \
                 limit)"
                    .to_string()
            } else {
                e.to_string()
            };
            Some((
                "spool_dir",
                format!("the spool directory is not writable: {why}"),
            ))
        }
        Ok(()) if !failing.is_empty() => {
            if let Some(held_back) = rate.allow("readyz_source_spools", "") {
                tracing::warn!(
                    held_back,
                    "readyz: the spool of {} cannot be written",
                    failing.join(", ")
                );
            }
            let n = failing.len();
            let s = if n == 1 { "" } else { "s" };
            Some((
                "source_spools",
                format!("the spool of {n} source{s} cannot be written (the log names them)"),
            ))
        }
        Ok(()) => None,
    };
    match failed {
        None => reply::json(
            StatusCode::OK,
            &json!({"status": "ready", "config": "loaded", "spool": "writable"}),
        ),
        Some((check, reason)) => reply::json(
            StatusCode::SERVICE_UNAVAILABLE,
            &json!({"status": "not ready", "config": "loaded", "check": check, "reason": reason}),
        ),
    }
}
