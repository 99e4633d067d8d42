//! Certificates and keys given as PEM text or as the path of a PEM file: `ca_certs` (extra
//! trusted roots), and an endpoint's client certificate, key and roots of its own.

use crate::error::Error;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls::RootCertStore;

/// Certificates from PEM text, or from the PEM file at that path. Other sections (keys) are
/// skipped; none at all is an error.
pub(crate) fn load_pem(pem_or_path: &str) -> Result<Vec<CertificateDer<'static>>, Error> {
    load_certs(pem_or_path, "ca_certs")
}

/// PEM text as given, or the file at that path; errors name `setting`.
fn pem_text(pem_or_path: &str, setting: &str) -> Result<Vec<u8>, Error> {
    if pem_or_path.contains("-----BEGIN") {
        return Ok(pem_or_path.as_bytes().to_vec());
    }
    std::fs::read(pem_or_path).map_err(|e| {
        Error::config(
            setting,
            format!("cannot read PEM file {pem_or_path:?}: {e}"),
        )
    })
}

/// [`load_pem`], with errors naming `setting`.
pub(crate) fn load_certs(
    pem_or_path: &str,
    setting: &str,
) -> Result<Vec<CertificateDer<'static>>, Error> {
    let text = pem_text(pem_or_path, setting)?;
    let mut certs = Vec::new();
    for cert in CertificateDer::pem_slice_iter(&text) {
        certs.push(cert.map_err(|e| Error::config(setting, format!("invalid PEM: {e}")))?);
    }
    if certs.is_empty() {
        return Err(Error::config(setting, "no certificate found in the PEM"));
    }
    Ok(certs)
}

/// The first private key (PKCS#8, PKCS#1 or SEC1) in PEM text or the file at that path.
pub(crate) fn load_key(pem_or_path: &str, setting: &str) -> Result<PrivateKeyDer<'static>, Error> {
    let text = pem_text(pem_or_path, setting)?;
    PrivateKeyDer::from_pem_slice(&text)
        .map_err(|_| Error::config(setting, "no private key found in the PEM"))
}

/// A store of `pem_or_path`'s certificates alone: an endpoint's private CA.
pub(crate) fn only_roots(pem_or_path: &str, setting: &str) -> Result<RootCertStore, Error> {
    let mut roots = RootCertStore::empty();
    for cert in load_certs(pem_or_path, setting)? {
        roots
            .add(cert)
            .map_err(|e| Error::config(setting, format!("invalid certificate: {e}")))?;
    }
    Ok(roots)
}

/// The web's roots plus `ca_certs`' certificates (each must parse as a trust anchor).
pub(crate) fn roots(ca_certs: Option<&str>) -> Result<RootCertStore, Error> {
    let mut roots = RootCertStore::empty();
    for der in webpki_root_certs::TLS_SERVER_ROOT_CERTS {
        // A root the parser does not take is left out, as webpki-roots users do.
        let _ = roots.add(der.clone());
    }
    if let Some(pem) = ca_certs {
        for cert in load_pem(pem)? {
            roots
                .add(cert)
                .map_err(|e| Error::config("ca_certs", format!("invalid certificate: {e}")))?;
        }
    }
    Ok(roots)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pem() -> String {
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = rcgen::CertificateParams::new(vec!["localhost".into()])
            .unwrap()
            .self_signed(&key)
            .unwrap();
        cert.pem()
    }

    #[test]
    fn certificates_come_from_pem_text_or_a_file_and_keys_are_skipped() {
        let text = pem();
        assert_eq!(load_pem(&text).unwrap().len(), 1);
        let with_key = format!(
            "{text}{}",
            rcgen::KeyPair::generate().unwrap().serialize_pem()
        );
        assert_eq!(load_pem(&with_key).unwrap().len(), 1);
        let dir = std::env::temp_dir().join(format!("outbound-pem-{}", std::process::id()));
        std::fs::write(&dir, format!("{text}{text}")).unwrap();
        assert_eq!(load_pem(dir.to_str().unwrap()).unwrap().len(), 2);
        let _ = std::fs::remove_file(&dir);
        assert!(roots(Some(&text)).is_ok());
    }

    #[test]
    fn a_missing_file_no_certificate_or_a_broken_one_names_ca_certs() {
        let err = |given: &str| load_pem(given).unwrap_err().to_string();
        assert!(err("/nonexistent/ca.pem").contains("cannot read PEM file"));
        let key = rcgen::KeyPair::generate().unwrap().serialize_pem();
        assert!(err(&key).contains("no certificate found"));
        let broken = "-----BEGIN CERTIFICATE-----\n!!!\n-----END CERTIFICATE-----\n";
        assert!(err(broken).contains("invalid PEM"), "{}", err(broken));
        for e in [err("/nonexistent/ca.pem"), err(&key), err(broken)] {
            assert!(e.contains("ca_certs"), "{e}");
        }
    }
}
