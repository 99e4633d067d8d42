//! Endpoints that want to be called in a way of their own, on 127.0.0.1: a receiver that
//! requires one `Authorization`, and an OAuth2 token endpoint.

use super::{Reply, Server};
use outbound::{Auth, OAuth2};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const WAIT: Duration = Duration::from_secs(10);

/// Waits until `done` holds (at most 10 s).
pub fn wait_until(what: &str, done: impl Fn() -> bool) {
    let end = Instant::now() + WAIT;
    while !done() {
        assert!(Instant::now() < end, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A receiver that answers 200 only to requests carrying `authorization`, else 401.
pub fn guarded(authorization: &'static str) -> Server {
    Server::start(move |r| match r.header("authorization") {
        Some(a) if a == authorization => Reply::Status(200),
        _ => Reply::Status(401),
    })
}

/// An OAuth2 authorization server on 127.0.0.1: checks the client's Basic credentials and
/// the form, and answers the current token; `status` overrides its answer while non-zero.
pub struct TokenServer {
    pub server: Server,
    /// Tokens issued so far (`tok-1`, `tok-2`, ...).
    pub issued: Arc<AtomicUsize>,
    /// Non-zero: the status it answers instead.
    pub status: Arc<AtomicUsize>,
}

impl TokenServer {
    pub fn start() -> TokenServer {
        let issued = Arc::new(AtomicUsize::new(0));
        let status = Arc::new(AtomicUsize::new(0));
        let (n, st) = (issued.clone(), status.clone());
        // "client id" and "s&cret", form-urlencoded, then Basic.
        let expected = "Basic Y2xpZW50K2lkOnMlMjZjcmV0";
        let server = Server::start(move |r| {
            let forced = st.load(Ordering::SeqCst);
            if forced != 0 {
                return Reply::Full {
                    status: forced as u16,
                    headers: vec![],
                    body: br#"{"error":"invalid_client","client_secret":"s&cret"}"#.to_vec(),
                };
            }
            let form = String::from_utf8_lossy(&r.body).into_owned();
            if r.header("authorization") != Some(expected)
                || form != "grant_type=client_credentials&scope=events%3Awrite"
                || r.header("content-type") != Some("application/x-www-form-urlencoded")
            {
                return Reply::Status(400);
            }
            let k = n.fetch_add(1, Ordering::SeqCst) + 1;
            Reply::Full {
                status: 200,
                headers: vec![("Content-Type".into(), "application/json".into())],
                body: format!(
                    r#"{{"access_token":"tok-{k}","token_type":"Bearer","expires_in":3600}}"#
                )
                .into_bytes(),
            }
        });
        TokenServer {
            server,
            issued,
            status,
        }
    }

    /// The auth that asks it for tokens.
    pub fn oauth(&self) -> Auth {
        let mut o = OAuth2::new(format!("{}/token", self.server.url), "client id", "s&cret");
        o.scope = Some("events:write".into());
        Auth::oauth2(o)
    }
}
