//! Reading PEM files: certificates, one private key, CRLs. Each failure names the file and says
//! what was wrong with it in words an operator can act on.

use std::path::Path;

use rustls::RootCertStore;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, CertificateRevocationListDer, PrivateKeyDer};

use super::TlsError;

/// Larger PEM files are refused (a CA bundle or a CRL of an internal PKI is far smaller).
const MAX_PEM_BYTES: u64 = 16 * 1024 * 1024;

fn read(path: &Path) -> Result<Vec<u8>, TlsError> {
    let meta = std::fs::metadata(path).map_err(|e| TlsError::new(path, e.to_string()))?;
    if !meta.is_file() {
        return Err(TlsError::new(path, "not a regular file"));
    }
    if meta.len() > MAX_PEM_BYTES {
        return Err(TlsError::new(
            path,
            format!("larger than {MAX_PEM_BYTES} bytes"),
        ));
    }
    std::fs::read(path).map_err(|e| TlsError::new(path, e.to_string()))
}

/// Every certificate in a PEM file, in file order (at least one).
pub(super) fn certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let bytes = read(path)?;
    let certs = CertificateDer::pem_slice_iter(&bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| TlsError::new(path, format!("not a PEM certificate file: {e}")))?;
    if certs.is_empty() {
        return Err(TlsError::new(
            path,
            "no `BEGIN CERTIFICATE` block in the file",
        ));
    }
    for (i, c) in certs.iter().enumerate() {
        if let Err(e) = x509_parser::parse_x509_certificate(c) {
            return Err(TlsError::new(
                path,
                format!("certificate {} is not valid X.509: {e}", i + 1),
            ));
        }
    }
    Ok(certs)
}

/// The private key in a PEM file (PKCS#8, PKCS#1 or SEC1).
pub(super) fn private_key(path: &Path) -> Result<PrivateKeyDer<'static>, TlsError> {
    let bytes = read(path)?;
    PrivateKeyDer::from_pem_slice(&bytes).map_err(|e| {
        TlsError::new(
            path,
            format!("no usable private key (PKCS#8, PKCS#1 or SEC1 PEM): {e}"),
        )
    })
}

/// Every CRL in a PEM file (at least one), each checked to parse.
pub(super) fn crls(path: &Path) -> Result<Vec<CertificateRevocationListDer<'static>>, TlsError> {
    let bytes = read(path)?;
    let crls = CertificateRevocationListDer::pem_slice_iter(&bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| TlsError::new(path, format!("not a PEM CRL file: {e}")))?;
    if crls.is_empty() {
        return Err(TlsError::new(path, "no `BEGIN X509 CRL` block in the file"));
    }
    for (i, c) in crls.iter().enumerate() {
        if let Err(e) = x509_parser::parse_x509_crl(c) {
            return Err(TlsError::new(
                path,
                format!("CRL {} is not a valid X.509 CRL: {e}", i + 1),
            ));
        }
    }
    Ok(crls)
}

/// Every certificate of every file as a trust anchor; problems go to `errors`.
pub(super) fn roots(paths: &[std::path::PathBuf], errors: &mut Vec<TlsError>) -> RootCertStore {
    let mut roots = RootCertStore::empty();
    for path in paths {
        match certificates(path) {
            Ok(certs) => {
                for (i, c) in certs.into_iter().enumerate() {
                    if let Err(e) = roots.add(c) {
                        errors.push(TlsError::new(
                            path,
                            format!("certificate {} is not a usable trust anchor: {e}", i + 1),
                        ));
                    }
                }
            }
            Err(e) => errors.push(e),
        }
    }
    roots
}
