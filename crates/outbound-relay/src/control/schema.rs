//! The admin API's bodies as types: what each route takes and answers. The OpenAPI document is
//! generated from them (`openapi.rs`), so it says what the code does. Every field is
//! snake_case, as relay.toml's keys are (a source's body is a `[[sources]]` table as JSON).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use utoipa::ToSchema;

mod records;
mod subscription;

pub use records::{
    Activity, Attempt, Attempts, DeadLetter, DeadLetterPage, DeadLetterStats, Header, Health,
    LastError, MessageCounts, ReplayCount, ReplayOne, ReplayProgress, ReplayRequest, SourceHealth,
    WebhookActivity, WebhookRef,
};
pub use subscription::{Preview, PreviewAsk, PreviewRequest, SubscriptionInput, SubscriptionState};

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
    /// Attempts each webhook URL's log keeps.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attempt_log_size: Option<usize>,
    /// How long an attempt stays in its URL's log.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attempt_retention: Option<f64>,
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
    /// Attempts each webhook URL's log keeps (1 to 10,000).
    pub attempt_log_size: Option<usize>,
    /// How long an attempt stays in its URL's log (at most 30 days).
    pub attempt_retention: Option<f64>,
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
