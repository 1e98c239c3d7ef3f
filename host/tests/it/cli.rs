//! The command line as operators use it.

use std::process::Command;

fn sovereign() -> Command {
    Command::new(env!("CARGO_BIN_EXE_sovereign"))
}

#[test]
fn check_config_prints_every_error_with_its_path() {
    let dir = std::env::temp_dir().join(format!("sovereign-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("bad.toml");
    std::fs::write(
        &path,
        r#"
sovereign_id = ""
region = "r"
default_model = "missing"
[server]
listen = "nowhere"
[[models]]
id = "m"
family = "f"
kind = "chat"
region = "r"
base_url = "not a url"
"#,
    )
    .unwrap();
    let out = sovereign().arg("check-config").arg(&path).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8(out.stderr).unwrap();
    for needle in [
        "sovereign_id",
        "server.listen",
        "models[0].base_url",
        "default_model",
    ] {
        assert!(err.contains(needle), "{needle} not in:\n{err}");
    }
}

#[test]
fn keygen_prints_a_key_and_the_hash_the_config_takes() {
    let out = sovereign().arg("keygen").output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let mut lines = text.lines();
    let key = lines.next().unwrap().strip_prefix("key ").unwrap();
    assert!(key.starts_with("sk-sov-"));
    let hash = lines.next().unwrap();
    assert_eq!(
        hash,
        format!("hash = \"{}\"", sovereign::auth::hash_for_config(key))
    );
}

fn temp_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("sovereign-cli-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn policy_test(args: &[&str]) -> (Option<i32>, String) {
    let out = sovereign()
        .args(["policy", "test"])
        .args(args)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    (out.status.code(), text)
}

#[test]
fn policy_test_runs_the_builtin_golden_set_and_prints_each_decision() {
    let (code, out) = policy_test(&[
        policy_artifacts::RUST_ROUTER_EXAMPLE,
        "--deadline-ms",
        "200",
    ]);
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains("world sovereign:policy/router-policy@0.1.0"),
        "{out}"
    );
    // The example keeps an Arabic request on the cheapest local Arabic model of the demo fleet.
    let ar = out.lines().find(|l| l.contains("ar-short")).unwrap();
    assert!(ar.starts_with("ok"), "{ar}");
    assert!(
        ar.contains("-> allam-7b-instruct (rule `local-speaker`, policy `rust-residency`"),
        "{ar}"
    );
    assert!(out.contains("12 of 12 cases passed"), "{out}");
}

#[test]
fn policy_test_checks_golden_expectations_and_fails_on_a_mismatch() {
    let dir = temp_dir("golden");
    let doc = dir.join("routing.yaml");
    std::fs::write(
        &doc,
        "name: golden\nroutes:\n  - name: arabic\n    condition: \"language == 'ar'\"\n    model: jais-30b-chat\ndefault: qwen2.5-coder-32b\n",
    )
    .unwrap();
    let good = dir.join("good.jsonl");
    std::fs::write(
        &good,
        "# the rules router against its document\n\
         {\"name\": \"arabic\", \"facts\": {\"language\": \"ar\"}, \"expect\": {\"model\": \"jais-30b-chat\", \"rule\": \"arabic\", \"policy\": \"golden\"}}\n\
         {\"name\": \"english\", \"facts\": {\"language\": \"en\", \"prompt_tokens\": 9000}, \"expect\": {\"model\": \"qwen2.5-coder-32b\", \"rule\": \"default\"}}\n",
    )
    .unwrap();
    let rules = policy_artifacts::RULES_ROUTER;
    let doc_arg = doc.to_str().unwrap();
    let (code, out) = policy_test(&[
        rules,
        "--document",
        doc_arg,
        "--golden",
        good.to_str().unwrap(),
        "--deadline-ms",
        "200",
    ]);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("2 of 2 cases passed"), "{out}");

    let bad = dir.join("bad.jsonl");
    std::fs::write(
        &bad,
        "{\"name\": \"arabic\", \"facts\": {\"language\": \"ar\"}, \"expect\": {\"model\": \"allam-7b-instruct\"}}\n",
    )
    .unwrap();
    let (code, out) = policy_test(&[
        rules,
        "--document",
        doc_arg,
        "--golden",
        bad.to_str().unwrap(),
        "--deadline-ms",
        "200",
    ]);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("FAIL arabic"), "{out}");
    assert!(
        out.contains("model: expected `allam-7b-instruct`, got `jais-30b-chat`"),
        "{out}"
    );
}

#[test]
fn policy_test_fails_a_guest_that_loops_and_a_component_of_the_wrong_world() {
    let dir = temp_dir("hostile");
    let golden = dir.join("loop.jsonl");
    std::fs::write(
        &golden,
        "{\"name\": \"fine\"}\n{\"name\": \"loops\", \"facts\": {\"labels\": {\"mode\": \"loop\"}}}\n",
    )
    .unwrap();
    let (code, out) = policy_test(&[
        policy_artifacts::HOSTILE,
        "--golden",
        golden.to_str().unwrap(),
        "--deadline-ms",
        "50",
    ]);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("ok   fine"), "{out}");
    assert!(
        out.contains("FAIL loops") && out.contains("deadline"),
        "{out}"
    );
    assert!(out.contains("1 of 2 cases passed"), "{out}");

    let (code, out) = policy_test(&[policy_artifacts::WRONG_WORLD]);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains("FAIL load") && out.contains("router-policy"),
        "{out}"
    );
}

#[test]
fn policy_test_takes_candidates_and_limits_from_a_gateway_config() {
    let dir = temp_dir("config");
    let config = dir.join("gateway.toml");
    std::fs::write(
        &config,
        format!(
            "sovereign_id = \"t\"\nregion = \"r\"\ndefault_model = \"local-en\"\n\
             [server]\nlisten = \"127.0.0.1:0\"\n\
             [routing]\ncomponent = {:?}\ndeadline_ms = 250\nmemory_mb = 24\npool = \"warm\"\n\
             [[models]]\nid = \"local-en\"\nfamily = \"f\"\nkind = \"chat\"\nlanguages = [\"en\"]\n\
             region = \"r\"\nlocal = true\nbase_url = \"http://127.0.0.1:9/v1\"\n\
             [[models]]\nid = \"remote-ar\"\nfamily = \"f\"\nkind = \"chat\"\nlanguages = [\"ar\"]\n\
             region = \"r\"\nbase_url = \"http://127.0.0.1:9/v1\"\n",
            policy_artifacts::RUST_ROUTER_EXAMPLE
        ),
    )
    .unwrap();
    let (code, out) = policy_test(&[
        policy_artifacts::RUST_ROUTER_EXAMPLE,
        "--config",
        config.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains("deadline 250ms, memory 24 MiB, pool warm; 2 candidates"),
        "{out}"
    );
    let ar = out.lines().find(|l| l.contains("ar-short")).unwrap();
    assert!(ar.contains("-> remote-ar (rule `remote-speaker`"), "{ar}");
}

#[test]
fn policy_test_runs_tool_and_retrieval_policies_against_golden_cases() {
    let dir = temp_dir("worlds");
    // The tool world: the built-in smoke case without --golden; expectations with it.
    let (code, out) = policy_test(&[policy_artifacts::TOOL_ALLOW]);
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains("world sovereign:policy/tool-policy@0.1.0"),
        "{out}"
    );
    assert!(
        out.contains("PASS smoke: call: Allow; result: Pass"),
        "{out}"
    );
    let settings = dir.join("tool-settings.json");
    std::fs::write(
        &settings,
        r#"{"deny": {"drop": "no dropping"}, "rewrite": {"search": {"limit": 10}}, "redact": ["4111"]}"#,
    )
    .unwrap();
    let golden = dir.join("tool.jsonl");
    std::fs::write(
        &golden,
        concat!(
            r#"{"name": "deny", "call": {"server": "db", "tool": "drop"}, "expect_call": "deny"}"#,
            "\n",
            r#"{"name": "rewrite", "call": {"server": "db", "tool": "search", "arguments": {"q": "x", "limit": 900}}, "expect_call": "rewrite", "expect_arguments": {"q": "x", "limit": 10}}"#,
            "\n",
            r#"{"name": "redact", "call": {"server": "db", "tool": "get"}, "result": {"content": [{"type": "text", "text": "card 4111"}]}, "expect_call": "allow", "expect_result": "redact"}"#,
            "\n",
            r#"{"name": "wrong", "call": {"server": "db", "tool": "get"}, "expect_call": "deny"}"#,
            "\n",
        ),
    )
    .unwrap();
    let (code, out) = policy_test(&[
        policy_artifacts::TOOL_RULES,
        "--settings",
        settings.to_str().unwrap(),
        "--golden",
        golden.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(1), "{out}");
    for pass in ["PASS deny", "PASS rewrite", "PASS redact", "FAIL wrong"] {
        assert!(out.contains(pass), "{pass}: {out}");
    }
    assert!(out.contains("3 of 4 cases passed"), "{out}");

    // The retrieval world: the example's own golden file.
    let example =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/rust-retrieval");
    let (code, out) = policy_test(&[
        policy_artifacts::RUST_RETRIEVAL_EXAMPLE,
        "--settings",
        example.join("settings.json").to_str().unwrap(),
        "--golden",
        example.join("golden.jsonl").to_str().unwrap(),
    ]);
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains("world sovereign:policy/retrieval-policy@0.1.0"),
        "{out}"
    );
    assert!(out.contains("5 of 5 cases passed"), "{out}");
}
