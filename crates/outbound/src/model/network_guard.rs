//! The SSRF guard for webhook URLs (`block_private_networks`) and, when a service turns it on,
//! the ingestion endpoint (`block_private_endpoint`): which addresses they may not reach, and
//! the allow-lists that make exceptions (`allowed_networks`, `endpoint_allowed_networks`).
//! When customers give the URLs, a URL (or a DNS name) pointing at the sender's own network —
//! loopback, private ranges, link-local with the cloud metadata service at 169.254.169.254 —
//! would let them make the sender call its own internal services (carrying the forward's
//! write key, for an endpoint). The I/O engine (`http/connect.rs`) asks
//! [`NetworkGuard::check`] after every DNS resolution, for every address, before any
//! connection. A URL whose host is an address needs no resolution:
//! [`NetworkGuard::check_url`] judges it from the text, for a recording client (which looks
//! nothing up) and for a configuration's webhooks that can never be reached
//! (`Config::blocked_webhooks`).

use crate::error::Error;
use http::Uri;
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

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

    /// Whether some network is exempt.
    pub(crate) fn has_exceptions(&self) -> bool {
        !self.allowed.is_empty()
    }

    /// Whether `ip` passes only because an allowed network holds it.
    pub(crate) fn excepts(&self, ip: IpAddr) -> bool {
        private_kind(ip).is_some() && self.allowed.iter().any(|c| c.contains(ip))
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

/// What kind of non-public address `ip` is (the registry entry that names its range), or
/// `None` for a public one. IPv6 forms that carry an IPv4 address (mapped, compatible, SIIT,
/// NAT64, 6to4) are judged by that address, so `::ffff:127.0.0.1` cannot slip past.
pub(crate) fn private_kind(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => private_v4(v4),
        IpAddr::V6(v6) => private_v6(v6),
    }
}

/// IANA's IPv4 Special-Purpose Address Registry, every entry (whether or not the registry
/// calls it globally reachable: none is a customer's webhook), and the multicast block. The
/// first entry holding an address names it, so narrower entries come before wider ones.
const SPECIAL_V4: &[([u8; 4], u8, &str)] = &[
    ([0, 0, 0, 0], 8, "unspecified"),
    ([10, 0, 0, 0], 8, "private (RFC 1918)"),
    // Carrier-grade NAT, also used inside clouds (100.100.100.200 is a metadata service).
    ([100, 64, 0, 0], 10, "shared (RFC 6598)"),
    ([127, 0, 0, 0], 8, "loopback"),
    // Cloud metadata services live here (169.254.169.254).
    ([169, 254, 0, 0], 16, "link-local"),
    ([172, 16, 0, 0], 12, "private (RFC 1918)"),
    ([192, 0, 0, 0], 24, "IETF protocol assignments (RFC 6890)"),
    ([192, 0, 2, 0], 24, "documentation (TEST-NET-1, RFC 5737)"),
    ([192, 31, 196, 0], 24, "AS112 (RFC 7535)"),
    ([192, 52, 193, 0], 24, "AMT (RFC 7450)"),
    ([192, 88, 99, 0], 24, "6to4 relay anycast (RFC 7526)"),
    ([192, 168, 0, 0], 16, "private (RFC 1918)"),
    ([192, 175, 48, 0], 24, "AS112 direct delegation (RFC 7534)"),
    ([198, 18, 0, 0], 15, "benchmarking (RFC 2544)"),
    (
        [198, 51, 100, 0],
        24,
        "documentation (TEST-NET-2, RFC 5737)",
    ),
    ([203, 0, 113, 0], 24, "documentation (TEST-NET-3, RFC 5737)"),
    ([224, 0, 0, 0], 4, "multicast"),
    ([255, 255, 255, 255], 32, "limited broadcast"),
    ([240, 0, 0, 0], 4, "reserved (RFC 1112)"),
];

/// How the guard reads an IPv6 range: refused, or judged by the IPv4 address it carries.
#[derive(Clone, Copy)]
enum V6 {
    Refused(&'static str),
    /// The IPv4 address is the last 32 bits.
    Embeds,
    /// 6to4: the IPv4 address follows the first 16 bits.
    SixToFour,
}

/// IANA's IPv6 Special-Purpose Address Registry, every entry, with the forms that carry an
/// IPv4 address and the deprecated or multicast blocks beside it. Narrower entries first.
const SPECIAL_V6: &[([u16; 8], u8, V6)] = &[
    ([0, 0, 0, 0, 0, 0, 0, 0], 128, V6::Refused("unspecified")),
    ([0, 0, 0, 0, 0, 0, 0, 1], 128, V6::Refused("loopback")),
    // IPv4-mapped (RFC 4291), SIIT (RFC 2765), IPv4-compatible (deprecated, RFC 4291).
    ([0, 0, 0, 0, 0, 0xffff, 0, 0], 96, V6::Embeds),
    ([0, 0, 0, 0, 0xffff, 0, 0, 0], 96, V6::Embeds),
    ([0, 0, 0, 0, 0, 0, 0, 0], 96, V6::Embeds),
    // NAT64's well-known prefix (RFC 6052) reaches the IPv4 address it carries.
    ([0x64, 0xff9b, 0, 0, 0, 0, 0, 0], 96, V6::Embeds),
    (
        [0x64, 0xff9b, 1, 0, 0, 0, 0, 0],
        48,
        V6::Refused("local-use IPv4/IPv6 translation (RFC 8215)"),
    ),
    (
        [0x100, 0, 0, 0, 0, 0, 0, 0],
        64,
        V6::Refused("discard-only (RFC 6666)"),
    ),
    (
        [0x100, 0, 0, 1, 0, 0, 0, 0],
        64,
        V6::Refused("dummy prefix (RFC 9780)"),
    ),
    // Teredo, benchmarking, AMT, AS112, ORCHID, drone tags: all of 2001::/23.
    (
        [0x2001, 0, 0, 0, 0, 0, 0, 0],
        23,
        V6::Refused("IETF protocol assignments (RFC 2928)"),
    ),
    (
        [0x2001, 0xdb8, 0, 0, 0, 0, 0, 0],
        32,
        V6::Refused("documentation (RFC 3849)"),
    ),
    ([0x2002, 0, 0, 0, 0, 0, 0, 0], 16, V6::SixToFour),
    (
        [0x2620, 0x4f, 0x8000, 0, 0, 0, 0, 0],
        48,
        V6::Refused("AS112 direct delegation (RFC 7534)"),
    ),
    (
        [0x3fff, 0, 0, 0, 0, 0, 0, 0],
        20,
        V6::Refused("documentation (RFC 9637)"),
    ),
    (
        [0x5f00, 0, 0, 0, 0, 0, 0, 0],
        16,
        V6::Refused("segment routing SIDs (RFC 9602)"),
    ),
    // AWS's IPv6 metadata service is fd00:ec2::254.
    (
        [0xfc00, 0, 0, 0, 0, 0, 0, 0],
        7,
        V6::Refused("unique-local"),
    ),
    ([0xfe80, 0, 0, 0, 0, 0, 0, 0], 10, V6::Refused("link-local")),
    (
        [0xfec0, 0, 0, 0, 0, 0, 0, 0],
        10,
        V6::Refused("site-local (deprecated)"),
    ),
    ([0xff00, 0, 0, 0, 0, 0, 0, 0], 8, V6::Refused("multicast")),
];

fn in_v4(ip: u32, net: [u8; 4], prefix: u8) -> bool {
    let mask = u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0);
    ip & mask == u32::from_be_bytes(net) & mask
}

fn in_v6(ip: u128, net: [u16; 8], prefix: u8) -> bool {
    let mask = u128::MAX.checked_shl(128 - u32::from(prefix)).unwrap_or(0);
    ip & mask == u128::from(Ipv6Addr::from(net)) & mask
}

fn private_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let ip = u32::from(ip);
    (SPECIAL_V4.iter())
        .find(|(net, prefix, _)| in_v4(ip, *net, *prefix))
        .map(|(_, _, kind)| *kind)
}

fn private_v6(ip: Ipv6Addr) -> Option<&'static str> {
    let bits = u128::from(ip);
    let (_, _, how) = SPECIAL_V6
        .iter()
        .find(|(net, prefix, _)| in_v6(bits, *net, *prefix))?;
    match how {
        V6::Refused(kind) => Some(kind),
        V6::Embeds => private_v4(Ipv4Addr::from(bits as u32)),
        V6::SixToFour => private_v4(Ipv4Addr::from((bits >> 80) as u32)),
    }
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
    fn every_special_purpose_range_is_refused_from_its_first_to_its_last_address() {
        for (net, prefix, kind) in SPECIAL_V4 {
            let first = u32::from_be_bytes(*net);
            let last = first | u32::MAX.checked_shr(u32::from(*prefix)).unwrap_or(0);
            for ip in [first, first + (last - first) / 2, last] {
                let ip = Ipv4Addr::from(ip);
                assert!(private_kind(ip.into()).is_some(), "{ip} ({kind})");
                // The same address carried in each IPv6 form is refused too.
                for carried in [
                    format!("::ffff:{ip}"),
                    format!("::ffff:0:{ip}"),
                    format!("::{ip}"),
                    format!("64:ff9b::{ip}"),
                ] {
                    let v6: Ipv6Addr = carried.parse().unwrap();
                    assert!(private_kind(v6.into()).is_some(), "{carried}");
                }
            }
        }
        for (net, prefix, _) in SPECIAL_V6 {
            let first = u128::from(Ipv6Addr::from(*net));
            let last = first | u128::MAX.checked_shr(u32::from(*prefix)).unwrap_or(0);
            for ip in [first, last] {
                let ip = Ipv6Addr::from(ip);
                // The forms that carry an address are judged by it: all ones is 255.255.255.255.
                assert!(private_kind(ip.into()).is_some(), "{ip}");
            }
        }
    }

    #[test]
    fn the_ranges_a_review_found_open_are_refused() {
        for (ip, kind) in [
            ("192.0.0.8", "IETF protocol assignments (RFC 6890)"),
            ("192.0.2.10", "documentation (TEST-NET-1, RFC 5737)"),
            ("198.18.0.1", "benchmarking (RFC 2544)"),
            ("198.19.255.254", "benchmarking (RFC 2544)"),
            ("198.51.100.7", "documentation (TEST-NET-2, RFC 5737)"),
            ("203.0.113.9", "documentation (TEST-NET-3, RFC 5737)"),
            ("255.255.255.255", "limited broadcast"),
            ("::7f00:1", "loopback"),
            ("::ffff:0:7f00:1", "loopback"),
            ("::ffff:0:a9fe:a9fe", "link-local"),
            ("::c000:208", "documentation (TEST-NET-1, RFC 5737)"),
            ("2001:db8::1", "documentation (RFC 3849)"),
            ("2001::1", "IETF protocol assignments (RFC 2928)"),
            ("2001:2::5", "IETF protocol assignments (RFC 2928)"),
            ("3fff::1", "documentation (RFC 9637)"),
            ("100::1", "discard-only (RFC 6666)"),
            ("64:ff9b:1::a", "local-use IPv4/IPv6 translation (RFC 8215)"),
            ("5f00::1", "segment routing SIDs (RFC 9602)"),
        ] {
            assert_eq!(private_kind(ip.parse().unwrap()), Some(kind), "{ip}");
        }
        // Public neighbours of those ranges stay reachable.
        for ip in [
            "192.0.3.1",
            "198.17.255.255",
            "198.20.0.0",
            "198.51.101.1",
            "203.0.114.1",
            "::808:808",
            "::ffff:0:808:808",
            "64:ff9b::808:808",
            "2001:4860::8888",
            "2002:808:808::",
            "2400:cb00::1",
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
