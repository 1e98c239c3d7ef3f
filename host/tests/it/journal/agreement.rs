//! The `sovereign journal verify` CLI, and scripts/verify_journal.py agreeing with it on a real
//! journal and on tampered copies.

use super::*;

/// One tampering of a copy of a real journal, as the agreement test applies it.
fn tamper(kind: &str, f: &Fixture) -> Option<PathBuf> {
    let seg1 = f.segment(1);
    let mut lines = read_lines(&seg1);
    match kind {
        "intact" => {}
        "edited" => lines[2] = lines[2].replace("llama-3-8b", "gpt-4o"),
        "deleted" => drop(lines.remove(4)),
        "reordered" => lines.swap(7, 8),
        "spliced" => {
            let prev = Record::parse(lines[1].as_bytes()).unwrap().journal_hash;
            let mut out = Vec::new();
            Entry::from_draft(draft(5), 3, prev).seal_into(&mut out);
            lines.insert(2, String::from_utf8(out).unwrap().trim_end().into());
        }
        "torn" => {
            let last = f.segment(21);
            let mut bytes = fs::read(&last).unwrap();
            bytes.extend_from_slice(b"{\"action\":\"emb");
            fs::write(last, bytes).unwrap();
        }
        // The zeroed room a running (or killed) writer keeps after its last line, alone and
        // after a torn record.
        "room" | "torn-in-room" => {
            let last = f.segment(21);
            let mut bytes = fs::read(&last).unwrap();
            if kind == "torn-in-room" {
                bytes.extend_from_slice(b"{\"action\":\"emb");
            }
            bytes.extend_from_slice(&[0; 4096]);
            fs::write(last, bytes).unwrap();
        }
        "segment-deleted" => fs::remove_file(f.segment(11)).unwrap(),
        "truncated" => {
            let exported = f.dir.parent().unwrap().join("exported.jsonl");
            fs::copy(f.checkpoints(), &exported).unwrap();
            fs::remove_file(f.checkpoints()).unwrap();
            let mut last = read_lines(&f.segment(21));
            last.truncate(2);
            write_lines(&f.segment(21), &last);
            return Some(exported);
        }
        "rewritten" => {
            rewrite_chain(f, |e| e.model = None);
            return None;
        }
        "pruned" => {
            prune_closed(f);
            return None;
        }
        "pruned-then-deleted" => {
            prune_closed(f);
            let mut last = read_lines(&f.segment(21));
            last.remove(0);
            write_lines(&f.segment(21), &last);
            return None;
        }
        other => panic!("unknown tampering {other}"),
    }
    write_lines(&seg1, &lines);
    None
}

/// Retention as the gateway runs it: both closed segments pruned behind an anchor.
fn prune_closed(f: &Fixture) {
    let retention = sovereign::journal::Retention {
        max_bytes: Some(1),
        ..Default::default()
    };
    let report =
        sovereign::journal::retention::prune(&f.config(), &retention, SystemTime::now()).unwrap();
    assert_eq!(report.anchor_seq, 20);
}

/// `FAIL <id>: <file>:<line>` → (file, line) of every failure line, `OK` → nothing.
fn failures(stdout: &str) -> Vec<(String, String)> {
    stdout
        .lines()
        .filter(|l| l.starts_with("FAIL"))
        .map(|l| {
            let rest = l.split_once(": ").unwrap().1;
            let mut parts = rest.split([':', ' ']);
            (
                parts.next().unwrap().to_string(),
                parts.next().unwrap().to_string(),
            )
        })
        .collect()
}

#[tokio::test]
async fn python_verifier_agrees_with_the_rust_verifier() {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/verify_journal.py");
    let kinds = [
        "intact",
        "edited",
        "deleted",
        "reordered",
        "spliced",
        "torn",
        "room",
        "torn-in-room",
        "segment-deleted",
        "truncated",
        "rewritten",
        "pruned",
        "pruned-then-deleted",
    ];
    for kind in kinds {
        let f = Fixture::new();
        f.write(25).await;
        let checkpoint = tamper(kind, &f);
        let mut rust = std::process::Command::new(env!("CARGO_BIN_EXE_sovereign"));
        rust.args(["journal", "verify"]).arg(&f.dir);
        let mut python = std::process::Command::new("python3");
        python.arg(&script).arg(&f.dir);
        if let Some(cp) = &checkpoint {
            rust.arg("--checkpoint").arg(cp);
            python.arg(cp);
        }
        let rust = rust.output().unwrap();
        let python = python.output().unwrap();
        let (r_out, p_out) = (
            String::from_utf8_lossy(&rust.stdout),
            String::from_utf8_lossy(&python.stdout),
        );
        let context = format!(
            "{kind}:\nrust:\n{r_out}\npython:\n{p_out}{}",
            String::from_utf8_lossy(&python.stderr)
        );
        assert_eq!(rust.status.code(), python.status.code(), "{context}");
        assert_eq!(failures(&r_out), failures(&p_out), "{context}");
        let expect_ok = matches!(kind, "intact" | "torn" | "room" | "torn-in-room" | "pruned");
        assert_eq!(rust.status.success(), expect_ok, "{context}");
        // The room is not a torn record; a torn record inside it is, with its own bytes only.
        match kind {
            "room" => assert!(!r_out.contains("torn"), "{context}"),
            "torn-in-room" => assert!(r_out.contains("ignored (14 bytes"), "{context}"),
            _ => {}
        }
    }
}

#[tokio::test]
async fn cli_verify_pins_the_operators_key_and_fails_on_an_empty_dir() {
    let f = Fixture::new();
    f.write(12).await;
    let verify = |args: &[&std::ffi::OsStr]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_sovereign"))
            .args(["journal", "verify"])
            .args(args)
            .output()
            .unwrap()
    };
    let public = public_key_path(&f.key);
    let ok = verify(&[
        f.dir.as_os_str(),
        "--public-key".as_ref(),
        public.as_os_str(),
    ]);
    let stdout = String::from_utf8_lossy(&ok.stdout);
    assert!(ok.status.success(), "{stdout}");
    assert!(
        stdout.starts_with("OK eu-1: 12 entries in 2 segments"),
        "{stdout}"
    );

    let other = f.dir.parent().unwrap().join("other.key");
    sovereign::journal::load_or_create_signing_key(&other).unwrap();
    let wrong = verify(&[
        f.dir.as_os_str(),
        "--public-key".as_ref(),
        public_key_path(&other).as_os_str(),
    ]);
    assert_eq!(wrong.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&wrong.stdout)
            .starts_with("FAIL checkpoints: checkpoints-eu-1.jsonl:1")
    );

    let empty = tempfile::tempdir().unwrap();
    assert_eq!(verify(&[empty.path().as_os_str()]).status.code(), Some(1));
}
