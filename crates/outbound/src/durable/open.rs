//! A spool setting opened as a store: the engine its kind names (a directory: SQLite; a
//! Redis URL: Redis, with dead letters beside it), or an error naming `spool` when this
//! build left that engine out (the `sqlite` and `redis` features).

use crate::durable::Store;
use crate::error::Error;
#[cfg(feature = "redis")]
use crate::model::spool::RedisSpool;
use crate::model::spool::Spool;
use std::time::Duration;

/// The store of an engine's spool, shared by its tenants, and on Redis the longest timeout
/// its tenants may have (`max_timeout`: a dead engine is taken over once none of its
/// requests can still be in flight).
pub(crate) fn engines(
    spool: &Spool,
    max_timeout: Duration,
    ack: crate::model::spool::RedisAck,
) -> Result<(Box<dyn Store>, Option<Duration>), Error> {
    spool.check()?;
    match spool {
        #[cfg(feature = "sqlite")]
        Spool::Directory(dir) => Ok((
            Box::new(crate::durable::sqlite::SqliteStore::open_shared(dir)?),
            None,
        )),
        // One owner for every tenant, silent for longer than any of their requests can
        // take before it is taken over; dead letters beside it, for the tenants that keep
        // them.
        #[cfg(feature = "redis")]
        Spool::Redis(url) => {
            let store = redis(&RedisSpool::parse(url)?, max_timeout, ack, true)?;
            Ok((store, Some(max_timeout)))
        }
        #[allow(unreachable_patterns)]
        other => Err(left_out(other)),
    }
}

/// The store of a client's own spool (its `spool` setting), taken over on Redis once it is
/// silent for longer than one of its requests can take.
pub(crate) fn clients(
    spool: &Spool,
    timeout: Duration,
    ack: crate::model::spool::RedisAck,
    dead_letters: bool,
) -> Result<Box<dyn Store>, Error> {
    spool.check()?;
    match spool {
        #[cfg(feature = "sqlite")]
        Spool::Directory(dir) => Ok(Box::new(crate::durable::sqlite::SqliteStore::open(dir)?)),
        #[cfg(feature = "redis")]
        Spool::Redis(url) => redis(&RedisSpool::parse(url)?, timeout, ack, dead_letters),
        #[allow(unreachable_patterns)]
        other => Err(left_out(other)),
    }
}

/// A Redis store whose requests take at most `timeout`, with its dead letters under keys of
/// their own when `dead_letters` (`redis/dead.rs`).
#[cfg(feature = "redis")]
fn redis(
    spool: &RedisSpool,
    timeout: Duration,
    ack: crate::model::spool::RedisAck,
    dead_letters: bool,
) -> Result<Box<dyn Store>, Error> {
    use crate::durable::redis::dead::RedisDead;
    use crate::durable::redis::with_dead::WithDead;
    use crate::durable::redis::{RedisStore, TAKEOVER_MARGIN};
    let silent = timeout + TAKEOVER_MARGIN;
    let store: Box<dyn Store> = Box::new(RedisStore::open(spool, timeout, silent, ack)?);
    Ok(match dead_letters {
        true => Box::new(WithDead::new(
            store,
            RedisDead::open(spool, timeout, silent)?,
        )),
        false => store,
    })
}

/// The error for a spool whose engine this build left out.
#[allow(dead_code)]
fn left_out(spool: &Spool) -> Error {
    let feature = match spool {
        Spool::Directory(_) => "sqlite",
        Spool::Redis(_) => "redis",
    };
    Error::config(
        "spool",
        format!("{spool}: this build of outbound has no such spool (the `{feature}` feature)"),
    )
}

#[cfg(all(test, not(all(feature = "sqlite", feature = "redis"))))]
mod tests {
    use super::*;

    #[cfg(not(feature = "sqlite"))]
    #[test]
    fn a_directory_spool_without_the_sqlite_feature_is_a_configuration_error() {
        let e = clients(
            &Spool::from("/tmp/x"),
            Duration::from_secs(1),
            Default::default(),
            false,
        )
        .err()
        .unwrap();
        assert!(
            matches!(&e, Error::Config { setting, reason }
            if setting == "spool" && reason.contains("`sqlite` feature")),
            "{e}"
        );
    }

    #[cfg(not(feature = "redis"))]
    #[test]
    fn a_redis_spool_without_the_redis_feature_is_a_configuration_error_without_its_password() {
        let spool = Spool::from("redis://:s3cret@127.0.0.1:6379/0");
        let e = engines(&spool, Duration::from_secs(1), Default::default())
            .err()
            .unwrap();
        assert!(
            matches!(&e, Error::Config { setting, reason }
            if setting == "spool" && reason.contains("`redis` feature")),
            "{e}"
        );
        assert!(!e.to_string().contains("s3cret"), "{e}");
    }
}
