//! Who the client is and where the relay is, as a request says it: the client's address (for
//! `context.ip`) and the relay's public address (for the settings document's `apiHost`).
//!
//! Headers a client writes are believed only from the proxies in front of the relay
//! (`trusted_proxies`): from anyone else, `X-Forwarded-For` would let a client choose the
//! `context.ip` of its events, and `X-Forwarded-Host` the `apiHost` other pages are told.
//! Behind trusted proxies the client is the first untrusted hop of `X-Forwarded-For`, read
//! from the right (each proxy appends the address it saw).

pub use crate::config::PublicUrl;
use hyper::header::{HeaderMap, HOST};
use outbound::Cidr;
use std::net::IpAddr;

/// What a request says about its client and about the relay.
pub struct RequestOrigin<'a> {
    pub peer: IpAddr,
    pub headers: &'a HeaderMap,
    pub trusted: &'a [Cidr],
}

impl RequestOrigin<'_> {
    fn trusted(&self, ip: IpAddr) -> bool {
        self.trusted.iter().any(|c| c.contains(ip))
    }

    /// Whether the connection comes from a trusted proxy.
    fn through_proxy(&self) -> bool {
        self.trusted(self.peer)
    }

    /// The client's address: the peer, or behind trusted proxies the first untrusted hop of
    /// `X-Forwarded-For` from the right (the leftmost when every hop is trusted; the last one
    /// read when the next cannot be read).
    pub fn client_ip(&self) -> IpAddr {
        let mut client = self.peer;
        let hops = (self.headers.get_all("x-forwarded-for").iter())
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .map(str::trim)
            .collect::<Vec<_>>();
        for hop in hops.iter().rev() {
            if !self.trusted(client) {
                break;
            }
            match hop.parse::<IpAddr>() {
                Ok(ip) => client = ip,
                Err(_) => break,
            }
        }
        client
    }

    /// The first value of header `name` (a proxy's `X-Forwarded-Host` may list several).
    fn first(&self, name: &str) -> Option<&str> {
        let v = self.headers.get(name)?.to_str().ok()?;
        v.split(',').next().map(str::trim).filter(|s| !s.is_empty())
    }

    /// The relay's public address, as SDKs reach it: `public_url` when set; else the
    /// request's `Host` (or a trusted proxy's `X-Forwarded-Host`) and the scheme it came by
    /// (or a trusted proxy's `X-Forwarded-Proto`). `None` without a usable host.
    pub fn public(&self, public_url: Option<&PublicUrl>, tls: bool) -> Option<PublicUrl> {
        if let Some(url) = public_url {
            return Some(url.clone());
        }
        let proxy = self.through_proxy();
        let host = match proxy.then(|| self.first("x-forwarded-host")).flatten() {
            Some(host) => host,
            None => self.headers.get(HOST)?.to_str().ok()?.trim(),
        };
        // A host and a port, nothing that could end the string or add a path.
        let plain = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':' | '[' | ']');
        if host.is_empty() || !host.chars().all(plain) {
            return None;
        }
        let protocol = match proxy.then(|| self.first("x-forwarded-proto")).flatten() {
            Some(p) if p.eq_ignore_ascii_case("https") => "https",
            Some(p) if p.eq_ignore_ascii_case("http") => "http",
            _ if tls => "https",
            _ => "http",
        };
        Some(PublicUrl {
            host: host.to_ascii_lowercase(),
            protocol,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(
                hyper::header::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                v.parse().unwrap(),
            );
        }
        h
    }

    fn cidrs(list: &[&str]) -> Vec<Cidr> {
        list.iter().map(|c| Cidr::parse(c).unwrap()).collect()
    }

    #[test]
    fn x_forwarded_for_counts_only_from_trusted_proxies() {
        let h = headers(&[
            ("x-forwarded-for", "198.51.100.9, 10.0.0.5"),
            ("x-forwarded-for", "10.0.0.6"),
        ]);
        let ip = |peer: &str, trusted: &[&str]| {
            let trusted = cidrs(trusted);
            let facts = RequestOrigin {
                peer: peer.parse().unwrap(),
                headers: &h,
                trusted: &trusted,
            };
            facts.client_ip().to_string()
        };
        // Not from a proxy: the peer, whatever the header says.
        assert_eq!(ip("203.0.113.1", &[]), "203.0.113.1");
        assert_eq!(ip("203.0.113.1", &["10.0.0.0/8"]), "203.0.113.1");
        // Through two trusted hops: the first untrusted one from the right.
        assert_eq!(ip("10.0.0.7", &["10.0.0.0/8"]), "198.51.100.9");
        // Only the last proxy trusted: the hop it saw.
        assert_eq!(ip("10.0.0.7", &["10.0.0.7/32"]), "10.0.0.6");
        let bad = headers(&[("x-forwarded-for", "not-an-ip, 10.0.0.5")]);
        let trusted = cidrs(&["10.0.0.0/8"]);
        let facts = RequestOrigin {
            peer: "10.0.0.7".parse().unwrap(),
            headers: &bad,
            trusted: &trusted,
        };
        assert_eq!(facts.client_ip().to_string(), "10.0.0.5");
    }

    #[test]
    fn the_public_address_comes_from_public_url_host_or_a_trusted_proxy() {
        let url = PublicUrl::parse("https://Relay.example.com/segment/").unwrap();
        assert_eq!(url.host, "relay.example.com/segment");
        assert_eq!(url.protocol, "https");
        for bad in [
            "ftp://x",
            "https://",
            "https://u:p@x",
            "https://x/?q=1",
            "relay.example.com",
        ] {
            assert!(PublicUrl::parse(bad).is_err(), "{bad}");
        }
        let h = headers(&[
            ("host", "127.0.0.1:8088"),
            ("x-forwarded-host", "relay.example.com, inner"),
            ("x-forwarded-proto", "https"),
        ]);
        let public = |peer: &str, trusted: &[&str], tls: bool| {
            let trusted = cidrs(trusted);
            let facts = RequestOrigin {
                peer: peer.parse().unwrap(),
                headers: &h,
                trusted: &trusted,
            };
            facts
                .public(None, tls)
                .map(|u| format!("{}://{}", u.protocol, u.host))
        };
        assert_eq!(
            public("203.0.113.1", &[], false).unwrap(),
            "http://127.0.0.1:8088"
        );
        assert_eq!(
            public("203.0.113.1", &[], true).unwrap(),
            "https://127.0.0.1:8088"
        );
        assert_eq!(
            public("10.1.1.1", &["10.0.0.0/8"], false).unwrap(),
            "https://relay.example.com"
        );
        let evil = headers(&[("host", "x\"/evil")]);
        let facts = RequestOrigin {
            peer: "203.0.113.1".parse().unwrap(),
            headers: &evil,
            trusted: &[],
        };
        assert_eq!(facts.public(None, false), None);
        assert_eq!(facts.public(Some(&url), false), Some(url));
    }
}
