//! The journal as a transparency log (issue 48): the shared vectors (`tests/vectors/tlog.json`,
//! the same file every client library's verifier reads), and the log kept by the real appender:
//! leaves are the segments' lines, proofs verify, a reopened or pruned journal keeps its tree.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use serde_json::Value;
use sovereign::journal::Journal;
use sovereign::journal::tlog::audit::{
    ConsistencyProof, InclusionProof, verify_consistent, verify_inclusion,
};
use sovereign::journal::tlog::note::{VerifierKey, verifier_key, verify_checkpoint};
use sovereign::journal::tlog::tree::{
    Hash, MemoryTree, consistency_proof, inclusion_proof, leaf_hash, root, root_from_inclusion,
    verify_consistency,
};

use super::{Fixture, ID, draft, read_lines};

fn vectors() -> Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/vectors/tlog.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn h(v: &Value) -> Hash {
    B64.decode(v.as_str().unwrap()).unwrap().try_into().unwrap()
}

fn hashes(v: &Value) -> Vec<Hash> {
    v.as_array().unwrap().iter().map(h).collect()
}

/// The hashes, or `None` when one is not 32 bytes of base64 (a malformed proof).
fn strict_hashes(v: &Value) -> Option<Vec<Hash>> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| B64.decode(x.as_str().unwrap()).ok()?.try_into().ok())
        .collect()
}

fn n(v: &Value) -> u64 {
    v.as_u64().unwrap()
}

/// The expected failure's reason: the vector's `why` up to its colon.
fn reason(v: &Value) -> &str {
    v["why"].as_str().unwrap().split(':').next().unwrap()
}

#[test]
fn trees_and_proofs_match_the_shared_vectors() {
    let v = vectors();
    for set in ["rfc9162", "generated"] {
        let s = &v[set];
        let mut tree = MemoryTree::default();
        for leaf in s["leaves_hex"].as_array().unwrap() {
            tree.push(leaf_hash(&hex::decode(leaf.as_str().unwrap()).unwrap()));
        }
        for r in s["roots"].as_array().unwrap() {
            assert_eq!(
                root(&tree, n(&r["tree_size"])).unwrap(),
                h(&r["root_hash"]),
                "{set} {r}"
            );
        }
        for p in s["inclusion"].as_array().unwrap() {
            let (i, size) = (n(&p["leaf_index"]), n(&p["tree_size"]));
            let want = hashes(&p["hashes"]);
            assert_eq!(inclusion_proof(&tree, i, size).unwrap(), want, "{set} {p}");
            let leaf = tree_leaf(&tree, i);
            assert_eq!(
                root_from_inclusion(&leaf, i, size, &want),
                Some(root(&tree, size).unwrap())
            );
        }
        for p in s["consistency"].as_array().unwrap() {
            let (from, to) = (n(&p["from"]), n(&p["to"]));
            let want = hashes(&p["hashes"]);
            assert_eq!(
                consistency_proof(&tree, from, to).unwrap(),
                want,
                "{set} {p}"
            );
            let (r1, r2) = (root(&tree, from).unwrap(), root(&tree, to).unwrap());
            assert!(verify_consistency(from, to, &r1, &r2, &want), "{set} {p}");
        }
    }
}

fn tree_leaf(tree: &MemoryTree, i: u64) -> Hash {
    use sovereign::journal::tlog::tree::Nodes as _;
    tree.node(0, i).unwrap()
}

#[test]
fn bad_proofs_of_the_shared_vectors_fail() {
    let v = vectors();
    for b in v["bad_inclusion"].as_array().unwrap() {
        // Hashes that are not 32 bytes are malformed: they never reach the check.
        let Some(path) = strict_hashes(&b["hashes"]) else {
            assert_eq!(reason(b), "malformed", "{b}");
            continue;
        };
        let leaf = leaf_hash(&hex::decode(b["leaf_hex"].as_str().unwrap()).unwrap());
        let got = root_from_inclusion(&leaf, n(&b["leaf_index"]), n(&b["tree_size"]), &path);
        assert_ne!(got, Some(h(&b["root_hash"])), "{b}");
    }
    for b in v["bad_consistency"].as_array().unwrap() {
        let Some(path) = strict_hashes(&b["hashes"]) else {
            assert_eq!(reason(b), "malformed", "{b}");
            continue;
        };
        let ok = verify_consistency(
            n(&b["from"]),
            n(&b["to"]),
            &h(&b["root1"]),
            &h(&b["root2"]),
            &path,
        );
        assert!(!ok, "{b}");
    }
}

#[test]
fn notes_of_the_shared_vectors() {
    let v = vectors();
    for c in v["notes"]["valid"].as_array().unwrap() {
        let vkey = VerifierKey::parse(c["vkey"].as_str().unwrap()).unwrap();
        let cp = verify_checkpoint(c["note"].as_str().unwrap(), &vkey).unwrap();
        assert_eq!(cp.origin, c["origin"].as_str().unwrap());
        assert_eq!(cp.size, n(&c["tree_size"]));
        assert_eq!(cp.root, h(&c["root_hash"]));
    }
    for c in v["notes"]["invalid"].as_array().unwrap() {
        let err = VerifierKey::parse(c["vkey"].as_str().unwrap())
            .and_then(|vkey| verify_checkpoint(c["note"].as_str().unwrap(), &vkey))
            .unwrap_err();
        assert!(err.starts_with(reason(c)), "{c}: {err}");
    }
}

#[test]
fn journal_evidence_of_the_shared_vectors() {
    let v = vectors();
    let j = &v["journal"];
    let vkey = VerifierKey::parse(j["vkey"].as_str().unwrap()).unwrap();
    let lines: Vec<&str> = j["lines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap())
        .collect();
    let note_of = |size: u64| -> String {
        j["checkpoints"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| n(&c["tree_size"]) == size)
            .unwrap()["note"]
            .as_str()
            .unwrap()
            .to_string()
    };
    for p in j["inclusion"].as_array().unwrap() {
        let proof: InclusionProof = serde_json::from_value(p.clone()).unwrap();
        let line = lines[proof.leaf_index as usize];
        verify_inclusion(line.as_bytes(), &proof, &note_of(proof.tree_size), &vkey).unwrap();
    }
    for p in j["consistency"].as_array().unwrap() {
        let proof: ConsistencyProof = serde_json::from_value(p.clone()).unwrap();
        verify_consistent(&note_of(proof.from), &note_of(proof.to), &proof, &vkey).unwrap();
    }
    for b in j["bad"].as_array().unwrap() {
        let err = match b["kind"].as_str().unwrap() {
            "inclusion" => {
                let proof: Result<InclusionProof, _> = serde_json::from_value(b["proof"].clone());
                match proof {
                    Ok(proof) => verify_inclusion(
                        b["line"].as_str().unwrap().as_bytes(),
                        &proof,
                        b["note"].as_str().unwrap(),
                        &vkey,
                    )
                    .map(drop),
                    Err(e) => Err(anyhow::anyhow!("malformed proof: {e}")),
                }
            }
            _ => {
                let proof: ConsistencyProof = serde_json::from_value(b["proof"].clone()).unwrap();
                verify_consistent(
                    b["old_note"].as_str().unwrap(),
                    b["new_note"].as_str().unwrap(),
                    &proof,
                    &vkey,
                )
                .map(drop)
            }
        }
        .unwrap_err()
        .to_string();
        assert!(err.starts_with(reason(b)), "{b}: {err}");
    }
}

/// The segments' lines, in order, without their newlines.
fn chain_lines(f: &Fixture) -> Vec<String> {
    let mut names: Vec<_> = std::fs::read_dir(&f.dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("journal-")
        })
        .collect();
    names.sort();
    names.iter().flat_map(|p| read_lines(p)).collect()
}

#[tokio::test]
async fn the_appenders_log_proves_its_lines_across_reopen_and_retention() {
    let f = Fixture::new();
    let cfg = f.config();
    let (journal, _) = Journal::open_async(cfg.clone()).await.unwrap();
    for i in 0..37 {
        journal.append(draft(i)).await.unwrap();
    }
    let tlog = journal.tlog().unwrap().clone();
    tlog.reach(37).await.unwrap();
    let lines = chain_lines(&f);
    assert_eq!(lines.len(), 37);
    let mut mem = MemoryTree::default();
    for l in &lines {
        mem.push(leaf_hash(l.as_bytes()));
    }
    let head = tlog.sign(37).unwrap();
    let signing = sovereign::journal::load_or_create_signing_key(&f.key).unwrap();
    let vkey = VerifierKey::parse(&verifier_key(&cfg.origin, &signing.verifying_key())).unwrap();
    assert_eq!(
        tlog.verifier_key(),
        verifier_key(&cfg.origin, &signing.verifying_key())
    );
    assert_eq!(
        verify_checkpoint(&head.note, &vkey).unwrap().root,
        root(&mem, 37).unwrap()
    );
    // Every line is found by its request id and proved in the signed tree.
    for (i, line) in lines.iter().enumerate() {
        let found = tlog.find(&format!("req-{i:08}")).unwrap().unwrap();
        assert_eq!(found.seq, i as u64 + 1);
        let proof = InclusionProof {
            leaf_index: i as u64,
            tree_size: 37,
            hashes: tlog
                .inclusion(i as u64, 37)
                .unwrap()
                .iter()
                .map(|x| B64.encode(x))
                .collect(),
        };
        verify_inclusion(line.as_bytes(), &proof, &head.note, &vkey).unwrap();
    }
    journal.close().await.unwrap();

    // Reopened, with the level files' unsynced tail lost (cut back to `synced`): rebuilt from
    // the journal, the same tree; appends go on.
    let tdir = sovereign::journal::tlog::tlog_dir(&f.dir, ID);
    std::fs::write(tdir.join("synced"), "5\n").unwrap();
    std::fs::OpenOptions::new()
        .write(true)
        .open(tdir.join("level-00.bin"))
        .unwrap()
        .set_len(5 * 32)
        .unwrap();
    let (journal, _) = Journal::open_async(cfg.clone()).await.unwrap();
    for i in 37..45 {
        journal.append(draft(i)).await.unwrap();
    }
    let tlog = journal.tlog().unwrap().clone();
    tlog.reach(45).await.unwrap();
    let lines = chain_lines(&f);
    for l in &lines[37..] {
        mem.push(leaf_hash(l.as_bytes()));
    }
    assert_eq!(tlog.root(45).unwrap(), root(&mem, 45).unwrap());
    assert_eq!(tlog.root(37).unwrap(), root(&mem, 37).unwrap());
    let proof = ConsistencyProof {
        from: 37,
        to: 45,
        hashes: tlog
            .consistency(37, 45)
            .unwrap()
            .iter()
            .map(|x| B64.encode(x))
            .collect(),
    };
    let new_head = tlog.sign(45).unwrap();
    verify_consistent(&head.note, &new_head.note, &proof, &vkey).unwrap();
    journal.close().await.unwrap();

    // Retention prunes the first segments: the tree still commits to their leaves, and the
    // remaining entries' proofs and consistency with the old head still verify.
    let retention = sovereign::journal::Retention {
        max_age: None,
        max_bytes: Some(1),
        export_dir: None,
        interval: std::time::Duration::from_secs(3600),
    };
    let report =
        sovereign::journal::retention::prune(&cfg, &retention, std::time::SystemTime::now())
            .unwrap();
    assert!(report.segments_pruned >= 3, "{report:?}");
    let (journal, _) = Journal::open_async(cfg).await.unwrap();
    let tlog = journal.tlog().unwrap().clone();
    assert_eq!(tlog.root(45).unwrap(), root(&mem, 45).unwrap());
    let last = lines.last().unwrap();
    let proof = InclusionProof {
        leaf_index: 44,
        tree_size: 45,
        hashes: tlog
            .inclusion(44, 45)
            .unwrap()
            .iter()
            .map(|x| B64.encode(x))
            .collect(),
    };
    verify_inclusion(last.as_bytes(), &proof, &new_head.note, &vkey).unwrap();
    journal.close().await.unwrap();
}
