//! Plain TCP connections for ureq with the system calls a request needs and few more. ureq's
//! own TCP transport probes a pooled connection with three calls (non-blocking on, a read,
//! non-blocking off), twice per request (when the connection goes back to the pool and when
//! it comes out), and sets the socket's read and write timeouts on every request (the time
//! left moves): eight calls per request besides the write and the read. Measured with signed
//! webhooks to one URL on loopback: 8 % less CPU per delivery without them.
//!
//! Here a probe is one `recv(MSG_PEEK | MSG_DONTWAIT)`, and a socket timeout is set only when
//! it changes by a step: it is the time left rounded down to [`STEP`], and a read or write
//! that times out early is resumed with the exact time left, so a request still ends at its
//! deadline, not up to a step before it.
//!
//! [`Connect`] is the connector chain's TCP and TLS part (rustls over this transport). With a
//! proxy configured it hands the connection to ureq's default chain, so proxies behave
//! exactly as ureq makes them.
//! (`ureq::unversioned` may change in a minor release: Cargo.lock pins the version.)

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};
use ureq::unversioned::transport::{
    Buffers, ConnectionDetails, Connector, DefaultConnector, LazyBuffers, NextTimeout,
    RustlsConnector, ShutdownHandle, Transport,
};

/// Socket timeouts are the time left rounded down to this: requests that start a few
/// microseconds apart leave the socket's timeout as it is.
const STEP: Duration = Duration::from_millis(250);

/// ureq's own floor for an address's share of the connect budget.
const MIN_PER_ADDRESS: Duration = Duration::from_millis(10);

/// TCP (this module's [`Socket`]), then TLS for `https` (ureq's rustls connector over it);
/// ureq's default chain when a proxy is configured.
#[derive(Debug, Default)]
pub(crate) struct Connect {
    tls: RustlsConnector,
    proxied: DefaultConnector,
}

impl Connector<()> for Connect {
    type Out = Box<dyn Transport>;

    fn connect(
        &self,
        details: &ConnectionDetails,
        _chained: Option<()>,
    ) -> Result<Option<Self::Out>, ureq::Error> {
        if details.config.proxy().is_some() {
            return self.proxied.connect(details, None);
        }
        let socket = Socket::connect(details)?;
        Ok(self
            .tls
            .connect(details, Some(socket))?
            .map(|t| Box::new(t) as Box<dyn Transport>))
    }
}

/// One TCP connection: ureq's buffers over a socket whose timeouts change by [`STEP`]s.
#[derive(Debug)]
pub(crate) struct Socket {
    /// Shared (weakly) with the agent's shutdown, which may shut it down from another thread.
    stream: Arc<TcpStream>,
    buffers: LazyBuffers,
    read: SocketTimeout,
    write: SocketTimeout,
}

impl Socket {
    /// Connects to the first of `details.addrs` that answers, each address with a share of
    /// the connect budget that halves from one to the next (as ureq's own connector does).
    fn connect(details: &ConnectionDetails) -> Result<Socket, ureq::Error> {
        let addrs: &[SocketAddr] = &details.addrs;
        let budget = (!details.timeout.after.is_not_happening()).then(|| *details.timeout.after);
        let started = Instant::now();
        let total_weight = 2.0 * (1.0 - 0.5_f64.powi(addrs.len() as i32));
        let mut weight = 1.0_f64;
        let mut last: Option<ureq::Error> = None;
        for addr in addrs {
            let result = match budget {
                Some(b) => {
                    let share = b.mul_f64(weight / total_weight).max(MIN_PER_ADDRESS);
                    TcpStream::connect_timeout(addr, share)
                }
                None => TcpStream::connect(addr),
            };
            weight /= 2.0;
            match result {
                Ok(stream) => {
                    if details.config.no_delay() {
                        stream.set_nodelay(true)?;
                    }
                    let socket = Socket::new(
                        stream,
                        LazyBuffers::new(
                            details.config.input_buffer_size(),
                            details.config.output_buffer_size(),
                        ),
                    );
                    (details.register_shutdown)(socket.shutdown_handle())?;
                    return Ok(socket);
                }
                // Only this address failed: the next one may answer.
                Err(e) if address_specific(&e) => last = Some(ureq::Error::Io(e)),
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock
                    ) =>
                {
                    if budget.is_some_and(|b| started.elapsed() >= b) {
                        return Err(ureq::Error::Timeout(details.timeout.reason));
                    }
                    last = Some(ureq::Error::Timeout(ureq::Timeout::Connect));
                }
                Err(e) => return Err(e.into()),
            }
        }
        Err(last.unwrap_or_else(|| {
            io::Error::new(io::ErrorKind::ConnectionRefused, "Connection refused").into()
        }))
    }

    fn new(stream: TcpStream, buffers: LazyBuffers) -> Socket {
        Socket {
            stream: Arc::new(stream),
            buffers,
            read: SocketTimeout::new(TcpStream::set_read_timeout),
            write: SocketTimeout::new(TcpStream::set_write_timeout),
        }
    }

    fn shutdown_handle(&self) -> Weak<dyn ShutdownHandle> {
        Arc::downgrade(&self.stream) as Weak<dyn ShutdownHandle>
    }
}

/// One of the socket's timeouts (read or write), as last set on it.
#[derive(Debug)]
struct SocketTimeout {
    set: fn(&TcpStream, Option<Duration>) -> io::Result<()>,
    /// `None`: blocking without end.
    current: Option<Duration>,
    /// How many times it was set (tests count them).
    sets: u32,
}

impl SocketTimeout {
    fn new(set: fn(&TcpStream, Option<Duration>) -> io::Result<()>) -> SocketTimeout {
        SocketTimeout {
            set,
            current: None,
            sets: 0,
        }
    }

    /// Runs `op` (one read or write on `stream`, under this timeout) until it does not time
    /// out or `deadline` (`None`: none) has passed, when the error is `reason`. The timeout is
    /// the time left rounded down to a [`STEP`], set only when that changes; when it strikes
    /// before the deadline, the rest is waited exactly.
    fn until<T>(
        &mut self,
        stream: &TcpStream,
        deadline: Option<Instant>,
        reason: ureq::Timeout,
        mut op: impl FnMut(&TcpStream) -> io::Result<T>,
    ) -> Result<T, ureq::Error> {
        let left = || deadline.map(|d| d.saturating_duration_since(Instant::now()));
        let mut want = left().map(stepped);
        loop {
            if want.is_some_and(|w| w.is_zero()) {
                return Err(ureq::Error::Timeout(reason));
            }
            if self.current != want {
                (self.set)(stream, want)?;
                self.current = want;
                self.sets += 1;
            }
            match op(stream) {
                Ok(v) => return Ok(v),
                Err(e) => match (e.kind(), deadline) {
                    (io::ErrorKind::Interrupted, None) => {}
                    (
                        io::ErrorKind::WouldBlock
                        | io::ErrorKind::TimedOut
                        | io::ErrorKind::Interrupted,
                        Some(_),
                    ) => want = left(),
                    _ => return Err(e.into()),
                },
            }
        }
    }
}

/// When `timeout` runs out (`None`: never), or its error when it already has.
fn deadline(timeout: NextTimeout) -> Result<Option<Instant>, ureq::Error> {
    if timeout.after.is_zero() {
        return Err(ureq::Error::Timeout(timeout.reason));
    }
    Ok((!timeout.after.is_not_happening()).then(|| Instant::now() + *timeout.after))
}

/// The time left, rounded down to a [`STEP`] (the time left itself when under one).
fn stepped(left: Duration) -> Duration {
    if left < STEP {
        return left;
    }
    let steps = left.as_nanos() / STEP.as_nanos();
    STEP * steps as u32
}

/// Whether a failed connect concerns only the address tried (ureq's rule).
fn address_specific(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionRefused
            | io::ErrorKind::HostUnreachable
            | io::ErrorKind::NetworkUnreachable
            | io::ErrorKind::AddrNotAvailable
    )
}

impl Transport for Socket {
    fn buffers(&mut self) -> &mut dyn Buffers {
        &mut self.buffers
    }

    fn transmit_output(&mut self, amount: usize, timeout: NextTimeout) -> Result<(), ureq::Error> {
        // One deadline for the whole transmit, however many writes it takes.
        let timeout = timeout.for_write();
        let deadline = deadline(timeout)?;
        let mut sent = 0;
        while sent < amount {
            let output = &self.buffers.output()[sent..amount];
            let wrote = self
                .write
                .until(&self.stream, deadline, timeout.reason, |mut s| {
                    s.write(output)
                })?;
            match wrote {
                0 => return Err(io::Error::from(io::ErrorKind::WriteZero).into()),
                n => sent += n,
            }
        }
        Ok(())
    }

    fn await_input(&mut self, timeout: NextTimeout) -> Result<bool, ureq::Error> {
        let timeout = timeout.for_read();
        let input = self.buffers.input_append_buf();
        let n = self
            .read
            .until(&self.stream, deadline(timeout)?, timeout.reason, |mut s| {
                s.read(input)
            })?;
        self.buffers.input_appended(n);
        Ok(n > 0)
    }

    /// Open, with nothing unread: the peer has neither closed it nor sent bytes nobody asked
    /// for. One non-blocking peek.
    fn is_open(&mut self) -> bool {
        let mut byte = [0u8; 1];
        // SAFETY: a valid socket and a one-byte buffer that outlives the call.
        let n = unsafe {
            libc::recv(
                self.stream.as_raw_fd(),
                byte.as_mut_ptr().cast(),
                1,
                libc::MSG_PEEK | libc::MSG_DONTWAIT,
            )
        };
        n < 0 && io::Error::last_os_error().kind() == io::ErrorKind::WouldBlock
    }

    fn is_tls(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;
    use ureq::unversioned::transport::time::Duration as UreqDuration;

    fn pair() -> (Socket, TcpStream) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (server, _) = listener.accept().unwrap();
        (Socket::new(client, LazyBuffers::new(1024, 1024)), server)
    }

    fn within(d: Duration) -> NextTimeout {
        NextTimeout {
            after: UreqDuration::Exact(d),
            reason: ureq::Timeout::Global,
            per_read: None,
            per_write: None,
        }
    }

    #[test]
    fn a_probe_tells_an_idle_connection_from_a_closed_or_chatty_one() {
        let (mut idle, _keep) = pair();
        assert!(idle.is_open());
        assert!(idle.is_open(), "a probe leaves the connection as it was");

        let (mut closed, server) = pair();
        drop(server);
        std::thread::sleep(Duration::from_millis(20));
        assert!(!closed.is_open());

        let (mut chatty, mut server) = pair();
        server.write_all(b"HTTP/1.1 200 OK\r\n").unwrap();
        std::thread::sleep(Duration::from_millis(20));
        assert!(!chatty.is_open(), "bytes nobody asked for: not reusable");
        // The peek took nothing: the bytes are still there to read.
        assert!(chatty.await_input(within(Duration::from_secs(1))).unwrap());
        assert_eq!(chatty.buffers.input(), b"HTTP/1.1 200 OK\r\n");
    }

    #[test]
    fn requests_a_moment_apart_set_the_socket_timeouts_once() {
        let (mut socket, mut server) = pair();
        for i in 0..20u64 {
            let n = 5;
            socket.buffers.output()[..n].copy_from_slice(b"hello");
            // Each request has a little less left than 5 s, as the global timeout gives it.
            let left = Duration::from_secs(5) - Duration::from_micros(1 + i * 7);
            socket.transmit_output(n, within(left)).unwrap();
            let mut got = [0u8; 5];
            server.read_exact(&mut got).unwrap();
            server.write_all(b"ok").unwrap();
            assert!(socket.await_input(within(left)).unwrap());
            socket.buffers.input_consume(2);
        }
        assert_eq!(
            socket.read.sets + socket.write.sets,
            2,
            "one read and one write timeout for 20 requests"
        );
        assert_eq!(socket.read.current, Some(Duration::from_millis(4750)));
    }

    #[test]
    fn a_read_that_stalls_ends_at_its_deadline_not_at_the_rounded_timeout() {
        let (mut socket, _server) = pair();
        // 0.6 s left: the socket waits 0.5 s (a step), then the remaining 0.1 s exactly.
        let started = Instant::now();
        let err = socket
            .await_input(within(Duration::from_millis(600)))
            .unwrap_err();
        let took = started.elapsed();
        assert!(
            matches!(err, ureq::Error::Timeout(ureq::Timeout::Global)),
            "{err:?}"
        );
        assert!(took >= Duration::from_millis(600), "ended early: {took:?}");
        assert!(took < Duration::from_millis(900), "ended late: {took:?}");
    }

    #[test]
    fn a_write_the_peer_never_reads_ends_at_its_deadline() {
        let (mut socket, _server) = pair();
        let started = Instant::now();
        let err = loop {
            let n = socket.buffers.output().len();
            socket.buffers.output().fill(b'x');
            if let Err(e) = socket.transmit_output(n, within(Duration::from_millis(700))) {
                break e;
            }
            assert!(started.elapsed() < Duration::from_secs(5), "never blocked");
        };
        assert!(matches!(err, ureq::Error::Timeout(_)), "{err:?}");
    }

    #[test]
    fn a_reply_after_the_rounded_timeout_but_before_the_deadline_is_read() {
        let (mut socket, mut server) = pair();
        let answer = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(370));
            server.write_all(b"late").unwrap();
            server
        });
        // 0.49 s left: the socket first waits 0.25 s, then the rest, and the reply comes in
        // it (0.12 s from either end, for a loaded machine).
        assert!(socket
            .await_input(within(Duration::from_millis(490)))
            .unwrap());
        assert_eq!(socket.buffers.input(), b"late");
        answer.join().unwrap();
    }

    #[test]
    fn stepped_rounds_down_to_a_step_and_keeps_what_is_under_one() {
        for (left, want) in [(4999, 4750), (5000, 5000), (251, 250), (249, 249)] {
            let ms = Duration::from_millis;
            assert_eq!(stepped(ms(left)), ms(want), "{left} ms");
        }
    }
}
