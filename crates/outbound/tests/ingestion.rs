//! The ingestion destination, a client of its own (an engine of its own): the cases of
//! `cases/ingestion.rs`.

mod support;

use outbound::{Client, Error};

fn client(config: Config) -> Result<Client, Error> {
    Client::new(config)
}

include!("cases/ingestion.rs");
