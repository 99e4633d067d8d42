//! A minimal endpoint on 127.0.0.1 for the examples' benchmarks and `tests/audience.rs`:
//! keep-alive HTTP/1.1, hands each body to `on_body` and answers `200 {}` (or never, when
//! hanging). Minimal on purpose (no request log, unlike the tests' server): the benchmarks
//! measure the client, not the receiver.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;

/// Starts the endpoint; returns its port.
pub fn start(on_body: impl Fn(&[u8]) + Send + Sync + 'static) -> u16 {
    spawn(true, on_body)
}

/// Starts an endpoint that reads every request and never answers one; returns its port.
#[allow(dead_code)] // Not every user of this file needs one.
pub fn hanging(on_body: impl Fn(&[u8]) + Send + Sync + 'static) -> u16 {
    spawn(false, on_body)
}

fn spawn(answer: bool, on_body: impl Fn(&[u8]) + Send + Sync + 'static) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let on_body = Arc::new(on_body);
    std::thread::Builder::new()
        .name("receiver".into())
        .spawn(move || {
            for stream in listener.incoming().flatten() {
                let on_body = on_body.clone();
                std::thread::Builder::new()
                    .name("receiver".into())
                    .spawn(move || serve(stream, &*on_body, answer))
                    .unwrap();
            }
        })
        .unwrap();
    port
}

fn serve(stream: TcpStream, on_body: &dyn Fn(&[u8]), answer: bool) {
    let mut writer = stream.try_clone().unwrap();
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    loop {
        line.clear();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let mut length = 0usize;
        loop {
            line.clear();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            let header = line.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':') {
                if name.eq_ignore_ascii_case("content-length") {
                    length = value.trim().parse().unwrap();
                }
            }
        }
        let mut body = vec![0; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        on_body(&body);
        if !answer {
            continue;
        }
        let reply = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}";
        if writer.write_all(reply.as_bytes()).is_err() {
            return;
        }
    }
}
