//! [`FleetRedis`]: the Redis of a fleet's `spool` URL, reached as the spool reaches it
//! (`connect.rs`), for a service that keeps state of its own beside the spool.

use super::connect::RedisServer;
use crate::error::Error;
use crate::model::spool::{RedisSpool, Spool};
use std::time::Duration;

/// The Redis a fleet's `spool` URL names (`redis://`, `rediss://`, `redis+sentinel://`,
/// `rediss+sentinel://`), reached the way the spool reaches it: the server the URL names,
/// or the primary its Sentinels name, asked again at each connection so that a failover is
/// followed (a server that is not a primary by its own `ROLE` is not taken). For a service
/// that keeps state of its own beside the spool (the relay's sources). The URL's own
/// parameters (`prefix`, `sentinel_password`) are read as the spool reads them; the keys
/// written are the caller's.
pub struct FleetRedis {
    target: RedisServer,
    shown: String,
}

impl FleetRedis {
    /// Reads `url` as a `spool` setting; an error names `spool`.
    pub fn open(url: &str) -> Result<FleetRedis, Error> {
        let Spool::Redis(url) = Spool::from(url) else {
            return Err(Error::config("spool", "not a Redis URL"));
        };
        let spool = RedisSpool::parse(&url)?;
        let target = RedisServer::of(&spool).map_err(|e| Error::config("spool", e))?;
        Ok(FleetRedis {
            target,
            shown: spool.shown,
        })
    }

    /// A new connection to the server (or the primary now), every round trip bounded by
    /// `timeout`.
    pub fn connect(&mut self, timeout: Duration) -> Result<redis::Connection, Error> {
        (self.target.connect(timeout)).map_err(|reason| Error::Spool {
            path: self.shown.clone(),
            reason,
        })
    }

    /// The URL as logs may show it (any password replaced by `***`).
    pub fn location(&self) -> &str {
        &self.shown
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_that_is_not_redis_is_refused_naming_spool() {
        for url in ["/var/spool/outbound", "http://127.0.0.1:6379"] {
            match FleetRedis::open(url) {
                Err(Error::Config { setting, .. }) => assert_eq!(setting, "spool", "{url}"),
                Err(e) => panic!("{url}: {e}"),
                Ok(_) => panic!("{url}: opened"),
            }
        }
    }

    #[test]
    fn the_location_hides_the_password() {
        let f = FleetRedis::open("redis://:hunter2@127.0.0.1:6379/0?prefix=p").unwrap();
        assert!(!f.location().contains("hunter2"), "{}", f.location());
        let s = FleetRedis::open("redis+sentinel://:pw@127.0.0.1:26379/m?prefix=p").unwrap();
        assert!(!s.location().contains("pw@"), "{}", s.location());
    }
}
