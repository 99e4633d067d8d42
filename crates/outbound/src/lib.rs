//! # outbound
//!
//! Server-side events — `identify`, `track`, `page`, `screen`, `group`, `alias`, `delete` —
//! validated on the caller's thread, serialized once into JS-canonical JSON, queued, and
//! delivered in the background to a Segment-compatible ingestion endpoint (batched) and/or
//! up to five signed customer webhooks.
//!
//! ```no_run
//! use outbound::{Client, Config, Message, Webhook};
//! let client = Client::new(
//!     Config::default()
//!         .write_key("WRITE_KEY")
//!         .webhooks(vec![Webhook::new("https://example.com/hook").header("X-Team", "growth")])
//!         .shared_secret("s3cret"),
//! )?;
//! let id = client.enqueue(&Message::track("u1", "Signed Up").property("plan", "pro"))?;
//! client.close(None)?;
//! # Ok::<(), outbound::Error>(())
//! ```
//!
//! Receivers check `X-Signature` with [`verify`] (raw body) or [`verify_value`], and
//! Standard Webhooks signatures (`signature_scheme: SignatureScheme::StandardWebhooks`) with
//! [`verify_standard`].
#![warn(missing_docs)]
// A build without a spool engine (the `sqlite` and `redis` features) keeps the code only an
// engine calls (the spool writer's records, dead letters' rows) rather than gate each part.
#![cfg_attr(
    not(all(feature = "sqlite", feature = "redis")),
    allow(dead_code, unused_variables, unused_imports)
)]

// Folders follow the data flow (ARCHITECTURE.md, "Folders and the dependency rule").
mod delivery;
mod durable;
mod http;
mod model;
mod wire;

#[cfg(feature = "audience")]
pub mod audience;
mod client;
mod delivery_records;
mod engine;
mod error;
mod log;
pub mod testing;

pub use model::subscription;
pub use model::timestamp;
pub use wire::canonical_json;

#[cfg(feature = "audience")]
pub use audience::{parse_members, trait_key, AudienceSync, PendingSync, SyncCounts, TraitCounts};
pub use client::{Answers, Client, DEFAULT_WAIT, MAX_MESSAGE_BYTES};
#[cfg(feature = "redis")]
pub use durable::redis::fleet::FleetRedis;
pub use engine::{Engine, EngineConfig, MAX_IO_THREADS};
pub use error::Error;
pub use log::{env_enabled as debug_from_env, url_for_log, Level, LogSink};
pub use model::attempts::{
    AttemptQuery, AttemptResult, ErrorClass, HealthState, MessageCounts, WebhookAttempt,
    WebhookHealth, WebhookMinute, ANSWER_EXCERPT, ANSWER_KEPT, MAX_ATTEMPT_LOG_SIZE,
};
pub use model::collected::{Collected, Received};
pub use model::config::{
    Auth, Config, Endpoint, EndpointTls, OAuth2, OutcomeCallback, RateLimit, RedisAck,
    RoomWaitHook, SignatureScheme, Webhook, DEFAULT_MAX_WEBHOOK_HEADERS,
    DEFAULT_MAX_WEBHOOK_HEADER_BYTES, MAX_SUBSCRIPTIONS, MAX_WEBHOOKS, SUBSCRIPTION_TIMEOUT,
};
pub use model::dead_letter::{
    DeadLetter, DeadLetterPage, DeadLetterQuery, DeadLetterStats, ReplayProgress,
    MAX_CONTAINS as MAX_DEAD_LETTER_CONTAINS, MAX_PAGE as MAX_DEAD_LETTER_PAGE,
    SEARCH_SCAN as DEAD_LETTER_SEARCH_SCAN,
};
pub use model::message::{parse_headers, parse_object, Kind, Message, Object};
pub use model::network_guard::Cidr;
pub use model::outcome::{Outcome, OutcomeKind, Reason, Stats};
pub use model::retry::RetryPolicy;
pub use model::spool::{RedisUrl, Spool};
pub use serde_json::{json, Value};
pub use time::OffsetDateTime;
pub use wire::ingestion::{MAX_BATCH_BYTES, MAX_BATCH_EVENTS};
pub use wire::json_text::JsonObject;
pub use wire::read_collected::BatchFields;
pub use wire::signature::{
    sign, sign_sha256, sign_standard, verify, verify_sha256, verify_standard, verify_standard_at,
    verify_value, SignatureError, DEFAULT_TOLERANCE,
};

/// This library's version.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
