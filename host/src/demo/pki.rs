//! A small PKI made with `rcgen`, for `sovereign demo --tls` and for tests: a root, optional
//! intermediates, server and client certificates (valid, expired, not yet valid, without the
//! clientAuth usage), and CRLs. Nothing here is meant for production: a real deployment brings
//! its own PKI (README, "Mutual TLS").

use std::net::IpAddr;

use rcgen::{
    BasicConstraints, CertificateParams, CertificateRevocationListParams, CertifiedIssuer,
    DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa, KeyIdMethod, KeyPair,
    KeyUsagePurpose, RevokedCertParams, SanType, SerialNumber,
};
use time::{Duration, OffsetDateTime};

/// A certificate authority: its certificate (and the chain above it) and its key.
pub struct Authority {
    issuer: CertifiedIssuer<'static, KeyPair>,
    /// This authority's certificate, then every intermediate above it (not the root), PEM.
    chain: Vec<String>,
    next_serial: u64,
}

/// When a certificate is valid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Validity {
    /// From a day ago for ten years.
    Current,
    /// Ended yesterday.
    Expired,
    /// Starts in a year.
    NotYetValid,
}

/// What a leaf certificate is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Usage {
    Server,
    Client,
    /// serverAuth only: a client presenting it must be refused.
    ServerOnlyAsClient,
}

/// A leaf to issue.
#[derive(Debug, Clone)]
pub struct Leaf {
    pub common_name: String,
    pub dns: Vec<String>,
    pub ips: Vec<IpAddr>,
    pub uris: Vec<String>,
    pub usage: Usage,
    pub validity: Validity,
}

impl Leaf {
    pub fn client(common_name: &str) -> Leaf {
        Leaf {
            common_name: common_name.into(),
            dns: Vec::new(),
            ips: Vec::new(),
            uris: Vec::new(),
            usage: Usage::Client,
            validity: Validity::Current,
        }
    }

    pub fn server(common_name: &str, dns: &[&str], ips: &[IpAddr]) -> Leaf {
        Leaf {
            common_name: common_name.into(),
            dns: dns.iter().map(|d| (*d).to_string()).collect(),
            ips: ips.to_vec(),
            uris: Vec::new(),
            usage: Usage::Server,
            validity: Validity::Current,
        }
    }
}

/// An issued certificate: PEM of the leaf, of the leaf with its intermediates, and of its key.
pub struct Issued {
    pub cert_pem: String,
    /// The leaf, then the intermediates up to (not including) the root: what a TLS peer sends.
    pub chain_pem: String,
    pub key_pem: String,
    pub serial: u64,
}

fn name(common_name: &str) -> DistinguishedName {
    let mut dn = DistinguishedName::new();
    dn.push(DnType::OrganizationName, "Sovereign Gateway demo");
    dn.push(DnType::CommonName, common_name);
    dn
}

fn window(validity: Validity) -> (OffsetDateTime, OffsetDateTime) {
    let now = OffsetDateTime::now_utc();
    match validity {
        Validity::Current => (now - Duration::days(1), now + Duration::days(3650)),
        Validity::Expired => (now - Duration::days(30), now - Duration::days(1)),
        Validity::NotYetValid => (now + Duration::days(365), now + Duration::days(730)),
    }
}

fn ca_params(common_name: &str, serial: u64) -> CertificateParams {
    let mut p = CertificateParams::default();
    p.distinguished_name = name(common_name);
    p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    p.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    p.key_identifier_method = KeyIdMethod::Sha256;
    p.use_authority_key_identifier_extension = true;
    p.serial_number = Some(SerialNumber::from(serial));
    (p.not_before, p.not_after) = window(Validity::Current);
    p
}

impl Authority {
    /// A self-signed root (ECDSA P-256).
    pub fn root(common_name: &str) -> anyhow::Result<Authority> {
        let key = KeyPair::generate()?;
        let issuer = CertifiedIssuer::self_signed(ca_params(common_name, 1), key)?;
        Ok(Authority {
            issuer,
            chain: Vec::new(),
            next_serial: 1000,
        })
    }

    /// An intermediate CA under this one.
    pub fn intermediate(&mut self, common_name: &str) -> anyhow::Result<Authority> {
        let serial = self.serial();
        let key = KeyPair::generate()?;
        let issuer = CertifiedIssuer::signed_by(ca_params(common_name, serial), key, &self.issuer)?;
        let mut chain = vec![issuer.pem()];
        chain.extend(self.chain.iter().cloned());
        Ok(Authority {
            issuer,
            chain,
            next_serial: 1000,
        })
    }

    /// This authority's own certificate, PEM (a root's is the trust anchor).
    pub fn cert_pem(&self) -> String {
        self.issuer.pem()
    }

    fn serial(&mut self) -> u64 {
        self.next_serial += 1;
        self.next_serial
    }

    pub fn issue(&mut self, leaf: &Leaf) -> anyhow::Result<Issued> {
        let serial = self.serial();
        let mut p = CertificateParams::default();
        p.distinguished_name = name(&leaf.common_name);
        p.serial_number = Some(SerialNumber::from(serial));
        p.use_authority_key_identifier_extension = true;
        p.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        p.extended_key_usages = match leaf.usage {
            Usage::Server | Usage::ServerOnlyAsClient => vec![ExtendedKeyUsagePurpose::ServerAuth],
            Usage::Client => vec![ExtendedKeyUsagePurpose::ClientAuth],
        };
        for d in &leaf.dns {
            p.subject_alt_names
                .push(SanType::DnsName(d.clone().try_into()?));
        }
        for ip in &leaf.ips {
            p.subject_alt_names.push(SanType::IpAddress(*ip));
        }
        for u in &leaf.uris {
            p.subject_alt_names
                .push(SanType::URI(u.clone().try_into()?));
        }
        (p.not_before, p.not_after) = window(leaf.validity);
        let key = KeyPair::generate()?;
        let cert = p.signed_by(&key, &self.issuer)?;
        let cert_pem = cert.pem();
        let mut chain_pem = cert_pem.clone();
        for c in &self.chain {
            chain_pem.push_str(c);
        }
        Ok(Issued {
            cert_pem,
            chain_pem,
            key_pem: key.serialize_pem(),
            serial,
        })
    }

    /// A CRL of this authority revoking `serials`, valid for a week.
    pub fn crl(&mut self, serials: &[u64]) -> anyhow::Result<String> {
        let now = OffsetDateTime::now_utc();
        let params = CertificateRevocationListParams {
            this_update: now - Duration::hours(1),
            next_update: now + Duration::days(7),
            crl_number: SerialNumber::from(self.serial()),
            issuing_distribution_point: None,
            revoked_certs: serials
                .iter()
                .map(|s| RevokedCertParams {
                    serial_number: SerialNumber::from(*s),
                    revocation_time: now - Duration::hours(1),
                    reason_code: Some(rcgen::RevocationReason::KeyCompromise),
                    invalidity_date: None,
                })
                .collect(),
            key_identifier_method: KeyIdMethod::Sha256,
        };
        Ok(params.signed_by(&self.issuer)?.pem()?)
    }
}
