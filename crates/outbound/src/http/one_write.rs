//! A request's head and body in one write. ureq transmits the head, then the body: on a
//! connection without Nagle's delay that is two TCP segments (and two TLS records), and the
//! receiver wakes twice per request. Measured on loopback with the Go bench receiver: 67 µs of
//! the receiver's CPU per webhook request of ours, 44 µs per request of a load generator
//! that writes each request at once.
//!
//! [`OneWrite`] ends the connector chain and wraps the connection: a small transmit (a
//! request head) is held back, and sent in front of the next transmit (the body) when both
//! fit the output buffer, or before the response is awaited. Bytes go out in the order ureq
//! wrote them; only the number of writes changes.
//! (`ureq::unversioned` may change in a minor release: Cargo.lock pins the version.)

use ureq::unversioned::transport::{Buffers, ConnectionDetails, Connector, NextTimeout, Transport};

/// The last connector of a chain: wraps each connection in [`Held`].
#[derive(Debug)]
pub(crate) struct OneWrite;

impl<In: Transport> Connector<In> for OneWrite {
    type Out = Held<In>;

    fn connect(
        &self,
        _details: &ConnectionDetails,
        chained: Option<In>,
    ) -> Result<Option<Held<In>>, ureq::Error> {
        Ok(chained.map(|inner| Held {
            inner,
            held: Vec::new(),
        }))
    }
}

/// A connection that holds a small transmit until the next one, or until input is awaited.
#[derive(Debug)]
pub(crate) struct Held<T> {
    inner: T,
    /// Bytes transmitted by ureq and not yet sent.
    held: Vec<u8>,
}

impl<T: Transport> Held<T> {
    /// Sends what is held, alone.
    fn flush(&mut self, timeout: NextTimeout) -> Result<(), ureq::Error> {
        if self.held.is_empty() {
            return Ok(());
        }
        let n = self.held.len();
        self.inner.buffers().output()[..n].copy_from_slice(&self.held);
        self.held.clear();
        self.inner.transmit_output(n, timeout)
    }
}

impl<T: Transport> Transport for Held<T> {
    fn buffers(&mut self) -> &mut dyn Buffers {
        self.inner.buffers()
    }

    fn transmit_output(&mut self, amount: usize, timeout: NextTimeout) -> Result<(), ureq::Error> {
        let held = self.held.len();
        let output = self.inner.buffers().output();
        let room = output.len();
        if held == 0 {
            if amount <= room / 2 {
                // Likely a request head: its body, if any, comes next.
                self.held.extend_from_slice(&output[..amount]);
                return Ok(());
            }
            return self.inner.transmit_output(amount, timeout);
        }
        if held + amount <= room {
            // The held bytes go in front of the new ones, in one write.
            output.copy_within(..amount, held);
            output[..held].copy_from_slice(&self.held);
            self.held.clear();
            return self.inner.transmit_output(held + amount, timeout);
        }
        // Both do not fit: the held bytes first, then the new ones, as ureq wrote them.
        let new = output[..amount].to_vec();
        self.flush(timeout)?;
        self.inner.buffers().output()[..amount].copy_from_slice(&new);
        self.inner.transmit_output(amount, timeout)
    }

    fn await_input(&mut self, timeout: NextTimeout) -> Result<bool, ureq::Error> {
        // The request is complete: nothing more will be written before its response.
        self.flush(timeout)?;
        self.inner.await_input(timeout)
    }

    fn is_open(&mut self) -> bool {
        self.inner.is_open()
    }

    fn is_tls(&self) -> bool {
        self.inner.is_tls()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ureq::unversioned::transport::time::Duration as UreqDuration;
    use ureq::unversioned::transport::{LazyBuffers, Transport};

    /// The connection under `Held`: keeps every write it was asked for, as one chunk each.
    #[derive(Debug)]
    struct Wire {
        buffers: LazyBuffers,
        writes: Vec<Vec<u8>>,
    }

    impl Transport for Wire {
        fn buffers(&mut self) -> &mut dyn Buffers {
            &mut self.buffers
        }
        fn transmit_output(&mut self, amount: usize, _: NextTimeout) -> Result<(), ureq::Error> {
            let bytes = self.buffers.output()[..amount].to_vec();
            self.writes.push(bytes);
            Ok(())
        }
        fn await_input(&mut self, _: NextTimeout) -> Result<bool, ureq::Error> {
            Ok(false)
        }
        fn is_open(&mut self) -> bool {
            true
        }
    }

    fn held(size: usize) -> Held<Wire> {
        Held {
            inner: Wire {
                buffers: LazyBuffers::new(64, size),
                writes: Vec::new(),
            },
            held: Vec::new(),
        }
    }

    fn timeout() -> NextTimeout {
        NextTimeout {
            after: UreqDuration::from_secs(1),
            ..NextTimeout::default()
        }
    }

    /// Writes `bytes` the way ureq does: into the output buffer from 0, then transmits.
    fn write(h: &mut Held<Wire>, bytes: &[u8]) {
        h.buffers().output()[..bytes.len()].copy_from_slice(bytes);
        h.transmit_output(bytes.len(), timeout()).unwrap();
    }

    #[test]
    fn a_head_and_a_small_body_go_out_in_one_write() {
        let mut h = held(1024);
        write(&mut h, b"POST /hook HTTP/1.1\r\ncontent-length: 7\r\n\r\n");
        assert!(h.inner.writes.is_empty(), "the head waits for its body");
        write(&mut h, b"{\"a\":1}");
        h.await_input(timeout()).unwrap();
        assert_eq!(
            h.inner.writes,
            [b"POST /hook HTTP/1.1\r\ncontent-length: 7\r\n\r\n{\"a\":1}".to_vec()]
        );
    }

    #[test]
    fn a_head_without_a_body_goes_out_when_the_response_is_awaited() {
        let mut h = held(1024);
        write(&mut h, b"GET / HTTP/1.1\r\n\r\n");
        assert!(h.inner.writes.is_empty());
        h.await_input(timeout()).unwrap();
        assert_eq!(h.inner.writes, [b"GET / HTTP/1.1\r\n\r\n".to_vec()]);
        h.await_input(timeout()).unwrap();
        assert_eq!(h.inner.writes.len(), 1, "nothing is sent twice");
    }

    #[test]
    fn a_body_too_big_to_join_the_head_follows_it_in_order() {
        let mut h = held(64);
        let head = [b'h'; 20];
        let chunk = [b'b'; 64];
        write(&mut h, &head);
        write(&mut h, &chunk); // a full buffer: does not fit beside the head
        write(&mut h, &chunk);
        write(&mut h, b"tail"); // small: held until the response is awaited
        h.await_input(timeout()).unwrap();
        let sent: Vec<u8> = h.inner.writes.concat();
        let mut expected = head.to_vec();
        expected.extend_from_slice(&chunk);
        expected.extend_from_slice(&chunk);
        expected.extend_from_slice(b"tail");
        assert_eq!(sent, expected, "every byte, in the order written");
        assert_eq!(h.inner.writes.len(), 4);
    }
}
