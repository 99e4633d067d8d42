//! Delivery outcomes and retries, a client of its own: the cases of `cases/retries.rs`.

mod support;

fn new_client(config: outbound::Config) -> Result<outbound::Client, outbound::Error> {
    outbound::Client::new(config)
}

include!("cases/retries.rs");
