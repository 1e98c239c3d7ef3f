//! API keys as strings: their format, how they are hashed, and reading the secret from an
//! `Authorization: Bearer` header or, as the Anthropic SDKs and coding agents send it, an
//! `x-api-key` header. Secrets exist only in the response that creates them; the gateway
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
        "Missing API key. Send it as `Authorization: Bearer <key>` or `x-api-key: <key>` (the SDKs' `api_key` setting)."
    )]
    Missing,
    #[error("The Authorization header must use the Bearer scheme: `Authorization: Bearer <key>`.")]
    BadScheme,
    /// More than one `Authorization` (or `x-api-key`) header, or the two naming different
    /// secrets (400: which one would be the caller is a guess).
    #[error("Send one API key: this request has several (Authorization and x-api-key headers).")]
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

/// The `x-api-key` header of the Anthropic SDKs and coding agents.
pub const X_API_KEY: http::HeaderName = http::HeaderName::from_static("x-api-key");

/// The secret of a request: the bearer of its `Authorization` header or its `x-api-key` (both
/// may come when they carry the same secret). Keys in the gateway's own format must carry a
/// valid checksum (a typo is refused before any lookup); other strings are looked up as they
/// are.
pub fn secret_from_headers(headers: &HeaderMap) -> Result<&str, AuthError> {
    let secret = match (bearer(headers)?, api_key(headers)?) {
        (Some(a), Some(b)) if a != b => return Err(AuthError::Repeated),
        (Some(s), _) | (None, Some(s)) => s,
        (None, None) => return Err(AuthError::Missing),
    };
    if secret.len() > 512 || (secret.starts_with(KEY_PREFIX) && !checksum_ok(secret)) {
        return Err(AuthError::Invalid);
    }
    Ok(secret)
}

/// The one value of a header that may come once.
fn single<'h>(
    headers: &'h HeaderMap,
    name: &http::HeaderName,
) -> Result<Option<&'h str>, AuthError> {
    let mut values = headers.get_all(name).iter();
    let Some(value) = values.next() else {
        return Ok(None);
    };
    if values.next().is_some() {
        return Err(AuthError::Repeated);
    }
    value.to_str().map(Some).map_err(|_| AuthError::Invalid)
}

fn bearer(headers: &HeaderMap) -> Result<Option<&str>, AuthError> {
    let Some(value) = single(headers, &http::header::AUTHORIZATION)? else {
        return Ok(None);
    };
    let (scheme, secret) = value.split_once(' ').ok_or(AuthError::BadScheme)?;
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Err(AuthError::BadScheme);
    }
    Ok(Some(secret.trim()).filter(|s| !s.is_empty()))
}

fn api_key(headers: &HeaderMap) -> Result<Option<&str>, AuthError> {
    Ok(single(headers, &X_API_KEY)?
        .map(str::trim)
        .filter(|s| !s.is_empty()))
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
        // `x-api-key` (the Anthropic SDKs): alone, or beside the same bearer; a different one
        // beside it is refused.
        let mut api = HeaderMap::new();
        api.insert(X_API_KEY, secret.parse().unwrap());
        assert_eq!(secret_from_headers(&api), Ok(secret.as_str()));
        let mut both = bearer(&format!("Bearer {secret}"));
        both.insert(X_API_KEY, secret.parse().unwrap());
        assert_eq!(secret_from_headers(&both), Ok(secret.as_str()));
        both.insert(X_API_KEY, "sk-other".parse().unwrap());
        assert_eq!(secret_from_headers(&both), Err(AuthError::Repeated));
        api.append(X_API_KEY, "sk-other".parse().unwrap());
        assert_eq!(secret_from_headers(&api), Err(AuthError::Repeated));
    }
}
