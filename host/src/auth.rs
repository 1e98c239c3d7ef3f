//! API keys as strings: their format, how they are hashed, and reading the secret from an
//! `Authorization` header. Secrets exist only in the response that creates them; the gateway
//! keeps and compares SHA-256 hashes. Who a key belongs to, and whether it may call, is
//! `access`.
//!
//! Key format: `sk-sov-` + 48 hex digits (192 random bits) + 8 hex digits of checksum (the first
//! four bytes of SHA-256 over the random part), so scanners can recognise leaked keys and typos are
//! refused before any lookup.

use http::HeaderMap;
use rand::RngCore;
use sha2::{Digest, Sha256};

pub const KEY_PREFIX: &str = "sk-sov-";
const RANDOM_HEX: usize = 48;
const CHECKSUM_HEX: usize = 8;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum AuthError {
    #[error(
        "Missing API key. Send it as `Authorization: Bearer <key>` (the SDKs' `api_key` setting)."
    )]
    Missing,
    #[error("The Authorization header must use the Bearer scheme: `Authorization: Bearer <key>`.")]
    BadScheme,
    /// More than one `Authorization` header (400: which one would be the caller is a guess).
    #[error("Send one Authorization header: this request has several.")]
    Repeated,
    #[error("Incorrect API key provided.")]
    Invalid,
    #[error("This API key has expired.")]
    Expired,
    #[error("This API key has been revoked.")]
    Revoked,
    /// A verified client certificate that no certificate identity maps (403).
    #[error(
        "The client certificate ({0}) is valid but mapped to no team. An admin maps it with POST /v1/admin/cert-identities (by SAN URI, SAN DNS name or key pin)."
    )]
    CertificateUnmapped(String),
    /// A certificate and a key naming different teams (403).
    #[error(
        "The client certificate belongs to team `{certificate}` but the API key to team `{key}`; send one credential, or two of the same team."
    )]
    TeamMismatch { certificate: String, key: String },
    /// The store could not be asked (503, not 401: the key may well be valid).
    #[error("Keys cannot be checked right now: {0}")]
    Unavailable(String),
}

/// The bearer secret of a request. Keys in the gateway's own format must carry a valid
/// checksum (a typo is refused before any lookup); other strings are looked up as they are.
pub fn secret_from_headers(headers: &HeaderMap) -> Result<&str, AuthError> {
    let mut values = headers.get_all(http::header::AUTHORIZATION).iter();
    let value = values.next().ok_or(AuthError::Missing)?;
    if values.next().is_some() {
        return Err(AuthError::Repeated);
    }
    let value = value.to_str().map_err(|_| AuthError::Invalid)?;
    let (scheme, secret) = value.split_once(' ').ok_or(AuthError::BadScheme)?;
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Err(AuthError::BadScheme);
    }
    let secret = secret.trim();
    if secret.is_empty() {
        return Err(AuthError::Missing);
    }
    if secret.len() > 512 || (secret.starts_with(KEY_PREFIX) && !checksum_ok(secret)) {
        return Err(AuthError::Invalid);
    }
    Ok(secret)
}

/// The only form in which a secret is kept or compared: lookups go by this hash, so no
/// comparison ever sees the secret and their timing tells an attacker nothing about it.
pub fn hash_secret(secret: &str) -> [u8; 32] {
    Sha256::digest(secret.as_bytes()).into()
}

/// `sha256:<hex>`, the form the config file stores.
pub fn hash_for_config(secret: &str) -> String {
    format!("sha256:{}", hex::encode(hash_secret(secret)))
}

pub fn generate_secret() -> String {
    let mut random = [0u8; RANDOM_HEX / 2];
    rand::rng().fill_bytes(&mut random);
    let body = hex::encode(random);
    let check = checksum(&body);
    format!("{KEY_PREFIX}{body}{check}")
}

/// Whether `secret` is a well-formed key of the gateway's format.
pub fn is_gateway_key(secret: &str) -> bool {
    secret.starts_with(KEY_PREFIX) && checksum_ok(secret)
}

fn checksum(body: &str) -> String {
    hex::encode(&Sha256::digest(body.as_bytes())[..CHECKSUM_HEX / 2])
}

fn checksum_ok(secret: &str) -> bool {
    let rest = &secret[KEY_PREFIX.len()..];
    if rest.len() != RANDOM_HEX + CHECKSUM_HEX || !rest.is_ascii() {
        return false;
    }
    let (body, check) = rest.split_at(RANDOM_HEX);
    checksum(body) == check
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bearer(v: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(http::header::AUTHORIZATION, v.parse().unwrap());
        h
    }

    #[test]
    fn generated_keys_have_prefix_checksum_and_differ() {
        let a = generate_secret();
        let b = generate_secret();
        assert_ne!(a, b);
        assert!(a.starts_with(KEY_PREFIX));
        assert_eq!(a.len(), KEY_PREFIX.len() + RANDOM_HEX + CHECKSUM_HEX);
        assert!(is_gateway_key(&a));
        let mut typo = a.clone().into_bytes();
        let i = KEY_PREFIX.len() + 3;
        typo[i] = if typo[i] == b'0' { b'1' } else { b'0' };
        assert!(!checksum_ok(std::str::from_utf8(&typo).unwrap()));
    }

    #[test]
    fn reads_bearer_secrets_and_refuses_the_rest() {
        let secret = generate_secret();
        assert_eq!(
            secret_from_headers(&bearer(&format!("Bearer {secret}"))),
            Ok(secret.as_str())
        );
        assert_eq!(
            secret_from_headers(&bearer(&format!("bearer  {secret} "))),
            Ok(secret.as_str())
        );
        assert_eq!(
            secret_from_headers(&HeaderMap::new()),
            Err(AuthError::Missing)
        );
        assert_eq!(
            secret_from_headers(&bearer(&format!("Basic {secret}"))),
            Err(AuthError::BadScheme)
        );
        let typo = format!("{}0", &secret[..secret.len() - 1]);
        if typo != secret {
            assert_eq!(
                secret_from_headers(&bearer(&format!("Bearer {typo}"))),
                Err(AuthError::Invalid)
            );
        }
        assert_eq!(
            secret_from_headers(&bearer(&format!("Bearer {}", "x".repeat(600)))),
            Err(AuthError::Invalid)
        );
        // Two headers: refused, not the first one taken (issue 49).
        let mut two = bearer(&format!("Bearer {secret}"));
        two.append(http::header::AUTHORIZATION, "Bearer junk".parse().unwrap());
        assert_eq!(secret_from_headers(&two), Err(AuthError::Repeated));
    }
}
