//! A client's generation: its engine, its tenant of the scheduler, its lanes and where its
//! calls go first (the spool writer or the scheduler).

use super::Client;
use crate::delivery::command::{Command, Item};
use crate::delivery::inbox::{self, Inbox, TenantSpoolInbox};
use crate::delivery::lane::{BatchesOut, Budget, Delivery, HooksOut};
use crate::delivery::scheduler::{Control, Tenant};
use crate::delivery::shared::Shared;
use crate::delivery::spooler::{hooks_key, TenantSpool};
use crate::delivery::watch::Watch;
use crate::durable::dead::DeadLimits;
use crate::engine::{Core, SpoolWriter};
use crate::error::Error;
use crate::http::connect::ParsedUrl;
use crate::http::exchange::Exchange;
use crate::http::recorder::Recorder;
use crate::log::Logger;
use crate::model::config::Config;
use crate::model::retry::after;
use crate::wire::ingestion::{self, Endpoint};
use crate::wire::webhook::Hooks;
use std::sync::atomic::Ordering::*;
use std::sync::Arc;
use std::time::Duration;

/// One generation of the client's queue and engine (a forked child gets a new one).
pub(super) struct TenantHandle {
    /// The engine this client is a tenant of.
    pub(super) core: Arc<Core>,
    /// To the spool writer when there is a spool, else to the scheduler.
    pub(super) tx: CommandSink,
    pub(super) shared: Arc<Shared>,
    /// Its own spool writer (`config.spool`); a tenant of the engine's spool has none (boxed:
    /// 200 bytes each of 10,000 relay sources for nothing).
    pub(super) own_spool: Option<Box<SpoolWriter>>,
    /// Whether it has a spool at all.
    pub(super) spooled: bool,
}

/// The watch of `config`'s webhook URLs; with `previous`, each URL it keeps carries on its
/// records there.
fn watch(config: &Config, previous: Option<&Client>) -> Watch {
    let blocked: Vec<usize> = config.blocked_webhooks().iter().map(|(i, _)| *i).collect();
    let watch = Watch::new(config.webhooks.len(), &blocked);
    if let Some(previous) = previous {
        let mine: Vec<&str> = config.webhooks.iter().map(|w| w.url.as_str()).collect();
        let theirs: Vec<&str> = (previous.config.webhooks.iter())
            .map(|w| w.url.as_str())
            .collect();
        watch.adopt(&mine, &previous.engine.load().shared.watch, &theirs);
    }
    watch
}

impl TenantHandle {
    /// Adds a tenant for `config` to `core`'s scheduler; with `previous`, the records of each
    /// of its URLs still in `config` carry on (before the tenant runs, so none is missed).
    pub(super) fn start(
        core: Arc<Core>,
        config: &Config,
        logger: &Logger,
        recorder: Option<Arc<Recorder>>,
        tenant: Option<String>,
        parent_writer: Option<&SpoolWriter>,
        previous: Option<&Client>,
    ) -> Result<TenantHandle, Error> {
        let targets = config.check_webhooks()?;
        // Requests go out on the I/O engine (a recording client's go to its record there).
        let io = core.io.as_ref();
        let hooks_out = match io.filter(|_| !config.webhooks.is_empty()) {
            Some(io) => Some(HooksOut {
                io: io.handle(),
                exchange: Exchange::webhooks(config, io, recorder.as_ref())?,
            }),
            None => None,
        };
        let batches_out = match io.filter(|_| config.write_key.is_some()) {
            Some(io) => Some(Box::new(BatchesOut {
                io: io.handle(),
                exchange: Exchange::ingestion(
                    config,
                    io,
                    &ingestion::batch_url(config),
                    recorder.as_ref(),
                )?,
            })),
            None => None,
        };
        let delivery = Arc::new(Delivery {
            ingestion: Endpoint::new(config),
            hooks: Hooks::new(config, targets),
            logger: logger.clone(),
            budget: Budget::requests(),
            policy: config.retry,
            hooks_out,
            batches_out,
        });
        let mut shared = Shared::watching(watch(config, previous));
        let id = core.next_tenant();
        let (inbox, mailbox) = inbox::inbox(id, core.channels.woken.clone());
        let inbox: Inbox = inbox;
        // The spool: the engine's, shared by its tenants (under `tenant`'s name), or the
        // client's own (`config.spool`), or none.
        let own = match (&tenant, &config.spool) {
            (None, Some(spool)) => Some(Box::new(SpoolWriter::own(config, spool, logger)?)),
            _ => None,
        };
        let writer = match (&tenant, &own) {
            (Some(_), _) => parent_writer.or(core.spool.as_ref()),
            (None, Some(own)) => Some(&**own),
            (None, None) => None,
        };
        if tenant.is_some() {
            shared.spool_total = writer.map(|w| w.handle.total.clone());
        }
        let shared = Arc::new(shared);
        if config.dead_letters && writer.is_none() {
            return Err(Error::config(
                "dead_letters",
                "dead letters are kept in the spool's store: set spool (or use a tenant of \
                 an engine with one)",
            ));
        }
        let added = match writer {
            None => (CommandSink::Scheduler(inbox.clone()), None),
            Some(w) => {
                let urls: Vec<String> = config.webhooks.iter().map(|w| w.url.clone()).collect();
                let spool = TenantSpool::new(
                    tenant.clone().unwrap_or_default(),
                    shared.clone(),
                    inbox.clone(),
                    config.max_queue_size as u64,
                    config.hook_mask(),
                    hooks_key(&urls),
                    config.dead_letters.then_some(DeadLimits {
                        retention: config.dead_letter_retention,
                        max_bytes: config.dead_letter_max_bytes,
                    }),
                );
                let ops = w.handle.add(id, spool);
                (
                    CommandSink::Spooler(w.handle.inbox.for_tenant(id)),
                    Some(ops),
                )
            }
        };
        let spooled = writer.is_some();
        let (tx, ops) = added;
        let tenant = Tenant::new(
            id,
            config,
            shared.clone(),
            mailbox,
            delivery,
            core.channels.reports.clone(),
            ops,
            logger.clone(),
        );
        // A gone scheduler (impossible while `core` lives) would leave the tenant unrun.
        let _ = core
            .channels
            .control
            .send(Control::Add(id, Box::new(tenant)));
        Ok(TenantHandle {
            core,
            tx,
            shared,
            own_spool: own,
            spooled,
        })
    }
}

impl TenantHandle {
    /// True on the scheduler's own thread, i.e. inside an `on_outcome` callback, where
    /// waiting for the scheduler would wait for ourselves.
    pub(super) fn on_scheduler(&self) -> bool {
        self.core.on_scheduler()
    }

    /// Stops outcome callbacks for good; waits for one that is running (unless called
    /// from inside it, or it is known to block).
    pub(super) fn stop_callbacks(&self, wait: bool) {
        if self.on_scheduler() || !wait {
            self.shared.callbacks_off.store(true, SeqCst);
        } else {
            let _gate = self.shared.gate.lock().unwrap_or_else(|e| e.into_inner());
            self.shared.callbacks_off.store(true, SeqCst);
        }
    }
}

/// The webhooks' URLs, read once (exactly as many as there are: a relay holds thousands).
/// What [`Client::new`] refuses of `config`, found without starting anything: no thread, no
/// connection, no spool opened. (A client that keeps dead letters also needs a spool, its own
/// or its engine's: that depends on where it is built, and is not checked here.)
pub(super) fn validate(config: &Config) -> Result<(), Error> {
    config.check()?;
    config.check_webhooks()?;
    targets_of(config)?;
    if let Some(pem) = &config.ca_certs {
        crate::http::pem::roots(Some(pem))?;
    }
    // Each endpoint's PEM files and OAuth2 key, read as the client's start would read them.
    for (i, hook) in config.webhooks.iter().enumerate() {
        let name = format!("webhooks[{i}]");
        if !hook.tls.is_default() {
            crate::http::connect::Connector::tls_config(config, &hook.tls, &name)?;
        }
        if let Some(crate::model::config::Auth::OAuth2(o)) = &hook.auth {
            crate::http::oauth::Tokens::new(o, &name)?;
        }
    }
    if config.write_key.is_some() {
        ParsedUrl::parse(&ingestion::batch_url(config))
            .map_err(|why| Error::config("endpoint", why))?;
    }
    for i in 0..config.subscriptions.len() {
        let own = config.for_subscription(i)?;
        validate(&own).map_err(|e| crate::model::config::subscription_error(i, e))?;
    }
    Ok(())
}

fn targets_of(config: &Config) -> Result<Vec<ParsedUrl>, Error> {
    let mut targets = Vec::with_capacity(config.webhooks.len());
    for w in config.webhooks.iter() {
        targets.push(ParsedUrl::parse(&w.url).map_err(|why| Error::config("webhooks", why))?);
    }
    Ok(targets)
}

/// Where commands go first.
pub(super) enum CommandSink {
    Scheduler(Inbox),
    /// The spool writer, which passes them on once they are on disk.
    Spooler(TenantSpoolInbox),
}

impl CommandSink {
    pub(super) fn send(&self, cmd: Command) {
        match self {
            CommandSink::Scheduler(inbox) => inbox.send_now(cmd),
            // The spool writer outlives every open client, so this cannot fail while not closed.
            CommandSink::Spooler(inbox) => inbox.send_now(cmd),
        }
    }

    /// An accepted message: a message for ingestion alone waits for its batch to fill or
    /// for `flush_interval` without waking the scheduler; one for webhooks goes at once.
    pub(super) fn message(&self, item: Item, flush_interval: Duration) {
        match self {
            CommandSink::Scheduler(inbox) if item.hook.is_none() => {
                let due = after(item.accepted, flush_interval);
                inbox.send_lazy(Command::Message(item), due);
            }
            CommandSink::Scheduler(inbox) => inbox.send_now(Command::Message(item)),
            // A webhook message too: it is not delivered before its group's commit.
            CommandSink::Spooler(inbox) => inbox.message(Command::Message(item)),
        }
    }
}

impl crate::Engine {
    /// A client on this engine: checks `config` as [`Client::new`] does and adds it to the
    /// engine's scheduler; no thread is started for it (but a spool writer for its own
    /// `spool`, when set).
    pub fn client(&self, config: Config) -> Result<Client, Error> {
        Client::on_engine(config, self.core.clone(), None, None)
    }

    /// [`Engine::client`](crate::Engine::client) for a client that takes over from
    /// `previous` with changed settings: each webhook URL still in `config` keeps
    /// `previous`'s records of it (health, failures in a row, circuit, last attempts, last
    /// minutes), matched by URL, wherever it now stands; a subscription's, by its name and
    /// URL. A URL no longer there leaves its records behind, and a new one starts with none.
    /// `previous` keeps its own, so it may run again; call it once `previous` has handed
    /// over or closed, so its last answers are in what carries on.
    pub fn client_after(&self, config: Config, previous: &Client) -> Result<Client, Error> {
        Client::on_engine_with(config, self.core.clone(), None, None, None, Some(previous))
    }

    /// A client on this engine and on its spool (`EngineConfig::spool`), its records kept
    /// under `name`: what a process left of `name`'s messages is resumed by the next tenant
    /// of that name. Adds no thread and opens no file. `config.spool` must be unset, and
    /// names unique among the engine's open tenants.
    pub fn tenant(&self, name: &str, config: Config) -> Result<Client, Error> {
        self.tenant_with(name, config, None)
    }

    /// [`Engine::tenant`](crate::Engine::tenant) for the successor of tenant `previous` of
    /// the same name (after [`Client::hand_over`]): its URLs' records carry on as
    /// [`Engine::client_after`](crate::Engine::client_after) says.
    pub fn tenant_after(
        &self,
        name: &str,
        config: Config,
        previous: &Client,
    ) -> Result<Client, Error> {
        self.tenant_with(name, config, Some(previous))
    }

    fn tenant_with(
        &self,
        name: &str,
        config: Config,
        previous: Option<&Client>,
    ) -> Result<Client, Error> {
        if self.core.spool.is_none() {
            return Err(Error::config(
                "spool",
                "this engine has no spool (EngineConfig::spool): use Engine::client",
            ));
        }
        if config.spool.is_some() {
            return Err(Error::config(
                "spool",
                "a tenant is spooled on its engine's spool; leave its own spool unset",
            ));
        }
        let max = self.core.spool.as_ref().and_then(|w| w.max_timeout);
        if let Some(max) = max.filter(|max| config.timeout > *max) {
            return Err(Error::config(
                "timeout",
                format!(
                    "{:?} is longer than the engine's max_timeout ({max:?}): on a Redis spool \
                     a dead engine is taken over only once none of its requests can still \
                     be in flight",
                    config.timeout
                ),
            ));
        }
        Client::on_engine_with(
            config,
            self.core.clone(),
            None,
            Some(name.to_string()),
            None,
            previous,
        )
    }
}
