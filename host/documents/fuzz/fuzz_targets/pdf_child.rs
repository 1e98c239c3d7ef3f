//! Fuzz target: PDF extraction through the child protocol (pdfium in `sovereign-extract`, under
//! its rlimits and a wall-clock timeout). Slow (one process per input) but it proves that
//! whatever pdfium does with a hostile PDF, the caller gets an answer. Needs
//! `SOVEREIGN_EXTRACT` (the built `sovereign-extract`) and libpdfium (`SOVEREIGN_PDFIUM` or
//! `models/pdfium/libpdfium.so` from the current directory).
#![no_main]

use std::path::{Path, PathBuf};
use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use sovereign_documents::{
    ChildConfig, ErrorKind, ExtractError, Kind, Limits, default_pdfium_path, extract_in_child,
};

fuzz_target!(|data: &[u8]| {
    let exe = std::env::var_os("SOVEREIGN_EXTRACT")
        .map(PathBuf::from)
        .unwrap_or_default();
    let mut config = ChildConfig::new(exe, Some(default_pdfium_path(Path::new("."))));
    config.timeout = Duration::from_secs(10);
    config.memory_bytes = 512 << 20;
    let mut bytes = b"%PDF-1.7\n".to_vec();
    bytes.extend_from_slice(data);
    match extract_in_child(&config, &bytes, Kind::Pdf, &Limits::default()) {
        Err(ExtractError::Extractor { reason }) => panic!("the child failed: {reason}"),
        Err(e) if e.kind() == ErrorKind::Unavailable => panic!("{e}"),
        _ => {}
    }
});
