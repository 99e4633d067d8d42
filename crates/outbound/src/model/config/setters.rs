//! A setter for every field of [`Config`], so a config is written as
//! `Config::default().write_key("k").flush_at(50)` and a field added later breaks no caller
//! (`Config` is `#[non_exhaustive]`: no struct literal outside this crate). An optional
//! field's setter takes the value and sets `Some`; to unset one, assign the field.

use super::{Config, OutcomeCallback, RoomWaitHook, SignatureScheme, Webhook};
use crate::log::LogSink;
use crate::model::retry::RetryPolicy;
use crate::model::spool::{RedisAck, Spool};
use std::time::Duration;

/// `name(value: T)` sets the field of that name to `value`.
macro_rules! set {
    ($($name:ident: $ty:ty),* $(,)?) => {
        $(
            #[doc = concat!("Sets [`Config::", stringify!($name), "`].")]
            pub fn $name(mut self, value: $ty) -> Config {
                self.$name = value;
                self
            }
        )*
    };
}

/// `name(value)` sets the optional field of that name to `Some(value)`.
macro_rules! set_some {
    ($($name:ident: $ty:ty),* $(,)?) => {
        $(
            #[doc = concat!("Sets [`Config::", stringify!($name), "`] (to `Some`).")]
            pub fn $name(mut self, value: $ty) -> Config {
                self.$name = Some(value);
                self
            }
        )*
    };
}

/// `name(text)` sets the text field of that name, optional or not.
macro_rules! set_text {
    ($($name:ident: $wrap:path),* $(,)?) => {
        $(
            #[doc = concat!("Sets [`Config::", stringify!($name), "`].")]
            pub fn $name(mut self, value: impl Into<String>) -> Config {
                self.$name = $wrap(value.into());
                self
            }
        )*
    };
}

fn same(text: String) -> String {
    text
}

impl Config {
    set_text!(
        write_key: Some,
        endpoint: same,
        shared_secret: Some,
        webhook_user_agent: same,
        ca_certs: Some,
    );
    /// Sets [`Config::webhooks`].
    pub fn webhooks(mut self, value: Vec<Webhook>) -> Config {
        self.webhooks = std::sync::Arc::new(value);
        self
    }

    set!(
        subscriptions: Vec<crate::model::subscription::Subscription>,
        signature_scheme: SignatureScheme,
        flush_at: usize,
        flush_interval: Duration,
        max_queue_size: usize,
        queue_full_wait: Duration,
        timeout: Duration,
        retry: RetryPolicy,
        gzip: bool,
        workers: usize,
        max_in_flight: usize,
        send: bool,
        proxy_from_env: bool,
        block_private_networks: bool,
        allowed_networks: Vec<String>,
        block_private_endpoint: bool,
        endpoint_allowed_networks: Vec<String>,
        log_url_paths: bool,
        redis_ack: RedisAck,
        spool_max_bytes: u64,
        spool_commit_interval: Duration,
        dead_letters: bool,
        dead_letter_retention: Duration,
        dead_letter_max_bytes: u64,
        attempt_log_size: usize,
        attempt_retention: Duration,
        max_webhook_headers: usize,
        max_webhook_header_bytes: usize,
    );
    set_some!(
        max_batch_messages: usize,
        room_wait: RoomWaitHook,
        on_outcome: OutcomeCallback,
        debug: bool,
        log_sink: LogSink,
    );

    /// Sets [`Config::spool`] (to `Some`): a [`Spool`], or its text (a directory, or a
    /// Redis URL).
    pub fn spool(mut self, spool: impl Into<Spool>) -> Config {
        self.spool = Some(spool.into());
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every field is set by its setter: a field added without one fails to compile here
    /// (the destructuring names every field).
    #[test]
    fn every_field_has_a_setter() {
        let c = Config::default()
            .write_key("k")
            .endpoint("http://e")
            .shared_secret("s")
            .webhook_user_agent("ua")
            .ca_certs("pem")
            .webhooks(vec![Webhook::new("http://h")])
            .flush_at(3)
            .max_batch_messages(9)
            .debug(true)
            .spool("/tmp/x");
        let Config {
            write_key,
            endpoint,
            webhooks,
            subscriptions: _,
            // Set by the core alone, for a subscription's client.
            send_as: _,
            shared_secret,
            signature_scheme: _,
            webhook_user_agent,
            flush_at,
            max_batch_messages,
            flush_interval: _,
            max_queue_size: _,
            queue_full_wait: _,
            room_wait: _,
            timeout: _,
            retry: _,
            gzip: _,
            ca_certs,
            workers: _,
            max_in_flight: _,
            on_outcome: _,
            debug,
            log_sink: _,
            send: _,
            proxy_from_env: _,
            block_private_networks: _,
            allowed_networks: _,
            block_private_endpoint: _,
            endpoint_allowed_networks: _,
            log_url_paths: _,
            spool,
            redis_ack: _,
            spool_max_bytes: _,
            spool_commit_interval: _,
            dead_letters: _,
            dead_letter_retention: _,
            dead_letter_max_bytes: _,
            attempt_log_size: _,
            attempt_retention: _,
            max_webhook_headers: _,
            max_webhook_header_bytes: _,
        } = c;
        assert_eq!(write_key.as_deref(), Some("k"));
        assert_eq!(endpoint, "http://e");
        assert_eq!(shared_secret.as_deref(), Some("s"));
        assert_eq!(webhook_user_agent, "ua");
        assert_eq!(ca_certs.as_deref(), Some("pem"));
        assert_eq!(webhooks.len(), 1);
        assert_eq!(
            (flush_at, max_batch_messages, debug),
            (3, Some(9), Some(true))
        );
        assert_eq!(spool, Some(Spool::from("/tmp/x")));
    }
}
