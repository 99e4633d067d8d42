//! Where the admin API's sources, their deletions still draining, and the per-source tokens
//! are kept: `data_dir/control.db` (SQLite) for one relay, or the fleet's Redis (the relay's
//! `spool`), so every relay of a fleet serves the same sources. Each change bumps a
//! revision; a relay on Redis reads it every [`POLL`] and, when it moved, reads what changed
//! ([`Store::changes`]: the entries the fleet's log names, or the whole state when the log
//! cannot tell).

mod redis_store;
mod sqlite;

pub use redis_store::RedisStore;
pub use sqlite::SqliteStore;

use super::tokens::TokenRecord;
use crate::config::AuditLimits;
use serde_json::value::RawValue;
use serde_json::Value;
use std::collections::BTreeMap;
use std::time::Duration;

/// How often a relay on a fleet's Redis looks for changes made at another relay.
pub const POLL: Duration = Duration::from_millis(500);

/// A source's body as stored (secrets included): its JSON text, read when needed. Held as
/// a tree, each body cost about 2 KB of memory; as its text, its length.
pub type Body = Box<RawValue>;

/// `body`'s text, to hold.
pub fn body(value: &Value) -> Body {
    RawValue::from_string(value.to_string()).expect("a Value's text is JSON")
}

/// Everything the store holds.
#[derive(Default, Clone, Debug)]
pub struct Snapshot {
    pub revision: u64,
    /// Name → the stored body.
    pub sources: BTreeMap<String, Body>,
    /// Deleted sources still draining: tenant (`config::SourceSpec::tenant`) → (body, until,
    /// Unix ms). Each deleted source has its own, so a new source of its name never ends
    /// the drain of the one before.
    pub deleted: BTreeMap<String, (Value, u64)>,
    pub tokens: BTreeMap<String, TokenRecord>,
    /// Where the fleet's log of changes was when this was read (Redis only).
    pub log: LogMark,
}

/// A point in a fleet's log of changes: the changes logged so far, and the last entry's id.
#[derive(Default, Clone, Debug, PartialEq)]
pub struct LogMark {
    pub logged: u64,
    pub last: String,
}

/// What changed in the store since a revision.
pub enum Changes {
    None,
    /// The entries changed, each as the store has it now.
    Some(Delta),
    /// The whole state: the changes could not be told apart (too many, or made by a relay
    /// that keeps no log).
    All(Snapshot),
}

/// The entries changed since a revision, each as the store has it now (`None`: gone).
#[derive(Default, Debug)]
pub struct Delta {
    pub revision: u64,
    pub log: LogMark,
    pub sources: Vec<(String, Option<Body>)>,
    pub deleted: Vec<(String, Option<(Value, u64)>)>,
    pub tokens: Vec<(String, Option<TokenRecord>)>,
}

/// A page of the audit trail to read: newest first, before the entry `before` (a `next` of
/// the page before), of one source (its name: every source of that name, or with an id the
/// one that has it) or of all.
#[derive(Clone, Debug, Default)]
pub struct AuditQuery {
    pub before: Option<String>,
    pub limit: usize,
    pub source: Option<(String, Option<String>)>,
}

/// Audit entries, newest first, each with its id (the cursor of the entries after it).
pub type AuditEntries = Vec<(String, Value)>;

pub trait Store: Send + Sync {
    /// Where it is, for logs (no password).
    fn location(&self) -> String;
    fn load(&self) -> Result<Snapshot, String>;
    fn revision(&self) -> Result<u64, String>;
    /// Source `name` as stored now (the fleet's copy, not this relay's last load of it).
    fn source(&self, name: &str) -> Result<Option<Value>, String>;
    /// What changed since the state read at `revision` (the log at `log`): by default, when
    /// the revision moved, everything.
    fn changes(&self, revision: u64, log: &LogMark) -> Result<Changes, String> {
        let _ = log;
        match self.revision()? {
            rev if rev == revision => Ok(Changes::None),
            _ => self.load().map(Changes::All),
        }
    }
    /// Sets source `name` (and forgets a deletion kept under that name: a source made before
    /// sources had ids, whose tenant is its name).
    fn put_source(&self, name: &str, body: &RawValue) -> Result<(), String>;
    /// Deletes source `name`, kept as draining under `tenant` until `until_ms`, and its
    /// tokens.
    fn delete_source(
        &self,
        name: &str,
        tenant: &str,
        body: &Value,
        until_ms: u64,
    ) -> Result<(), String>;
    fn put_token(&self, token: &TokenRecord) -> Result<(), String>;
    /// Appends `entry` (JSON with `at_ms`, `source` and `source_id`) to the audit trail, then
    /// drops what `limits` no longer keeps (the oldest first). The revision is not moved:
    /// an entry changes nothing the relays run.
    fn append_audit(&self, entry: &Value, limits: &AuditLimits) -> Result<(), String>;
    /// A page of the audit trail (at most `limit` entries); `None` when `before` is no id
    /// of this store's.
    fn audit(&self, query: &AuditQuery) -> Result<Option<AuditEntries>, String>;
    /// False when there was none.
    fn delete_token(&self, id: &str) -> Result<bool, String>;
}

/// Unix milliseconds now.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// A relay that moves onto a fleet's Redis brings the sources it kept in `data_dir` (those
/// made while its spool was local): copied into `fleet` when the fleet's store was never
/// written (revision 0), so an upgrade or a move loses none; otherwise the fleet's state
/// stands and the local file is left unread (logged).
pub fn import_local(fleet: &dyn Store, data_dir: &std::path::Path) -> Result<(), String> {
    if !data_dir.join("control.db").exists() {
        return Ok(());
    }
    let local = SqliteStore::open(data_dir)?.load()?;
    if local.sources.is_empty() && local.deleted.is_empty() && local.tokens.is_empty() {
        return Ok(());
    }
    if fleet.revision()? != 0 {
        tracing::warn!(
            "data_dir/control.db holds {} source(s) made while this relay's spool was local: \
             not read, {} holds the fleet's sources",
            local.sources.len(),
            fleet.location()
        );
        return Ok(());
    }
    let now = now_ms();
    for (name, body) in &local.sources {
        fleet.put_source(name, body)?;
    }
    for (name, (body, until)) in (local.deleted.iter()).filter(|(_, (_, u))| *u > now) {
        // Keyed by the tenant it drains, as the local store kept it.
        fleet.delete_source(name, name, body, *until)?;
    }
    for token in local.tokens.values() {
        fleet.put_token(token)?;
    }
    tracing::info!(
        sources = local.sources.len(),
        tokens = local.tokens.len(),
        "the admin API's sources of data_dir/control.db copied to {}",
        fleet.location()
    );
    Ok(())
}
