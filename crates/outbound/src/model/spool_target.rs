//! What a `spool` setting names: a directory (the embedded SQLite engine) or a Redis server
//! (`redis://[user:password@]host[:port][/db][?prefix=NAME]`, `rediss://` for TLS), the shared
//! engine for fleets. The setting stays one string in every face (a path type in Rust), so
//! a service can pass it through unchanged.

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
    /// The URL for the client library, without our own `prefix` parameter.
    pub url: String,
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

/// True when the setting names a Redis server rather than a directory.
pub(crate) fn is_redis(spool: &Path) -> bool {
    spool
        .to_str()
        .is_some_and(|s| s.starts_with("redis://") || s.starts_with("rediss://"))
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
    let mut kept = Vec::new();
    for pair in query.into_iter().flat_map(|q| q.split('&')) {
        match pair.split_once('=') {
            Some(("prefix", v)) => prefix = Some(v.to_string()),
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
    let rest = base.split_once("://").map_or("", |(_, r)| r);
    let authority = rest.split('/').next().unwrap_or("");
    if authority.rsplit('@').next().unwrap_or("").is_empty() {
        return Err(Error::config("spool", "the Redis URL names no host"));
    }
    let url = if kept.is_empty() {
        base.to_string()
    } else {
        format!("{base}?{}", kept.join("&"))
    };
    Ok(SpoolTarget::Redis(RedisSpool {
        shown: hide_password(&url),
        url,
        prefix,
    }))
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
