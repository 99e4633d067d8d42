//! `rediss://`: the Redis spool over TLS (rustls, the system's roots, or `SSL_CERT_FILE`),
//! against a real `redis-server` with a TLS port. Alone in its file: it sets `SSL_CERT_FILE`
//! for its process.

mod support;

use outbound::{Client, Error, Message, OutcomeKind};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use support::{ingestion, Outcomes, Server};

#[test]
fn a_rediss_spool_checks_the_certificate_and_then_works() {
    let dir = std::env::temp_dir().join(format!("outbound-redis-tls-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "outbound redis test CA");
    let ca =
        rcgen::CertifiedIssuer::self_signed(params, rcgen::KeyPair::generate().unwrap()).unwrap();
    let key = rcgen::KeyPair::generate().unwrap();
    let leaf = rcgen::CertificateParams::new(vec!["127.0.0.1".to_string()])
        .unwrap()
        .signed_by(&key, &ca)
        .unwrap();
    let ca_pem = AsRef::<rcgen::Certificate>::as_ref(&ca).pem();
    let (ca_file, cert_file, key_file) = (dir.join("ca.pem"), dir.join("c.pem"), dir.join("k.pem"));
    std::fs::write(&ca_file, &ca_pem).unwrap();
    std::fs::write(&cert_file, leaf.pem()).unwrap();
    std::fs::write(&key_file, key.serialize_pem()).unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut redis = Command::new("redis-server")
        .args(["--bind", "127.0.0.1", "--port", "0"])
        .args(["--tls-port", &port.to_string()])
        .args(["--tls-cert-file", cert_file.to_str().unwrap()])
        .args(["--tls-key-file", key_file.to_str().unwrap()])
        .args(["--tls-ca-cert-file", ca_file.to_str().unwrap()])
        .args([
            "--tls-auth-clients",
            "no",
            "--save",
            "",
            "--appendonly",
            "no",
        ])
        .args(["--dir", dir.to_str().unwrap()])
        .stdout(Stdio::null())
        .spawn()
        .expect("redis-server: run scripts/redis-env.sh");
    let end = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < end, "redis-server did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    let spool = format!("rediss://127.0.0.1:{port}/0?prefix=tls");
    let down = Server::answering(503);
    let config = |server: &Server| ingestion(server).spool(spool.clone());

    // Our CA is not among the system's roots: refused.
    std::env::remove_var("SSL_CERT_FILE");
    match Client::new(config(&down)) {
        Err(Error::Spool { path, reason }) => {
            assert!(path.starts_with("rediss://127.0.0.1"), "{path}");
            assert!(reason.to_lowercase().contains("cert"), "{reason}");
        }
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("an untrusted certificate was accepted"),
    }

    // Trusted through SSL_CERT_FILE: a message left by close goes to the next client.
    std::env::set_var("SSL_CERT_FILE", &ca_file);
    let a = Client::new(config(&down)).unwrap();
    let id = a.enqueue(&Message::track("u", "Tls")).unwrap();
    a.close(Some(Duration::from_millis(300))).unwrap();
    assert_eq!(a.stats().spooled, 1);
    let up = Server::answering(200);
    let outcomes = Outcomes::default();
    let b = Client::new(config(&up).on_outcome(outcomes.callback())).unwrap();
    let seen = outcomes.wait_for(1, Duration::from_secs(20));
    assert_eq!(seen.len(), 1);
    assert_eq!(&*seen[0].message_id, id.as_str());
    assert_eq!(seen[0].kind, OutcomeKind::Delivered);
    b.close(None).unwrap();
    let _ = redis.kill();
    let _ = redis.wait();
    let _ = std::fs::remove_dir_all(&dir);
}
