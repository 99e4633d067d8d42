//! A subscription in a source's PUT, in either form, with how its endpoint is called: the
//! fields of a webhook's, the same write-only secrets (`{"has_value": true}` keeps one, for
//! the subscription of the same name and URL; for auth, the same type and token URL), PEM
//! text for TLS. The core reads the body; these types document it.

use super::{AuthInput, Health, RateLimit, TlsInput};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// A subscription, in either form: our settings, or Segment's export as it is.
#[derive(Deserialize, ToSchema)]
#[serde(untagged)]
#[allow(dead_code)]
pub enum SubscriptionInput {
    Settings(SubscriptionSettings),
    Segment(SegmentSubscription),
}

/// A subscription in our settings (documents the body; the core reads it).
#[derive(Deserialize, ToSchema)]
#[allow(dead_code)]
pub struct SubscriptionSettings {
    /// Unique in the source: it keys the subscription's records.
    pub name: String,
    /// Segment's FQL: `type = "track" and event = "Order Completed"`.
    pub trigger: String,
    /// http or https.
    pub url: String,
    /// `POST` (default), `PUT` or `PATCH`.
    pub method: Option<String>,
    /// Header names to values; a value may be a mapping-kit directive.
    #[schema(value_type = Option<Object>)]
    pub headers: Option<serde_json::Value>,
    /// The body: a mapping-kit object (default: the whole event, `{"@path": "$."}`).
    #[schema(value_type = Option<Object>)]
    pub data: Option<serde_json::Value>,
    /// Off: kept, sent nothing (default on).
    pub enabled: Option<bool>,
    /// Given: events are sent in batches of at most this many (1 to 4000), as a JSON array.
    pub batch_size: Option<usize>,
    /// What a batch's signature covers: `body` (default) or `first-element` (as Segment).
    pub batch_signature: Option<String>,
    pub auth: Option<AuthInput>,
    pub tls: Option<TlsInput>,
    /// The header the signature goes in instead of `X-Signature` / `X-Signature-256` (not
    /// with `standard-webhooks`). Headers that set it (or `X-Signature`) themselves are not
    /// signed by the relay.
    pub signature_header: Option<String>,
    /// `x-signature`, `standard-webhooks` or `hmac-sha256`: instead of the source's.
    pub signature_scheme: Option<String>,
    pub rate_limit: Option<RateLimit>,
}

/// A subscription as Segment's Config API exports a Webhooks (Actions) mapping.
#[derive(Deserialize, ToSchema)]
#[allow(dead_code)]
pub struct SegmentSubscription {
    pub name: String,
    /// The trigger (Segment's FQL).
    pub subscribe: String,
    /// The Send action's fields: `url`, `method`, `headers`, `data`, `enable_batching`,
    /// `batch_size`.
    #[schema(value_type = Object)]
    pub mapping: serde_json::Value,
    pub enabled: Option<bool>,
    pub auth: Option<AuthInput>,
    pub tls: Option<TlsInput>,
    /// The header the signature goes in instead of `X-Signature` / `X-Signature-256` (not
    /// with `standard-webhooks`). Headers that set it (or `X-Signature`) themselves are not
    /// signed by the relay.
    pub signature_header: Option<String>,
    /// `x-signature`, `standard-webhooks` or `hmac-sha256`: instead of the source's.
    pub signature_scheme: Option<String>,
    pub rate_limit: Option<RateLimit>,
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
