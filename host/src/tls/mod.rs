//! TLS material and what a certificate says, knowing no other module of the gateway: reading PEM
//! files (each problem naming its file), the rustls server configuration with its client
//! verifier (internal roots, CRLs, client authentication off / optional / required), the
//! outbound client configuration (a private CA bundle, an optional client certificate) and the
//! identity facts of a verified peer certificate ([`PeerCert`], [`CertMatch`]).
//!
//! The listener that uses it, its handshake timeout and hot reload are `server::tls`;
//! the `[tls]` section is `config::tls`. Decisions and their reasons: docs/TLS.md.

mod client;
mod files;
mod peer;
mod server;

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

pub use client::ClientSpec;
pub use peer::{CertMatch, PeerCert};
pub use server::{ClientAuth, ServerMaterial, ServerSpec};

/// One problem with one file of TLS material.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsError {
    pub file: PathBuf,
    pub reason: String,
}

impl TlsError {
    fn new(file: impl Into<PathBuf>, reason: impl Into<String>) -> TlsError {
        TlsError {
            file: file.into(),
            reason: reason.into(),
        }
    }
}

impl fmt::Display for TlsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.file.display(), self.reason)
    }
}

/// Every problem found, each naming its file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsErrors(pub Vec<TlsError>);

impl fmt::Display for TlsErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{e}")?;
        }
        Ok(())
    }
}

impl std::error::Error for TlsErrors {}

/// The one crypto provider of the process (aws-lc-rs, the one reqwest already uses): TLS 1.3 and
/// 1.2 with ECDHE and AEAD suites only.
pub fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::aws_lc_rs::default_provider())
}
