//! The SSRF guard for webhook URLs (`block_private_networks`) and, when a service turns it on,
//! the ingestion endpoint (`block_private_endpoint`): which addresses they may not reach, and
//! the allow-lists that make exceptions (`allowed_networks`, `endpoint_allowed_networks`).
//! When customers give the URLs, a URL (or a DNS name) pointing at the sender's own network —
//! loopback, private ranges, link-local with the cloud metadata service at 169.254.169.254 —
//! would let them make the sender call its own internal services (carrying the forward's
//! write key, for an endpoint). The I/O engine (`http/connect.rs`) and the ureq transport
//! (`http/transport.rs`) ask [`NetworkGuard::check`] after every DNS resolution, for every
//! address, before any connection. A URL whose host is an address needs no resolution:
//! [`NetworkGuard::check_url`] judges it from the text, for the recording transport (which
//! looks nothing up) and for a configuration's webhooks that can never be reached
//! (`Config::blocked_webhooks`).

use crate::error::Error;
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use ureq::http::Uri;

/// A network in CIDR notation (`10.1.0.0/16`, `fd00::/8`; a bare address is one host). Also
/// what the relay's `trusted_proxies` are read as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cidr {
    net: IpAddr,
    prefix: u8,
}

impl Cidr {
    /// Parses `text`; the error says what is wrong with it.
    pub fn parse(text: &str) -> Result<Cidr, String> {
        let (addr, prefix) = match text.split_once('/') {
            Some((a, p)) => (a, Some(p)),
            None => (text, None),
        };
        let net: IpAddr = addr
            .parse()
            .map_err(|_| format!("{text:?} is not a network (use CIDR, e.g. \"10.1.0.0/16\")"))?;
        let max = if net.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            None => max,
            Some(p) => match p.parse::<u8>() {
                Ok(n) if n <= max => n,
                _ => return Err(format!("{text:?}: the prefix length must be 0 to {max}")),
            },
        };
        Ok(Cidr { net, prefix })
    }

    /// Whether `ip` is in this network (an IPv4 address in an IPv6 network, or the reverse,
    /// is not).
    pub fn contains(&self, ip: IpAddr) -> bool {
        match (self.net, ip) {
            (IpAddr::V4(n), IpAddr::V4(a)) => {
                let mask = u32::MAX
                    .checked_shl(32 - u32::from(self.prefix))
                    .unwrap_or(0);
                u32::from(n) & mask == u32::from(a) & mask
            }
            (IpAddr::V6(n), IpAddr::V6(a)) => {
                let mask = u128::MAX
                    .checked_shl(128 - u32::from(self.prefix))
                    .unwrap_or(0);
                u128::from(n) & mask == u128::from(a) & mask
            }
            _ => false,
        }
    }
}

/// Why an address is refused (shown in the outcome's detail).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Blocked {
    pub(crate) addr: IpAddr,
    pub(crate) kind: &'static str,
}

impl fmt::Display for Blocked {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "blocked: {} is a {} address (block_private_networks; allow it with allowed_networks)",
            self.addr, self.kind
        )
    }
}

impl std::error::Error for Blocked {}

/// The guard of one client: private addresses are refused unless in `allowed`.
#[derive(Debug)]
pub(crate) struct NetworkGuard {
    allowed: Vec<Cidr>,
}

impl NetworkGuard {
    pub(crate) fn new(allowed: Vec<Cidr>) -> NetworkGuard {
        NetworkGuard { allowed }
    }

    /// The guard a config asks for: `None` when `on` is false; an entry of `allowed` that is
    /// not a network is a config error naming `setting`.
    pub(crate) fn configured(
        on: bool,
        allowed: &[String],
        setting: &str,
    ) -> Result<Option<NetworkGuard>, Error> {
        let allowed = allowed
            .iter()
            .map(|n| Cidr::parse(n.trim()).map_err(|why| Error::config(setting, why)))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(on.then(|| NetworkGuard::new(allowed)))
    }

    /// `Err` when `ip` is private (see [`private_kind`]) and no allowed network holds it.
    pub(crate) fn check(&self, ip: IpAddr) -> Result<(), Blocked> {
        match private_kind(ip) {
            Some(kind) if !self.allowed.iter().any(|c| c.contains(ip)) => {
                Err(Blocked { addr: ip, kind })
            }
            _ => Ok(()),
        }
    }

    /// As [`check`](Self::check), for the address `url`'s host names without a DNS lookup:
    /// an IP literal, or `localhost` (always loopback, RFC 6761). `Ok` for any other name
    /// (judged after resolution, at delivery) and for text that is not a URL.
    pub(crate) fn check_url(&self, url: &str) -> Result<(), Blocked> {
        let Ok(uri) = url.parse::<Uri>() else {
            return Ok(());
        };
        let host = uri.host().unwrap_or("");
        let addr = match host.trim_start_matches('[').trim_end_matches(']').parse() {
            Ok(ip) => ip,
            Err(_) if host.eq_ignore_ascii_case("localhost") => IpAddr::V4(Ipv4Addr::LOCALHOST),
            Err(_) => return Ok(()),
        };
        self.check(addr)
    }
}

/// What kind of non-public address `ip` is, or `None` for a public one. IPv6 forms that
/// carry an IPv4 address (mapped, NAT64, 6to4) are judged by that address, so
/// `::ffff:127.0.0.1` cannot slip past.
pub(crate) fn private_kind(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => private_v4(v4),
        IpAddr::V6(v6) => private_v6(v6),
    }
}

fn private_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, ..] = ip.octets();
    Some(match (a, b) {
        (0, _) => "unspecified",
        (127, _) => "loopback",
        (10, _) | (192, 168) => "private (RFC 1918)",
        (172, 16..=31) => "private (RFC 1918)",
        // Cloud metadata services live here (169.254.169.254).
        (169, 254) => "link-local",
        // Carrier-grade NAT space, also used inside clouds (100.100.100.200 is a metadata
        // service).
        (100, 64..=127) => "shared (RFC 6598)",
        (224..=239, _) => "multicast",
        (240..=255, _) => "reserved",
        _ => return None,
    })
}

fn private_v6(ip: Ipv6Addr) -> Option<&'static str> {
    if ip.is_unspecified() {
        return Some("unspecified");
    }
    if ip.is_loopback() {
        return Some("loopback");
    }
    if let Some(v4) = ip.to_ipv4_mapped() {
        return private_v4(v4);
    }
    let s = ip.segments();
    // NAT64 (64:ff9b::/96) and 6to4 (2002::/16) reach the IPv4 address they carry.
    if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        return private_v4(Ipv4Addr::from((u32::from(s[6]) << 16) | u32::from(s[7])));
    }
    if s[0] == 0x2002 {
        return private_v4(Ipv4Addr::from((u32::from(s[1]) << 16) | u32::from(s[2])));
    }
    Some(match s[0] {
        0xfe80..=0xfebf => "link-local",
        // Unique-local, fc00::/7 (AWS's IPv6 metadata service is fd00:ec2::254).
        0xfc00..=0xfdff => "unique-local",
        0xfec0..=0xfeff => "site-local",
        0xff00..=0xffff => "multicast",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    // Classification only: nothing here is contacted.
    #[test]
    fn private_loopback_link_local_unique_local_and_unspecified_are_refused() {
        for (ip, kind) in [
            ("127.0.0.1", "loopback"),
            ("10.0.0.1", "private (RFC 1918)"),
            ("172.16.0.1", "private (RFC 1918)"),
            ("172.31.255.255", "private (RFC 1918)"),
            ("192.168.1.1", "private (RFC 1918)"),
            ("169.254.169.254", "link-local"),
            ("100.100.100.200", "shared (RFC 6598)"),
            ("0.0.0.0", "unspecified"),
            ("::", "unspecified"),
            ("::1", "loopback"),
            ("fe80::1", "link-local"),
            ("fd00:ec2::254", "unique-local"),
            ("fc00::1", "unique-local"),
            ("::ffff:127.0.0.1", "loopback"),
            ("::ffff:169.254.169.254", "link-local"),
            ("64:ff9b::a9fe:a9fe", "link-local"),
            ("2002:7f00:1::", "loopback"),
        ] {
            assert_eq!(private_kind(ip.parse().unwrap()), Some(kind), "{ip}");
        }
        for ip in [
            "8.8.8.8",
            "172.32.0.1",
            "100.128.0.1",
            "1.1.1.1",
            "2606:4700::1111",
            "::ffff:8.8.8.8",
        ] {
            assert_eq!(private_kind(ip.parse().unwrap()), None, "{ip}");
        }
    }

    #[test]
    fn allowed_networks_make_exceptions() {
        let guard = NetworkGuard::new(vec![
            Cidr::parse("127.0.0.0/8").unwrap(),
            Cidr::parse("fd12::/16").unwrap(),
            Cidr::parse("10.1.2.3").unwrap(),
        ]);
        let check = |ip: &str| guard.check(ip.parse().unwrap());
        assert_eq!(check("127.9.9.9"), Ok(()));
        assert_eq!(check("fd12::5"), Ok(()));
        assert_eq!(check("10.1.2.3"), Ok(()));
        assert_eq!(check("8.8.8.8"), Ok(()));
        let e = check("10.1.2.4").unwrap_err();
        assert_eq!(e.kind, "private (RFC 1918)");
        assert!(
            e.to_string().starts_with("blocked: 10.1.2.4 is a private"),
            "{e}"
        );
        assert!(check("fd13::5").is_err());
        assert!(NetworkGuard::new(vec![Cidr::parse("0.0.0.0/0").unwrap()])
            .check("169.254.169.254".parse().unwrap())
            .is_ok());
    }

    #[test]
    fn a_url_naming_an_address_is_judged_without_a_lookup() {
        let guard = NetworkGuard::new(vec![Cidr::parse("10.1.0.0/16").unwrap()]);
        let kind = |url: &str| {
            guard
                .check_url(url)
                .map_err(|b| (b.addr.to_string(), b.kind))
        };
        assert_eq!(
            kind("http://127.0.0.1:9000/in"),
            Err(("127.0.0.1".into(), "loopback"))
        );
        assert_eq!(
            kind("https://[fd00::1]:8443/in"),
            Err(("fd00::1".into(), "unique-local"))
        );
        assert_eq!(
            kind("http://LOCALHOST:8000/"),
            Err(("127.0.0.1".into(), "loopback"))
        );
        assert_eq!(
            kind("http://169.254.169.254/latest/meta-data/"),
            Err(("169.254.169.254".into(), "link-local"))
        );
        for allowed in [
            "http://10.1.2.3/in",             // in allowed_networks
            "https://8.8.8.8/in",             // public
            "https://hooks.example.com/in",   // a name: judged once resolved
            "https://localhost.example.com/", // a name like any other
            "not a url",
        ] {
            assert_eq!(kind(allowed), Ok(()), "{allowed}");
        }
    }

    #[test]
    fn cidr_parse_refuses_bad_text() {
        for bad in [
            "",
            "10.0.0.0/33",
            "fd00::/129",
            "10.0.0/8",
            "x/8",
            "10.0.0.0/-1",
        ] {
            assert!(Cidr::parse(bad).is_err(), "{bad:?}");
        }
        assert_eq!(Cidr::parse("::/0").unwrap().prefix, 0);
    }
}
