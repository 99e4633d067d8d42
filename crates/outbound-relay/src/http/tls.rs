//! The optional HTTPS listener: `tls_cert` (a PEM chain, the server's certificate first)
//! and `tls_key` (a PEM private key: PKCS#8, PKCS#1 or SEC1), served with rustls (ring),
//! TLS 1.2 and 1.3, HTTP/1.1 (ALPN `http/1.1`). Read at start; a reload does not change
//! them (restart to rotate a certificate).

use crate::config::{ConfigError, Relay};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use std::sync::Arc;
use tokio_rustls::TlsAcceptor;

/// The acceptor for `relay.tls`, or `None` when TLS is off; errors name the key.
pub fn acceptor(relay: &Relay) -> Result<Option<TlsAcceptor>, ConfigError> {
    let Some(tls) = &relay.tls else {
        return Ok(None);
    };
    let err = |key: &str, reason: String| ConfigError {
        file: relay.file.clone(),
        key: key.to_string(),
        reason,
    };
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&tls.cert)
        .and_then(|it| it.collect::<Result<Vec<_>, _>>())
        .map_err(|e| err("tls_cert", format!("{}: {e}", tls.cert.display())))?;
    if certs.is_empty() {
        return Err(err(
            "tls_cert",
            format!("{}: no certificate in it", tls.cert.display()),
        ));
    }
    let key = PrivateKeyDer::from_pem_file(&tls.key)
        .map_err(|e| err("tls_key", format!("{}: {e}", tls.key.display())))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| err("tls_cert", e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| err("tls_key", format!("does not fit tls_cert: {e}")))?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Some(TlsAcceptor::from(Arc::new(config))))
}
