//! What a `spool` setting names ([`Spool`]): a directory (the embedded SQLite engine) or a
//! Redis deployment shared by a fleet ([`RedisUrl`]): a server
//! (`redis://[user:password@]host[:port][/db][?prefix=NAME]`, `rediss://` for TLS), or one
//! watched by Sentinel (`redis+sentinel://[user:password@]sentinel[:port][,sentinel[:port]
//! ...]/MASTER[/db][?prefix=NAME&sentinel_password=P]`, `rediss+sentinel://` for TLS to the
//! servers and the Sentinels), whose primary is asked of the Sentinels at each connection.
//! Every face gives the setting as one string and a service passes it through unchanged:
//! [`Spool::from`] sorts it by its scheme, and a Redis URL is read when the spool opens
//! ([`RedisSpool::parse`]). Neither prints a password. `RedisAck` is when a Redis commit
//! counts as acknowledged.

use crate::error::Error;
use std::fmt;
use std::path::{Path, PathBuf};

/// Where accepted messages are kept until their outcome (`Config::spool`,
/// `EngineConfig::spool`). Made from the setting's text with `Spool::from`: a URL of one of
/// the Redis schemes is [`Spool::Redis`], anything else a directory. `Debug` and `Display`
/// never show a password.
#[derive(Clone, PartialEq, Eq, Hash)]
pub enum Spool {
    /// A directory of SQLite files (the `sqlite` feature).
    Directory(PathBuf),
    /// A Redis deployment shared by a fleet (the `redis` feature).
    Redis(RedisUrl),
}

/// A Redis spool's URL as given, password included; shown with the password as `***`.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct RedisUrl(String);

impl RedisUrl {
    /// The URL as given, password included: for the Redis client, never for a log.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for RedisUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&hide_passwords(&self.0))
    }
}

impl fmt::Debug for RedisUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", hide_passwords(&self.0))
    }
}

impl Spool {
    /// Whether it is a Redis spool.
    pub fn is_redis(&self) -> bool {
        matches!(self, Spool::Redis(_))
    }
}

impl fmt::Display for Spool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Spool::Directory(dir) => write!(f, "{}", dir.display()),
            Spool::Redis(url) => url.fmt(f),
        }
    }
}

impl fmt::Debug for Spool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Spool::Directory(dir) => f.debug_tuple("Directory").field(dir).finish(),
            Spool::Redis(url) => f.debug_tuple("Redis").field(url).finish(),
        }
    }
}

impl From<String> for Spool {
    fn from(setting: String) -> Spool {
        match SCHEMES.iter().any(|scheme| setting.starts_with(scheme)) {
            true => Spool::Redis(RedisUrl(setting)),
            false => Spool::Directory(PathBuf::from(setting)),
        }
    }
}

impl From<&str> for Spool {
    fn from(setting: &str) -> Spool {
        Spool::from(setting.to_string())
    }
}

impl From<PathBuf> for Spool {
    fn from(path: PathBuf) -> Spool {
        match path.into_os_string().into_string() {
            Ok(text) => Spool::from(text),
            Err(raw) => Spool::Directory(PathBuf::from(raw)),
        }
    }
}

impl From<&Path> for Spool {
    fn from(path: &Path) -> Spool {
        Spool::from(path.to_path_buf())
    }
}

/// Key prefix used when the URL names none.
pub const DEFAULT_REDIS_PREFIX: &str = "outbound";

/// Longest key prefix accepted.
const MAX_PREFIX: usize = 64;

/// A Redis spool's URL, read: what the Redis client is given.
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

impl Spool {
    /// Checks what can be checked without opening it; errors name the setting.
    pub(crate) fn check(&self) -> Result<(), Error> {
        match self {
            Spool::Directory(dir) if dir.as_os_str().is_empty() => Err(Error::config(
                "spool",
                "must be a directory path or a redis:// URL, not empty",
            )),
            Spool::Directory(_) => Ok(()),
            Spool::Redis(url) => RedisSpool::parse(url).map(drop),
        }
    }
}

impl RedisSpool {
    /// Reads a Redis spool's URL; errors name the setting.
    pub(crate) fn parse(spool: &RedisUrl) -> Result<RedisSpool, Error> {
        let text = spool.expose();
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
        let shown = hide_passwords(&url);
        let Some(tls) = scheme.strip_suffix("+sentinel") else {
            return Ok(RedisSpool {
                shown,
                url,
                sentinel: None,
                prefix,
            });
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
        Ok(RedisSpool {
            url: format!("{tls}://{userinfo}master.invalid:6379{db}{query}"),
            shown,
            sentinel: Some(Sentinels { nodes, master }),
            prefix,
        })
    }
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

/// `redis://user:secret@host/0?sentinel_password=p` ->
/// `redis://user:***@host/0?sentinel_password=***`: the user's password, and the value of
/// every query parameter whose name holds "password".
fn hide_passwords(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, path) = rest.split_at(end);
    let authority = match authority.rsplit_once('@') {
        Some((user, host)) => {
            let user = match user.split_once(':') {
                Some((name, _)) => format!("{name}:***"),
                None => "***".to_string(),
            };
            format!("{user}@{host}")
        }
        None => authority.to_string(),
    };
    let path = match path.split_once('?') {
        None => path.to_string(),
        Some((path, query)) => {
            let params: Vec<String> = query
                .split('&')
                .map(|pair| match pair.split_once('=') {
                    Some((name, _)) if name.to_ascii_lowercase().contains("password") => {
                        format!("{name}=***")
                    }
                    _ => pair.to_string(),
                })
                .collect();
            format!("{path}?{}", params.join("&"))
        }
    };
    format!("{scheme}://{authority}{path}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<RedisSpool, Error> {
        match Spool::from(s) {
            Spool::Redis(url) => RedisSpool::parse(&url),
            other => panic!("{other:?}"),
        }
    }

    fn redis(s: &str) -> RedisSpool {
        parse(s).unwrap()
    }

    #[test]
    fn a_path_is_a_directory_and_a_redis_url_is_redis() {
        assert_eq!(
            Spool::from("/var/spool/x"),
            Spool::Directory(PathBuf::from("/var/spool/x"))
        );
        assert_eq!(
            Spool::from(PathBuf::from("rel/dir")),
            Spool::Directory(PathBuf::from("rel/dir"))
        );
        let r = redis("redis://127.0.0.1:6379/2");
        assert_eq!(r.url, "redis://127.0.0.1:6379/2");
        assert_eq!(r.prefix, DEFAULT_REDIS_PREFIX);
        assert!(Spool::from("rediss://cache.internal:6380/0").is_redis());
        assert!(Spool::from(PathBuf::from("redis+sentinel://h/m")).is_redis());
        assert!(Spool::from("").check().is_err(), "an empty directory");
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
        assert!(Spool::from("redis+sentinel://h/m").is_redis());
        for bad in [
            "redis+sentinel://h",
            "redis+sentinel://h:x/m",
            "redis+sentinel://a,,b/m",
        ] {
            let e = parse(bad).unwrap_err();
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
        // The setting itself, before it is read, in Debug and Display.
        for (given, shown) in [
            (
                "redis://app:s3cret@h:6379/0?prefix=p",
                "redis://app:***@h:6379/0?prefix=p",
            ),
            ("rediss://:s3cret@h", "rediss://:***@h"),
            ("redis://s3cret@h?x=1", "redis://***@h?x=1"),
            (
                "redis+sentinel://u:s3cret@a,b:5/m?sentinel_password=s3cret&prefix=f",
                "redis+sentinel://u:***@a,b:5/m?sentinel_password=***&prefix=f",
            ),
        ] {
            let spool = Spool::from(given);
            assert_eq!(spool.to_string(), shown);
            let debug = format!("{spool:?}");
            assert_eq!(debug, format!("Redis({shown:?})"));
            let config = crate::Config::default().spool(spool.clone());
            for text in [debug, format!("{config:?}"), format!("{:?}", Some(&spool))] {
                assert!(!text.contains("s3cret"), "{text}");
            }
            let Spool::Redis(url) = spool else { panic!() };
            assert_eq!(url.expose(), given, "the client gets it whole");
        }
        let dir = Spool::from("/var/spool/x");
        assert_eq!(
            (dir.to_string(), format!("{dir:?}")),
            ("/var/spool/x".into(), "Directory(\"/var/spool/x\")".into())
        );
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
            let e = parse(bad).unwrap_err();
            assert!(e.to_string().contains("spool"), "{bad}: {e}");
        }
    }
}
