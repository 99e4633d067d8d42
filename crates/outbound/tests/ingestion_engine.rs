//! The ingestion destination, an engine's client (a relay's source: batches on the I/O
//! engine, no thread of its own): the cases of `cases/ingestion.rs`.

mod support;

use outbound::{Client, Engine, EngineConfig, Error};
use std::sync::OnceLock;

fn client(config: Config) -> Result<Client, Error> {
    static ENGINE: OnceLock<Engine> = OnceLock::new();
    ENGINE
        .get_or_init(|| Engine::new(EngineConfig::default()).expect("an engine"))
        .client(config)
}

include!("cases/ingestion.rs");
