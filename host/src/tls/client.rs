//! The outbound side: a model server or webhook target reached over TLS with a private CA
//! bundle (no system trust store: air-gapped sites have none worth trusting) and, optionally, a
//! client certificate (an upstream behind an mTLS proxy).

use std::path::PathBuf;

use rustls::client::ClientConfig;

use super::{TlsError, TlsErrors, files, provider};

/// `tls = { ca = [...], cert = "...", key = "..." }` on a model or `[webhooks]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientSpec {
    /// The only trust anchors for the server's certificate (at least one file).
    pub ca: Vec<PathBuf>,
    /// A client certificate chain and its key, both or neither.
    pub identity: Option<(PathBuf, PathBuf)>,
}

impl ClientSpec {
    /// Reads every file; the configuration offers ALPN `http/1.1` only (upstream pools are sized
    /// for HTTP/1.1 connections, as over plain HTTP).
    pub fn load(&self) -> Result<ClientConfig, TlsErrors> {
        let mut errors = Vec::new();
        let roots = files::roots(&self.ca, &mut errors);
        let identity = match &self.identity {
            Some((cert, key)) => {
                let c = files::certificates(cert).map_err(|e| errors.push(e)).ok();
                let k = files::private_key(key).map_err(|e| errors.push(e)).ok();
                c.zip(k)
            }
            None => None,
        };
        if !errors.is_empty() {
            return Err(TlsErrors(errors));
        }
        let builder = ClientConfig::builder_with_provider(provider())
            .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
            .map_err(|e| TlsErrors(vec![TlsError::new(PathBuf::new(), e.to_string())]))?
            .with_root_certificates(roots);
        let mut config = match (identity, &self.identity) {
            (Some((certs, key)), Some((cert_path, key_path))) => {
                if let Err(e) = rustls::sign::CertifiedKey::from_der(
                    certs.clone(),
                    key.clone_key(),
                    &provider(),
                ) {
                    return Err(TlsErrors(vec![TlsError::new(
                        key_path,
                        format!(
                            "does not go with the certificate in {}: {e}",
                            cert_path.display()
                        ),
                    )]));
                }
                builder
                    .with_client_auth_cert(certs, key)
                    .map_err(|e| TlsErrors(vec![TlsError::new(key_path, e.to_string())]))?
            }
            _ => builder.with_no_client_auth(),
        };
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(config)
    }
}
