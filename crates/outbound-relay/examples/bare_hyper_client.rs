//! The yardstick of `scripts/relay-tenants.sh`'s tenants case: what one thread of bare hyper
//! gets from the same receiver, so the relay's rate can be read against the machine's limit
//! rather than against a number. Hyper's HTTP/1.1 client connections (the same client the
//! relay's engine drives, without a pool: each task owns its connection) on a tokio
//! current-thread runtime; `CONNECTIONS` tasks, each with one request in flight, POST bodies of
//! `BODY` bytes (a messageId and a send-time stamp, as the relay's deliveries carry) with a
//! signed webhook's headers, in turn to `<URL_PREFIX><i>-<j>` for sources `FIRST` ..
//! `FIRST + SOURCES - 1` and webhooks `j` in 0..5. No signing, no spool, no scheduling: what is
//! left is HTTP.
//!
//! `bare_hyper_client <URL_PREFIX> <FIRST> <SOURCES> <CONNECTIONS> <SECONDS> <BODY>`; prints
//! one JSON line: the 2xx answers read whole within the seconds, per second.

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::header::{CONTENT_TYPE, HOST, USER_AGENT};
use hyper::Request;
use hyper_util::rt::TokioIo;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

struct Run {
    host: String,
    /// The path up to the source's number: `/hook/s`.
    path: String,
    first: usize,
    urls: usize,
    connections: usize,
    body: usize,
    deadline: Instant,
    answered: AtomicU64,
    failed: AtomicU64,
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() != 6 {
        eprintln!(
            "usage: bare_hyper_client <URL_PREFIX> <FIRST> <SOURCES> <CONNECTIONS> <SECONDS> <BODY>"
        );
        std::process::exit(2);
    }
    let number = |i: usize| -> usize {
        args[i].parse().unwrap_or_else(|_| {
            eprintln!("not a number: {}", args[i]);
            std::process::exit(2)
        })
    };
    let Some(rest) = args[0].strip_prefix("http://") else {
        eprintln!("URL_PREFIX must be http://host:port/path");
        std::process::exit(2)
    };
    let (host, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let seconds: f64 = args[4].parse().unwrap_or(10.0);
    let run = Arc::new(Run {
        host: host.to_string(),
        path: path.to_string(),
        first: number(1),
        urls: 5 * number(2).max(1),
        connections: number(3).max(1),
        body: number(5),
        deadline: Instant::now() + Duration::from_secs_f64(seconds),
        answered: AtomicU64::new(0),
        failed: AtomicU64::new(0),
    });
    // One thread: the yardstick is what one core's worth of plain HTTP gets.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    runtime.block_on(async {
        let tasks: Vec<_> = (0..run.connections)
            .map(|c| tokio::spawn(connection(run.clone(), c)))
            .collect();
        for t in tasks {
            let _ = t.await;
        }
    });
    let answered = run.answered.load(Relaxed);
    println!(
        "{{\"requests\":{answered},\"failed\":{},\"seconds\":{seconds},\"requests_per_s\":{:.1},\"connections\":{}}}",
        run.failed.load(Relaxed),
        answered as f64 / seconds,
        run.connections
    );
}

/// Connection `c`: its requests are numbers c, c + C, c + 2C, ... (C connections) until the
/// deadline; a connection that fails is opened again.
async fn connection(run: Arc<Run>, c: usize) {
    let mut n = c as u64;
    while Instant::now() < run.deadline {
        let Ok(stream) = tokio::net::TcpStream::connect(run.host.as_str()).await else {
            run.failed.fetch_add(1, Relaxed);
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        let _ = stream.set_nodelay(true);
        let Ok((mut tx, conn)) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await
        else {
            run.failed.fetch_add(1, Relaxed);
            continue;
        };
        tokio::spawn(async move {
            let _ = conn.await;
        });
        while Instant::now() < run.deadline {
            if tx.ready().await.is_err() {
                break;
            }
            let url = n as usize % run.urls;
            let request = Request::post(format!("{}{}-{}", run.path, run.first + url / 5, url % 5))
                .header(HOST, run.host.as_str())
                .header(USER_AGENT, "Outbound/1.0")
                .header(CONTENT_TYPE, "application/json")
                // The relay's signature header, as long (HMAC-SHA1 in hex).
                .header("x-signature", SIGNATURE)
                .body(Full::new(Bytes::from(body(n, run.body))))
                .expect("a valid request");
            n += run.connections as u64;
            let ok = match tx.send_request(request).await {
                Ok(answer) => {
                    let ok = answer.status().is_success();
                    answer.into_body().collect().await.is_ok() && ok
                }
                Err(_) => false,
            };
            if !ok {
                run.failed.fetch_add(1, Relaxed);
                break;
            }
            if Instant::now() < run.deadline {
                run.answered.fetch_add(1, Relaxed);
            }
        }
    }
}

const SIGNATURE: &str = "0000000000000000000000000000000000000000";

/// A body of `size` bytes (at least its fields' own) carrying what the receiver reads from
/// the relay's: a messageId and the send time (`t0`, unix ns).
fn body(n: u64, size: usize) -> Vec<u8> {
    let t0 = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let head = format!(
        r#"{{"type":"track","event":"Bare","messageId":"bare-{n}","properties":{{"t0":{t0},"pad":""#
    );
    let tail = r#""}}"#;
    let mut b = Vec::with_capacity(size.max(head.len() + tail.len()));
    b.extend_from_slice(head.as_bytes());
    b.resize(size.saturating_sub(tail.len()).max(head.len()), b'x');
    b.extend_from_slice(tail.as_bytes());
    b
}
