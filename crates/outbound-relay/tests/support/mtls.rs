//! Mutual TLS on 127.0.0.1: a private CA made in the test, a receiver whose certificate it
//! signed and that asks every client for a certificate it signed, and such a certificate.

/// A private CA's receiver and client identity, PEM text each.
pub struct Mtls {
    pub receiver: MtlsReceiver,
    /// The CA's certificate: the only roots the receiver's chains to.
    pub ca: String,
    pub client_cert: String,
    pub client_key: String,
    /// The client certificate as the receiver records it.
    pub client_der: Vec<u8>,
}

impl Mtls {
    pub fn start() -> Mtls {
        let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        (ca_params.distinguished_name).push(rcgen::DnType::CommonName, "private test CA");
        let ca =
            rcgen::CertifiedIssuer::self_signed(ca_params, rcgen::KeyPair::generate().unwrap())
                .unwrap();
        let ca_cert: &rcgen::Certificate = ca.as_ref();
        let server_key = rcgen::KeyPair::generate().unwrap();
        let server = rcgen::CertificateParams::new(vec!["127.0.0.1".to_string()])
            .unwrap()
            .signed_by(&server_key, &ca)
            .unwrap();
        let client_key = rcgen::KeyPair::generate().unwrap();
        let client = rcgen::CertificateParams::new(vec!["relay.test".to_string()])
            .unwrap()
            .signed_by(&client_key, &ca)
            .unwrap();
        Mtls {
            receiver: MtlsReceiver::start(ca_cert, &server, &server_key),
            ca: ca_cert.pem(),
            client_cert: client.pem(),
            client_key: client_key.serialize_pem(),
            client_der: client.der().to_vec(),
        }
    }
}

/// A receiver on 127.0.0.1 over TLS that asks every client for a certificate chaining to
/// `ca`: answers 200 and records each request with the client certificate's DER; refuses a
/// handshake without one.
pub struct MtlsReceiver {
    pub url: String,
    /// Each request's client certificate (DER).
    pub hits: std::sync::Arc<std::sync::Mutex<Vec<Vec<u8>>>>,
}

impl MtlsReceiver {
    pub fn start(ca: &rcgen::Certificate, cert: &rcgen::Certificate, key: &rcgen::KeyPair) -> Self {
        use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
        use std::io::{BufRead, BufReader, Read, Write};
        use std::sync::Arc;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut roots = rustls::RootCertStore::empty();
        roots.add(ca.der().clone()).unwrap();
        let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
            Arc::new(roots),
            provider.clone(),
        )
        .build()
        .unwrap();
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_client_cert_verifier(verifier)
            .with_single_cert(vec![CertificateDer::from(cert.der().to_vec())], key)
            .unwrap();
        let config = Arc::new(config);
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("https://{}/hook", listener.local_addr().unwrap());
        let hits: Arc<std::sync::Mutex<Vec<Vec<u8>>>> = Arc::default();
        let seen = hits.clone();
        std::thread::spawn(move || {
            for tcp in listener.incoming().flatten() {
                let (config, seen) = (config.clone(), seen.clone());
                std::thread::spawn(move || {
                    let conn = rustls::ServerConnection::new(config).unwrap();
                    let mut tls = BufReader::new(rustls::StreamOwned::new(conn, tcp));
                    loop {
                        let mut line = String::new();
                        if tls.read_line(&mut line).unwrap_or(0) == 0 {
                            return;
                        }
                        let mut len = 0;
                        loop {
                            let mut h = String::new();
                            if tls.read_line(&mut h).unwrap_or(0) == 0 {
                                return;
                            }
                            let h = h.trim_end().to_ascii_lowercase();
                            if h.is_empty() {
                                break;
                            }
                            if let Some(v) = h.strip_prefix("content-length:") {
                                len = v.trim().parse().unwrap_or(0);
                            }
                        }
                        let mut body = vec![0; len];
                        if tls.read_exact(&mut body).is_err() {
                            return;
                        }
                        let peer = (tls.get_ref().conn.peer_certificates())
                            .and_then(|c| c.first().map(|c| c.to_vec()))
                            .unwrap_or_default();
                        seen.lock().unwrap().push(peer);
                        let stream = tls.get_mut();
                        let ok = b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n";
                        if stream.write_all(ok).and_then(|_| stream.flush()).is_err() {
                            return;
                        }
                    }
                });
            }
        });
        MtlsReceiver { url, hits }
    }
}
