//! What a verified client certificate says about who is calling, and the matchers that map it to
//! an identity: a SAN URI (SPIFFE IDs such as `spiffe://corp.example/team/risk`), a SAN DNS name,
//! or the SHA-256 of the SubjectPublicKeyInfo (a pin that survives re-issuing with the same key).

use std::fmt;

use sha2::{Digest, Sha256};

/// The identity facts of the certificate a client presented (and rustls verified).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerCert {
    /// `sha256:<hex>` of the whole certificate (DER): what the journal records.
    pub fingerprint: String,
    /// Hex SHA-256 of the SubjectPublicKeyInfo (DER).
    pub spki_sha256: String,
    pub uris: Vec<String>,
    /// Lower-cased.
    pub dns_names: Vec<String>,
    /// The subject, for log lines and error messages.
    pub subject: String,
}

impl PeerCert {
    /// Reads the end-entity certificate. `None` when it does not parse (rustls verified it, so
    /// that does not happen in practice) or its SAN extension is malformed.
    pub fn from_der(der: &[u8]) -> Option<PeerCert> {
        let (_, cert) = x509_parser::parse_x509_certificate(der).ok()?;
        let mut uris = Vec::new();
        let mut dns_names = Vec::new();
        if let Some(san) = cert.subject_alternative_name().ok()? {
            for name in &san.value.general_names {
                match name {
                    x509_parser::extensions::GeneralName::URI(u) => uris.push((*u).to_string()),
                    x509_parser::extensions::GeneralName::DNSName(d) => {
                        dns_names.push(d.to_ascii_lowercase());
                    }
                    _ => {}
                }
            }
        }
        Some(PeerCert {
            fingerprint: format!("sha256:{}", hex::encode(Sha256::digest(der))),
            spki_sha256: hex::encode(Sha256::digest(cert.public_key().raw)),
            uris,
            dns_names,
            subject: cert.subject().to_string(),
        })
    }

    /// Reads the first certificate of a PEM text (an admin pinning a certificate by its key).
    pub fn from_pem(pem: &str) -> Result<PeerCert, String> {
        use rustls_pki_types::CertificateDer;
        use rustls_pki_types::pem::PemObject;
        let der = CertificateDer::from_pem_slice(pem.as_bytes())
            .map_err(|e| format!("not a PEM certificate: {e}"))?;
        PeerCert::from_der(&der).ok_or_else(|| "not a readable X.509 certificate".into())
    }
}

/// How a certificate identity is recognised. At most one identity per matcher.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum CertMatch {
    /// A SAN URI, compared exactly (SPIFFE IDs are case-sensitive in their path).
    Uri(String),
    /// A SAN DNS name, compared case-insensitively (stored lower-cased).
    Dns(String),
    /// The SubjectPublicKeyInfo's SHA-256, 64 lower-case hex digits.
    Spki(String),
}

impl CertMatch {
    /// Parses `kind` (`uri`, `dns`, `spki_sha256`) and `value`, normalising the value; the error
    /// says what a good one looks like.
    pub fn parse(kind: &str, value: &str) -> Result<CertMatch, String> {
        let value = value.trim();
        if value.is_empty() || value.len() > 1024 {
            return Err("must be 1 to 1024 characters".into());
        }
        match kind {
            "uri" => {
                if !value.contains(':') || value.chars().any(char::is_whitespace) {
                    return Err(format!(
                        "`{value}` is not a URI (a SPIFFE ID looks like `spiffe://corp.example/team/risk`)"
                    ));
                }
                Ok(CertMatch::Uri(value.to_string()))
            }
            "dns" => {
                let ok = value.split('.').all(|l| {
                    !l.is_empty()
                        && l.len() <= 63
                        && l.chars()
                            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '*')
                });
                if !ok {
                    return Err(format!("`{value}` is not a DNS name"));
                }
                Ok(CertMatch::Dns(value.to_ascii_lowercase()))
            }
            "spki_sha256" => {
                let hex = value
                    .strip_prefix("sha256:")
                    .unwrap_or(value)
                    .to_ascii_lowercase();
                if hex.len() != 64 || !hex.chars().all(|c| c.is_ascii_hexdigit()) {
                    return Err("must be the SubjectPublicKeyInfo's SHA-256: 64 hex digits".into());
                }
                Ok(CertMatch::Spki(hex))
            }
            other => Err(format!(
                "unknown match kind `{other}`: one of `uri`, `dns`, `spki_sha256`"
            )),
        }
    }

    pub fn kind(&self) -> &'static str {
        match self {
            CertMatch::Uri(_) => "uri",
            CertMatch::Dns(_) => "dns",
            CertMatch::Spki(_) => "spki_sha256",
        }
    }

    pub fn value(&self) -> &str {
        match self {
            CertMatch::Uri(v) | CertMatch::Dns(v) | CertMatch::Spki(v) => v,
        }
    }

    /// The matchers a certificate could be found by, most specific first: its key pin, then
    /// each SAN URI, then each SAN DNS name.
    pub fn candidates(peer: &PeerCert) -> Vec<CertMatch> {
        let mut out = vec![CertMatch::Spki(peer.spki_sha256.clone())];
        out.extend(peer.uris.iter().cloned().map(CertMatch::Uri));
        out.extend(peer.dns_names.iter().cloned().map(CertMatch::Dns));
        out
    }
}

impl fmt::Display for CertMatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}={}", self.kind(), self.value())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matchers_parse_and_normalise() {
        assert_eq!(
            CertMatch::parse("dns", "Risk.Corp.Example").unwrap(),
            CertMatch::Dns("risk.corp.example".into())
        );
        let pin = "AB".repeat(32);
        assert_eq!(
            CertMatch::parse("spki_sha256", &format!("sha256:{pin}")).unwrap(),
            CertMatch::Spki(pin.to_ascii_lowercase())
        );
        assert!(CertMatch::parse("uri", "spiffe://corp.example/team/risk").is_ok());
        assert!(CertMatch::parse("uri", "not a uri").is_err());
        assert!(CertMatch::parse("dns", "bad_name.example").is_err());
        assert!(CertMatch::parse("spki_sha256", "abc").is_err());
        assert!(CertMatch::parse("email", "a@b").is_err());
    }

    #[test]
    fn a_certificate_is_read_for_its_identity_facts() {
        let mut params = rcgen::CertificateParams::new(vec!["Svc.Example".into()]).unwrap();
        params.subject_alt_names.push(rcgen::SanType::URI(
            rcgen::string::Ia5String::try_from("spiffe://corp.example/team/risk").unwrap(),
        ));
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = params.self_signed(&key).unwrap();
        let peer = PeerCert::from_der(cert.der()).unwrap();
        assert_eq!(peer.dns_names, vec!["svc.example".to_string()]);
        assert_eq!(
            peer.uris,
            vec!["spiffe://corp.example/team/risk".to_string()]
        );
        assert_eq!(
            peer.spki_sha256,
            hex::encode(Sha256::digest(
                rcgen::PublicKeyData::subject_public_key_info(&key)
            ))
        );
        assert!(peer.fingerprint.starts_with("sha256:"));
        let c = CertMatch::candidates(&peer);
        assert_eq!(c[0], CertMatch::Spki(peer.spki_sha256.clone()));
        assert_eq!(c.len(), 3);
    }
}
