//! Where the admin API's sources, their deletions still draining, and the per-source tokens
//! are kept: `data_dir/control.db` (SQLite) for one relay, or the fleet's Redis (the relay's
//! `spool`), so every relay of a fleet serves the same sources. Each change bumps a
//! revision; a relay on Redis reads it every [`POLL`] and loads the whole state when it moved.

mod redis_store;
mod sqlite;

pub use redis_store::RedisStore;
pub use sqlite::SqliteStore;

use super::tokens::TokenRecord;
use serde_json::Value;
use std::collections::BTreeMap;
use std::time::Duration;

/// How often a relay on a fleet's Redis looks for changes made at another relay.
pub const POLL: Duration = Duration::from_millis(500);

/// Everything the store holds.
#[derive(Default, Clone, Debug)]
pub struct Snapshot {
    pub revision: u64,
    /// Name → the stored body (secrets included).
    pub sources: BTreeMap<String, Value>,
    /// Deleted sources still draining: name → (body, until, Unix ms).
    pub deleted: BTreeMap<String, (Value, u64)>,
    pub tokens: BTreeMap<String, TokenRecord>,
}

pub trait Store: Send + Sync {
    /// Where it is, for logs (no password).
    fn location(&self) -> String;
    fn load(&self) -> Result<Snapshot, String>;
    fn revision(&self) -> Result<u64, String>;
    /// Sets source `name` (and forgets a deletion of that name).
    fn put_source(&self, name: &str, body: &Value) -> Result<(), String>;
    /// Deletes source `name`, kept as draining until `until_ms`, and its tokens.
    fn delete_source(&self, name: &str, body: &Value, until_ms: u64) -> Result<(), String>;
    fn put_token(&self, token: &TokenRecord) -> Result<(), String>;
    /// False when there was none.
    fn delete_token(&self, id: &str) -> Result<bool, String>;
}

/// Unix milliseconds now.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}
