//! What a `spool` setting names: a directory (the embedded SQLite engine) or a Redis server
//! (`redis://[user:password@]host[:port][/db][?prefix=NAME]`, `rediss://` for TLS), the shared
//! engine for fleets, or a Redis deployment watched by Sentinel
//! (`redis+sentinel://[user:password@]sentinel[:port][,sentinel[:port]...]/MASTER[/db]
//! [?prefix=NAME&sentinel_password=P]`, `rediss+sentinel://` for TLS to the servers and the
//! Sentinels): the primary is asked of the Sentinels at each connection. The setting stays
//! one string in every face (a path type in Rust), so a service can pass it through
//! unchanged. `RedisAck` is when a Redis commit counts as acknowledged.

use crate::error::Error;
use std::path::Path;

/// Key prefix used when the URL names none.
pub const DEFAULT_REDIS_PREFIX: &str = "outbound";

/// Longest key prefix accepted.
const MAX_PREFIX: usize = 64;

/// Where a spool lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SpoolTarget<'a> {
    /// A directory of SQLite files.
    Dir(&'a Path),
    /// A Redis server shared by a fleet.
    Redis(RedisSpool),
}

/// A Redis spool, as the setting gave it.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct RedisSpool {
    /// The URL for the client library, without our own parameters; with Sentinel, that of
    /// a primary whose address the Sentinels give (`master.invalid:6379` stands for it).
    pub url: String,
    /// The Sentinels to ask for the primary, when the URL names some.
    pub sentinel: Option<Sentinels>,
    /// Every key we write starts with it, so fleets can share one server.
    pub prefix: String,
    /// The URL as logs and errors show it: any password replaced by `***`.
    pub shown: String,
}

impl std::fmt::Debug for RedisSpool {
    // By hand: the URL may carry a password.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisSpool")
            .field("url", &self.shown)
            .field("prefix", &self.prefix)
            .finish()
    }
}

/// The Sentinels of a `redis+sentinel://` spool.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct Sentinels {
    /// Each Sentinel's URL (`redis://[:password@]host:port`, `rediss://` with TLS).
    pub nodes: Vec<String>,
    /// The name they know the primary by.
    pub master: String,
}

/// The schemes of a Redis spool.
const SCHEMES: [&str; 4] = [
    "redis://",
    "rediss://",
    "redis+sentinel://",
    "rediss+sentinel://",
];

/// A Sentinel's default port.
const SENTINEL_PORT: u16 = 26379;

/// True when the setting names a Redis server rather than a directory.
pub(crate) fn is_redis(spool: &Path) -> bool {
    spool
        .to_str()
        .is_some_and(|s| SCHEMES.iter().any(|scheme| s.starts_with(scheme)))
}

/// Reads a `spool` setting; errors name the setting.
pub(crate) fn spool_target(spool: &Path) -> Result<SpoolTarget<'_>, Error> {
    if !is_redis(spool) {
        if spool.as_os_str().is_empty() {
            return Err(Error::config(
                "spool",
                "must be a directory path or a redis:// URL, not empty",
            ));
        }
        return Ok(SpoolTarget::Dir(spool));
    }
    let text = spool.to_str().unwrap_or_default();
    let (base, query) = match text.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (text, None),
    };
    let mut prefix = None;
    let mut sentinel_password = None;
    let mut kept = Vec::new();
    for pair in query.into_iter().flat_map(|q| q.split('&')) {
        match pair.split_once('=') {
            Some(("prefix", v)) => prefix = Some(v.to_string()),
            Some(("sentinel_password", v)) => sentinel_password = Some(v.to_string()),
            _ if pair.is_empty() => {}
            _ => kept.push(pair),
        }
    }
    let prefix = prefix.unwrap_or_else(|| DEFAULT_REDIS_PREFIX.to_string());
    if prefix.is_empty()
        || prefix.len() > MAX_PREFIX
        || !prefix
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.:".contains(&b))
    {
        return Err(Error::config(
            "spool",
            format!(
                "the Redis key prefix must be 1 to {MAX_PREFIX} of A-Z a-z 0-9 - _ . : (got {prefix:?})"
            ),
        ));
    }
    let (scheme, rest) = base.split_once("://").unwrap_or((base, ""));
    let authority = rest.split('/').next().unwrap_or("");
    if authority.rsplit('@').next().unwrap_or("").is_empty() {
        return Err(Error::config("spool", "the Redis URL names no host"));
    }
    let query = match kept.is_empty() {
        true => String::new(),
        false => format!("?{}", kept.join("&")),
    };
    let url = format!("{base}{query}");
    let shown = hide_password(&url);
    let Some(tls) = scheme.strip_suffix("+sentinel") else {
        return Ok(SpoolTarget::Redis(RedisSpool {
            shown,
            url,
            sentinel: None,
            prefix,
        }));
    };
    // redis+sentinel://[userinfo@]s1[:p],s2[:p]/MASTER[/db]
    let (userinfo, hosts) = match authority.rsplit_once('@') {
        Some((u, h)) => (format!("{u}@"), h),
        None => (String::new(), authority),
    };
    let mut path = rest[authority.len()..]
        .trim_start_matches('/')
        .splitn(2, '/');
    let master = path.next().unwrap_or("").to_string();
    let db = path.next().filter(|d| !d.is_empty());
    if master.is_empty() {
        return Err(Error::config(
            "spool",
            "a redis+sentinel:// URL names the primary after the Sentinels: \
             redis+sentinel://host:26379,host:26379/MASTER[/db]",
        ));
    }
    let auth = sentinel_password.map_or(String::new(), |p| format!(":{p}@"));
    let mut nodes = Vec::new();
    for host in hosts.split(',') {
        let host = host.trim();
        if host.is_empty() {
            return Err(Error::config(
                "spool",
                "an empty Sentinel address in the URL",
            ));
        }
        let port = match host.rsplit_once(':') {
            Some((_, p)) if !host.ends_with(']') => p.parse::<u16>().ok(),
            _ => Some(SENTINEL_PORT),
        };
        let Some(port) = port else {
            return Err(Error::config(
                "spool",
                format!("not a Sentinel port: {host}"),
            ));
        };
        let name = match host.rsplit_once(':') {
            Some((h, _)) if !host.ends_with(']') => h,
            _ => host,
        };
        nodes.push(format!("{tls}://{auth}{name}:{port}"));
    }
    let db = db.map_or(String::new(), |d| format!("/{d}"));
    Ok(SpoolTarget::Redis(RedisSpool {
        url: format!("{tls}://{userinfo}master.invalid:6379{db}{query}"),
        shown,
        sentinel: Some(Sentinels { nodes, master }),
        prefix,
    }))
}

/// When a Redis commit counts as acknowledged (`Config::redis_ack`,
/// `EngineConfig::redis_ack`): what a lost Redis host may take with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RedisAck {
    /// The safe one the deployment allows, chosen when the spool opens: `replicas:1` when
    /// the primary has a replica connected, else `fsync` when its AOF is on and it has
    /// `WAITAOF` (Redis 7.2+), else `memory` (logged).
    #[default]
    Auto,
    /// Once Redis has it in memory (its AOF, with `appendfsync everysec`, on disk within
    /// a second): losing the host loses up to that second.
    Memory,
    /// Once `WAIT` confirms that this many replicas have it: losing the primary loses
    /// nothing acknowledged once Sentinel promotes one of them.
    Replicas(u32),
    /// Once `WAITAOF` confirms the primary's AOF has it on disk (Redis 7.2+, `appendonly
    /// yes`): a power cut of the host loses nothing acknowledged.
    Fsync,
}

impl std::str::FromStr for RedisAck {
    type Err = Error;

    /// `"auto"`, `"memory"`, `"replicas:N"` (N ≥ 1) or `"fsync"`.
    fn from_str(s: &str) -> Result<RedisAck, Error> {
        let bad = || {
            Error::config(
                "redis_ack",
                format!(
                    "must be \"auto\", \"memory\", \"replicas:N\" (N ≥ 1) or \"fsync\", not {s:?}"
                ),
            )
        };
        match s.trim() {
            "" | "auto" => Ok(RedisAck::Auto),
            "memory" => Ok(RedisAck::Memory),
            "fsync" => Ok(RedisAck::Fsync),
            other => match other.strip_prefix("replicas:").map(str::parse::<u32>) {
                Some(Ok(n)) if n >= 1 => Ok(RedisAck::Replicas(n)),
                _ => Err(bad()),
            },
        }
    }
}

impl std::fmt::Display for RedisAck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RedisAck::Auto => f.write_str("auto"),
            RedisAck::Memory => f.write_str("memory"),
            RedisAck::Replicas(n) => write!(f, "replicas:{n}"),
            RedisAck::Fsync => f.write_str("fsync"),
        }
    }
}

/// `redis://user:secret@host/0` -> `redis://user:***@host/0`.
fn hide_password(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let end = rest.find('/').unwrap_or(rest.len());
    let (authority, path) = rest.split_at(end);
    match authority.rsplit_once('@') {
        Some((user, host)) => {
            let user = match user.split_once(':') {
                Some((name, _)) => format!("{name}:***"),
                None => "***".to_string(),
            };
            format!("{scheme}://{user}@{host}{path}")
        }
        None => url.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn redis(s: &str) -> RedisSpool {
        match spool_target(Path::new(s)).unwrap() {
            SpoolTarget::Redis(r) => r,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_path_is_a_directory_and_a_redis_url_is_redis() {
        assert_eq!(
            spool_target(Path::new("/var/spool/x")).unwrap(),
            SpoolTarget::Dir(Path::new("/var/spool/x"))
        );
        let r = redis("redis://127.0.0.1:6379/2");
        assert_eq!(r.url, "redis://127.0.0.1:6379/2");
        assert_eq!(r.prefix, DEFAULT_REDIS_PREFIX);
        assert!(is_redis(Path::new("rediss://cache.internal:6380/0")));
    }

    #[test]
    fn the_prefix_comes_out_of_the_url_and_other_parameters_stay() {
        let r = redis("rediss://h:6380/1?prefix=fleet-a&protocol=resp3");
        assert_eq!(r.prefix, "fleet-a");
        assert_eq!(r.url, "rediss://h:6380/1?protocol=resp3");
    }

    #[test]
    fn a_sentinel_url_names_its_sentinels_the_primary_and_the_database() {
        let r = redis("redis+sentinel://app:s3cret@10.0.0.1,10.0.0.2:5000/mymaster/2?prefix=f&sentinel_password=sp&protocol=resp3");
        assert_eq!(r.prefix, "f");
        let s = r.sentinel.unwrap();
        assert_eq!(s.master, "mymaster");
        assert_eq!(
            s.nodes,
            ["redis://:sp@10.0.0.1:26379", "redis://:sp@10.0.0.2:5000"]
        );
        assert_eq!(
            r.url,
            "redis://app:s3cret@master.invalid:6379/2?protocol=resp3"
        );
        assert!(
            !r.shown.contains("s3cret") && !r.shown.contains("sp@"),
            "{}",
            r.shown
        );
        let tls = redis("rediss+sentinel://h:1/m");
        assert_eq!(tls.sentinel.unwrap().nodes, ["rediss://h:1"]);
        assert_eq!(tls.url, "rediss://master.invalid:6379");
        assert!(is_redis(Path::new("redis+sentinel://h/m")));
        for bad in [
            "redis+sentinel://h",
            "redis+sentinel://h:x/m",
            "redis+sentinel://a,,b/m",
        ] {
            let e = spool_target(Path::new(bad)).unwrap_err();
            assert!(e.to_string().contains("spool"), "{bad}: {e}");
        }
    }

    #[test]
    fn redis_ack_reads_its_four_forms_and_names_itself_when_wrong() {
        for (text, want) in [
            ("auto", RedisAck::Auto),
            ("", RedisAck::Auto),
            ("memory", RedisAck::Memory),
            ("replicas:2", RedisAck::Replicas(2)),
            ("fsync", RedisAck::Fsync),
        ] {
            assert_eq!(text.parse::<RedisAck>().unwrap(), want, "{text}");
        }
        assert_eq!(RedisAck::Replicas(1).to_string(), "replicas:1");
        for bad in ["replicas:0", "replicas:", "replicas", "disk", "Fsync"] {
            let e = bad.parse::<RedisAck>().unwrap_err();
            assert!(e.to_string().contains("redis_ack"), "{bad}: {e}");
        }
    }

    #[test]
    fn a_password_never_shows() {
        let r = redis("redis://app:s3cret@h:6379/0?prefix=p");
        assert_eq!(r.shown, "redis://app:***@h:6379/0");
        assert!(!format!("{r:?}").contains("s3cret"));
        assert_eq!(redis("redis://:s3cret@h/0").shown, "redis://:***@h/0");
    }

    #[test]
    fn a_bad_prefix_or_no_host_is_a_configuration_error_naming_spool() {
        for bad in [
            "redis://h/0?prefix=",
            "redis://h/0?prefix=a{b}",
            "redis://h/0?prefix=a b",
            "redis:///0",
            "redis://user@/0",
        ] {
            let e = spool_target(Path::new(bad)).unwrap_err();
            assert!(e.to_string().contains("spool"), "{bad}: {e}");
        }
    }
}
