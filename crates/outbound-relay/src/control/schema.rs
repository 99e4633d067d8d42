//! The admin API's bodies as types: what each route takes and answers. The OpenAPI document is
//! generated from them (`openapi.rs`), so it says what the code does. Every field is
//! snake_case, as relay.toml's keys are (a source's body is a `[[sources]]` table as JSON).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use utoipa::ToSchema;

mod subscription;

pub use subscription::SubscriptionInput;

/// A refusal: `message` (`field: reason` when a field is at fault) and the field.
#[derive(Serialize, ToSchema)]
pub struct Refusal {
    /// Always false.
    pub success: bool,
    pub message: String,
    /// The body's field (as relay.toml names it: `webhooks[0].url`), the header
    /// (`authorization`) or `path` at fault; null when none is.
    pub field: Option<String>,
}

/// `{"success": true}`.
#[derive(Serialize, ToSchema)]
pub struct Done {
    pub success: bool,
}

/// Who the token in hand is.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum CallerKind {
    Admin,
    Source,
}

/// What the token in hand reaches.
#[derive(Serialize, ToSchema)]
pub struct Whoami {
    pub caller: CallerKind,
    /// A source token's source.
    pub source: Option<String>,
    /// A source token's id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
}

/// Who keeps a source's settings.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ManagedBy {
    /// relay.toml (changed there, and SIGHUP).
    File,
    /// The admin API.
    Api,
}

/// A write-only value, as shown: whether one is set.
#[derive(Serialize, Deserialize, ToSchema)]
pub struct HasValue {
    pub has_value: bool,
}

/// A webhook as shown: its headers' values and its endpoint's secrets are write-only. The
/// endpoint settings left unset are left out.
#[derive(Serialize, ToSchema)]
pub struct WebhookView {
    pub url: String,
    pub headers: BTreeMap<String, HasValue>,
    pub enabled: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub auth: Option<AuthView>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls: Option<TlsView>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signature_header: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signature_scheme: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate_limit: Option<RateLimit>,
}

/// How the endpoint authenticates the relay, as shown: passwords, tokens and client secrets
/// are write-only.
#[derive(Serialize, ToSchema)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum AuthView {
    /// `Authorization: Basic`.
    Basic { user: String, password: HasValue },
    /// `Authorization: Bearer <token>`.
    Bearer { token: HasValue },
    /// OAuth2 client credentials: a token asked of `token_url`, sent as a bearer token.
    #[serde(rename = "oauth2")]
    OAuth2 {
        token_url: String,
        client_id: String,
        /// Shown when a secret is kept (none with a client assertion key).
        #[serde(skip_serializing_if = "Option::is_none")]
        client_secret: Option<HasValue>,
        /// Shown when a key signs a JWT client assertion (RFC 7523) instead of a secret.
        #[serde(skip_serializing_if = "Option::is_none")]
        client_assertion_key: Option<HasValue>,
        #[serde(skip_serializing_if = "Option::is_none")]
        scope: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        audience: Option<String>,
    },
}

/// The endpoint's TLS as shown: the client key is write-only.
#[derive(Serialize, ToSchema)]
pub struct TlsView {
    /// PEM text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_cert: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_key: Option<HasValue>,
    /// PEM text: the only roots the endpoint's certificate may chain to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ca_certs: Option<String>,
}

/// At most `per_second` requests a second to the endpoint, bursts of `burst` (excess waits).
#[derive(Serialize, Deserialize, ToSchema)]
pub struct RateLimit {
    pub per_second: u32,
    /// Left out: `per_second`.
    #[serde(default)]
    pub burst: Option<u32>,
}

/// A forward as shown.
#[derive(Serialize, ToSchema)]
pub struct ForwardView {
    pub endpoint: String,
    pub has_write_key: bool,
}

/// The delivery settings a source sets itself (unset: relay.toml's top level decides, and
/// the field is left out). Durations in seconds.
#[derive(Serialize, Default, ToSchema)]
pub struct Delivery {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_retry_duration: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_backoff: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_base: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_retry_after: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_in_flight: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workers: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signature_scheme: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub webhook_user_agent: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gzip: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flush_at: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_batch_messages: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flush_interval: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_queue_size: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue_full_wait: Option<f64>,
    /// PEM text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ca_certs: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spool_max_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dead_letters: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dead_letter_retention: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dead_letter_max_bytes: Option<u64>,
    /// Private networks its webhooks may reach (CIDR); the admin's to grant.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allowed_networks: Option<Vec<String>>,
    /// The same for its forward endpoint.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub forward_allowed_networks: Option<Vec<String>>,
}

/// A source as the API shows it: every field a PUT takes but the write-only values (whether
/// each is set instead).
#[derive(Serialize, ToSchema)]
pub struct Source {
    pub name: String,
    /// Tells it from an earlier source of its name (null: relay.toml's, or made before
    /// sources had ids).
    pub id: Option<String>,
    pub managed_by: ManagedBy,
    pub write_keys: Vec<String>,
    pub allowed_origins: Vec<String>,
    pub webhooks: Vec<WebhookView>,
    /// Its subscriptions as set: each as our settings (`name`, `trigger` in Segment's FQL,
    /// `url`, `method`, `headers`, `data` as a mapping-kit object, `enabled`, and its
    /// endpoint's `auth`, `tls`, `signature_header`, `signature_scheme`, `rate_limit` as a
    /// webhook's) or as Segment's export writes it (`name`, `subscribe`, `mapping`, and the
    /// same endpoint settings beside them). Header values and endpoint secrets are shown as
    /// `{"has_value": true}`. Up to 50.
    #[schema(value_type = Vec<Object>)]
    pub subscriptions: Vec<serde_json::Value>,
    pub has_shared_secret: bool,
    pub forward: Option<ForwardView>,
    #[serde(flatten)]
    pub delivery: Delivery,
}

/// A source at a glance.
#[derive(Serialize, ToSchema)]
pub struct Summary {
    pub webhooks: usize,
    /// Webhooks on.
    pub enabled: usize,
    /// The worst state of its webhooks that are on (null: none is on).
    pub state: Option<String>,
    /// Webhooks on and failing, circuit open or disabled (`throttled` is not counted: it
    /// works, at its rate limit).
    pub unhealthy: usize,
    /// Webhooks on that were never tried (no attempt since the relay started): `healthy`
    /// says nothing of them yet.
    pub untried: usize,
    /// Messages accepted and not yet ended.
    pub waiting: u64,
    /// Dead letters kept (null: it keeps none).
    pub dead_letters: Option<u64>,
    /// Attempts of its webhooks that are on, in the last 5 minutes.
    pub attempts_5m: u64,
    /// The share of those that failed, 0 to 1 (null: none was made).
    pub failure_rate_5m: Option<f64>,
}

/// A source in a list: with its summary when the list is paged (left out while its settings
/// change).
#[derive(Serialize, ToSchema)]
pub struct Listed {
    #[serde(flatten)]
    pub source: Source,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary: Option<Summary>,
}

/// The sources: all of them, or a page.
#[derive(Serialize, ToSchema)]
pub struct SourceList {
    pub sources: Vec<Listed>,
    /// `after` for the next page (null: the last page, or not paged).
    pub next: Option<String>,
    /// How many match `q` in all.
    pub matched: usize,
}

/// A webhook of a PUT: a header's value, and each secret of `auth` and `tls`, is a string,
/// null (cleared) or `{"has_value": true}` (kept, for the same URL; an auth secret also for
/// the same `type`, and OAuth2's for the same `token_url`).
#[derive(Deserialize, ToSchema)]
#[allow(dead_code)]
pub struct WebhookInput {
    pub url: String,
    #[serde(default)]
    pub headers: BTreeMap<String, HeaderInput>,
    #[serde(default)]
    pub enabled: Option<bool>,
    pub auth: Option<AuthInput>,
    pub tls: Option<TlsInput>,
    /// The header the signature goes in instead of `X-Signature` / `X-Signature-256` (not
    /// with `standard-webhooks`).
    pub signature_header: Option<String>,
    /// `x-signature`, `standard-webhooks` or `hmac-sha256`: instead of the source's.
    pub signature_scheme: Option<String>,
    pub rate_limit: Option<RateLimit>,
}

/// How the endpoint authenticates the relay, by `type`.
#[derive(Deserialize, ToSchema)]
#[serde(tag = "type", rename_all = "lowercase")]
#[allow(dead_code)]
pub enum AuthInput {
    Basic {
        user: String,
        password: Option<HeaderInput>,
    },
    Bearer {
        token: HeaderInput,
    },
    #[serde(rename = "oauth2")]
    OAuth2 {
        token_url: String,
        client_id: String,
        /// Required unless `client_assertion_key` is given.
        client_secret: Option<HeaderInput>,
        /// PEM text of an RSA or P-256 private key: the client proves itself with a JWT it
        /// signs (RFC 7523) instead of a secret.
        client_assertion_key: Option<HeaderInput>,
        scope: Option<String>,
        audience: Option<String>,
    },
}

/// The endpoint's TLS in a PEM text each (a path would be read on the relay's host).
#[derive(Deserialize, ToSchema)]
#[allow(dead_code)]
pub struct TlsInput {
    pub client_cert: Option<String>,
    pub client_key: Option<HeaderInput>,
    /// Replaces the trusted roots for this endpoint (a private CA).
    pub ca_certs: Option<String>,
}

/// A write-only value in a PUT: the value, or `{"has_value": true}` to keep it.
#[derive(Deserialize, ToSchema)]
#[serde(untagged)]
#[allow(dead_code)]
pub enum HeaderInput {
    Value(String),
    Kept(HasValue),
}

/// The forward of a PUT (`write_key` left out: it stays).
#[derive(Deserialize, ToSchema)]
#[allow(dead_code)]
pub struct ForwardInput {
    pub endpoint: Option<String>,
    pub write_key: Option<String>,
}

/// A source's body in a PUT: the fields of a `[[sources]]` table of relay.toml. Read in two
/// steps (`resource.rs`): its keys before any value, then into the file's own shape, so this
/// type documents it and a test keeps the two in step. Write-only fields left out keep their
/// value; `null` clears them.
#[derive(Deserialize, ToSchema)]
#[allow(dead_code)]
pub struct SourceInput {
    /// The name in the path (optional).
    pub name: Option<String>,
    pub write_keys: Vec<String>,
    pub shared_secret: Option<String>,
    pub allowed_origins: Option<Vec<String>>,
    pub webhooks: Option<Vec<WebhookInput>>,
    /// Up to 50, each its own destination (what its trigger matches, mapped).
    pub subscriptions: Option<Vec<SubscriptionInput>>,
    pub forward: Option<ForwardInput>,
    pub timeout: Option<f64>,
    pub max_retry_duration: Option<f64>,
    pub max_backoff: Option<f64>,
    /// The first backoff's ceiling, doubled at each attempt up to `max_backoff`.
    pub retry_base: Option<f64>,
    pub max_retry_after: Option<f64>,
    pub max_in_flight: Option<usize>,
    pub workers: Option<usize>,
    pub signature_scheme: Option<String>,
    pub webhook_user_agent: Option<String>,
    pub gzip: Option<bool>,
    pub flush_at: Option<usize>,
    pub max_batch_messages: Option<usize>,
    pub flush_interval: Option<f64>,
    pub max_queue_size: Option<usize>,
    pub queue_full_wait: Option<f64>,
    /// PEM text (a path would be read on the relay's host).
    pub ca_certs: Option<String>,
    pub spool_max_bytes: Option<u64>,
    pub dead_letters: Option<bool>,
    pub dead_letter_retention: Option<f64>,
    pub dead_letter_max_bytes: Option<u64>,
    /// The admin token alone sets it.
    pub allowed_networks: Option<Vec<String>>,
    /// The admin token alone sets it.
    pub forward_allowed_networks: Option<Vec<String>>,
    /// Shown by GET; ignored.
    pub id: Option<String>,
    /// Shown by GET; ignored.
    pub managed_by: Option<String>,
    /// Shown by GET; ignored.
    pub has_shared_secret: Option<bool>,
}

/// A token as listed (never the token itself).
#[derive(Serialize, ToSchema)]
pub struct Token {
    pub id: String,
    pub source: String,
    /// Unix milliseconds.
    pub created_ms: u64,
}

/// A source's tokens.
#[derive(Serialize, ToSchema)]
pub struct TokenList {
    pub tokens: Vec<Token>,
}

/// A token just made: the token itself is shown this once.
#[derive(Serialize, ToSchema)]
pub struct NewToken {
    pub id: String,
    pub source: String,
    pub created_ms: u64,
    pub token: String,
}

/// A webhook's last error.
#[derive(Serialize, ToSchema)]
pub struct LastError {
    pub at: Option<String>,
    pub message: String,
}

/// A webhook's health.
#[derive(Serialize, ToSchema)]
pub struct Health {
    pub webhook: usize,
    /// Scheme, host and port.
    pub url: String,
    /// `healthy`, `failing`, `circuit_open`, `throttled` (messages wait for its rate limit)
    /// or `disabled` (the network guard refuses it).
    pub state: String,
    pub attempts_5m: u64,
    pub delivered_5m: u64,
    pub success_rate_5m: Option<f64>,
    pub p50_ms: Option<f64>,
    pub p99_ms: Option<f64>,
    pub consecutive_failures: u64,
    pub last_error: Option<LastError>,
    pub last_success: Option<String>,
    pub waiting: u64,
    /// Requests that waited for its rate limit, since its source's settings last changed
    /// (or the relay started).
    pub throttled: u64,
}

/// A source's webhooks' health.
#[derive(Serialize, ToSchema)]
pub struct SourceHealth {
    pub source: String,
    pub webhooks: Vec<Health>,
}

/// A source's last hour, minute by minute, oldest first (the last minute is the one under
/// way); final outcomes (a retry is not a failure).
#[derive(Serialize, ToSchema)]
pub struct Activity {
    pub source: String,
    /// The start of the oldest minute.
    pub from: Option<String>,
    /// The end of the minute under way.
    pub to: Option<String>,
    pub bucket_seconds: u64,
    pub delivered: Vec<u64>,
    pub failed: Vec<u64>,
}

/// One attempt to a webhook.
#[derive(Serialize, ToSchema)]
pub struct Attempt {
    pub webhook: usize,
    pub message_id: String,
    pub at: Option<String>,
    pub duration_ms: f64,
    /// `delivered`, `retryable` or `permanent`.
    pub result: String,
    pub status: Option<u16>,
    /// What went wrong without an answer: `timeout`, `refused`, `reset`, `tls`, `dns`,
    /// `blocked`, `connection`, `other`.
    pub error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// A failure's answer, its first bytes, as text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
    /// The same when it is not UTF-8.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub answer_base64: Option<String>,
}

/// A webhook's last attempts, newest first.
#[derive(Serialize, ToSchema)]
pub struct Attempts {
    pub source: String,
    pub webhook: usize,
    pub attempts: Vec<Attempt>,
}

/// A dead letter.
#[derive(Serialize, ToSchema)]
pub struct DeadLetter {
    pub message_id: String,
    pub failed_at: Option<String>,
    pub reason: String,
    pub detail: String,
    pub rounds: u32,
    pub first_attempt_at: Option<String>,
    pub size: u64,
    pub replaying: bool,
    pub last_attempts: Vec<Attempt>,
    /// The webhook body as sent (JSON); one dead letter's only, not a page's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub body: Option<serde_json::Value>,
}

/// How many dead letters a source keeps.
#[derive(Serialize, ToSchema)]
pub struct DeadLetterStats {
    pub count: u64,
    pub bytes: u64,
    pub evicted: u64,
    pub expired: u64,
}

/// A page of dead letters, newest first.
#[derive(Serialize, ToSchema)]
pub struct DeadLetterPage {
    pub source: String,
    pub dead_letters: Vec<DeadLetter>,
    /// `cursor` of the next page.
    pub next: Option<String>,
    pub stats: DeadLetterStats,
}

/// How a replay goes.
#[derive(Serialize, ToSchema)]
pub struct ReplayProgress {
    pub id: u64,
    pub total: u64,
    pub sent: u64,
    pub delivered: u64,
    pub failed: u64,
    pub skipped: u64,
    pub done: bool,
    pub started_at: Option<String>,
    /// This resource's path.
    pub progress: String,
}

/// A webhook named by its index (from 0) or its URL.
#[derive(Deserialize, ToSchema)]
#[serde(untagged)]
pub enum WebhookRef {
    Index(u64),
    Url(String),
}

/// What a replay sends: every dead letter that failed in a range of time (either end open),
/// to every webhook or one.
#[derive(Deserialize, Default, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ReplayRequest {
    /// Failed at or after (RFC 3339).
    #[serde(default)]
    pub since: Option<String>,
    /// Failed before (RFC 3339).
    #[serde(default)]
    pub until: Option<String>,
    #[serde(default)]
    pub webhook: Option<WebhookRef>,
    /// Only count what it would send (200 with `total`), sending nothing: what a console
    /// shows before it asks.
    #[serde(default)]
    pub dry_run: bool,
}

/// What a replay would send (a dry run).
#[derive(Serialize, ToSchema)]
pub struct ReplayCount {
    /// Dead letters of the range not being replayed already.
    pub total: u64,
}

/// One dead letter's replay: to every webhook or one.
#[derive(Deserialize, Default, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ReplayOne {
    #[serde(default)]
    pub webhook: Option<WebhookRef>,
}

/// A user's deletion.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Deletion {
    pub user_id: String,
    /// The sources to notify (left out: every source with a webhook on).
    #[serde(default)]
    pub sources: Option<Vec<String>>,
}

/// A deletion committed to each source's spool.
#[derive(Serialize, ToSchema)]
pub struct DeletionSent {
    pub success: bool,
    pub sources: Vec<String>,
    /// Each source's `delete` message id.
    pub message_ids: BTreeMap<String, String>,
}

/// An audience's members: user ids, strings or integers.
#[derive(Deserialize, ToSchema)]
#[allow(dead_code)]
pub struct Audience {
    #[schema(value_type = Vec<serde_json::Value>)]
    pub members: serde_json::Value,
}

/// An audience synced.
#[derive(Serialize, ToSchema)]
pub struct AudienceSynced {
    pub success: bool,
    pub source: String,
    /// The trait each identify carried (the audience's name, snake_cased).
    #[serde(rename = "trait")]
    pub trait_key: String,
    pub joined: u64,
    pub left: u64,
    pub unchanged: u64,
}

/// Who did what an audit entry records.
#[derive(Serialize, Deserialize, Debug, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Actor {
    /// The admin token.
    Admin,
    /// A source's token.
    Source,
    /// The relay itself (a token revoked because its source left relay.toml).
    Relay,
}

/// Who: the admin token, a source's token (its id and source), or the relay.
#[derive(Serialize, Deserialize, ToSchema)]
pub struct AuditBy {
    pub caller: Actor,
    /// A source token's source.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// A source token's id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
}

/// The facts of an action (each where it applies; never a secret's value).
#[derive(Serialize, Deserialize, Default, Clone, ToSchema)]
pub struct AuditDetail {
    /// A source's PUT: the fields that changed, by name (`webhooks[1].url`,
    /// `webhooks[0].headers["X-Team"]`, `shared_secret`), never their values.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changed: Option<Vec<String>>,
    /// A token made or revoked: its id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    /// A dead letter discarded or replayed; a deletion's message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_id: Option<String>,
    /// A replay to one webhook (as the request named it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub webhook: Option<String>,
    /// A replay's range (RFC 3339; either end open).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<String>,
    /// How many a replay sent again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<u64>,
    /// A user's deletion.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_id: Option<String>,
    /// An audience synced, and its changes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audience: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub joined: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub left: Option<u64>,
    /// Why the relay did it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// One entry of the audit trail.
#[derive(Serialize, ToSchema)]
pub struct AuditEntry {
    /// Its place in the trail (`before` of a page starting after it).
    pub id: String,
    pub at: Option<String>,
    pub by: AuditBy,
    /// `source.created`, `source.updated`, `source.deleted`, `token.created`,
    /// `token.revoked`, `dead_letter.discarded`, `dead_letter.replayed`,
    /// `dead_letters.replayed`, `user.deleted`, `audience.synced`.
    pub action: String,
    /// The source it was done to (null: none in particular).
    pub source: Option<String>,
    pub detail: AuditDetail,
}

/// A page of the audit trail, newest first.
#[derive(Serialize, ToSchema)]
pub struct AuditPage {
    pub entries: Vec<AuditEntry>,
    /// `before` of the next (older) page; null: the last.
    pub next: Option<String>,
}

/// An alert sent to the operator's URL.
#[derive(Serialize, ToSchema)]
pub struct AlertView {
    pub at: Option<String>,
    /// `webhook.circuit_opened`, `webhook.circuit_closed`, `source.dead_letters_above`,
    /// `source.dead_letters_below`, `source.waiting_above`, `source.waiting_below`,
    /// `source.spool_near_full`, `source.spool_ok`.
    pub event: String,
    pub source: String,
    /// Its id at the operator's URL (`webhook-id`).
    pub message_id: String,
    /// Its facts, as sent: the webhook and URL, the value and the threshold, the relay.
    #[schema(value_type = Object)]
    pub properties: serde_json::Value,
}

/// The alerts this relay sent, newest first.
#[derive(Serialize, ToSchema)]
pub struct AlertList {
    /// Whether alerts are on (`alert_url` in relay.toml).
    pub on: bool,
    /// Where they go, as logs show a URL (the admin token only).
    pub url: Option<String>,
    /// That URL's health (the admin token only).
    pub state: Option<String>,
    pub alerts: Vec<AlertView>,
}

/// A subscription's state: its messages (one per event its trigger matched) and its
/// endpoint's health.
#[derive(Serialize, ToSchema)]
pub struct SubscriptionState {
    pub source: String,
    pub subscription: String,
    pub enabled: bool,
    /// Events it matched and took, in all.
    pub accepted: u64,
    pub delivered: u64,
    /// Failed for good (a permanent answer, the retry window closed, or its mapping failed).
    pub failed: u64,
    /// Taken and not yet ended.
    pub waiting: u64,
    pub retries: u64,
    pub health: Health,
}

/// What a preview is asked: an event, and either a subscription's settings (not saved) or,
/// on `/subscriptions/{subscription}/preview`, none (the saved one's).
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PreviewAsk {
    /// The settings to try, in either form a source takes.
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub subscription: Option<serde_json::Value>,
    /// An event as Segment's tracking API gives it (`type`, `event`, `properties`, ...).
    #[schema(value_type = Object)]
    pub event: serde_json::Value,
}

/// A preview: whether the trigger matches the event, and the request it would make.
#[derive(Serialize, ToSchema)]
pub struct Preview {
    pub matches: bool,
    /// The request (null when it does not match, or when the event fails the mapping).
    pub request: Option<PreviewRequest>,
    /// Why Segment's code would fail this event (its trigger or its mapping).
    pub error: Option<String>,
}

/// The request a subscription would make; the relay adds `user-agent` and, when `signed`,
/// the signature.
#[derive(Serialize, ToSchema)]
pub struct PreviewRequest {
    pub method: String,
    pub url: String,
    /// `[name, value]` pairs, names in lower case, in order.
    #[schema(value_type = Vec<Vec<String>>)]
    pub headers: Vec<(String, String)>,
    /// The body as sent (canonical JSON); null: the request has none.
    pub body: Option<String>,
    pub signed: bool,
}
