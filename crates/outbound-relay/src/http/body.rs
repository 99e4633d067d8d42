//! Reading a request body: at most a limit of bytes on the wire, then, with
//! `Content-Encoding: gzip`, at most the same limit once inflated (inflating stops at the
//! limit, so a small gzip bomb never grows into memory). `Content-Type` is not checked:
//! SDKs send `application/json`, browsers `text/plain` (no CORS preflight), and the body is
//! read as JSON either way.
//!
//! The limits on request heads, slow clients and connections are the connection's
//! (`server/`); a declared `Content-Length` over the limit is refused there before the
//! body is read.

use http_body_util::{BodyExt, Limited};
use hyper::body::Bytes;
use hyper::header::{HeaderMap, CONTENT_ENCODING};
use hyper::StatusCode;
use std::io::Read;

/// Why a body was refused, and the status that says so.
#[derive(Debug)]
pub struct BodyError {
    pub status: StatusCode,
    pub message: String,
}

fn too_large(limit: usize) -> BodyError {
    BodyError {
        status: StatusCode::PAYLOAD_TOO_LARGE,
        message: format!("body is over the limit of {limit} bytes"),
    }
}

/// The body's bytes, decoded, at most `limit` of them before and after decoding.
pub async fn read<B>(headers: &HeaderMap, body: B, limit: usize) -> Result<Bytes, BodyError>
where
    B: hyper::body::Body<Data = Bytes>,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let raw = match Limited::new(body, limit).collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => return Err(too_large(limit)),
        Err(e) => {
            return Err(BodyError {
                status: StatusCode::BAD_REQUEST,
                message: format!("cannot read the body: {e}"),
            })
        }
    };
    decode(headers, raw, limit)
}

/// Undoes `Content-Encoding` (`gzip`, `identity` or none). Without one, the bytes as they
/// came (no copy: a batch is up to 500 KB).
pub fn decode(headers: &HeaderMap, raw: Bytes, limit: usize) -> Result<Bytes, BodyError> {
    let encoding = headers
        .get(CONTENT_ENCODING)
        .map(|v| v.to_str().unwrap_or("?").trim().to_ascii_lowercase());
    match encoding.as_deref() {
        None | Some("") | Some("identity") => Ok(raw),
        Some("gzip") | Some("x-gzip") => {
            // A guess at the inflated size, never more than the limit allows.
            let mut out = Vec::with_capacity((raw.len() * 4).min(limit + 1));
            let mut reader = flate2::read::MultiGzDecoder::new(&raw[..]).take(limit as u64 + 1);
            reader.read_to_end(&mut out).map_err(|e| BodyError {
                status: StatusCode::BAD_REQUEST,
                message: format!("body is not valid gzip: {e}"),
            })?;
            if out.len() > limit {
                return Err(too_large(limit));
            }
            Ok(out.into())
        }
        Some(other) => Err(BodyError {
            status: StatusCode::UNSUPPORTED_MEDIA_TYPE,
            message: format!("Content-Encoding {other:?} is not supported (use gzip or none)"),
        }),
    }
}

/// The `key=value` pairs of a URL's query, each value with `+` and `%XX` decoded.
pub fn query_pairs(query: Option<&str>) -> impl Iterator<Item = (&str, String)> {
    (query.unwrap_or("").split('&'))
        .filter(|p| !p.is_empty())
        .map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            (k, percent_decode(&v.replace('+', " ")))
        })
}

/// A page's `limit` parameter: 1 to `max`; else the refusal's words.
pub fn page_limit(v: &str, max: usize) -> Result<usize, String> {
    match v.parse::<usize>() {
        Ok(n) if (1..=max).contains(&n) => Ok(n),
        _ => Err(format!("must be 1 to {max}")),
    }
}

/// `%XX` escapes of a path segment decoded (audience names have spaces).
pub fn percent_decode(s: &str) -> String {
    let hex = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            if let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2])) {
                out.push(h * 16 + l);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::write::GzEncoder;
    use std::io::Write;

    fn gz(data: &[u8]) -> Vec<u8> {
        let mut e = GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    fn gzip_headers() -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(CONTENT_ENCODING, "gzip".parse().unwrap());
        h
    }

    #[test]
    fn gzip_is_inflated() {
        let out = decode(&gzip_headers(), gz(b"{\"a\":1}").into(), 100).unwrap();
        assert_eq!(&out[..], b"{\"a\":1}");
    }

    #[test]
    fn inflating_stops_at_the_limit() {
        let bomb = gz(&vec![b' '; 10_000_000]);
        assert!(bomb.len() < 20_000);
        let e = decode(&gzip_headers(), bomb.into(), 500_000).unwrap_err();
        assert_eq!(e.status, StatusCode::PAYLOAD_TOO_LARGE);
    }

    #[test]
    fn unknown_encodings_are_refused() {
        let mut h = HeaderMap::new();
        h.insert(CONTENT_ENCODING, "br".parse().unwrap());
        assert_eq!(
            decode(&h, Bytes::from_static(b"x"), 10).unwrap_err().status,
            StatusCode::UNSUPPORTED_MEDIA_TYPE
        );
    }
}
