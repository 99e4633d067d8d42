//! Reaching Redis: the server the URL names, or the primary the Sentinels name (asked at
//! each connection, so a failover is followed); the store's connection (`Link`: made again
//! when lost, after a wait); what the server is checked for when the store opens (a version
//! with XAUTOCLAIM), and what `redis_ack` asks of each commit (`Acks`).
//!
//! The Sentinels are asked here rather than through the redis crate's `sentinel` module:
//! its blocking client connects without a timeout, and one Sentinel host that does not
//! answer would hold the spool writer for the system's TCP timeout.

use super::{describe, keys, RedisStore};
use crate::error::Error;
use crate::model::spool::{RedisAck, RedisSpool, Sentinels};
use redis::{Connection, ConnectionLike, Value};
use std::time::{Duration, Instant};

/// Where connections go.
pub(super) enum RedisServer {
    /// The server the URL names.
    Direct(redis::Client),
    /// The primary the Sentinels name; `node` is its URL's settings (user, password, db,
    /// TLS) with any address, `next` the Sentinel asked first.
    Sentinel {
        nodes: Vec<redis::Client>,
        master: String,
        node: redis::ConnectionInfo,
        next: usize,
    },
}

/// Waits between attempts to reach a Redis that did not answer.
const RETRY_MIN: Duration = Duration::from_millis(200);
const RETRY_MAX: Duration = Duration::from_secs(5);

/// A store's connection to its server: made again when lost, after a wait that doubles
/// while the server does not answer.
pub(super) struct Link {
    pub(super) server: RedisServer,
    pub(super) conn: Option<Connection>,
    /// When a Redis that did not answer may be tried again, and the next wait.
    pub(super) retry_at: Option<Instant>,
    retry_wait: Duration,
    /// Bounds every round trip.
    pub(super) io_timeout: Duration,
    /// The URL as logs and errors show it (no password).
    pub(super) shown: String,
}

impl Link {
    pub(super) fn new(server: RedisServer, io_timeout: Duration, shown: String) -> Link {
        Link {
            server,
            conn: None,
            retry_at: None,
            retry_wait: RETRY_MIN,
            io_timeout,
            shown,
        }
    }

    pub(super) fn err(&self, reason: impl Into<String>) -> Error {
        Error::Spool {
            path: self.shown.clone(),
            reason: reason.into(),
        }
    }

    pub(super) fn is_connected(&self) -> bool {
        self.conn.is_some()
    }

    /// Whether the connection is there and open.
    pub(super) fn is_open(&self) -> bool {
        self.conn.as_ref().is_some_and(|c| c.is_open())
    }

    /// Makes the connection; fails at once while a server that did not answer is left
    /// alone.
    pub(super) fn connect(&mut self) -> Result<(), Error> {
        if let Some(at) = self.retry_at {
            let left = at.saturating_duration_since(Instant::now());
            if !left.is_zero() {
                return Err(self.err(format!(
                    "unreachable; trying again in {} ms",
                    left.as_millis()
                )));
            }
        }
        match self.server.connect(self.io_timeout) {
            Ok(c) => {
                self.conn = Some(c);
                self.retry_at = None;
                self.retry_wait = RETRY_MIN;
                Ok(())
            }
            Err(e) => {
                self.back_off();
                Err(self.err(format!("cannot connect: {e}")))
            }
        }
    }

    /// The connection made by [`connect`](Self::connect).
    pub(super) fn connected(&mut self) -> Result<&mut Connection, Error> {
        match self.conn.as_mut() {
            Some(c) => Ok(c),
            None => Err(Error::Spool {
                path: self.shown.clone(),
                reason: "not connected".into(),
            }),
        }
    }

    /// Drops the connection; it is made again after a wait.
    pub(super) fn lose(&mut self) {
        self.conn = None;
        self.back_off();
    }

    /// The next connection attempt waits, twice as long as the last (up to the server's
    /// most).
    fn back_off(&mut self) {
        self.retry_at = Some(Instant::now() + self.retry_wait);
        self.retry_wait = (self.retry_wait * 2).min(self.server.retry_max());
    }
}

/// When a commit counts as acknowledged, as the store opened with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Ack {
    Memory,
    /// `WAIT n`.
    Replicas(u32),
    /// `WAITAOF 1 0`.
    Fsync,
}

impl std::fmt::Display for Ack {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Ack::Memory => f.write_str("memory"),
            Ack::Replicas(n) => write!(f, "replicas:{n}"),
            Ack::Fsync => f.write_str("fsync"),
        }
    }
}

/// When a commit that writes new records counts as acknowledged: as asked, and as it is
/// now (`Auto` is looked at again on each new connection and at each adoption pass); the
/// last change of it, to report.
pub(super) struct Acks {
    pub(super) asked: RedisAck,
    pub(super) now: Ack,
    pub(super) changed: Option<String>,
    pub(super) recheck: bool,
}

impl Acks {
    /// As `asked`, memory until the server is looked at.
    pub(super) fn new(asked: RedisAck) -> Acks {
        Acks {
            asked,
            now: Ack::Memory,
            changed: None,
            recheck: false,
        }
    }

    /// A new connection may reach another server (a failover): `Auto` looks at it again.
    pub(super) fn reconnected(&mut self) {
        self.recheck = self.asked == RedisAck::Auto;
    }

    /// The confirmation a transaction that writes new records waits for, if any: one
    /// command after its EXEC, blocking at most half of `io_timeout` (so its answer comes
    /// before the connection's read times out).
    pub(super) fn wait_cmd(&self, io_timeout: Duration) -> Option<redis::Cmd> {
        let ms = wait_ms(io_timeout);
        match self.now {
            Ack::Memory => None,
            Ack::Replicas(n) => Some(redis::cmd("WAIT").arg(n).arg(ms).to_owned()),
            Ack::Fsync => Some(redis::cmd("WAITAOF").arg(1).arg(0).arg(ms).to_owned()),
        }
    }

    /// Whether `reply` to [`wait_cmd`](Self::wait_cmd) confirms the commit; why not.
    pub(super) fn confirmed(&self, reply: &Value, io_timeout: Duration) -> Result<(), String> {
        let ms = wait_ms(io_timeout);
        match (self.now, reply) {
            (Ack::Replicas(n), Value::Int(k)) if *k >= i64::from(n) => Ok(()),
            (Ack::Replicas(n), Value::Int(k)) => Err(format!(
                "not acknowledged: {k} of {n} replica(s) confirmed the commit within {ms} ms"
            )),
            (Ack::Fsync, Value::Array(v)) if matches!(v.first(), Some(Value::Int(1..))) => Ok(()),
            (Ack::Fsync, Value::Array(_)) => Err(format!(
                "not acknowledged: the AOF fsync was not confirmed within {ms} ms"
            )),
            (_, other) => Err(format!("not acknowledged: {}", describe(other))),
        }
    }
}

/// How long a confirmation blocks, in ms: half of the I/O timeout.
fn wait_ms(io_timeout: Duration) -> u64 {
    (io_timeout.as_millis() as u64 / 2).max(1)
}

impl RedisServer {
    /// The target of `spool`'s URL.
    pub fn of(spool: &RedisSpool) -> Result<RedisServer, String> {
        let client = redis::Client::open(spool.url.as_str())
            .map_err(|e| format!("not a usable Redis URL: {e}"))?;
        let Some(Sentinels { nodes, master }) = &spool.sentinel else {
            return Ok(RedisServer::Direct(client));
        };
        let nodes = (nodes.iter())
            .map(|n| redis::Client::open(n.as_str()))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("not a usable Sentinel address: {e}"))?;
        Ok(RedisServer::Sentinel {
            nodes,
            master: master.clone(),
            node: client.get_connection_info().clone(),
            next: 0,
        })
    }

    /// The longest wait between attempts to reach Redis: with Sentinel, short, so that the
    /// new primary is found within a second of its promotion.
    pub fn retry_max(&self) -> Duration {
        match self {
            RedisServer::Direct(_) => RETRY_MAX,
            RedisServer::Sentinel { .. } => Duration::from_secs(1),
        }
    }

    /// A new connection, every round trip bounded by `timeout`.
    pub fn connect(&mut self, timeout: Duration) -> Result<Connection, String> {
        match self {
            RedisServer::Direct(client) => open(client, timeout).map_err(|e| e.to_string()),
            RedisServer::Sentinel {
                nodes,
                master,
                node,
                next,
            } => {
                let mut why = Vec::new();
                for i in 0..nodes.len() {
                    let at = (*next + i) % nodes.len();
                    match primary(&nodes[at], master, node, timeout) {
                        Ok(conn) => {
                            // The one that answered is asked first next time.
                            *next = at;
                            return Ok(conn);
                        }
                        Err(e) => why.push(format!(
                            "Sentinel {}: {e}",
                            nodes[at].get_connection_info().addr
                        )),
                    }
                }
                Err(format!(
                    "no primary {master:?} reachable: {}",
                    why.join("; ")
                ))
            }
        }
    }
}

fn open(client: &redis::Client, timeout: Duration) -> redis::RedisResult<Connection> {
    let c = client.get_connection_with_timeout(timeout)?;
    c.set_read_timeout(Some(timeout))?;
    c.set_write_timeout(Some(timeout))?;
    Ok(c)
}

/// The primary `sentinel` names for `master`, connected, and confirmed by its own `ROLE`
/// (a server just demoted, or not yet told of its promotion, is not taken for it).
fn primary(
    sentinel: &redis::Client,
    master: &str,
    node: &redis::ConnectionInfo,
    timeout: Duration,
) -> Result<Connection, String> {
    let mut s = open(sentinel, timeout).map_err(|e| e.to_string())?;
    let addr: Option<(String, u16)> = redis::cmd("SENTINEL")
        .arg("get-master-addr-by-name")
        .arg(master)
        .query(&mut s)
        .map_err(|e| e.to_string())?;
    let (host, port) = addr.ok_or("knows no such primary")?;
    let mut info = node.clone();
    info.addr = match info.addr {
        redis::ConnectionAddr::TcpTls {
            insecure,
            tls_params,
            ..
        } => redis::ConnectionAddr::TcpTls {
            host,
            port,
            insecure,
            tls_params,
        },
        _ => redis::ConnectionAddr::Tcp(host, port),
    };
    let shown = info.addr.to_string();
    let client = redis::Client::open(info).map_err(|e| e.to_string())?;
    let mut conn = open(&client, timeout).map_err(|e| format!("{shown}: {e}"))?;
    let role: Value = redis::cmd("ROLE")
        .query(&mut conn)
        .map_err(|e| format!("{shown}: {e}"))?;
    let is_primary = match &role {
        Value::Array(v) => v.first().and_then(keys::bytes) == Some(b"master"),
        _ => false,
    };
    match is_primary {
        true => Ok(conn),
        false => Err(format!("{shown} is not a primary (yet)")),
    }
}

/// `major.minor` of a `redis_version`.
fn version_of(info: &str) -> (String, (u32, u32)) {
    let version = (info.lines())
        .find_map(|l| l.strip_prefix("redis_version:"))
        .unwrap_or("")
        .trim()
        .to_string();
    let mut parts = version.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
    let v = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    (version, v)
}

fn field<'a>(info: &'a str, name: &str) -> Option<&'a str> {
    info.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
        .map(str::trim)
}

impl RedisStore {
    /// For `redis_ack = "auto"`: looks at the server again (after a new connection, e.g. to
    /// a primary just promoted, and at each adoption pass), so that commits are confirmed
    /// as the deployment now allows; a change is noted, for the log.
    pub(super) fn recheck_ack(&mut self) -> Result<(), Error> {
        self.acks.recheck = false;
        if self.acks.asked != RedisAck::Auto {
            return Ok(());
        }
        let now = self.check_server(RedisAck::Auto)?;
        if now != self.acks.now {
            self.acks.changed = Some(format!(
                "redis_ack = \"auto\": a commit now counts once {} (it was {})",
                match now {
                    Ack::Memory => "in Redis's memory: the primary has no replica".to_string(),
                    Ack::Replicas(n) => format!("on {n} replica(s)"),
                    Ack::Fsync => "in the AOF on disk".to_string(),
                },
                self.acks.now
            ));
            self.acks.now = now;
        }
        Ok(())
    }

    /// Checks the server can hold a spool (XAUTOCLAIM: Redis 6.2+) and can confirm commits
    /// as `asked` says; returns how commits will be confirmed.
    pub(super) fn check_server(&mut self, asked: RedisAck) -> Result<Ack, Error> {
        let mut pipe = redis::pipe();
        pipe.cmd("INFO").arg("server");
        pipe.cmd("INFO").arg("persistence");
        pipe.cmd("INFO").arg("replication");
        let replies = self.query(pipe, false)?;
        let text = |i: usize| {
            (replies.get(i))
                .and_then(keys::bytes)
                .map(|b| String::from_utf8_lossy(b).into_owned())
                .unwrap_or_default()
        };
        let (server, persistence, replication) = (text(0), text(1), text(2));
        let (version, v) = version_of(&server);
        if v != (0, 0) && v < (6, 2) {
            return Err(self.err(format!(
                "Redis {version} has no XAUTOCLAIM: the spool needs Redis 6.2 or newer"
            )));
        }
        let aof = field(&persistence, "aof_enabled") == Some("1");
        let has_waitaof = v >= (7, 2);
        let replicas: u32 = (field(&replication, "connected_slaves"))
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        match asked {
            RedisAck::Memory => Ok(Ack::Memory),
            RedisAck::Replicas(n) => Ok(Ack::Replicas(n)),
            RedisAck::Fsync if !has_waitaof => Err(self.err(format!(
                "redis_ack = \"fsync\" needs WAITAOF, Redis 7.2 or newer, and this server is \
                 Redis {version}: use \"replicas:N\" (with N replicas), or \"memory\" with \
                 appendfsync always"
            ))),
            RedisAck::Fsync if !aof => {
                Err(self.err("redis_ack = \"fsync\" needs the server's AOF (appendonly yes)"))
            }
            RedisAck::Fsync => Ok(Ack::Fsync),
            // Per connection and adoption pass (`recheck_ack`): after a failover that left
            // the new primary without a replica, memory until one is back.
            RedisAck::Auto if replicas >= 1 => Ok(Ack::Replicas(1)),
            RedisAck::Auto if has_waitaof && aof => Ok(Ack::Fsync),
            RedisAck::Auto => Ok(Ack::Memory),
        }
    }
}
