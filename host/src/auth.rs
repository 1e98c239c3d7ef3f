//! API keys: their format, how they are hashed, and turning an `Authorization` header into the
//! [`Principal`] that made the request. Secrets exist only in the response that creates them; the
//! gateway keeps and compares SHA-256 hashes.
//!
//! Key format: `sk-sov-` + 48 hex digits (192 random bits) + 8 hex digits of checksum (the first
//! four bytes of SHA-256 over the random part), so scanners can recognise leaked keys and typos are
//! refused before any lookup.

use std::collections::HashMap;
use std::sync::Arc;

use http::HeaderMap;
use rand::RngCore;
use sha2::{Digest, Sha256};

use crate::config::{KeyConfig, Role};

pub const KEY_PREFIX: &str = "sk-sov-";
const RANDOM_HEX: usize = 48;
const CHECKSUM_HEX: usize = 8;

/// Who is calling: resolved once per request by [`Keys::authenticate`].
#[derive(Debug, Clone)]
pub struct Principal {
    /// Key id: the first 12 hex digits of the key's hash (safe to log and journal).
    pub key_id: String,
    pub key_name: String,
    pub team_id: String,
    pub role: Role,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum AuthError {
    #[error(
        "Missing API key. Send it as `Authorization: Bearer <key>` (the SDKs' `api_key` setting)."
    )]
    Missing,
    #[error("The Authorization header must use the Bearer scheme: `Authorization: Bearer <key>`.")]
    BadScheme,
    #[error("Incorrect API key provided.")]
    Invalid,
}

/// The keys the gateway accepts, by hash.
#[derive(Debug, Default)]
pub struct Keys {
    by_hash: HashMap<[u8; 32], Arc<Principal>>,
}

impl Keys {
    pub fn from_config(keys: &[KeyConfig]) -> Keys {
        let by_hash = keys
            .iter()
            .map(|k| {
                let principal = Principal {
                    key_id: hex::encode(&k.hash[..6]),
                    key_name: k.name.clone(),
                    team_id: k.team.clone(),
                    role: k.role,
                };
                (k.hash, Arc::new(principal))
            })
            .collect();
        Keys { by_hash }
    }

    pub fn authenticate(&self, headers: &HeaderMap) -> Result<Arc<Principal>, AuthError> {
        let value = headers
            .get(http::header::AUTHORIZATION)
            .ok_or(AuthError::Missing)?;
        let value = value.to_str().map_err(|_| AuthError::Invalid)?;
        let (scheme, secret) = value.split_once(' ').ok_or(AuthError::BadScheme)?;
        if !scheme.eq_ignore_ascii_case("bearer") {
            return Err(AuthError::BadScheme);
        }
        let secret = secret.trim();
        if secret.is_empty() {
            return Err(AuthError::Missing);
        }
        if secret.starts_with(KEY_PREFIX) && !checksum_ok(secret) {
            return Err(AuthError::Invalid);
        }
        // Lookup by hash: the map's comparisons see hashes, never the secret, so their timing
        // tells an attacker nothing about it.
        self.by_hash
            .get(&hash_secret(secret))
            .cloned()
            .ok_or(AuthError::Invalid)
    }
}

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

    fn keys_with(secret: &str) -> Keys {
        Keys::from_config(&[KeyConfig {
            name: "k".into(),
            team: "t".into(),
            role: Role::Member,
            hash: hash_secret(secret),
        }])
    }

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
        assert!(checksum_ok(&a));
        let mut typo = a.clone().into_bytes();
        let i = KEY_PREFIX.len() + 3;
        typo[i] = if typo[i] == b'0' { b'1' } else { b'0' };
        assert!(!checksum_ok(std::str::from_utf8(&typo).unwrap()));
    }

    #[test]
    fn authenticates_only_the_configured_key() {
        let secret = generate_secret();
        let keys = keys_with(&secret);
        let p = keys
            .authenticate(&bearer(&format!("Bearer {secret}")))
            .unwrap();
        assert_eq!(p.team_id, "t");
        assert_eq!(
            keys.authenticate(&bearer(&format!("Bearer {}", generate_secret())))
                .unwrap_err(),
            AuthError::Invalid
        );
        assert_eq!(
            keys.authenticate(&HeaderMap::new()).unwrap_err(),
            AuthError::Missing
        );
        assert_eq!(
            keys.authenticate(&bearer(&format!("Basic {secret}")))
                .unwrap_err(),
            AuthError::BadScheme
        );
    }
}
