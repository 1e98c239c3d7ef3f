//! What an auditor runs (`sovereign journal fetch-proof | verify-proof | verify-consistency`):
//! the evidence for one request fetched from a gateway into a folder (`entry.jsonl`, `proof.json`,
//! `checkpoint.txt`), and checked offline against the log's verifier key alone; a consistency
//! proof between two checkpoints checked the same way. docs/JOURNAL.md, "Checking one request".

use std::path::Path;

use anyhow::{Context as _, anyhow, bail};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use serde::Deserialize;

use super::note::{Checkpoint, VerifierKey, verify_checkpoint};
use super::tree::{Hash, leaf_hash, root_from_inclusion, verify_consistency};

/// `GET /v1/activity/proof`'s answer.
#[derive(Debug, Deserialize)]
pub struct InclusionProof {
    pub leaf_index: u64,
    pub tree_size: u64,
    pub hashes: Vec<String>,
}

/// `GET /v1/activity/consistency`'s answer.
#[derive(Debug, Deserialize)]
pub struct ConsistencyProof {
    pub from: u64,
    pub to: u64,
    pub hashes: Vec<String>,
}

fn decode_hashes(list: &[String]) -> anyhow::Result<Vec<Hash>> {
    list.iter()
        .map(|h| {
            B64.decode(h)
                .ok()
                .and_then(|b| Hash::try_from(b).ok())
                .ok_or_else(|| anyhow!("malformed proof: {h:?} is not a base64 SHA-256 hash"))
        })
        .collect()
}

/// Reads a verifier key: the file's first line, or the argument itself when it is no file.
pub fn read_verifier_key(arg: &str) -> anyhow::Result<VerifierKey> {
    let text = match std::fs::read_to_string(arg) {
        Ok(t) => t,
        Err(_) if arg.contains('+') => arg.to_string(),
        Err(e) => return Err(e).with_context(|| format!("reading the verifier key {arg}")),
    };
    VerifierKey::parse(text.lines().next().unwrap_or("")).map_err(|e| anyhow!(e))
}

/// Checks that `line` (an export line; a trailing newline is ignored) is leaf `proof.leaf_index`
/// of the tree whose signed head is `note`. Returns the verified checkpoint.
pub fn verify_inclusion(
    line: &[u8],
    proof: &InclusionProof,
    note: &str,
    vkey: &VerifierKey,
) -> anyhow::Result<Checkpoint> {
    let checkpoint = verify_checkpoint(note, vkey).map_err(|e| anyhow!(e))?;
    if checkpoint.size != proof.tree_size {
        bail!(
            "inclusion: the proof is for a tree of {} entries, the checkpoint for {}",
            proof.tree_size,
            checkpoint.size
        );
    }
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let hashes = decode_hashes(&proof.hashes)?;
    let root = root_from_inclusion(&leaf_hash(line), proof.leaf_index, proof.tree_size, &hashes);
    if root != Some(checkpoint.root) {
        bail!(
            "inclusion: the entry is not leaf {} of the signed tree of {} entries",
            proof.leaf_index,
            proof.tree_size
        );
    }
    Ok(checkpoint)
}

/// Checks that the signed tree `old` is a prefix of the signed tree `new`.
pub fn verify_consistent(
    old: &str,
    new: &str,
    proof: &ConsistencyProof,
    vkey: &VerifierKey,
) -> anyhow::Result<(Checkpoint, Checkpoint)> {
    let a = verify_checkpoint(old, vkey).map_err(|e| anyhow!(e))?;
    let b = verify_checkpoint(new, vkey).map_err(|e| anyhow!(e))?;
    if (proof.from, proof.to) != (a.size, b.size) {
        bail!(
            "consistency: the proof is from {} to {}, the checkpoints are of {} and {}",
            proof.from,
            proof.to,
            a.size,
            b.size
        );
    }
    let hashes = decode_hashes(&proof.hashes)?;
    if !verify_consistency(a.size, b.size, &a.root, &b.root, &hashes) {
        bail!(
            "consistency: the tree of {} entries is not a prefix of the tree of {}",
            a.size,
            b.size
        );
    }
    Ok((a, b))
}

/// `verify-proof DIR`: the three files of `fetch-proof`, checked against the key.
pub fn verify_evidence(dir: &Path, vkey: &VerifierKey) -> anyhow::Result<String> {
    let read = |name: &str| {
        std::fs::read(dir.join(name))
            .with_context(|| format!("reading {}", dir.join(name).display()))
    };
    let line = read("entry.jsonl")?;
    let proof: InclusionProof =
        serde_json::from_slice(&read("proof.json")?).context("malformed proof.json")?;
    let note = String::from_utf8(read("checkpoint.txt")?).context("checkpoint.txt is not UTF-8")?;
    let checkpoint = verify_inclusion(&line, &proof, &note, vkey)?;
    let request =
        serde_json::from_slice::<serde_json::Value>(line.strip_suffix(b"\n").unwrap_or(&line))
            .ok()
            .and_then(|v| v["request_id"].as_str().map(str::to_owned))
            .unwrap_or_default();
    Ok(format!(
        "OK {request}: leaf {} of {}'s tree of {} entries (root {})",
        proof.leaf_index,
        checkpoint.origin,
        checkpoint.size,
        B64.encode(checkpoint.root)
    ))
}

/// `fetch-consistency`: the gateway's checkpoint now (`checkpoint.txt`) and the consistency
/// proof from the tree of `old` (a checkpoint kept earlier) to it (`consistency.json`). Returns
/// the two sizes. The old note is not trusted here: `verify-consistency` checks everything.
pub async fn fetch_consistency(
    base_url: &str,
    api_key: &str,
    old: &str,
    out: &Path,
) -> anyhow::Result<(u64, u64)> {
    let base = base_url.trim_end_matches('/');
    let from: u64 = old
        .lines()
        .nth(1)
        .and_then(|l| l.parse().ok())
        .ok_or_else(|| anyhow!("malformed checkpoint: no tree size on its second line"))?;
    let client = reqwest::Client::new();
    let get = |url: String| {
        let client = client.clone();
        async move {
            let r = client.get(url).bearer_auth(api_key).send().await?;
            let status = r.status();
            let body = r.bytes().await?;
            if !status.is_success() {
                bail!("{status}: {}", String::from_utf8_lossy(&body));
            }
            Ok::<_, anyhow::Error>(body)
        }
    };
    let note = get(format!("{base}/v1/activity/checkpoint"))
        .await
        .context("fetching the checkpoint")?;
    let to: u64 = std::str::from_utf8(&note)?
        .lines()
        .nth(1)
        .and_then(|l| l.parse().ok())
        .ok_or_else(|| anyhow!("the gateway's checkpoint has no tree size"))?;
    let proof = get(format!(
        "{base}/v1/activity/consistency?from={from}&to={to}"
    ))
    .await
    .context("fetching the consistency proof")?;
    std::fs::create_dir_all(out)?;
    std::fs::write(out.join("checkpoint.txt"), &note)?;
    std::fs::write(out.join("consistency.json"), &proof)?;
    Ok((from, to))
}

/// `fetch-proof`: the entry's export line, its inclusion proof and the checkpoint it is proved
/// against, written to `out`.
pub async fn fetch_evidence(
    base_url: &str,
    api_key: &str,
    request_id: &str,
    out: &Path,
) -> anyhow::Result<()> {
    let base = base_url.trim_end_matches('/');
    let client = reqwest::Client::new();
    let check = |r: reqwest::Response| async move {
        let status = r.status();
        let body = r.bytes().await?;
        if !status.is_success() {
            bail!("{status}: {}", String::from_utf8_lossy(&body));
        }
        Ok::<_, anyhow::Error>(body)
    };
    let proof = check(
        client
            .get(format!(
                "{base}/v1/activity/proof?{}",
                url::form_urlencoded::Serializer::new(String::new())
                    .append_pair("request_id", request_id)
                    .finish()
            ))
            .bearer_auth(api_key)
            .send()
            .await?,
    )
    .await
    .context("fetching the inclusion proof")?;
    let mut proof_json: serde_json::Value = serde_json::from_slice(&proof)?;
    let note = proof_json
        .as_object_mut()
        .and_then(|o| o.remove("checkpoint"))
        .and_then(|v| v.as_str().map(str::to_owned))
        .ok_or_else(|| anyhow!("the proof came without its checkpoint"))?;
    let line = check(
        client
            .post(format!("{base}/v1/activity/logs"))
            .bearer_auth(api_key)
            .header(http::header::CONTENT_TYPE, "application/json")
            .body(serde_json::json!({"format": "jsonl", "request_id": request_id}).to_string())
            .send()
            .await?,
    )
    .await
    .context("fetching the entry")?;
    if line.is_empty() {
        bail!("the journal export has no entry with request id {request_id}");
    }
    std::fs::create_dir_all(out)?;
    std::fs::write(out.join("entry.jsonl"), &line)?;
    std::fs::write(
        out.join("proof.json"),
        serde_json::to_vec_pretty(&proof_json)?,
    )?;
    std::fs::write(out.join("checkpoint.txt"), note)?;
    Ok(())
}
