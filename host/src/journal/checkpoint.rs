//! Signed checkpoints (`{count, head_hash, seq, timestamp}` + sovereign id and public key, Ed25519)
//! and the operator's signing key file.

use std::fs::{self, OpenOptions};
use std::io::Write as _;
use std::path::{Path, PathBuf};

use ed25519_dalek::{Signature, Signer as _, SigningKey, VerifyingKey};
use serde::{Deserialize, Serialize};

use super::JournalError;

/// What a checkpoint vouches for: the chain `sovereign_id` had `count` entries, the last one
/// `seq` with `journal_hash` `head_hash`, at `timestamp`. `public_key` is `ed25519:<hex>`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Checkpoint {
    pub count: u64,
    pub head_hash: String,
    pub public_key: String,
    pub seq: u64,
    pub sovereign_id: String,
    pub timestamp: String,
}

/// A checkpoint and `signature` = `ed25519:<hex>` of Ed25519 over the checkpoint's RFC 8785
/// canonical JSON (without `signature`). One line of a checkpoints file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SignedCheckpoint {
    #[serde(flatten)]
    pub checkpoint: Checkpoint,
    pub signature: String,
}

impl Checkpoint {
    pub fn sign(self, key: &SigningKey) -> Result<SignedCheckpoint, JournalError> {
        let message = serde_json_canonicalizer::to_vec(&self).map_err(JournalError::Encode)?;
        let signature = format!("ed25519:{}", hex::encode(key.sign(&message).to_bytes()));
        Ok(SignedCheckpoint {
            checkpoint: self,
            signature,
        })
    }
}

impl SignedCheckpoint {
    /// The checkpoint's canonical line, `\n`-terminated.
    pub fn to_line(&self) -> Result<Vec<u8>, JournalError> {
        let mut line = serde_json_canonicalizer::to_vec(self).map_err(JournalError::Encode)?;
        line.push(b'\n');
        Ok(line)
    }

    pub fn parse(line: &[u8]) -> Result<SignedCheckpoint, String> {
        let mut map: serde_json::Map<String, serde_json::Value> =
            serde_json::from_slice(line).map_err(|e| format!("not a JSON object: {e}"))?;
        let signature = match map.remove("signature") {
            Some(serde_json::Value::String(s)) => s,
            _ => return Err("signature missing or not a string".into()),
        };
        let checkpoint = serde_json::from_value(serde_json::Value::Object(map))
            .map_err(|e| format!("not a checkpoint: {e}"))?;
        Ok(SignedCheckpoint {
            checkpoint,
            signature,
        })
    }

    /// Checks the signature against the embedded public key and, when given, that this key is
    /// `pinned` (the operator's key, from outside the journal directory).
    pub fn verify(&self, pinned: Option<&VerifyingKey>) -> Result<(), String> {
        let key = parse_public_key(&self.checkpoint.public_key)?;
        if let Some(pinned) = pinned
            && pinned != &key
        {
            return Err("signed with a key other than the operator's (--public-key)".into());
        }
        let sig = self
            .signature
            .strip_prefix("ed25519:")
            .and_then(|h| hex::decode(h).ok())
            .and_then(|b| <[u8; 64]>::try_from(b).ok())
            .ok_or("signature is not ed25519:<128 hex digits>")?;
        let message =
            serde_json_canonicalizer::to_vec(&self.checkpoint).map_err(|e| e.to_string())?;
        key.verify_strict(&message, &Signature::from_bytes(&sig))
            .map_err(|_| "bad signature".to_string())
    }
}

/// `ed25519:<hex>` of a public key.
pub fn format_public_key(key: &VerifyingKey) -> String {
    format!("ed25519:{}", hex::encode(key.as_bytes()))
}

fn parse_public_key(text: &str) -> Result<VerifyingKey, String> {
    let text = text.trim();
    let hex_part = text.strip_prefix("ed25519:").unwrap_or(text);
    hex::decode(hex_part)
        .ok()
        .and_then(|b| <[u8; 32]>::try_from(b).ok())
        .and_then(|b| VerifyingKey::from_bytes(&b).ok())
        .ok_or_else(|| "not an Ed25519 public key (ed25519:<64 hex digits>)".to_string())
}

/// Reads a public key file (`ed25519:<hex>` or bare hex), as written next to the signing key.
pub fn read_public_key(path: &Path) -> Result<VerifyingKey, JournalError> {
    let text = fs::read_to_string(path).map_err(JournalError::io(path))?;
    parse_public_key(&text).map_err(|reason| JournalError::Key {
        path: path.to_path_buf(),
        reason,
    })
}

/// Loads the signing key (64 hex digits of seed), or creates it (mode 0600, 256 bits from the
/// OS-seeded CSPRNG) with its public key in `<path>.pub`.
pub fn load_or_create_signing_key(path: &Path) -> Result<SigningKey, JournalError> {
    let key_err = |reason: String| JournalError::Key {
        path: path.to_path_buf(),
        reason,
    };
    match fs::read_to_string(path) {
        Ok(text) => {
            let seed = hex::decode(text.trim())
                .ok()
                .and_then(|b| <[u8; 32]>::try_from(b).ok())
                .ok_or_else(|| key_err("not 64 hex digits".into()))?;
            Ok(SigningKey::from_bytes(&seed))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let key = SigningKey::from_bytes(&rand::random::<[u8; 32]>());
            if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
                fs::create_dir_all(parent).map_err(JournalError::io(parent))?;
            }
            let mut opts = OpenOptions::new();
            opts.write(true).create_new(true);
            #[cfg(unix)]
            std::os::unix::fs::OpenOptionsExt::mode(&mut opts, 0o600);
            let mut f = opts.open(path).map_err(JournalError::io(path))?;
            writeln!(f, "{}", hex::encode(key.to_bytes()))
                .and_then(|()| f.sync_all())
                .map_err(JournalError::io(path))?;
            let public = public_key_path(path);
            fs::write(
                &public,
                format!("{}\n", format_public_key(&key.verifying_key())),
            )
            .map_err(JournalError::io(&public))?;
            tracing::info!(key = %path.display(), public = %public.display(), "journal signing key generated");
            Ok(key)
        }
        Err(e) => Err(JournalError::Io {
            path: path.to_path_buf(),
            source: e,
        }),
    }
}

/// `<key file>.pub`.
pub fn public_key_path(key: &Path) -> PathBuf {
    let mut s = key.as_os_str().to_owned();
    s.push(".pub");
    PathBuf::from(s)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]
    use super::*;

    #[test]
    fn key_file_is_created_private_and_reloaded() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("keys/journal.key");
        let key = load_or_create_signing_key(&path).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        assert_eq!(
            load_or_create_signing_key(&path).unwrap().to_bytes(),
            key.to_bytes()
        );
        let public = read_public_key(&public_key_path(&path)).unwrap();
        assert_eq!(public, key.verifying_key());
    }

    #[test]
    fn signature_covers_every_field() {
        let key = SigningKey::from_bytes(&[7; 32]);
        let cp = Checkpoint {
            count: 3,
            head_hash: "sha256:ab".into(),
            public_key: format_public_key(&key.verifying_key()),
            seq: 3,
            sovereign_id: "a".into(),
            timestamp: "t".into(),
        };
        let signed = cp.sign(&key).unwrap();
        let line = signed.to_line().unwrap();
        let parsed = SignedCheckpoint::parse(&line[..line.len() - 1]).unwrap();
        assert_eq!(parsed, signed);
        parsed.verify(Some(&key.verifying_key())).unwrap();
        let mut forged = parsed.clone();
        forged.checkpoint.count = 2;
        assert_eq!(forged.verify(None).unwrap_err(), "bad signature");
        let other = SigningKey::from_bytes(&[8; 32]).verifying_key();
        assert!(parsed.verify(Some(&other)).is_err());
    }
}
