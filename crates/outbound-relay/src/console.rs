//! The console: a browser's view of the admin API at `/console/` (docs/console.md). Its
//! files (`crates/outbound-relay/console/`: HTML, CSS, JavaScript modules, no library) are
//! built into the binary, so nothing is fetched from elsewhere at run time; every action in
//! it is a call of the admin API, signed in with the admin token or a source's token that
//! the page keeps in the tab's session storage.
//!
//! Every answer under `/console` carries a strict Content-Security-Policy (scripts, styles
//! and connections to this origin only; no inline script or style, no frames, no form
//! posts), `nosniff`, no referrer, and `no-cache` with an ETag: a browser asks again, and
//! an upgraded binary's files are taken at once. Served only where the admin API is on.

use crate::http::reply::{self, Answer};
use hyper::header::{
    HeaderMap, HeaderValue, CACHE_CONTROL, CONTENT_TYPE, ETAG, IF_NONE_MATCH, LOCATION,
};
use hyper::{Method, StatusCode};
use sha2::{Digest, Sha256};
use std::sync::OnceLock;

/// The policy of every console answer.
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

const HTML: &str = "text/html; charset=utf-8";
const JS: &str = "text/javascript; charset=utf-8";
const CSS: &str = "text/css; charset=utf-8";

macro_rules! asset {
    ($name:literal, $kind:expr) => {
        (
            $name,
            $kind,
            include_bytes!(concat!("../console/", $name)) as &[u8],
        )
    };
}

/// The files, by their name under `/console/` (`index.html` is also `/console/`).
const FILES: &[(&str, &str, &[u8])] = &[
    asset!("index.html", HTML),
    asset!("console.css", CSS),
    asset!("main.js", JS),
    asset!("api.js", JS),
    asset!("dom.js", JS),
    asset!("chart.js", JS),
    asset!("signin.js", JS),
    asset!("sources.js", JS),
    asset!("source.js", JS),
    asset!("attempts.js", JS),
    asset!("dead_letters.js", JS),
    asset!("recent_events.js", JS),
    asset!("settings.js", JS),
    asset!("endpoint.js", JS),
    asset!("audit.js", JS),
    asset!("dialog.js", JS),
    asset!("lifecycle.js", JS),
    asset!("warnings.js", JS),
    asset!("alerts.js", JS),
    asset!("subscriptions.js", JS),
    asset!("subscription_editor.js", JS),
];

/// Whether `path` is the console's.
pub fn is_console(path: &str) -> bool {
    path == "/console" || path.starts_with("/console/")
}

/// Each file's ETag: the start of its SHA-256, made once.
fn etags() -> &'static [String] {
    static TAGS: OnceLock<Vec<String>> = OnceLock::new();
    TAGS.get_or_init(|| {
        (FILES.iter())
            .map(|(_, _, bytes)| {
                let d = Sha256::digest(bytes);
                let hex: String = d[..8].iter().map(|b| format!("{b:02x}")).collect();
                format!("\"{hex}\"")
            })
            .collect()
    })
}

/// The headers every console answer carries, errors included.
fn secure(mut a: Answer) -> Answer {
    let h = a.headers_mut();
    h.insert("content-security-policy", HeaderValue::from_static(CSP));
    h.insert(
        "x-content-type-options",
        HeaderValue::from_static("nosniff"),
    );
    h.insert("referrer-policy", HeaderValue::from_static("no-referrer"));
    h.insert("x-frame-options", HeaderValue::from_static("DENY"));
    h.insert(
        "cross-origin-opener-policy",
        HeaderValue::from_static("same-origin"),
    );
    h.insert(
        "cross-origin-resource-policy",
        HeaderValue::from_static("same-origin"),
    );
    if !h.contains_key(CACHE_CONTROL) {
        h.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    a
}

/// A request under `/console`; `admin_on`: the admin API is on (`admin_token` set).
pub fn answer(method: &Method, path: &str, headers: &HeaderMap, admin_on: bool) -> Answer {
    if !admin_on {
        return secure(reply::error(
            StatusCode::NOT_FOUND,
            "the console needs the admin API (admin_token in relay.toml)",
        ));
    }
    if !matches!(*method, Method::GET | Method::HEAD) {
        return secure(reply::error(StatusCode::METHOD_NOT_ALLOWED, "use GET"));
    }
    if path == "/console" {
        // Relative links (`./main.js`, `../admin/...`) need the slash.
        let mut a = reply::empty(StatusCode::PERMANENT_REDIRECT);
        a.headers_mut()
            .insert(LOCATION, HeaderValue::from_static("/console/"));
        return secure(a);
    }
    let name = match &path["/console/".len()..] {
        "" => "index.html",
        n => n,
    };
    let Some(i) = FILES.iter().position(|(n, _, _)| *n == name) else {
        return secure(reply::error(
            StatusCode::NOT_FOUND,
            "no such file of the console",
        ));
    };
    let (_, kind, bytes) = FILES[i];
    let tag = &etags()[i];
    let fresh = (headers.get(IF_NONE_MATCH).and_then(|v| v.to_str().ok()))
        .is_some_and(|v| v.split(',').any(|t| t.trim() == tag));
    let mut a = match fresh {
        true => reply::empty(StatusCode::NOT_MODIFIED),
        false => {
            let mut a = Answer::new(bytes.to_vec().into());
            a.headers_mut()
                .insert(CONTENT_TYPE, HeaderValue::from_static(kind));
            a
        }
    };
    let h = a.headers_mut();
    h.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    if let Ok(v) = HeaderValue::from_str(tag) {
        h.insert(ETAG, v);
    }
    secure(a)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(path: &str) -> Answer {
        answer(&Method::GET, path, &HeaderMap::new(), true)
    }

    #[test]
    fn every_file_is_served_with_its_type_and_the_policy() {
        for (name, kind, bytes) in FILES {
            let a = get(&format!("/console/{name}"));
            assert_eq!(a.status(), StatusCode::OK, "{name}");
            assert_eq!(a.headers()[CONTENT_TYPE], *kind);
            assert_eq!(a.headers()["content-security-policy"], CSP);
            assert_eq!(a.headers()["x-content-type-options"], "nosniff");
            assert!(!bytes.is_empty());
        }
        assert_eq!(get("/console/").headers()[CONTENT_TYPE], HTML);
        let missing = get("/console/../admin/sources");
        assert_eq!(missing.status(), StatusCode::NOT_FOUND);
        assert_eq!(missing.headers()["content-security-policy"], CSP);
    }

    #[test]
    fn a_known_etag_is_answered_304() {
        let tag = get("/console/main.js").headers()[ETAG].clone();
        let mut h = HeaderMap::new();
        h.insert(IF_NONE_MATCH, tag);
        let a = answer(&Method::GET, "/console/main.js", &h, true);
        assert_eq!(a.status(), StatusCode::NOT_MODIFIED);
    }

    /// The policy forbids inline script and style: the page must have none, nor an event
    /// handler attribute.
    #[test]
    fn the_page_has_no_inline_script_or_style() {
        let html = std::str::from_utf8(FILES[0].2).unwrap().to_lowercase();
        for (i, _) in html.match_indices("<script") {
            let tag = &html[i..i + html[i..].find('>').unwrap()];
            assert!(tag.contains(" src="), "inline script: {tag}");
        }
        assert!(!html.contains("<style"), "inline style element");
        assert!(!html.contains(" style="), "style attribute");
        let handler = html.match_indices(" on").any(|(i, _)| {
            let rest = &html[i + 3..];
            let word = rest.len()
                - rest
                    .trim_start_matches(|c: char| c.is_ascii_alphabetic())
                    .len();
            rest[word..].starts_with('=')
        });
        assert!(!handler, "an event handler attribute");
        for (name, _, bytes) in FILES {
            let text = std::str::from_utf8(bytes).unwrap();
            assert!(!text.contains("innerHTML"), "{name} writes innerHTML");
            assert!(!text.contains("insertAdjacentHTML"), "{name}");
            assert!(!text.contains("document.write"), "{name}");
            assert!(!text.contains("eval("), "{name}");
        }
    }
}
