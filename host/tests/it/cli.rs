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
