//! `sovereign journal …`: the activity journal offline (`verify` a directory's chains) and the
//! transparency log as an auditor uses it (`key`, `fetch-proof`, `verify-proof`,
//! `fetch-consistency`, `verify-consistency`; docs/JOURNAL.md, "Checking one request").

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Subcommand;

use sovereign::config::Config;
use sovereign::journal;

#[derive(Subcommand)]
pub enum JournalCommand {
    /// Verify every chain in DIR (hash chain, seq, links, signed checkpoints). Exit code 0 when
    /// everything verifies, 1 otherwise; the report names the first bad entry.
    Verify {
        dir: PathBuf,
        /// Check against these signed checkpoints (e.g. an exported checkpoints file) instead of
        /// the ones in DIR.
        #[arg(long)]
        checkpoint: Option<PathBuf>,
        /// The operator's public key (`<signing key>.pub`): checkpoints must be signed with it.
        #[arg(long)]
        public_key: Option<PathBuf>,
    },
    /// Print the transparency log's verifier key (signed-note format), from a gateway config or
    /// from a signing key and an origin.
    Key {
        #[arg(long, conflicts_with_all = ["signing_key", "origin"])]
        config: Option<PathBuf>,
        #[arg(long, requires = "origin")]
        signing_key: Option<PathBuf>,
        #[arg(long)]
        origin: Option<String>,
    },
    /// Fetch one request's evidence from a gateway into OUT: its entry (`entry.jsonl`), its
    /// inclusion proof (`proof.json`) and the signed checkpoint it is proved in
    /// (`checkpoint.txt`). The key is read from SOVEREIGN_API_KEY (an auditor's or an admin's).
    FetchProof {
        #[arg(long)]
        url: String,
        #[arg(long)]
        request_id: String,
        #[arg(long)]
        out: PathBuf,
    },
    /// Fetch the gateway's checkpoint now (`checkpoint.txt`) and the consistency proof from the
    /// checkpoint OLD (kept earlier) to it (`consistency.json`) into OUT; check them with
    /// `verify-consistency OLD OUT/checkpoint.txt OUT/consistency.json`. Key: SOVEREIGN_API_KEY.
    FetchConsistency {
        #[arg(long)]
        url: String,
        old: PathBuf,
        #[arg(long)]
        out: PathBuf,
    },
    /// Check the evidence in DIR offline against the log's verifier key (a file or the line).
    /// Exit code 0 when the entry is in the signed tree, 1 otherwise.
    VerifyProof {
        dir: PathBuf,
        #[arg(long)]
        key: String,
    },
    /// Check offline that the checkpoint OLD is a prefix of NEW with the consistency proof PROOF
    /// (`GET /v1/activity/consistency?from=<OLD's size>&to=<NEW's size>`).
    VerifyConsistency {
        old: PathBuf,
        new: PathBuf,
        proof: PathBuf,
        #[arg(long)]
        key: String,
    },
}

/// Runs a journal subcommand: `verify` exits 1 with its report (or `error: …`); the
/// transparency-log commands exit 1 with `FAIL …`.
pub fn run(command: JournalCommand) -> ExitCode {
    match command {
        JournalCommand::Verify {
            dir,
            checkpoint,
            public_key,
        } => super::verdict(verify(&dir, checkpoint.as_deref(), public_key.as_deref())),
        command => match tlog(command) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("FAIL {e:#}");
                ExitCode::from(1)
            }
        },
    }
}

/// `sovereign journal verify`: prints the report; true when everything verified.
fn verify(
    dir: &Path,
    checkpoint: Option<&Path>,
    public_key: Option<&Path>,
) -> anyhow::Result<bool> {
    let key = public_key.map(journal::read_public_key).transpose()?;
    let report = journal::verify_dir(dir, checkpoint, key.as_ref())?;
    print!("{report}");
    Ok(report.is_ok())
}

/// The transparency-log subcommands of `sovereign journal` (docs/JOURNAL.md, "Checking one
/// request").
fn tlog(command: JournalCommand) -> anyhow::Result<()> {
    use journal::tlog::{audit, note};
    match command {
        JournalCommand::Verify { .. } => Ok(()),
        JournalCommand::Key {
            config,
            signing_key,
            origin,
        } => {
            let (key_path, origin) = match (config, signing_key, origin) {
                (Some(file), ..) => {
                    let config = Config::load(&file).map_err(|e| anyhow::anyhow!("{e}"))?;
                    let settings = config.journal.ok_or_else(|| {
                        anyhow::anyhow!("the journal is disabled in {}", file.display())
                    })?;
                    (settings.open.signing_key, settings.open.origin)
                }
                (None, Some(key), Some(origin)) => (key, origin),
                _ => anyhow::bail!("give --config, or --signing-key and --origin"),
            };
            note::check_origin(&origin).map_err(|e| anyhow::anyhow!("origin {e}"))?;
            let text = std::fs::read_to_string(&key_path)?;
            let seed = hex::decode(text.trim())
                .ok()
                .and_then(|b| <[u8; 32]>::try_from(b).ok())
                .ok_or_else(|| anyhow::anyhow!("{}: not 64 hex digits", key_path.display()))?;
            let key = ed25519_dalek::SigningKey::from_bytes(&seed);
            println!("{}", note::verifier_key(&origin, &key.verifying_key()));
            Ok(())
        }
        JournalCommand::FetchProof {
            url,
            request_id,
            out,
        } => {
            let api_key = std::env::var("SOVEREIGN_API_KEY").map_err(|_| {
                anyhow::anyhow!("set SOVEREIGN_API_KEY to an auditor's or an admin's key")
            })?;
            super::runtime()?.block_on(audit::fetch_evidence(&url, &api_key, &request_id, &out))?;
            println!("fetched {request_id} into {}", out.display());
            Ok(())
        }
        JournalCommand::FetchConsistency { url, old, out } => {
            let api_key = std::env::var("SOVEREIGN_API_KEY").map_err(|_| {
                anyhow::anyhow!("set SOVEREIGN_API_KEY to an auditor's or an admin's key")
            })?;
            let old_note = std::fs::read_to_string(&old)?;
            let (from, to) = super::runtime()?
                .block_on(audit::fetch_consistency(&url, &api_key, &old_note, &out))?;
            println!(
                "fetched the consistency proof from {from} to {to} entries into {}",
                out.display()
            );
            Ok(())
        }
        JournalCommand::VerifyProof { dir, key } => {
            let vkey = audit::read_verifier_key(&key)?;
            println!("{}", audit::verify_evidence(&dir, &vkey)?);
            Ok(())
        }
        JournalCommand::VerifyConsistency {
            old,
            new,
            proof,
            key,
        } => {
            let vkey = audit::read_verifier_key(&key)?;
            let proof: audit::ConsistencyProof = serde_json::from_slice(&std::fs::read(&proof)?)?;
            let (a, b) = audit::verify_consistent(
                &std::fs::read_to_string(&old)?,
                &std::fs::read_to_string(&new)?,
                &proof,
                &vkey,
            )?;
            println!(
                "OK {}: the tree of {} entries is a prefix of the tree of {}",
                a.origin, a.size, b.size
            );
            Ok(())
        }
    }
}
