//! A source's table → the core's `Config`: its own delivery settings over the top level's
//! over the core's defaults. Values are converted, never judged: the core checks them when
//! the source's client is built, and its error is reported under the key it came from.

use super::file::{source_redis_url, AuthFile, Delivery, Seconds, SourceFile, Spool, WebhookFile};
use super::{Base, ManagedBy};
use outbound::subscription::Subscription;
use outbound::{
    Auth, Config as CoreConfig, EndpointTls, OAuth2, RateLimit, RetryPolicy, SignatureScheme,
    Webhook,
};
use std::sync::Arc;

/// The relay's group commit interval unless set (seconds): an acknowledgement waits for the
/// next commit, so the core's 20 ms would be most of a single event's answer time. Under
/// load the writer's own transaction and the fsync gather the requests that arrive
/// meanwhile, so the interval only needs to be short: a shorter one acknowledges single
/// events sooner at little cost to batches (BENCHMARKS.md). A busy source fsyncs at most once
/// per fsync's duration (one covers every commit before it began).
pub const DEFAULT_COMMIT_INTERVAL: f64 = 0.00005;

/// The core's config for source `s`: its own settings over the top level's over the core's
/// defaults. The top level's network exceptions reach the file's sources only: a source of
/// the admin API has the strict guard unless the admin granted it networks of its own.
/// `tenant` names its part of the spool.
pub(super) fn core_config(
    s: &SourceFile,
    base: &Base,
    managed_by: ManagedBy,
    tenant: &str,
) -> Result<CoreConfig, (String, String)> {
    let d: Delivery = s.delivery().over(&base.top);
    let data_dir = &base.data_dir;
    let inherited = |top: &Vec<String>| match managed_by {
        ManagedBy::File => top.clone(),
        ManagedBy::Api => Vec::new(),
    };
    let allowed_networks =
        (s.allowed_networks.clone()).unwrap_or_else(|| inherited(&base.allowed_networks));
    let forward_allowed_networks = (s.forward_allowed_networks.clone())
        .unwrap_or_else(|| inherited(&base.forward_allowed_networks));
    let mut webhooks = (s.webhooks.iter().enumerate())
        .map(|(i, w)| webhook(i, w))
        .collect::<Result<Vec<_>, _>>()?;
    // Collected through a `Result`, the list keeps room for 8 webhooks: each source's config
    // stays in memory for as long as it runs.
    webhooks.shrink_to_fit();
    let subscriptions = subscriptions(s)?;
    let mut c = CoreConfig::default()
        .webhooks(webhooks)
        .subscriptions(subscriptions)
        .block_private_networks(base.block_private_networks)
        .allowed_networks(allowed_networks)
        // A forward's endpoint is a customer's too once sources are theirs: the same guard.
        .block_private_endpoint(base.block_private_networks)
        .endpoint_allowed_networks(forward_allowed_networks)
        .log_url_paths(base.log_url_paths)
        .max_webhook_headers(base.max_webhook_headers)
        .max_webhook_header_bytes(base.max_webhook_header_bytes);
    c.shared_secret = s.shared_secret.clone();
    if let Some(fw) = &s.forward {
        c.write_key = Some(fw.write_key.clone());
        if let Some(endpoint) = &fw.endpoint {
            c.endpoint = endpoint.clone();
        }
    }
    if let Some(v) = d.timeout {
        c.timeout = v.duration("timeout")?;
    }
    c.retry = retry_policy(&d)?;
    if let Some(v) = d.max_in_flight {
        c.max_in_flight = v;
    }
    if let Some(v) = d.workers {
        c.workers = v;
    }
    if let Some(v) = &d.signature_scheme {
        c.signature_scheme = scheme(v, "signature_scheme")?;
    }
    if let Some(v) = &d.webhook_user_agent {
        c.webhook_user_agent = v.clone();
    }
    if let Some(v) = d.gzip {
        c.gzip = v;
    }
    if let Some(v) = d.flush_at {
        c.flush_at = v;
    }
    c.max_batch_messages = d.max_batch_messages;
    if let Some(v) = d.flush_interval {
        c.flush_interval = v.duration("flush_interval")?;
    }
    if let Some(v) = d.max_queue_size {
        c.max_queue_size = v;
    }
    if let Some(v) = d.queue_full_wait {
        c.queue_full_wait = v.duration("queue_full_wait")?;
    }
    // A request waiting for room must not hold a runtime thread: its other tasks move off.
    c.room_wait = Some(Arc::new(|wait: &mut (dyn FnMut() -> bool + Send)| {
        tokio::task::block_in_place(wait)
    }));
    c.ca_certs = d.ca_certs.clone();
    if let Some(v) = d.proxy_from_env {
        c.proxy_from_env = v;
    }
    c.spool = match &d.spool {
        None | Some(Spool::On(true)) => Some(data_dir.join("spool").join(tenant).into()),
        Some(Spool::On(false)) => None,
        Some(Spool::Redis(url)) => Some(source_redis_url(url, tenant).into()),
    };
    if let Some(v) = d.spool_max_bytes {
        c.spool_max_bytes = v;
    }
    c.spool_commit_interval = d
        .spool_commit_interval
        .unwrap_or(Seconds(DEFAULT_COMMIT_INTERVAL))
        .duration("spool_commit_interval")?;
    c.debug = Some(d.debug.unwrap_or(true));
    // On wherever there is a spool to keep them in.
    c.dead_letters = d.dead_letters.unwrap_or(c.spool.is_some());
    if let Some(v) = d.dead_letter_retention {
        c.dead_letter_retention = v.duration("dead_letter_retention")?;
    }
    if let Some(v) = d.dead_letter_max_bytes {
        c.dead_letter_max_bytes = v;
    }
    if let Some(v) = d.attempt_log_size {
        c.attempt_log_size = v;
    }
    if let Some(v) = d.attempt_retention {
        c.attempt_retention = v.duration("attempt_retention")?;
    }
    Ok(c)
}

/// A source's subscriptions, read by the core; an error named by its place in the list.
fn subscriptions(s: &SourceFile) -> Result<Vec<Subscription>, (String, String)> {
    (s.subscriptions.iter().enumerate())
        .map(|(i, v)| {
            Subscription::from_json(v).map_err(|e| match e {
                outbound::Error::Config { setting, reason } => {
                    (format!("subscriptions[{i}].{setting}"), reason)
                }
                other => (format!("subscriptions[{i}]"), other.to_string()),
            })
        })
        .collect()
}

/// The retry schedule a source's delivery settings give, the core's defaults elsewhere.
fn retry_policy(d: &Delivery) -> Result<RetryPolicy, (String, String)> {
    let mut retry = RetryPolicy::default();
    if let Some(v) = d.max_retry_duration {
        retry.max_retry_duration = v.duration("max_retry_duration")?;
    }
    if let Some(v) = d.max_backoff {
        retry.max_backoff = v.duration("max_backoff")?;
    }
    if let Some(v) = d.retry_base {
        retry.base = v.duration("retry_base")?;
    }
    if let Some(v) = d.max_retry_after {
        retry.max_retry_after = v.duration("max_retry_after")?;
    }
    Ok(retry)
}

/// `signature_scheme` read by the core, its error named `key`.
fn scheme(v: &str, key: &str) -> Result<SignatureScheme, (String, String)> {
    SignatureScheme::parse(v).map_err(|e| match e {
        outbound::Error::Config { reason, .. } => (key.to_string(), reason),
        other => (key.to_string(), other.to_string()),
    })
}

/// Webhook `i`'s table → the core's `Webhook` (its endpoint settings checked by the core).
fn webhook(i: usize, w: &WebhookFile) -> Result<Webhook, (String, String)> {
    let mut hook = Webhook::new(w.url.clone()).enabled(w.enabled);
    hook.headers = (w.headers.iter())
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    hook.auth = w.auth.as_ref().map(|a| match &**a {
        AuthFile::Basic { user, password } => Auth::basic(user, password),
        AuthFile::Bearer { token } => Auth::bearer(token),
        AuthFile::OAuth2 {
            token_url,
            client_id,
            client_secret,
            client_assertion_key,
            scope,
            audience,
        } => {
            let mut o = OAuth2::new(token_url, client_id, client_secret);
            o.client_assertion_key = client_assertion_key.clone();
            o.scope = scope.clone();
            o.audience = audience.clone();
            Auth::oauth2(o)
        }
    });
    if let Some(t) = &w.tls {
        hook.tls = EndpointTls {
            client_cert: t.client_cert.clone(),
            client_key: t.client_key.clone(),
            ca_certs: t.ca_certs.clone(),
        };
    }
    hook.signature_header = w.signature_header.clone();
    if let Some(v) = &w.signature_scheme {
        hook.signature_scheme = Some(scheme(v, &format!("webhooks[{i}].signature_scheme"))?);
    }
    hook.rate_limit = (w.rate_limit.as_ref())
        .map(|r| RateLimit::per_second(r.per_second).burst(r.burst.unwrap_or(r.per_second)));
    Ok(hook)
}
