//! Signed tree heads as C2SP checkpoints (`c2sp.org/tlog-checkpoint`) in the signed-note format
//! (`c2sp.org/signed-note`) with an Ed25519 key: the note text (origin, tree size, base64 root),
//! a blank line, then `— <name> base64(key id || signature)` lines; the verifier key
//! `<name>+<hex key id>+base64(0x01 || public key)`. Any witness or note tool reads them.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use ed25519_dalek::{Signature, Signer as _, SigningKey, VerifyingKey};
use sha2::{Digest as _, Sha256};

use super::tree::Hash;

/// The signature type byte of Ed25519 in signed notes.
const ED25519: u8 = 0x01;
/// Most signature lines a verifier looks at (the spec's minimum to accept).
const MAX_SIGNATURES: usize = 16;

/// Checks an origin (also the key name): non-empty, no spaces, no `+`, no control characters.
pub fn check_origin(origin: &str) -> Result<(), String> {
    if origin.is_empty() || origin.len() > 255 {
        return Err("must be 1 to 255 characters".into());
    }
    if origin
        .chars()
        .any(|c| c.is_whitespace() || c.is_control() || c == '+')
    {
        return Err("must hold no spaces, control characters or `+`".into());
    }
    Ok(())
}

/// The 4-byte key id: `SHA-256(name || 0x0A || 0x01 || public key)[:4]`.
pub fn key_id(name: &str, key: &VerifyingKey) -> [u8; 4] {
    let mut h = Sha256::new();
    h.update(name.as_bytes());
    h.update([b'\n', ED25519]);
    h.update(key.as_bytes());
    let d = h.finalize();
    [d[0], d[1], d[2], d[3]]
}

/// The verifier key line (without newline).
pub fn verifier_key(name: &str, key: &VerifyingKey) -> String {
    let mut material = Vec::with_capacity(33);
    material.push(ED25519);
    material.extend_from_slice(key.as_bytes());
    format!(
        "{name}+{}+{}",
        hex::encode(key_id(name, key)),
        B64.encode(material)
    )
}

/// A checkpoint's text: origin, size and root, each line `\n`-terminated.
pub fn checkpoint_text(origin: &str, size: u64, root: &Hash) -> String {
    format!("{origin}\n{size}\n{}\n", B64.encode(root))
}

/// A signed checkpoint note, signed by `key` under the name `origin`.
pub fn sign_checkpoint(origin: &str, size: u64, root: &Hash, key: &SigningKey) -> String {
    let text = checkpoint_text(origin, size, root);
    let signature = key.sign(text.as_bytes());
    let mut blob = Vec::with_capacity(68);
    blob.extend_from_slice(&key_id(origin, &key.verifying_key()));
    blob.extend_from_slice(&signature.to_bytes());
    format!("{text}\n\u{2014} {origin} {}\n", B64.encode(blob))
}

/// A parsed verifier key.
#[derive(Debug, Clone)]
pub struct VerifierKey {
    pub name: String,
    pub id: [u8; 4],
    pub key: VerifyingKey,
}

impl VerifierKey {
    pub fn parse(text: &str) -> Result<VerifierKey, String> {
        let text = text.trim();
        let mut parts = text.splitn(3, '+');
        let (Some(name), Some(id), Some(material), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err("malformed verifier key: expected <name>+<key id>+<key>".into());
        };
        check_origin(name).map_err(|e| format!("malformed verifier key: the name {e}"))?;
        let id: [u8; 4] = hex::decode(id)
            .ok()
            .and_then(|b| b.try_into().ok())
            .ok_or("malformed verifier key: the key id is not 8 hex digits")?;
        let material = B64
            .decode(material)
            .map_err(|_| "malformed verifier key: the key is not base64")?;
        let (&kind, key) = material
            .split_first()
            .ok_or("malformed verifier key: empty key")?;
        if kind != ED25519 {
            return Err("malformed verifier key: not an Ed25519 key".into());
        }
        let key = <[u8; 32]>::try_from(key)
            .ok()
            .and_then(|k| VerifyingKey::from_bytes(&k).ok())
            .ok_or("malformed verifier key: not a 32-byte Ed25519 key")?;
        if key_id(name, &key) != id {
            return Err("malformed verifier key: the key id does not match the key".into());
        }
        Ok(VerifierKey {
            name: name.to_string(),
            id,
            key,
        })
    }
}

/// A checkpoint whose signature verified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checkpoint {
    pub origin: String,
    pub size: u64,
    pub root: Hash,
}

/// Verifies a checkpoint note against a verifier key: a signature line of this key (name and
/// id) must verify, no line of this key may fail, and the origin must be the key's name.
/// Errors start with `malformed`, `untrusted key` or `bad signature`.
pub fn verify_checkpoint(note: &str, vkey: &VerifierKey) -> Result<Checkpoint, String> {
    if note.chars().any(|c| c.is_control() && c != '\n') {
        return Err("malformed note: it holds a control character".into());
    }
    let body = note
        .strip_suffix('\n')
        .ok_or("malformed note: it does not end in a newline")?;
    let split = body
        .rfind("\n\n")
        .ok_or("malformed note: no blank line before the signatures")?;
    let text = &note[..split + 1];
    let signatures = &body[split + 2..];
    let mut verified = false;
    for (n, line) in signatures.split('\n').enumerate() {
        if n >= MAX_SIGNATURES {
            return Err("malformed note: too many signatures".into());
        }
        let rest = line
            .strip_prefix("\u{2014} ")
            .ok_or("malformed note: a signature line does not start with `— `")?;
        let (name, sig) = rest
            .split_once(' ')
            .ok_or("malformed note: a signature line has no signature")?;
        let blob = B64
            .decode(sig)
            .map_err(|_| "malformed note: a signature is not base64")?;
        if blob.len() < 4 || name != vkey.name || blob[..4] != vkey.id {
            continue; // another key's: ignored, as the spec says
        }
        let sig = <[u8; 64]>::try_from(&blob[4..])
            .map_err(|_| "bad signature: not 64 bytes of Ed25519")?;
        vkey.key
            .verify_strict(text.as_bytes(), &Signature::from_bytes(&sig))
            .map_err(|_| "bad signature: the note's signature does not verify".to_string())?;
        verified = true;
    }
    if !verified {
        return Err(format!(
            "untrusted key: the note carries no signature of {}",
            vkey.name
        ));
    }
    parse_text(text, &vkey.name)
}

fn parse_text(text: &str, name: &str) -> Result<Checkpoint, String> {
    let mut lines = text.strip_suffix('\n').unwrap_or(text).split('\n');
    let (Some(origin), Some(size), Some(root)) = (lines.next(), lines.next(), lines.next()) else {
        return Err("malformed checkpoint: fewer than three lines".into());
    };
    if lines.any(str::is_empty) {
        return Err("malformed checkpoint: an empty extension line".into());
    }
    if origin != name {
        return Err(format!(
            "untrusted key: the checkpoint's origin {origin:?} is not the key's name {name:?}"
        ));
    }
    let digits_ok = !size.is_empty()
        && size.bytes().all(|b| b.is_ascii_digit())
        && (size == "0" || !size.starts_with('0'));
    let size: u64 = size
        .parse()
        .ok()
        .filter(|_| digits_ok)
        .ok_or("malformed checkpoint: the tree size is not a decimal number")?;
    let root: Hash = B64
        .decode(root)
        .ok()
        .and_then(|r| r.try_into().ok())
        .ok_or("malformed checkpoint: the root hash is not 32 bytes of base64")?;
    Ok(Checkpoint {
        origin: origin.to_string(),
        size,
        root,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]
    use super::*;

    #[test]
    fn the_signed_note_specs_example_verifies() {
        // c2sp.org/signed-note, "Example": the key id and signature layout.
        let vkey = VerifierKey::parse(
            "example.com/foo+530d903a+AekyeRrm56hApGFkyQR4ZCbV54Id2LKaANYcrnKv3U2k",
        )
        .unwrap();
        let note = "This is an example message.\n\n\u{2014} example.com/foo Uw2QOkn8srV1yJGh2VYRlL1Tnagv1YEq6TfXppzi2ONncAlTgK7Ztg1ERYNZXsYjOBH3mFXmRKuwHjG1Yu72IneyaQM=\n";
        // Not a checkpoint, so the text check fails after the signature verified.
        let e = verify_checkpoint(note, &vkey).unwrap_err();
        assert!(
            e.starts_with("malformed checkpoint") || e.starts_with("untrusted key"),
            "{e}"
        );
        let tampered = note.replace("example message", "exemple message");
        assert!(
            verify_checkpoint(&tampered, &vkey)
                .unwrap_err()
                .starts_with("bad signature")
        );
    }

    #[test]
    fn checkpoints_round_trip_and_refuse_tampering() {
        let key = SigningKey::from_bytes(&[9; 32]);
        let origin = "sovereign-gateway/journal/eu-1";
        let vkey = VerifierKey::parse(&verifier_key(origin, &key.verifying_key())).unwrap();
        let note = sign_checkpoint(origin, 42, &[7; 32], &key);
        assert_eq!(
            verify_checkpoint(&note, &vkey).unwrap(),
            Checkpoint {
                origin: origin.into(),
                size: 42,
                root: [7; 32]
            }
        );
        let forged = note.replacen("\n42\n", "\n43\n", 1);
        assert!(
            verify_checkpoint(&forged, &vkey)
                .unwrap_err()
                .starts_with("bad signature")
        );
        let other = SigningKey::from_bytes(&[10; 32]);
        let theirs = sign_checkpoint(origin, 42, &[7; 32], &other);
        assert!(
            verify_checkpoint(&theirs, &vkey)
                .unwrap_err()
                .starts_with("untrusted key")
        );
        // A witness's cosignature beside ours is ignored.
        let cosigned = format!("{note}\u{2014} witness.example/w AAAAAAAA\n");
        verify_checkpoint(&cosigned, &vkey).unwrap();
    }
}
