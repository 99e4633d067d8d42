//! Audience and computed-trait sync: turn "who is in the audience now" or
//! "what each user's computed value is now" into `identify` calls for the changes only,
//! remembering the last sync in an embedded SQLite database.
//!
//! # Trait names
//!
//! The trait sent is the name snake_cased by [`heck`] ([`trait_key`]): `"High Value Users"`
//! → `high_value_users`, `"VIPs2024 Q1"` → `vi_ps2024_q1` (heck starts a word at an upper
//! case letter that follows a lower case one, so "VIPs" splits as "VI" + "Ps"; name the
//! audience `"VIP 2024 Q1"` to get `vip_2024_q1`). State is kept per trait name, so two
//! names with the same snake_case (`"High Value Users"`, `"high value users"`) are one
//! audience: they write the same trait downstream. Audiences and computed traits keep
//! separate state.
//!
//! # Order of emitting and saving: at-least-once
//!
//! A sync first works out the changes against the saved state, then **emits** one
//! `identify` per change ([`Client::enqueue`] accepted it), and only then **commits** the
//! new state in one SQLite transaction. So:
//!
//! - a crash (or an error, or dropping a [`PendingSync`]) after some changes were emitted
//!   and before the commit leaves the previous state in place: the next sync emits those
//!   changes again. A change is never lost; it may be sent twice;
//! - if an enqueue fails during a sync ([`Error::QueueFull`], [`Error::Closed`],
//!   [`Error::MessageTooLarge`]), nothing of that sync is committed and the error is
//!   returned; the identifies already accepted are still delivered, and sent again by the
//!   next sync;
//! - "emitted" means accepted into the client's queue, not delivered. To commit only what
//!   was delivered, use the two-step form: [`AudienceSync::emit_audience`], then
//!   [`Client::flush`], then [`PendingSync::commit`] only when the flush returned true.
//!
//! # Queue room
//!
//! A first sync of a large audience emits one identify per member, more than the client's
//! `max_queue_size` (default 10,000) can hold. A sync therefore paces itself: before each
//! identify it checks the client's [`Stats`](crate::Stats), and while the queue is full it
//! flushes and waits for room, at most [`AudienceSync::set_queue_wait`] (default
//! [`DEFAULT_WAIT`]) without progress; then the enqueue's [`Error::QueueFull`] is returned.
//! Memory stays bounded by the queue size, and the diff itself is computed inside SQLite.
//!
//! ```no_run
//! use outbound::{AudienceSync, Client, Config};
//! let client = Client::new(Config::default().write_key("KEY"))?;
//! let mut sync = AudienceSync::open("audiences.db")?;
//! let counts = sync.sync_audience(&client, "High Value Users", ["u1", "u2"])?;
//! assert_eq!((counts.joined, counts.left), (2, 0));
//! # Ok::<(), outbound::Error>(())
//! ```

use crate::client::{Client, DEFAULT_WAIT};
use crate::error::Error;
use crate::model::message::Message;
use crate::wire::canonical_json;
use heck::ToSnakeCase;
use rusqlite::{Connection, Row, Transaction, TransactionBehavior};
use serde_json::{Map, Value};
use std::path::Path;
use std::time::{Duration, Instant};

/// Member ids from JSON text: an array of strings or integers (for bindings that pass data
/// as JSON, such as C). Integers are taken as their decimal text, like every id.
pub fn parse_members(what: &str, text: &str) -> Result<Vec<String>, Error> {
    let value: Value = serde_json::from_str(text).map_err(|e| Error::InvalidJson {
        what: what.into(),
        reason: e.to_string(),
    })?;
    let Value::Array(items) = value else {
        return Err(Error::WrongType {
            field: what.into(),
            expected: "an array",
            got: crate::model::message::type_name(&value),
        });
    };
    items
        .into_iter()
        .enumerate()
        .map(|(i, v)| match v {
            Value::String(s) => Ok(s),
            Value::Number(n) if n.is_i64() || n.is_u64() => Ok(n.to_string()),
            other => Err(Error::WrongType {
                field: format!("{what}[{i}]"),
                expected: "a string or an integer",
                got: crate::model::message::type_name(&other),
            }),
        })
        .collect()
}

/// `PRAGMA user_version` of the state database this code reads and writes.
const SCHEMA_VERSION: i64 = 1;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS sync_key (
    id   INTEGER PRIMARY KEY,
    kind TEXT NOT NULL,  -- 'audience' or 'trait'
    key  TEXT NOT NULL,  -- the snake_cased trait name that is sent
    UNIQUE (kind, key)
);
CREATE TABLE IF NOT EXISTS audience_member (
    audience INTEGER NOT NULL REFERENCES sync_key (id),
    user_id  TEXT NOT NULL,
    PRIMARY KEY (audience, user_id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS trait_value (
    trait   INTEGER NOT NULL REFERENCES sync_key (id),
    user_id TEXT NOT NULL,
    value   TEXT NOT NULL,  -- JS-canonical JSON with object keys sorted: what is compared
    PRIMARY KEY (trait, user_id)
) WITHOUT ROWID;
";

/// Per-connection scratch tables holding the sync in progress.
const SCRATCH: &str = "
CREATE TEMP TABLE IF NOT EXISTS incoming_member (
    user_id TEXT PRIMARY KEY
) WITHOUT ROWID;
CREATE TEMP TABLE IF NOT EXISTS incoming_value (
    user_id TEXT PRIMARY KEY,
    value   TEXT NOT NULL,  -- compared and saved
    sent    TEXT NOT NULL   -- the value as given, canonical JSON
) WITHOUT ROWID;
";

/// What an audience sync did. `joined + left` identifies were emitted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SyncCounts {
    /// Members now that were not at the last sync (all of them at the first): sent `true`.
    pub joined: u64,
    /// Members at the last sync that are not now: sent `false`.
    pub left: u64,
    /// Members both then and now: nothing sent.
    pub unchanged: u64,
}

/// What a computed-trait sync did. `set + cleared` identifies were emitted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TraitCounts {
    /// Users whose value is new or differs from the last sync: sent the value.
    pub set: u64,
    /// Users who had a value at the last sync and have none now: sent `null`, then forgotten.
    pub cleared: u64,
    /// Users whose value is the same as at the last sync: nothing sent.
    pub unchanged: u64,
}

/// The trait name sent for an audience or computed trait called `name`: heck's snake_case
/// (`"High Value Users"` → `high_value_users`, `"VIPs2024 Q1"` → `vi_ps2024_q1`).
/// An empty name, or one with no letters or digits, is refused.
pub fn trait_key(name: &str) -> Result<String, Error> {
    name_key("name", name)
}

fn name_key(field: &str, name: &str) -> Result<String, Error> {
    if name.is_empty() {
        return Err(Error::invalid(field, "must not be empty"));
    }
    let key = name.to_snake_case();
    if key.is_empty() {
        return Err(Error::invalid(
            field,
            format!("{name:?} has no letters or digits to make a trait name of"),
        ));
    }
    Ok(key)
}

/// Remembers the last sync of each audience and computed trait, and emits `identify` calls
/// for what changed since (see the [module docs](self) for the order of emitting and saving).
///
/// State lives in SQLite: in a file that survives restarts ([`AudienceSync::open`]), or in
/// memory for the life of the object ([`AudienceSync::in_memory`]). Several processes may
/// share a file; their syncs take turns (each sync holds the write lock until it commits).
pub struct AudienceSync {
    conn: Connection,
    queue_wait: Duration,
}

impl std::fmt::Debug for AudienceSync {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AudienceSync")
            .field("path", &self.conn.path())
            .field("queue_wait", &self.queue_wait)
            .finish()
    }
}

/// The state database failed; reported as a problem with `state_path`.
fn db(e: rusqlite::Error) -> Error {
    Error::config("state_path", format!("audience state database: {e}"))
}

impl AudienceSync {
    /// Opens (or creates) the state database at `path`.
    pub fn open(path: impl AsRef<Path>) -> Result<AudienceSync, Error> {
        let path = path.as_ref();
        let conn = Connection::open(path).map_err(|e| {
            Error::config("state_path", format!("cannot open {}: {e}", path.display()))
        })?;
        AudienceSync::setup(conn)
    }

    /// State kept in memory only: every sync after the first compares with the previous
    /// one, and everything is forgotten when the object is dropped.
    pub fn in_memory() -> Result<AudienceSync, Error> {
        AudienceSync::setup(Connection::open_in_memory().map_err(db)?)
    }

    /// [`AudienceSync::open`] when `path` is given, [`AudienceSync::in_memory`] otherwise.
    pub fn new(path: Option<&Path>) -> Result<AudienceSync, Error> {
        match path {
            Some(path) => AudienceSync::open(path),
            None => AudienceSync::in_memory(),
        }
    }

    fn setup(conn: Connection) -> Result<AudienceSync, Error> {
        conn.busy_timeout(Duration::from_secs(5)).map_err(db)?;
        // WAL with synchronous=NORMAL can lose the last commits on power loss, never on a
        // process crash; a lost commit only means its changes are emitted again.
        let _mode: String = conn
            .pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get(0))
            .map_err(db)?;
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(db)?;
        let version: i64 = conn
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .map_err(db)?;
        if version > SCHEMA_VERSION {
            return Err(Error::config(
                "state_path",
                format!(
                    "audience state was written by a newer outbound (schema {version}, \
                     this one reads {SCHEMA_VERSION})"
                ),
            ));
        }
        conn.execute_batch(SCHEMA).map_err(db)?;
        conn.pragma_update(None, "user_version", SCHEMA_VERSION)
            .map_err(db)?;
        conn.execute_batch(SCRATCH).map_err(db)?;
        Ok(AudienceSync {
            conn,
            queue_wait: DEFAULT_WAIT,
        })
    }

    /// How long a sync waits for room in a full client queue, without any message leaving
    /// it, before it gives up with [`Error::QueueFull`]. Default [`DEFAULT_WAIT`].
    pub fn set_queue_wait(&mut self, wait: Duration) {
        self.queue_wait = wait;
    }

    /// Syncs the audience `name` to exactly `members` (user ids; duplicates count once):
    /// emits `identify` with trait [`trait_key`]`(name)` = `true` for each member who
    /// joined since the last sync (every member at the first sync) and `false` for each who
    /// left, then saves the new membership. Unchanged members get nothing.
    ///
    /// An empty `name` or member id is refused before anything is emitted. On any error
    /// nothing of this sync is saved (see the [module docs](self)).
    pub fn sync_audience<I>(
        &mut self,
        client: &Client,
        name: &str,
        members: I,
    ) -> Result<SyncCounts, Error>
    where
        I: IntoIterator,
        I::Item: AsRef<str>,
    {
        self.emit_audience(client, name, members)?.commit()
    }

    /// The first step of [`AudienceSync::sync_audience`]: emits the changes and returns
    /// them uncommitted. Nothing is saved until [`PendingSync::commit`]; dropping the
    /// result instead leaves the previous state, as a crash would, so the next sync emits
    /// the same changes again. The database stays locked for writing until then.
    pub fn emit_audience<I>(
        &mut self,
        client: &Client,
        name: &str,
        members: I,
    ) -> Result<PendingSync<'_, SyncCounts>, Error>
    where
        I: IntoIterator,
        I::Item: AsRef<str>,
    {
        let key = name_key("audience name", name)?;
        let wait = self.queue_wait;
        let tx = self.begin()?;
        let id = key_id(&tx, "audience", &key)?;
        tx.execute("DELETE FROM temp.incoming_member", [])
            .map_err(db)?;
        let mut total = 0u64;
        {
            let mut insert = tx
                .prepare("INSERT OR IGNORE INTO temp.incoming_member (user_id) VALUES (?1)")
                .map_err(db)?;
            for (i, member) in members.into_iter().enumerate() {
                let member = member.as_ref();
                if member.is_empty() {
                    return Err(Error::invalid(
                        format!("members[{i}]"),
                        "user id must not be empty",
                    ));
                }
                total += insert.execute([member]).map_err(db)? as u64;
            }
        }
        let joined = emit_rows(
            &tx,
            client,
            wait,
            "SELECT user_id FROM temp.incoming_member AS i WHERE NOT EXISTS
                (SELECT 1 FROM audience_member AS m WHERE m.audience = ?1 AND m.user_id = i.user_id)",
            id,
            |row| Ok(Message::identify(row.get::<_, String>(0)?).trait_(key.as_str(), true)),
        )?;
        let left = emit_rows(
            &tx,
            client,
            wait,
            "SELECT user_id FROM audience_member AS m WHERE m.audience = ?1 AND NOT EXISTS
                (SELECT 1 FROM temp.incoming_member AS i WHERE i.user_id = m.user_id)",
            id,
            |row| Ok(Message::identify(row.get::<_, String>(0)?).trait_(key.as_str(), false)),
        )?;
        tx.execute_batch(&format!(
            "DELETE FROM audience_member WHERE audience = {id} AND user_id NOT IN
                (SELECT user_id FROM temp.incoming_member);
             INSERT OR IGNORE INTO audience_member (audience, user_id)
                SELECT {id}, user_id FROM temp.incoming_member;
             DELETE FROM temp.incoming_member;"
        ))
        .map_err(db)?;
        Ok(PendingSync {
            tx,
            counts: SyncCounts {
                joined,
                left,
                unchanged: total - joined,
            },
        })
    }

    /// Syncs the computed trait `name` to `values` (user id → value; for a repeated user id
    /// the last value counts): emits `identify` with trait [`trait_key`]`(name)` = the value
    /// for each user whose value is new or changed since the last sync, and `null` for each
    /// user who had a value then and is absent now (that user is then forgotten: absent
    /// again next time sends nothing). A `null` value counts as absent.
    ///
    /// Values are compared as a receiver sees them: by their JS-canonical JSON with object
    /// keys sorted (`1` and `1.0` are equal; so are `{"a":1,"b":2}` and `{"b":2,"a":1}`).
    ///
    /// An empty `name` or user id is refused before anything is emitted. On any error
    /// nothing of this sync is saved (see the [module docs](self)).
    pub fn sync_trait<I, K>(
        &mut self,
        client: &Client,
        name: &str,
        values: I,
    ) -> Result<TraitCounts, Error>
    where
        I: IntoIterator<Item = (K, Value)>,
        K: AsRef<str>,
    {
        self.emit_trait(client, name, values)?.commit()
    }

    /// The first step of [`AudienceSync::sync_trait`], as [`AudienceSync::emit_audience`]
    /// is of [`AudienceSync::sync_audience`].
    pub fn emit_trait<I, K>(
        &mut self,
        client: &Client,
        name: &str,
        values: I,
    ) -> Result<PendingSync<'_, TraitCounts>, Error>
    where
        I: IntoIterator<Item = (K, Value)>,
        K: AsRef<str>,
    {
        let key = name_key("trait name", name)?;
        let wait = self.queue_wait;
        let tx = self.begin()?;
        let id = key_id(&tx, "trait", &key)?;
        tx.execute("DELETE FROM temp.incoming_value", [])
            .map_err(db)?;
        {
            let mut insert = tx
                .prepare(
                    "INSERT OR REPLACE INTO temp.incoming_value (user_id, value, sent)
                     VALUES (?1, ?2, ?3)",
                )
                .map_err(db)?;
            let mut remove = tx
                .prepare("DELETE FROM temp.incoming_value WHERE user_id = ?1")
                .map_err(db)?;
            for (user, value) in values {
                let user = user.as_ref();
                if user.is_empty() {
                    return Err(Error::invalid("values", "user id must not be empty"));
                }
                if value.is_null() {
                    remove.execute([user]).map_err(db)?;
                    continue;
                }
                let sent = canonical_json::to_string(&value)
                    .map_err(|e| Error::invalid(format!("values[{user:?}]"), e.to_string()))?;
                let compared = if contains_object(&value) {
                    canonical_json::to_string(&sorted(&value))?
                } else {
                    sent.clone()
                };
                insert.execute([user, &compared, &sent]).map_err(db)?;
            }
        }
        let total: i64 = tx
            .query_row("SELECT count(*) FROM temp.incoming_value", [], |r| r.get(0))
            .map_err(db)?;
        let total = total as u64;
        let set = emit_rows(
            &tx,
            client,
            wait,
            "SELECT i.user_id, i.sent FROM temp.incoming_value AS i
             LEFT JOIN trait_value AS t ON t.trait = ?1 AND t.user_id = i.user_id
             WHERE t.value IS NULL OR t.value <> i.value",
            id,
            |row| {
                let sent: String = row.get(1)?;
                let value: Value =
                    serde_json::from_str(&sent).expect("the canonical writer's output is JSON");
                Ok(Message::identify(row.get::<_, String>(0)?).trait_(key.as_str(), value))
            },
        )?;
        let cleared = emit_rows(
            &tx,
            client,
            wait,
            "SELECT user_id FROM trait_value AS t WHERE t.trait = ?1 AND NOT EXISTS
                (SELECT 1 FROM temp.incoming_value AS i WHERE i.user_id = t.user_id)",
            id,
            |row| Ok(Message::identify(row.get::<_, String>(0)?).trait_(key.as_str(), Value::Null)),
        )?;
        tx.execute_batch(&format!(
            "DELETE FROM trait_value WHERE trait = {id} AND user_id NOT IN
                (SELECT user_id FROM temp.incoming_value);
             INSERT OR REPLACE INTO trait_value (trait, user_id, value)
                SELECT {id}, i.user_id, i.value FROM temp.incoming_value AS i
                WHERE NOT EXISTS (SELECT 1 FROM trait_value AS t
                    WHERE t.trait = {id} AND t.user_id = i.user_id AND t.value = i.value);
             DELETE FROM temp.incoming_value;"
        ))
        .map_err(db)?;
        Ok(PendingSync {
            tx,
            counts: TraitCounts {
                set,
                cleared,
                unchanged: total - set,
            },
        })
    }

    /// Takes the write lock now, so concurrent syncs of one file take turns instead of
    /// both emitting the same changes.
    fn begin(&mut self) -> Result<Transaction<'_>, Error> {
        self.conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(db)
    }
}

/// A sync whose changes were emitted but whose new state is not saved yet. Dropping it
/// saves nothing (the next sync emits the same changes again), exactly as a crash would.
#[must_use = "nothing is saved until commit(); dropping it makes the next sync emit the same changes again"]
pub struct PendingSync<'a, C> {
    tx: Transaction<'a>,
    counts: C,
}

impl<C: Copy> PendingSync<'_, C> {
    /// What was emitted.
    pub fn counts(&self) -> C {
        self.counts
    }

    /// Saves the new state in one transaction and returns the counts.
    pub fn commit(self) -> Result<C, Error> {
        self.tx.commit().map_err(db)?;
        Ok(self.counts)
    }
}

impl<C: std::fmt::Debug> std::fmt::Debug for PendingSync<'_, C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PendingSync")
            .field("counts", &self.counts)
            .finish_non_exhaustive()
    }
}

/// The id of the audience or trait `key`, created on its first sync.
fn key_id(tx: &Transaction<'_>, kind: &str, key: &str) -> Result<i64, Error> {
    tx.execute(
        "INSERT OR IGNORE INTO sync_key (kind, key) VALUES (?1, ?2)",
        [kind, key],
    )
    .map_err(db)?;
    tx.query_row(
        "SELECT id FROM sync_key WHERE kind = ?1 AND key = ?2",
        [kind, key],
        |r| r.get(0),
    )
    .map_err(db)
}

/// Emits one message per row of `sql` (bound to the key's id); returns how many.
fn emit_rows(
    tx: &Transaction<'_>,
    client: &Client,
    wait: Duration,
    sql: &str,
    id: i64,
    message: impl Fn(&Row<'_>) -> rusqlite::Result<Message>,
) -> Result<u64, Error> {
    let mut stmt = tx.prepare(sql).map_err(db)?;
    let mut rows = stmt.query([id]).map_err(db)?;
    let mut n = 0;
    while let Some(row) = rows.next().map_err(db)? {
        emit(client, &message(row).map_err(db)?, wait)?;
        n += 1;
    }
    Ok(n)
}

/// Enqueues `msg`, first waiting while the client's queue is full, for at most `wait`
/// during which no message left the queue.
fn emit(client: &Client, msg: &Message, wait: Duration) -> Result<(), Error> {
    // After this long without a message leaving, close a partly filled batch: with a
    // flush_at above the queue size, only a flush (or flush_interval) would send it.
    const STALL: Duration = Duration::from_millis(10);
    let capacity = client.config().max_queue_size as u64;
    // (outcomes so far, when that number last grew)
    let mut progress: Option<(u64, Instant)> = None;
    loop {
        let stats = client.stats();
        if stats.queued + stats.in_flight < capacity {
            break;
        }
        let ended =
            (stats.delivered + stats.failed + stats.dropped).saturating_sub(stats.queue_full);
        let now = Instant::now();
        match progress {
            Some((seen, since)) if seen == ended => {
                if now >= since + wait {
                    break; // let the enqueue report the full queue
                }
                if now >= since + STALL {
                    client.flush(Some(Duration::from_millis(2)));
                    continue;
                }
            }
            _ => progress = Some((ended, now)),
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    client.enqueue(msg).map(drop)
}

fn contains_object(v: &Value) -> bool {
    match v {
        Value::Object(_) => true,
        Value::Array(a) => a.iter().any(contains_object),
        _ => false,
    }
}

/// `v` with every object's keys in sorted order, for comparing values.
fn sorted(v: &Value) -> Value {
    match v {
        Value::Object(map) => {
            let mut entries: Vec<_> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            Value::Object(
                entries
                    .into_iter()
                    .map(|(k, v)| (k.clone(), sorted(v)))
                    .collect::<Map<_, _>>(),
            )
        }
        Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
        other => other.clone(),
    }
}
