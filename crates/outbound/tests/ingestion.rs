//! The ingestion destination, a client of its own (batches on worker threads): the cases of
//! `cases/ingestion.rs`.

mod support;

use outbound::{Client, Error};

fn client(config: Config) -> Result<Client, Error> {
    Client::new(config)
}

include!("cases/ingestion.rs");
