//! `outbound-relay check --config FILE`: the file read and checked as a start would check it,
//! and nothing started: no listener, no spool opened, `data_dir` not created. Every source's
//! settings go through the core's checks (each error named by its place in the file), the
//! TLS files are read, the open-files limit is compared with `max_connections`, and what a
//! start would warn about (a webhook that can never be reached) is said.

use crate::config::{ConfigError, ManagedBy};
use std::path::Path;

/// What the check found.
pub struct Report {
    pub errors: Vec<ConfigError>,
    pub warnings: Vec<String>,
    /// Sources of the file that were read.
    pub sources: usize,
}

/// Checks the file at `path`.
pub fn check(path: &Path) -> Report {
    let (relay, errors) = match crate::config::load_all(path) {
        Ok(read) => read,
        Err(e) => {
            return Report {
                errors: vec![e],
                warnings: Vec::new(),
                sources: 0,
            }
        }
    };
    let mut report = Report {
        sources: relay.sources.len(),
        errors,
        warnings: Vec::new(),
    };
    let error = |key: String, reason: String| ConfigError {
        file: relay.file.clone(),
        key,
        reason,
    };
    if let Err(e) = crate::http::tls::acceptor(&relay) {
        report.errors.push(e);
    }
    if let Err(why) = super::open_files::would_fit(relay.limits.max_connections) {
        report.errors.push(error("max_connections".into(), why));
    }
    // The core's own checks of each source, as its client would be built.
    for source in &relay.sources {
        if let Err((key, reason)) = source.check() {
            report.errors.push(error(key, reason));
            continue;
        }
        for (k, why) in source.core.blocked_webhooks() {
            let at = crate::config::join(&source.key, &format!("webhooks[{k}]"));
            let url =
                outbound::url_for_log(&source.core.webhooks[k].url, source.core.log_url_paths);
            let at = match source.managed_by {
                ManagedBy::File => format!("{}: {at}", relay.file),
                ManagedBy::Api => at,
            };
            report
                .warnings
                .push(format!("{at} {url} can never be reached: {why}"));
        }
    }
    if relay.sources.is_empty() {
        report.warnings.push(format!(
            "{}: no [[sources]]: every source comes from the admin API",
            relay.file
        ));
    }
    report
}
