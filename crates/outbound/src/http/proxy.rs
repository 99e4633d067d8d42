//! The environment's proxy, read as curl and most HTTP clients read it: the first of
//! `ALL_PROXY`, `HTTPS_PROXY`, `HTTP_PROXY` (each upper then lower case) that parses, and
//! the hosts `NO_PROXY` (or `no_proxy`) exempts. Connections go through it as a CONNECT
//! tunnel (`connect.rs`); only `http://` proxies are spoken.

use ::http::Uri;
use base64::Engine as _;

/// The variables tried, in order.
const PROXY_VARS: [&str; 6] = [
    "ALL_PROXY",
    "all_proxy",
    "HTTPS_PROXY",
    "https_proxy",
    "HTTP_PROXY",
    "http_proxy",
];

/// A proxy setting: where it is, and which hosts bypass it.
#[derive(Clone, Debug)]
pub(crate) struct Proxy {
    /// The scheme as given, lowercase (`http`, `https`, `socks5`, ...).
    pub scheme: String,
    pub host: String,
    pub port: u16,
    /// `Proxy-Authorization` for the CONNECT, when the URL carries credentials.
    pub auth: Option<String>,
    no_proxy: Vec<Bypass>,
}

/// One `NO_PROXY` entry, lowercase.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Bypass {
    /// `*`.
    All,
    Host(String),
    /// `.example.com` or `*.example.com` (as `.example.com`).
    Suffix(String),
    /// `10.` or `10.*` (as `10.`).
    Prefix(String),
}

impl Proxy {
    /// The proxy the environment names, if any.
    pub(crate) fn from_env() -> Option<Proxy> {
        let no_proxy = ["NO_PROXY", "no_proxy"]
            .iter()
            .find_map(|v| std::env::var(v).ok())
            .map_or_else(Vec::new, |list| {
                list.split(',').map(Bypass::parse).collect()
            });
        PROXY_VARS.iter().find_map(|var| {
            let mut proxy = Proxy::parse(&std::env::var(var).ok()?)?;
            proxy.no_proxy = no_proxy.clone();
            Some(proxy)
        })
    }

    /// A proxy URL (`http://user:pass@host:port`; the scheme may be left out: `http`).
    /// `None` when it does not parse or names a scheme no proxy has.
    pub(crate) fn parse(url: &str) -> Option<Proxy> {
        let has_scheme = url.contains("://");
        let uri: Uri = match has_scheme {
            true => url.parse().ok()?,
            false => format!("http://{url}").parse().ok()?,
        };
        let scheme = uri.scheme_str()?.to_ascii_lowercase();
        let default_port = match scheme.as_str() {
            "http" => 80,
            "https" => 443,
            "socks4" | "socks4a" | "socks" | "socks5" | "socks5h" => 1080,
            _ => return None,
        };
        let authority = uri.authority()?;
        let auth = match authority.as_str().rsplit_once('@') {
            None => None,
            Some((userinfo, _)) => {
                let (user, password) = userinfo.split_once(':').unwrap_or((userinfo, ""));
                let pair = format!("{}:{}", decode(user)?, decode(password)?);
                let encoded = base64::engine::general_purpose::STANDARD.encode(pair);
                Some(format!("Basic {encoded}"))
            }
        };
        Some(Proxy {
            scheme,
            host: (authority.host())
                .trim_start_matches('[')
                .trim_end_matches(']')
                .to_string(),
            port: authority.port_u16().unwrap_or(default_port),
            auth,
            no_proxy: Vec::new(),
        })
    }

    /// Whether requests to `host` (IPv6 in brackets, as a URL writes it) go around the proxy.
    pub(crate) fn bypassed_by(&self, host: &str) -> bool {
        let host = host.to_ascii_lowercase();
        self.no_proxy.iter().any(|b| match b {
            Bypass::All => true,
            Bypass::Host(h) => host == *h,
            Bypass::Suffix(s) => host.ends_with(s.as_str()),
            Bypass::Prefix(p) => host.starts_with(p.as_str()),
        })
    }

    /// The proxy as messages name it: no credentials.
    pub(crate) fn label(&self) -> String {
        format!("{}://{}:{}", self.scheme, self.host, self.port)
    }
}

impl Bypass {
    fn parse(entry: &str) -> Bypass {
        let e = entry.to_ascii_lowercase();
        if e == "*" {
            Bypass::All
        } else if let Some(rest) = e.strip_prefix('*') {
            Bypass::Suffix(rest.to_string())
        } else if e.starts_with('.') {
            Bypass::Suffix(e)
        } else if let Some(rest) = e.strip_suffix('*') {
            Bypass::Prefix(rest.to_string())
        } else if e.ends_with('.') {
            Bypass::Prefix(e)
        } else {
            Bypass::Host(e)
        }
    }
}

/// `%XX` decoding of a URL's user or password; `None` when the result is not UTF-8.
fn decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok());
        match (bytes[i], hex.and_then(|h| u8::from_str_radix(h, 16).ok())) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_proxy_url_gives_its_place_and_credentials() {
        let p = Proxy::parse("http://us%40er:p%3Ass@proxy.local:3128").unwrap();
        assert_eq!(
            (p.scheme.as_str(), p.host.as_str(), p.port),
            ("http", "proxy.local", 3128)
        );
        let expected = base64::engine::general_purpose::STANDARD.encode("us@er:p:ss");
        assert_eq!(p.auth, Some(format!("Basic {expected}")));
        assert_eq!(
            p.label(),
            "http://proxy.local:3128",
            "no credentials in messages"
        );
        let bare = Proxy::parse("proxy.local").unwrap();
        assert_eq!(
            (bare.scheme.as_str(), bare.port, bare.auth),
            ("http", 80, None)
        );
        assert_eq!(Proxy::parse("socks5://s:1").unwrap().scheme, "socks5");
        assert!(Proxy::parse("ftp://p").is_none());
        assert!(Proxy::parse("http://").is_none());
    }

    #[test]
    fn no_proxy_entries_match_hosts_suffixes_and_prefixes() {
        let mut p = Proxy::parse("http://p:1").unwrap();
        p.no_proxy = "localhost,.internal.example,*.corp,10.,192.168.*,[::1]"
            .split(',')
            .map(Bypass::parse)
            .collect();
        for host in [
            "localhost",
            "LocalHost",
            "a.internal.example",
            "x.corp",
            "10.1.2.3",
        ] {
            assert!(p.bypassed_by(host), "{host}");
        }
        assert!(p.bypassed_by("192.168.0.1") && p.bypassed_by("[::1]"));
        for host in ["example.com", "internal.example", "110.1.2.3", "::1"] {
            assert!(!p.bypassed_by(host), "{host}");
        }
        p.no_proxy = vec![Bypass::parse("*")];
        assert!(p.bypassed_by("anything"));
    }
}
