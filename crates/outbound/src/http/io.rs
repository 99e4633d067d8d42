//! The I/O engine: a small tokio runtime of its own (no async reaches any public face),
//! the connections it keeps alive (`pool.rs`) and the names it looked up (`connect.rs`).
//! Requests are spawned on it by the lanes and report back on their channel; a request
//! waiting for an answer holds no thread.

use crate::error::Error;
use crate::http::connect::{env_proxy, Connector, Names};
use crate::http::pool::Pool;
use crate::model::config::{Config, EndpointTls};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How often idle connections past their time are closed.
const SWEEP_EVERY: Duration = Duration::from_secs(5);

pub(crate) struct Io {
    runtime: Option<tokio::runtime::Runtime>,
    pub(crate) pool: Arc<Pool>,
    pub(crate) names: Arc<Names>,
    /// One connector per distinct setting (`Connector::key_of`), shared by the clients.
    connectors: Mutex<HashMap<u64, Arc<Connector>>>,
}

impl Io {
    /// Starts `threads` I/O threads named `name`.
    pub(crate) fn start(threads: usize, name: &str) -> Result<Io, Error> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads.max(1))
            // Host name lookups run here (getaddrinfo blocks); they are cached for a minute.
            .max_blocking_threads(2)
            .thread_keep_alive(Duration::from_secs(5))
            .thread_name(name)
            .enable_io()
            .enable_time()
            .build()
            .map_err(|e| Error::config("workers", format!("cannot start the I/O threads: {e}")))?;
        let pool = Arc::new(Pool::default());
        let sweep = Arc::downgrade(&pool);
        runtime.spawn(async move {
            loop {
                tokio::time::sleep(SWEEP_EVERY).await;
                match sweep.upgrade() {
                    Some(pool) => pool.sweep(),
                    None => return,
                }
            }
        });
        Ok(Io {
            runtime: Some(runtime),
            pool,
            names: Arc::new(Names::default()),
            connectors: Mutex::default(),
        })
    }

    /// The connector for `config`'s settings and an endpoint's own TLS (`tls`; `webhook`
    /// names it in errors): built once per distinct setting.
    pub(crate) fn connector(
        &self,
        config: &Config,
        tls: &EndpointTls,
        webhook: &str,
    ) -> Result<Arc<Connector>, Error> {
        let proxy = env_proxy(config);
        let key = Connector::key_of(config, tls, proxy.as_ref());
        let mut connectors = self.connectors.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(c) = connectors.get(&key) {
            return Ok(c.clone());
        }
        let made = Arc::new(Connector::with_proxy(
            config,
            tls,
            webhook,
            self.names.clone(),
            proxy,
        )?);
        connectors.insert(key, made.clone());
        Ok(made)
    }

    /// Where tasks are spawned (a handle does not keep the runtime alive: a task spawned
    /// after it stopped is dropped).
    pub(crate) fn handle(&self) -> tokio::runtime::Handle {
        match &self.runtime {
            Some(rt) => rt.handle().clone(),
            None => unreachable!("the runtime lives as long as the Io"),
        }
    }
}

/// How long dropping the engine waits for its I/O threads to end.
const JOIN_FOR: Duration = Duration::from_millis(500);

impl Drop for Io {
    fn drop(&mut self) {
        // Requests still out are abandoned (their messages were already counted as
        // "delivery unknown"). The threads are joined (bounded), so none outlives the client
        // unseen (valgrind counts a detached thread's stack as lost); inside an async context
        // (a service dropping a client from a task) a wait is not allowed: they are let go.
        if let Some(rt) = self.runtime.take() {
            match tokio::runtime::Handle::try_current() {
                Ok(_) => rt.shutdown_background(),
                Err(_) => rt.shutdown_timeout(JOIN_FOR),
            }
        }
    }
}
