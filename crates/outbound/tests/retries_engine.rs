//! Delivery outcomes and retries, an engine's client (batches and webhooks on the I/O
//! engine): the cases of `cases/retries.rs`.

mod support;

fn new_client(config: outbound::Config) -> Result<outbound::Client, outbound::Error> {
    static ENGINE: std::sync::OnceLock<outbound::Engine> = std::sync::OnceLock::new();
    ENGINE
        .get_or_init(|| {
            outbound::Engine::new(outbound::EngineConfig::default()).expect("an engine")
        })
        .client(config)
}

include!("cases/retries.rs");
