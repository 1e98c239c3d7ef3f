//! The server side: [`ServerSpec`] (the files and settings of `[tls]`) loaded into a
//! [`ServerMaterial`] (the rustls configuration every new handshake uses). Loading reads every
//! file and reports every problem at once; a key that does not match its certificate is one.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::server::{ServerConfig, WebPkiClientVerifier};

use super::{TlsError, TlsErrors, files, provider};

/// Whether clients must, may or do not present a certificate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientAuth {
    /// No certificate is asked for.
    Off,
    /// A certificate is asked for; without one the request authenticates with its bearer key. A
    /// certificate that is presented must verify.
    Optional,
    /// No verified certificate, no connection.
    Required,
}

impl ClientAuth {
    pub fn as_str(self) -> &'static str {
        match self {
            ClientAuth::Off => "off",
            ClientAuth::Optional => "optional",
            ClientAuth::Required => "required",
        }
    }
}

/// What `[tls]` names: the files (absolute or relative to the working directory) and settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerSpec {
    /// The server certificate chain (leaf first).
    pub cert: PathBuf,
    pub key: PathBuf,
    pub client_auth: ClientAuth,
    /// Trust anchors for client certificates (an internal root, or several).
    pub client_ca: Vec<PathBuf>,
    pub crls: Vec<PathBuf>,
    /// TLS 1.3 tickets and 1.2 session ids from an in-memory cache (per material: a reload starts
    /// a new cache, so no session outlives the CRL or CA bundle it was verified against).
    pub session_resumption: bool,
}

/// Sessions kept for resumption (about 1 KiB each).
const SESSION_CACHE: usize = 10_000;

/// Loaded material: what new handshakes use, and facts for `/metrics` and the log.
#[derive(Debug, Clone)]
pub struct ServerMaterial {
    pub config: Arc<ServerConfig>,
    /// The server certificate's `notAfter`, Unix seconds.
    pub not_after: i64,
    pub subject: String,
}

impl ServerSpec {
    /// Every file the material is read from (a change to any of them reloads it).
    pub fn files(&self) -> Vec<&Path> {
        let mut out = vec![self.cert.as_path(), self.key.as_path()];
        out.extend(self.client_ca.iter().map(PathBuf::as_path));
        out.extend(self.crls.iter().map(PathBuf::as_path));
        out
    }

    /// Reads every file and builds the server configuration: TLS 1.3 and 1.2, ALPN `h2` and
    /// `http/1.1`, the client verifier `client_auth` asks for.
    pub fn load(&self) -> Result<ServerMaterial, TlsErrors> {
        let provider = provider();
        let mut errors = Vec::new();
        let certs = files::certificates(&self.cert)
            .map_err(|e| errors.push(e))
            .ok();
        let key = files::private_key(&self.key)
            .map_err(|e| errors.push(e))
            .ok();
        let roots = files::roots(&self.client_ca, &mut errors);
        let mut crls = Vec::new();
        for path in &self.crls {
            match files::crls(path) {
                Ok(c) => crls.extend(c),
                Err(e) => errors.push(e),
            }
        }
        let (Some(certs), Some(key)) = (certs, key) else {
            return Err(TlsErrors(errors));
        };
        let certified =
            match rustls::sign::CertifiedKey::from_der(certs.clone(), key.clone_key(), &provider) {
                Ok(c) => Some(c),
                Err(rustls::Error::InconsistentKeys(_)) => {
                    errors.push(TlsError::new(
                        &self.key,
                        format!(
                            "this private key does not match the certificate in {}",
                            self.cert.display()
                        ),
                    ));
                    None
                }
                Err(e) => {
                    errors.push(TlsError::new(
                        &self.key,
                        format!("unusable private key: {e}"),
                    ));
                    None
                }
            };
        if !errors.is_empty() || certified.is_none() {
            return Err(TlsErrors(errors));
        }
        let verifier = if self.client_auth == ClientAuth::Off {
            WebPkiClientVerifier::no_client_auth()
        } else {
            let mut b =
                WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider.clone())
                    .with_crls(crls)
                    // A CA bundle may hold issuers without a CRL; their certificates are accepted on the
                    // strength of their chain (docs/TLS.md).
                    .allow_unknown_revocation_status();
            if self.client_auth == ClientAuth::Optional {
                b = b.allow_unauthenticated();
            }
            b.build().map_err(|e| {
                let file = self.crls.first().or(self.client_ca.first()).cloned();
                TlsErrors(vec![TlsError::new(
                    file.unwrap_or_default(),
                    format!("client verifier: {e}"),
                )])
            })?
        };
        let mut config = ServerConfig::builder_with_provider(provider)
            .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
            .and_then(|b| {
                b.with_client_cert_verifier(verifier)
                    .with_single_cert(certs.clone(), key)
            })
            .map_err(|e| TlsErrors(vec![TlsError::new(&self.cert, e.to_string())]))?;
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        if self.session_resumption {
            config.session_storage = rustls::server::ServerSessionMemoryCache::new(SESSION_CACHE);
        } else {
            config.session_storage = Arc::new(rustls::server::NoServerSessionStorage {});
            config.send_tls13_tickets = 0;
        }
        let (not_after, subject) = x509_parser::parse_x509_certificate(&certs[0])
            .map(|(_, c)| (c.validity().not_after.timestamp(), c.subject().to_string()))
            .unwrap_or_default();
        Ok(ServerMaterial {
            config: Arc::new(config),
            not_after,
            subject,
        })
    }
}
