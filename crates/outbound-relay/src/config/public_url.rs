//! `public_url`: where SDKs reach the relay, read once.

/// `public_url`, read: where SDKs reach the relay (`https://relay.example.com`, or one under
/// a path: `https://example.com/segment`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PublicUrl {
    /// `relay.example.com[:port][/path]`, no scheme, no trailing `/`.
    pub host: String,
    /// `http` or `https`.
    pub protocol: &'static str,
}

impl PublicUrl {
    /// Reads `url`; the error says what is wrong with it.
    pub fn parse(url: &str) -> Result<PublicUrl, String> {
        let uri: hyper::Uri = url
            .parse()
            .map_err(|e| format!("{url:?} is not a URL: {e}"))?;
        let protocol = match uri.scheme_str() {
            Some("https") => "https",
            Some("http") => "http",
            _ => return Err(format!("{url:?} must start with https:// or http://")),
        };
        let Some(authority) = uri.authority().filter(|a| !a.host().is_empty()) else {
            return Err(format!("{url:?} has no host"));
        };
        if authority.as_str().contains('@') || uri.query().is_some() || url.contains('#') {
            return Err(format!(
                "{url:?} must be a scheme, a host and at most a path (no credentials, query or fragment)"
            ));
        }
        let path = uri.path().trim_end_matches('/');
        Ok(PublicUrl {
            host: format!("{}{path}", authority.as_str().to_ascii_lowercase()),
            protocol,
        })
    }
}
