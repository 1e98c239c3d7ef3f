//! The crate's one integration-test binary (issue 15, items 1–3): fixtures made by real shaping
//! engines, DOCX built in memory, hostile files, the child process, and the fuzz corpus replay.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test code: a failed unwrap is a failed test"
)]

mod chunking;
mod corpus;
mod docx;
mod hostile;
mod pdf;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use sovereign_documents::{ChildConfig, Document, ExtractError, Limits};

pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

pub fn fixture(name: &str) -> Vec<u8> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The expected text of a fixture: one entry per page (form feeds in `.expected.txt`).
pub fn expected_pages(name: &str) -> Vec<String> {
    let text = String::from_utf8(fixture(&format!("{name}.expected.txt"))).unwrap();
    text.trim_end().split('\u{c}').map(str::to_owned).collect()
}

/// The pdfium library: tests that need it fail, never skip, when it is absent.
pub fn pdfium() -> PathBuf {
    let path = sovereign_documents::default_pdfium_path(&repo_root());
    assert!(
        path.is_file(),
        "libpdfium.so not found at {} (or $SOVEREIGN_PDFIUM): run scripts/setup-models first",
        path.display()
    );
    path
}

pub fn child() -> ChildConfig {
    let mut config = ChildConfig::new(env!("CARGO_BIN_EXE_sovereign-extract"), Some(pdfium()));
    config.timeout = Duration::from_secs(20);
    config.memory_bytes = 1 << 30;
    config
}

/// Runs `f`, asserting it answers within `secs` seconds.
pub fn within<T>(secs: u64, f: impl FnOnce() -> T) -> T {
    let started = Instant::now();
    let out = f();
    let took = started.elapsed();
    assert!(took < Duration::from_secs(secs), "took {took:?}");
    out
}

pub fn page_texts(doc: &Document) -> Vec<&str> {
    doc.blocks.iter().map(|b| b.text.as_str()).collect()
}

pub fn default_limits() -> Limits {
    Limits::default()
}

pub fn err_kind(result: &Result<Document, ExtractError>) -> String {
    match result {
        Ok(doc) => format!("Ok({} blocks)", doc.blocks.len()),
        Err(e) => format!("{e:?}"),
    }
}
