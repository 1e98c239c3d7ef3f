//! Builds the policy components in `policies/` (release profile, `wasm32-wasip2`; the workspace
//! also holds `sdk/rust` and `examples/rust-router`) and hands their paths to the crate as `env!`
//! constants, the way wasmtime's `crates/test-programs` does.
//!
//! The guests are built into `policies/target`, their workspace's own target directory, so
//! `cargo build`, `cargo clippy` and `cargo test` of the host share one guest build.

use std::path::{Path, PathBuf};
use std::process::Command;

const TARGET: &str = "wasm32-wasip2";
/// (crate name with `_`, env var exposed to the crate)
const COMPONENTS: &[(&str, &str)] = &[
    ("rules_router", "RULES_ROUTER_WASM"),
    ("pii_guardrail", "PII_GUARDRAIL_WASM"),
    ("webhook_shaper", "WEBHOOK_SHAPER_WASM"),
    ("broken_shaper", "BROKEN_SHAPER_WASM"),
    ("hostile", "HOSTILE_WASM"),
    ("wrong_world", "WRONG_WORLD_WASM"),
    ("rust_router", "RUST_ROUTER_EXAMPLE_WASM"),
    ("tool_allow", "TOOL_ALLOW_WASM"),
    ("retrieval_keep", "RETRIEVAL_KEEP_WASM"),
    ("tool_rules", "TOOL_RULES_WASM"),
    ("rust_retrieval", "RUST_RETRIEVAL_EXAMPLE_WASM"),
];

fn main() -> Result<(), String> {
    let manifest_dir =
        PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").map_err(|e| e.to_string())?);
    let root = manifest_dir
        .parent()
        .and_then(Path::parent)
        .ok_or("policy-artifacts must live at host/policy-artifacts")?;
    let policies = root.join("policies");
    let wit = root.join("wit");
    for p in [
        policies.join("Cargo.toml"),
        policies.join("Cargo.lock"),
        policies.join("rules-router"),
        policies.join("pii-guardrail"),
        policies.join("webhook-shaper"),
        policies.join("tool-allow"),
        policies.join("retrieval-keep"),
        policies.join("test-guests"),
        root.join("sdk").join("rust"),
        root.join("examples").join("rust-router"),
        root.join("examples").join("rust-retrieval"),
        wit.clone(),
    ] {
        println!("cargo:rerun-if-changed={}", p.display());
    }

    let target_dir = policies.join("target");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.arg("build")
        .arg("--release")
        .arg("--locked")
        .arg("--target")
        .arg(TARGET)
        .arg("--manifest-path")
        .arg(policies.join("Cargo.toml"))
        .arg("--target-dir")
        .arg(&target_dir);
    // The outer build's settings are for the host target, not for the guests.
    for (key, _) in std::env::vars_os() {
        let Some(key) = key.to_str() else { continue };
        if key.starts_with("CARGO_ENCODED_RUSTFLAGS")
            || key == "RUSTFLAGS"
            || key == "RUSTC_WORKSPACE_WRAPPER"
            || key == "CARGO_TARGET_DIR"
            || key == "CARGO_BUILD_TARGET"
            || key.starts_with("CARGO_PROFILE_")
            || key == "CARGO_MAKEFLAGS"
            || key == "MAKEFLAGS"
        {
            cmd.env_remove(key);
        }
    }
    let out = cmd
        .output()
        .map_err(|e| format!("could not run cargo to build the policy components: {e}"))?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let hint = if stderr.contains("target may not be installed")
            || stderr.contains("can't find crate for `core`")
            || stderr.contains("can't find crate for `std`")
        {
            format!(
                "\n\nThe `{TARGET}` target is missing; install it with:\n    rustup target add {TARGET}\n"
            )
        } else {
            String::new()
        };
        return Err(format!(
            "building the policy components (policies/, {TARGET}) failed:\n{stderr}{hint}"
        ));
    }
    for (name, var) in COMPONENTS {
        let path = target_dir
            .join(TARGET)
            .join("release")
            .join(format!("{name}.wasm"));
        if !path.is_file() {
            return Err(format!(
                "expected component {} after the build",
                path.display()
            ));
        }
        println!("cargo:rustc-env={var}={}", path.display());
    }
    Ok(())
}
