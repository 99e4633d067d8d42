//! How one HTTP exchange ended, whichever client made it (design §7): success, retryable or
//! permanent failure, and the rules that sort answers and errors into them.

use crate::model::outcome::Reason;
use std::time::Duration;

/// At most this much of a response body is read; the rest is left on the wire (and the
/// connection is not reused).
pub(crate) const MAX_ANSWER: u64 = 64 * 1024;

/// How one HTTP exchange ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Attempt {
    /// 2xx.
    Success,
    /// Worth trying again later (5xx, 408, 429, timeouts, connection errors).
    Retryable {
        reason: Reason,
        detail: String,
        retry_after: Option<Duration>,
    },
    /// Trying again would not help (other 4xx, 3xx, certificate errors, blocked addresses).
    Permanent { reason: Reason, detail: String },
}

/// What an answer's status means. Redirects are not followed: 3xx is permanent.
pub(crate) fn classify_status(status: u16, retry_after: Option<Duration>) -> Attempt {
    match status {
        200..=299 => Attempt::Success,
        408 | 429 | 500..=599 => Attempt::Retryable {
            reason: Reason::Status(status),
            detail: format!("status {status}"),
            retry_after,
        },
        // Standard Webhooks: the receiver is no longer interested; its own reason, so the
        // sender can tell "remove this URL" apart from a request it got wrong.
        410 => Attempt::Permanent {
            reason: Reason::Gone,
            detail:
                "gone (status 410): the receiver no longer accepts messages at this URL; remove it"
                    .into(),
        },
        _ => Attempt::Permanent {
            reason: Reason::Status(status),
            detail: format!("status {status}"),
        },
    }
}

/// A TLS failure that retrying will not mend (the peer's certificate, or its refusal of
/// ours), as the outcome's detail says it.
pub(crate) fn certificate_problem(tls: &rustls::Error) -> Option<String> {
    match tls {
        rustls::Error::InvalidCertificate(c) => Some(format!("{c:?}")),
        rustls::Error::AlertReceived(a) => Some(format!("alert {a:?}")),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_classify_per_design() {
        assert_eq!(classify_status(204, None), Attempt::Success);
        for s in [408, 429, 500, 503] {
            assert!(
                matches!(classify_status(s, None), Attempt::Retryable { .. }),
                "{s}"
            );
        }
        for s in [302, 400, 401, 403, 404, 413] {
            assert!(
                matches!(classify_status(s, None), Attempt::Permanent { reason: Reason::Status(r), .. } if r == s),
                "{s}"
            );
        }
        assert!(matches!(
            classify_status(410, None),
            Attempt::Permanent {
                reason: Reason::Gone,
                ..
            }
        ));
    }
}
