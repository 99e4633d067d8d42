//! How one HTTP exchange ended, whichever client made it: success, retryable or
//! permanent failure, and the rules that sort answers and errors into them; and what an
//! attempt's record keeps beside that classification ([`Seen`]: duration, status, the kind
//! of error, the first bytes of a failure's answer).

use crate::model::attempts::{ErrorClass, ANSWER_KEPT};
use crate::model::outcome::Reason;
use bytes::Bytes;
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

/// What one exchange showed beside its [`Attempt`]: for the URL's attempt log and a dead
/// letter's last attempts. The classification never reads it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Seen {
    /// From the request's start to its classification.
    pub took: Duration,
    /// The answer's status, when one came.
    pub status: Option<u16>,
    /// How it failed when no status came (or the guard refused it).
    pub error: Option<ErrorClass>,
    /// A failure's answer: its first [`ANSWER_KEPT`] bytes.
    pub excerpt: Option<Bytes>,
    /// A failure's request headers (secrets redacted) and answer headers.
    pub headers: Option<Box<SeenHeaders>>,
}

/// A failed exchange's headers, as its URL's log shows them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct SeenHeaders {
    pub request: Vec<(String, String)>,
    pub answer: Vec<(String, String)>,
}

/// Headers kept of one request or answer at most; a value is cut to [`HEADER_VALUE_KEPT`].
const HEADERS_KEPT: usize = 64;
const HEADER_VALUE_KEPT: usize = 1024;

/// What a header's value shows in a log: a credential's is replaced by `[redacted]` (by its
/// name: anything that authorizes or signs), the rest cut to a bounded length.
pub(crate) fn shown_header(name: &str, value: &[u8]) -> (String, String) {
    let n = name.to_ascii_lowercase();
    let secret = [
        "auth",
        "secret",
        "token",
        "signature",
        "password",
        "cookie",
        "api-key",
        "apikey",
    ]
    .iter()
    .any(|w| n.contains(w));
    let value = match secret {
        true => "[redacted]".to_string(),
        false => String::from_utf8_lossy(&value[..value.len().min(HEADER_VALUE_KEPT)]).into_owned(),
    };
    (n, value)
}

/// `headers` as a log keeps them ([`shown_header`]), at most [`HEADERS_KEPT`].
pub(crate) fn shown_headers<'a>(
    headers: impl IntoIterator<Item = (&'a str, &'a [u8])>,
) -> Vec<(String, String)> {
    (headers.into_iter().take(HEADERS_KEPT))
        .map(|(k, v)| shown_header(k, v))
        .collect()
}

impl Seen {
    /// What can be told of `attempt` alone (a transport that reports no more: ingestion's,
    /// the recording one): its status or error class from its reason.
    pub(crate) fn of(attempt: &Attempt, took: Duration) -> Seen {
        let (status, error) = match attempt {
            Attempt::Success => (None, None),
            Attempt::Retryable { reason, detail, .. } | Attempt::Permanent { reason, detail } => {
                match reason {
                    Reason::Status(s) => (Some(*s), None),
                    Reason::Gone => (Some(410), None),
                    Reason::Timeout => (None, Some(ErrorClass::Timeout)),
                    Reason::Blocked => (None, Some(ErrorClass::Blocked)),
                    Reason::Certificate => (None, Some(ErrorClass::Tls)),
                    Reason::Connection => (None, Some(ErrorClass::of_text(detail))),
                    _ => (None, Some(ErrorClass::Other)),
                }
            }
        };
        Seen {
            took,
            status,
            error,
            excerpt: None,
            headers: None,
        }
    }

    /// `self` with `excerpt` as the answer's first bytes when the attempt failed.
    pub(crate) fn with_answer(mut self, attempt: &Attempt, answer: Vec<u8>) -> Seen {
        if !matches!(attempt, Attempt::Success) && !answer.is_empty() {
            self.excerpt = Some(Bytes::from(answer));
        }
        self
    }
}

/// Appends what of `data` still fits in an excerpt to `into`.
pub(crate) fn keep_excerpt(into: &mut Vec<u8>, data: &[u8]) {
    let room = ANSWER_KEPT.saturating_sub(into.len());
    into.extend_from_slice(&data[..data.len().min(room)]);
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
