//! Conditional writes of a source (RFC 9110 §13.1): `GET /admin/sources/{name}` answers its
//! `ETag` (the stored source's id and revision; for a source of relay.toml, a hash of what
//! GET shows), and a `PUT` or `DELETE` with `If-Match` goes ahead only while the source is
//! still at one of the tags it names (`*`: any, as long as it exists). A stale tag is 412
//! naming `if-match`, with the source's tag now, and nothing changes: two editors of one
//! source (a console and a script) cannot silently undo each other. `If-None-Match: *`
//! makes a PUT create only. Without either header a write goes ahead as before (scripts).

use super::refusal;
use crate::http::reply::Answer;
use axum::http::header::{ETAG, IF_MATCH, IF_NONE_MATCH};
use axum::http::{HeaderMap, HeaderValue, StatusCode};

/// What a write's headers make it conditional on.
#[derive(Debug, Default)]
pub struct Condition {
    /// `If-Match`: the tags the source must be at (`*` among them: any).
    if_match: Option<Vec<String>>,
    /// `If-None-Match: *`: the source must not exist.
    create_only: bool,
}

/// The comma-separated tags of a header (each field's values together).
fn tags(headers: &HeaderMap, name: &axum::http::HeaderName) -> Option<Vec<String>> {
    let mut all = Vec::new();
    let mut any = false;
    for value in headers.get_all(name) {
        any = true;
        let text = value.to_str().unwrap_or("");
        all.extend(
            (text.split(','))
                .map(str::trim)
                .filter(|t| !t.is_empty())
                .map(str::to_string),
        );
    }
    any.then_some(all)
}

impl Condition {
    pub fn of(headers: &HeaderMap) -> Condition {
        let create_only = tags(headers, &IF_NONE_MATCH).is_some_and(|t| t.iter().any(|t| t == "*"));
        Condition {
            if_match: tags(headers, &IF_MATCH),
            create_only,
        }
    }

    /// Whether the write may go ahead on source `name`, whose tag is now `current` (`None`:
    /// there is none); else why not (a 412).
    pub fn check(&self, name: &str, current: Option<&str>) -> Result<(), Stale> {
        if self.create_only && current.is_some() {
            let why = format!("a source {name:?} exists already");
            return Err(stale(current, "if-none-match", &why));
        }
        let Some(wanted) = &self.if_match else {
            return Ok(());
        };
        let Some(now) = current else {
            let why = format!("there is no source {name:?} (deleted since the tag was read?)");
            return Err(stale(None, "if-match", &why));
        };
        // Strong comparison: a weak tag (`W/"…"`) never matches.
        match wanted.iter().any(|t| t == "*" || t == now) {
            true => Ok(()),
            false => {
                let why = format!(
                    "the source changed since this tag was read (it is now {now}): read it \
                     again and send its ETag"
                );
                Err(stale(current, "if-match", &why))
            }
        }
    }
}

/// A write refused for its condition: the header at fault, why, and the source's tag now.
#[derive(Debug)]
pub struct Stale {
    field: &'static str,
    why: String,
    etag: Option<String>,
}

impl Stale {
    /// The 412, with the source's tag now when it has one.
    pub fn answer(self) -> Answer {
        let refused = refusal(StatusCode::PRECONDITION_FAILED, self.field, &self.why);
        with_etag(refused, self.etag.as_deref())
    }
}

fn stale(current: Option<&str>, field: &'static str, why: &str) -> Stale {
    Stale {
        field,
        why: why.to_string(),
        etag: current.map(str::to_string),
    }
}

/// `answer` with an `ETag` header (none when `tag` is `None`).
pub fn with_etag(mut answer: Answer, tag: Option<&str>) -> Answer {
    if let Some(v) = tag.and_then(|t| HeaderValue::from_str(t).ok()) {
        answer.headers_mut().insert(ETAG, v);
    }
    answer
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(
                axum::http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                HeaderValue::from_str(v).unwrap(),
            );
        }
        h
    }

    #[test]
    fn a_write_goes_ahead_only_at_a_tag_it_names() {
        let none = Condition::of(&headers(&[]));
        assert!(none.check("web", Some("\"a.1\"")).is_ok());
        assert!(none.check("web", None).is_ok());
        let at = Condition::of(&headers(&[("if-match", "\"a.0\", \"a.1\"")]));
        assert!(at.check("web", Some("\"a.1\"")).is_ok());
        let stale = at.check("web", Some("\"a.2\"")).unwrap_err().answer();
        assert_eq!(stale.status(), StatusCode::PRECONDITION_FAILED);
        assert_eq!(stale.headers()[ETAG], "\"a.2\"");
        assert!(at.check("web", None).is_err());
        let weak = Condition::of(&headers(&[("if-match", "W/\"a.1\"")]));
        assert!(weak.check("web", Some("\"a.1\"")).is_err());
        let any = Condition::of(&headers(&[("if-match", "*")]));
        assert!(any.check("web", Some("\"x\"")).is_ok());
        assert!(any.check("web", None).is_err());
        let create = Condition::of(&headers(&[("if-none-match", "*")]));
        assert!(create.check("web", None).is_ok());
        assert!(create.check("web", Some("\"a.1\"")).is_err());
    }
}
