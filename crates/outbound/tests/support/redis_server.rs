//! A real `redis-server` for tests: started on 127.0.0.1 on a free port with AOF
//! (`appendfsync everysec`, as the docs require) in a temp dir, stopped on drop.
//! `scripts/redis-env.sh` installs it when missing.

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
}

impl RedisServer {
    pub fn start() -> RedisServer {
        let port = {
            let l = TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let dir = std::env::temp_dir().join(format!(
            "outbound-redis-{}-{port}-{}",
            std::process::id(),
            fastrand_u64()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let mut s = RedisServer {
            port,
            dir,
            child: None,
        };
        s.launch();
        s
    }

    fn launch(&mut self) {
        let child = Command::new("redis-server")
            .args(["--bind", "127.0.0.1", "--port", &self.port.to_string()])
            .args(["--dir", self.dir.to_str().unwrap()])
            .args(["--appendonly", "yes", "--appendfsync", "everysec"])
            .args(["--save", "", "--daemonize", "no", "--protected-mode", "no"])
            .args(["--loglevel", "warning"])
            .stdout(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                panic!("cannot start redis-server ({e}): run scripts/redis-env.sh to install it")
            });
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Ok(mut c) = self.client().get_connection() {
                if redis::cmd("PING").query::<String>(&mut c).is_ok() {
                    return;
                }
            }
            assert!(Instant::now() < deadline, "redis-server did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
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
        self.launch();
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
            for (_, fields) in entries {
                for (f, v) in fields {
                    if f == "i" {
                        ids.push(String::from_utf8(v).unwrap());
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

fn fastrand_u64() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
}
