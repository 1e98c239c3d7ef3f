//! Compiling components, with compiled artifacts cached on disk.
//!
//! The cache key is `sha256(component bytes)` plus a digest of wasmtime's engine compatibility
//! hash (wasmtime version, compiler settings, enabled features), so an artifact is only ever
//! read back by an engine that could have written it. Each file holds the sha256 of the artifact
//! followed by the artifact; a file whose digest does not match is deleted and recompiled.
//! Files are written to a temporary name and renamed into place, so readers never see half a file.

use std::fs;
use std::hash::{Hash, Hasher};
use std::io::Write;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use wasmtime::Engine;
use wasmtime::component::Component;

use super::PolicyError;

/// `std::hash::Hasher` over sha256, to digest wasmtime's `impl Hash` compatibility value into a
/// stable file name.
struct Sha256Hasher(Sha256);

impl Hasher for Sha256Hasher {
    fn write(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }
    fn finish(&self) -> u64 {
        0 // unused: the digest is read from the inner state
    }
}

/// Hex digest of the engine's compatibility hash (first 16 bytes).
pub(crate) fn engine_key(engine: &Engine) -> String {
    let mut h = Sha256Hasher(Sha256::new());
    engine.precompile_compatibility_hash().hash(&mut h);
    hex::encode(&h.0.finalize()[..16])
}

pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// Compiles `wasm` into a component, or reads the artifact compiled earlier from `cache_dir`.
/// Blocking and CPU-heavy (Cranelift): call from `spawn_blocking`, never on a request path.
pub(crate) fn compile(
    engine: &Engine,
    engine_key: &str,
    cache_dir: Option<&Path>,
    wasm: &[u8],
    sha256: &str,
) -> Result<Component, PolicyError> {
    let Some(dir) = cache_dir else {
        return compile_fresh(engine, wasm);
    };
    let path = dir.join(format!("{sha256}-{engine_key}.cwasm"));
    if let Some(component) = read_cached(engine, &path) {
        return Ok(component);
    }
    let artifact = engine
        .precompile_component(wasm)
        .map_err(|e| PolicyError::Compile(format!("{e:#}")))?;
    if let Err(e) = write_cached(dir, &path, &artifact) {
        tracing::warn!(path = %path.display(), "could not cache a compiled policy: {e}");
    }
    deserialize(engine, &artifact)
        .map_err(|e| PolicyError::Compile(format!("loading the compiled artifact: {e:#}")))
}

fn compile_fresh(engine: &Engine, wasm: &[u8]) -> Result<Component, PolicyError> {
    Component::new(engine, wasm).map_err(|e| PolicyError::Compile(format!("{e:#}")))
}

fn read_cached(engine: &Engine, path: &Path) -> Option<Component> {
    let bytes = fs::read(path).ok()?;
    let valid = bytes.len() > 32 && bytes[..32] == Sha256::digest(&bytes[32..])[..];
    if !valid {
        tracing::warn!(path = %path.display(), "discarding a corrupt compiled-policy cache file");
        let _ = fs::remove_file(path);
        return None;
    }
    match deserialize(engine, &bytes[32..]) {
        Ok(c) => Some(c),
        Err(e) => {
            tracing::warn!(path = %path.display(), "discarding an unusable cache file: {e:#}");
            let _ = fs::remove_file(path);
            None
        }
    }
}

fn write_cached(dir: &Path, path: &Path, artifact: &[u8]) -> std::io::Result<()> {
    create_private_dir(dir)?;
    let tmp: PathBuf = dir.join(format!(
        ".{}.{}.tmp",
        path.file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("artifact"),
        std::process::id()
    ));
    let mut f = fs::File::create(&tmp)?;
    f.write_all(&Sha256::digest(artifact))?;
    f.write_all(artifact)?;
    f.sync_all()?;
    drop(f);
    fs::rename(&tmp, path)
}

fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    fs::create_dir_all(dir)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(dir, fs::Permissions::from_mode(0o700))?;
    }
    Ok(())
}

/// Loads a compiled artifact. The only `unsafe` in the gateway.
#[allow(
    unsafe_code,
    reason = "Component::deserialize is unsafe: it trusts the artifact's machine code"
)]
fn deserialize(engine: &Engine, artifact: &[u8]) -> wasmtime::Result<Component> {
    // SAFETY: `artifact` is machine code this process's engine produced: either the bytes
    // `Engine::precompile_component` just returned, or a cache file that this host wrote (in a
    // directory it created with mode 0700), named by the sha256 of the source component and the
    // engine's compatibility hash, whose sha256 prefix matched its content when read back.
    // Artifacts from anyone else (plugin authors, uploads) are never passed here: uploads are
    // always `.wasm` and compiled by us. wasmtime additionally checks the artifact's header
    // against this engine's version and settings and refuses a mismatch.
    unsafe { Component::deserialize(engine, artifact) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn engine() -> Engine {
        let mut c = wasmtime::Config::new();
        c.wasm_component_model(true);
        Engine::new(&c).expect("engine")
    }

    #[test]
    fn artifacts_are_cached_verified_and_replaced_when_corrupt() {
        let engine = engine();
        let key = engine_key(&engine);
        assert_eq!(key.len(), 32);
        let dir = std::env::temp_dir().join(format!("sovereign-cache-test-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let wasm = wat_component();
        let sha = sha256_hex(&wasm);
        compile(&engine, &key, Some(&dir), &wasm, &sha).expect("first compile");
        let path = dir.join(format!("{sha}-{key}.cwasm"));
        assert!(path.is_file());
        // Read back from the cache.
        assert!(read_cached(&engine, &path).is_some());
        // A corrupted file is discarded and rebuilt.
        let mut bytes = fs::read(&path).expect("read");
        let last = bytes.len() - 1;
        bytes[last] ^= 0xff;
        fs::write(&path, &bytes).expect("write");
        assert!(read_cached(&engine, &path).is_none());
        assert!(!path.exists());
        compile(&engine, &key, Some(&dir), &wasm, &sha).expect("recompile");
        assert!(read_cached(&engine, &path).is_some());
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn garbage_is_a_compile_error() {
        let engine = engine();
        let Err(err) = compile(&engine, "k", None, b"not wasm", "x") else {
            panic!("garbage compiled");
        };
        assert!(matches!(err, PolicyError::Compile(_)), "{err}");
    }

    /// The smallest component, in binary form (the `wat` feature is not enabled).
    fn wat_component() -> Vec<u8> {
        // magic, component version 0x0d, layer 1
        vec![0x00, 0x61, 0x73, 0x6d, 0x0d, 0x00, 0x01, 0x00]
    }
}
