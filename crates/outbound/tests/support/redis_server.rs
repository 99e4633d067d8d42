//! A real `redis-server` for tests: started on 127.0.0.1 on a free port with AOF
//! (`appendfsync everysec`, as the docs require) in a temp dir, stopped on drop.
//! `scripts/redis-env.sh` installs it when missing.

// Each test binary that includes this file uses only part of it.
#![allow(dead_code)]

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A stream entry as XRANGE gives it: id, fields.
type Entry = (String, Vec<(String, Vec<u8>)>);

pub struct RedisServer {
    pub port: u16,
    pub dir: PathBuf,
    child: Option<Child>,
    /// Arguments beyond the usual ones (`--replicaof ...`).
    extra: Vec<String>,
}

impl RedisServer {
    pub fn start() -> RedisServer {
        RedisServer::start_with(&[])
    }

    /// A replica of the server on `port` (on a port of its own).
    pub fn replica_of(port: u16) -> RedisServer {
        RedisServer::start_with(&["--replicaof", "127.0.0.1", &port.to_string()])
    }

    /// A server with `extra` arguments.
    pub fn start_with(extra: &[&str]) -> RedisServer {
        let dir = std::env::temp_dir().join(format!(
            "outbound-redis-{}-{}",
            std::process::id(),
            fastrand_u64()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let mut s = RedisServer {
            port: 0,
            dir,
            child: None,
            extra: extra.iter().map(|a| a.to_string()).collect(),
        };
        // A port found free may be taken before redis-server binds it (tests run in
        // parallel): then this redis-server exits, and another port is tried.
        for _ in 0..20 {
            s.port = free_port();
            if s.launch() {
                return s;
            }
        }
        panic!("redis-server did not start on any of 20 free ports");
    }

    /// Starts redis-server on `self.port`; true once it answers as this very process (by
    /// its pid, so a server of another test on a reused port is never mistaken for it),
    /// false if it exited (the port was taken).
    fn launch(&mut self) -> bool {
        let mut child = Command::new("redis-server")
            .args(["--bind", "127.0.0.1", "--port", &self.port.to_string()])
            .args(["--dir", self.dir.to_str().unwrap()])
            .args(["--appendonly", "yes", "--appendfsync", "everysec"])
            .args(["--save", "", "--daemonize", "no", "--protected-mode", "no"])
            .args(["--loglevel", "warning"])
            .args(&self.extra)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                panic!("cannot start redis-server ({e}): run scripts/redis-env.sh to install it")
            });
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if child.try_wait().unwrap().is_some() {
                return false;
            }
            if self.answers_as(child.id()) {
                self.child = Some(child);
                return true;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                panic!("redis-server on port {} did not answer in 10 s", self.port);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Whether the server on `self.port` is up, is process `pid` and has loaded its AOF.
    fn answers_as(&self, pid: u32) -> bool {
        let t = Duration::from_secs(1);
        let Ok(mut c) = self.client().get_connection_with_timeout(t) else {
            return false;
        };
        let _ = c.set_read_timeout(Some(t));
        // INFO answers while the AOF is still loading (other commands are refused with
        // LOADING then): the server is up once it is ours and done loading.
        // (Plain INFO: its default sections hold both, on every version.)
        let Ok(info) = redis::cmd("INFO").query::<String>(&mut c) else {
            return false; // not Redis
        };
        info.lines()
            .any(|l| l.trim() == format!("process_id:{pid}"))
            && info.lines().any(|l| l.trim() == "loading:0")
    }

    /// The `spool` setting for this server under `prefix`.
    pub fn spool(&self, prefix: &str) -> PathBuf {
        PathBuf::from(format!("redis://127.0.0.1:{}/0?prefix={prefix}", self.port))
    }

    pub fn client(&self) -> redis::Client {
        redis::Client::open(format!("redis://127.0.0.1:{}/0", self.port)).unwrap()
    }

    pub fn conn(&self) -> redis::Connection {
        self.client().get_connection().unwrap()
    }

    /// The pid of the running server.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Waits (up to 10 s) until this replica has caught up with its primary.
    pub fn wait_in_sync(&self) {
        let end = Instant::now() + Duration::from_secs(10);
        while Instant::now() < end {
            let info: String = redis::cmd("INFO")
                .arg("replication")
                .query(&mut self.conn())
                .unwrap_or_default();
            if info.lines().any(|l| l.trim() == "master_link_status:up") {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("replica on port {} not in sync in 10 s", self.port);
    }

    /// SIGKILL: no shutdown, no last fsync (AOF everysec may lose the last second).
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Starts again on the same port and directory (the AOF is replayed).
    pub fn restart(&mut self) {
        self.kill();
        // The same port: clients hold its URL. Redis binds with SO_REUSEADDR, so only
        // another process taking the port in between could stop it.
        assert!(
            self.launch(),
            "redis-server could not bind port {} again",
            self.port
        );
    }

    /// Every stream under `prefix` and the message ids its entries hold.
    pub fn spooled_ids(&self, prefix: &str) -> Vec<String> {
        let mut c = self.conn();
        let keys: Vec<String> = redis::cmd("KEYS")
            .arg(format!("{{{prefix}:*}}:s"))
            .query(&mut c)
            .unwrap();
        let mut ids = Vec::new();
        for k in keys {
            let entries: Vec<Entry> = redis::cmd("XRANGE")
                .arg(&k)
                .arg("-")
                .arg("+")
                .query(&mut c)
                .unwrap();
            let progress = format!("{}:p", k.strip_suffix(":s").unwrap());
            for (entry, fields) in entries {
                for (f, v) in fields {
                    match f.as_str() {
                        // A commit group: the records not yet removed (its done bitmap).
                        "r" if v[0] == 2 || v[0] == 3 => {
                            let done: Option<Vec<u8>> = redis::cmd("HGET")
                                .arg(&progress)
                                .arg(format!("{entry}:d"))
                                .query(&mut c)
                                .unwrap();
                            let done = done.unwrap_or_default();
                            for (i, record) in group_records(&v).into_iter().enumerate() {
                                if done.get(i / 8).is_some_and(|b| b & (1 << (i % 8)) != 0) {
                                    continue;
                                }
                                ids.push(packed_id(record));
                            }
                        }
                        "r" => ids.push(packed_id(&v)),
                        // The old layout, one field per part.
                        "i" => ids.push(String::from_utf8(v).unwrap()),
                        _ => {}
                    }
                }
            }
        }
        ids
    }

    /// Every key under `prefix`.
    pub fn keys(&self, prefix: &str) -> Vec<String> {
        let mut c = self.conn();
        let mut keys: Vec<String> = redis::cmd("KEYS")
            .arg(format!("*{prefix}:*"))
            .query(&mut c)
            .unwrap();
        keys.sort();
        keys
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The packed records of a commit group: layout 2 (u8 layout, u32 count, then each record
/// as u32 length and its layout-1 bytes) or 3 (u8 layout, u16 names, each as u16 length
/// and bytes, u32 count, then each record as u16 name index, u32 length and its bytes).
fn group_records(v: &[u8]) -> Vec<&[u8]> {
    let mut at = 1;
    if v[0] == 3 {
        let names = u16::from_le_bytes(v[1..3].try_into().unwrap());
        at = 3;
        for _ in 0..names {
            at += 2 + u16::from_le_bytes(v[at..at + 2].try_into().unwrap()) as usize;
        }
    }
    let n = u32::from_le_bytes(v[at..at + 4].try_into().unwrap()) as usize;
    at += 4;
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        if v[0] == 3 {
            at += 2;
        }
        let len = u32::from_le_bytes(v[at..at + 4].try_into().unwrap()) as usize;
        out.push(&v[at + 4..at + 4 + len]);
        at += 4 + len;
    }
    out
}

/// The message id of a packed entry (`durable/redis/keys.rs`, `Packed`): layout, flags,
/// mask, accepted ms, [first attempt ms if flags & 1], hooks key, u32 length, id.
fn packed_id(v: &[u8]) -> String {
    assert_eq!(v[0], 1, "packed layout 1");
    let at = 3 + 8 + if v[1] & 1 != 0 { 8 } else { 0 } + 8;
    let n = u32::from_le_bytes(v[at..at + 4].try_into().unwrap()) as usize;
    String::from_utf8(v[at + 4..at + 4 + n].to_vec()).unwrap()
}

fn free_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

fn fastrand_u64() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
}

/// A `redis-sentinel` on 127.0.0.1 watching the primary on `primary_port` as `name` (quorum
/// 2, down after 1 s), with its config in a temp dir (Sentinel rewrites it). Stopped on drop.
/// `scripts/redis-env.sh` installs Debian's redis-sentinel.
pub struct RedisSentinel {
    pub port: u16,
    dir: PathBuf,
    child: Option<Child>,
}

impl RedisSentinel {
    pub fn start(name: &str, primary_port: u16) -> RedisSentinel {
        for _ in 0..20 {
            let port = free_port();
            let dir = std::env::temp_dir().join(format!(
                "outbound-sentinel-{}-{}",
                std::process::id(),
                fastrand_u64()
            ));
            std::fs::create_dir_all(&dir).unwrap();
            let conf = dir.join("sentinel.conf");
            std::fs::write(
                &conf,
                format!(
                    "port {port}\nbind 127.0.0.1\ndaemonize no\nprotected-mode no\n\
                     dir {}\nloglevel warning\n\
                     sentinel monitor {name} 127.0.0.1 {primary_port} 2\n\
                     sentinel down-after-milliseconds {name} 1000\n\
                     sentinel failover-timeout {name} 3000\n",
                    dir.display()
                ),
            )
            .unwrap();
            let mut child = Command::new("redis-sentinel")
                .arg(&conf)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap_or_else(|e| {
                    panic!("cannot start redis-sentinel ({e}): run scripts/redis-env.sh")
                });
            let end = Instant::now() + Duration::from_secs(10);
            while Instant::now() < end {
                if child.try_wait().unwrap().is_some() {
                    break; // the port was taken: another one
                }
                if primary_of(port, name).is_some() {
                    return RedisSentinel {
                        port,
                        dir,
                        child: Some(child),
                    };
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = child.kill();
            let _ = child.wait();
            let _ = std::fs::remove_dir_all(&dir);
        }
        panic!("redis-sentinel did not start on any of 20 free ports");
    }

    /// The port of the primary it names for `name`, if it answers.
    pub fn primary(&self, name: &str) -> Option<u16> {
        primary_of(self.port, name)
    }
}

/// The port of the primary the Sentinel on `port` names for `name`, if it answers.
fn primary_of(port: u16, name: &str) -> Option<u16> {
    let client = redis::Client::open(format!("redis://127.0.0.1:{port}")).ok()?;
    let mut c = client
        .get_connection_with_timeout(Duration::from_secs(1))
        .ok()?;
    let addr: Option<(String, u16)> = redis::cmd("SENTINEL")
        .arg("get-master-addr-by-name")
        .arg(name)
        .query(&mut c)
        .ok()?;
    addr.map(|(_, port)| port)
}

impl Drop for RedisSentinel {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A primary, a replica in sync with it, and three Sentinels watching it as `name`, ready
/// for a failover (each knows the replica and the other two).
pub fn sentinel_fleet(name: &str) -> (RedisServer, RedisServer, Vec<RedisSentinel>) {
    let primary = RedisServer::start();
    let replica = RedisServer::replica_of(primary.port);
    replica.wait_in_sync();
    let sentinels: Vec<RedisSentinel> = (0..3)
        .map(|_| RedisSentinel::start(name, primary.port))
        .collect();
    wait_ready(&sentinels, name);
    (primary, replica, sentinels)
}

/// Waits until every Sentinel watching `name` knows the replica and the other Sentinels (a failover needs
/// both).
pub fn wait_ready(sentinels: &[RedisSentinel], name: &str) {
    let end = Instant::now() + Duration::from_secs(30);
    'again: while Instant::now() < end {
        for s in sentinels {
            let mut c = redis::Client::open(format!("redis://127.0.0.1:{}", s.port))
                .unwrap()
                .get_connection()
                .unwrap();
            let info: Vec<String> = redis::cmd("SENTINEL")
                .arg("master")
                .arg(name)
                .query(&mut c)
                .unwrap();
            let field = |k: &str| {
                let at = info.iter().position(|f| f == k)?;
                info.get(at + 1)?.parse::<u32>().ok()
            };
            if field("num-slaves") != Some(1) || field("num-other-sentinels") != Some(2) {
                std::thread::sleep(Duration::from_millis(100));
                continue 'again;
            }
        }
        return;
    }
    panic!("the Sentinels did not see each other and the replica in 30 s");
}

/// The spool URL of the primary `sentinels` watch as `name`, keys under `prefix`.
pub fn sentinel_url(sentinels: &[RedisSentinel], name: &str, prefix: &str) -> String {
    let hosts: Vec<String> = (sentinels.iter())
        .map(|s| format!("127.0.0.1:{}", s.port))
        .collect();
    format!(
        "redis+sentinel://{}/{name}/0?prefix={prefix}",
        hosts.join(",")
    )
}

/// When the Sentinels name `replica` the primary of `name`, after its primary was killed at `killed`.
pub fn promotion(
    sentinels: &[RedisSentinel],
    name: &str,
    replica: &RedisServer,
    killed: Instant,
) -> Instant {
    loop {
        if sentinels[0].primary(name) == Some(replica.port) {
            return Instant::now();
        }
        assert!(killed.elapsed() < Duration::from_secs(30), "no promotion");
        std::thread::sleep(Duration::from_millis(20));
    }
}
