//! Extraction speed on a multi-page PDF (issue 15 goal: ≥ 100 pages/s): in process, and through
//! the child process the gateway uses (spawn + pdfium load + extraction + JSON). Builds a
//! 300-page PDF from the dense test fixture (≈ 5,000 characters of Arabic and English per
//! page, HarfBuzz-shaped) with pdfium itself. With `EXTRACT_BENCH_WRITE=<path>` it writes that
//! PDF for `bench/rag_bench.py`, and with `EXTRACT_BENCH_WRITE_ORDINARY=<path>` a 300-page PDF of
//! ordinary pages (≈ 1,300 characters of English each: one embedding window).
//!
//!     scripts/setup-models
//!     cargo build --release -p sovereign-documents --bin sovereign-extract
//!     cargo run --release -p sovereign-documents --example extract_bench

use std::error::Error;
use std::path::Path;
use std::time::Instant;

use pdfium_render::prelude::Pdfium;
use sovereign_documents::{
    ApproxTokenCounter, ChildConfig, ChunkConfig, Kind, Limits, chunk, default_pdfium_path,
    extract, extract_in_child,
};

const PAGES: i32 = 300;

/// This process's user + system CPU seconds from /proc/self/stat (Linux; 100 ticks per second,
/// the kernel's USER_HZ): a figure the other load on a shared machine does not distort.
fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let after_name = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) / 100.0)
}

fn main() -> Result<(), Box<dyn Error>> {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let root = crate_dir.join("../..");
    let library = default_pdfium_path(&root);
    if !library.is_file() {
        return Err(format!("{} missing: run scripts/setup-models", library.display()).into());
    }
    let pdfium = Pdfium::new(Pdfium::bind_to_library(&library)?);
    let mut sources = Vec::new();
    for name in ["dense_mixed.pdf", "ar_harfbuzz.pdf"] {
        sources.push(std::fs::read(crate_dir.join("tests/fixtures").join(name))?);
    }
    let mut built = pdfium.create_new_pdf()?;
    let dense = pdfium.load_pdf_from_byte_slice(&sources[0], None)?;
    while built.pages().len() < PAGES {
        built.pages_mut().append(&dense)?;
    }
    let bytes = built.save_to_bytes()?;
    drop(built);
    // bench/rag_bench.py uploads the same PDF through the gateway.
    if let Some(path) = std::env::var_os("EXTRACT_BENCH_WRITE") {
        std::fs::write(&path, &bytes)?;
        println!(
            "wrote the {PAGES}-page PDF to {}",
            Path::new(&path).display()
        );
    }
    if let Some(path) = std::env::var_os("EXTRACT_BENCH_WRITE_ORDINARY") {
        std::fs::write(&path, ordinary_pdf(&pdfium)?)?;
        println!(
            "wrote the {PAGES}-page ordinary PDF to {}",
            Path::new(&path).display()
        );
    }
    let limits = Limits::default();

    // Warm-up, then the measured runs.
    extract(&bytes, Kind::Pdf, &limits, Some(&library))?;
    let runs = 5;
    let cpu_started = cpu_seconds();
    let started = Instant::now();
    let mut pages = 0u64;
    let mut chars = 0usize;
    for _ in 0..runs {
        let doc = extract(&bytes, Kind::Pdf, &limits, Some(&library))?;
        pages += u64::from(doc.pages.unwrap_or(0));
        chars = doc.char_count();
    }
    let secs = started.elapsed().as_secs_f64();
    println!(
        "in process: {pages} pages in {secs:.3} s = {:.0} pages/s ({} KiB PDF, {chars} chars per run)",
        pages as f64 / secs,
        bytes.len() / 1024
    );
    if let (Some(before), Some(after)) = (cpu_started, cpu_seconds()) {
        println!(
            "in process, per CPU second: {:.0} pages/s of CPU ({:.1} CPU s; one core's worth, \
             whatever else runs on the machine)",
            pages as f64 / (after - before),
            after - before
        );
    }

    let exe = root.join("target/release/sovereign-extract");
    if exe.is_file() {
        let config = ChildConfig::new(&exe, Some(library.clone()));
        let started = Instant::now();
        let mut pages = 0u64;
        for _ in 0..runs {
            let doc = extract_in_child(&config, &bytes, Kind::Pdf, &limits)?;
            pages += u64::from(doc.pages.unwrap_or(0));
        }
        let secs = started.elapsed().as_secs_f64();
        println!(
            "child process: {pages} pages in {secs:.3} s = {:.0} pages/s (one child per document)",
            pages as f64 / secs
        );
        let started = Instant::now();
        let small = &sources[1];
        for _ in 0..20 {
            extract_in_child(&config, small, Kind::Pdf, &limits)?;
        }
        println!(
            "child process, 2-page document: {:.1} ms per document",
            started.elapsed().as_secs_f64() * 1000.0 / 20.0
        );
    } else {
        println!(
            "(build the child first for its figure: cargo build --release -p sovereign-documents --bin sovereign-extract)"
        );
    }

    let doc = extract(&bytes, Kind::Pdf, &limits, Some(&library))?;
    let started = Instant::now();
    let chunks = chunk(&doc, &ApproxTokenCounter, &ChunkConfig::default());
    println!(
        "chunking: {} chunks from {PAGES} pages in {:.1} ms",
        chunks.len(),
        started.elapsed().as_secs_f64() * 1000.0
    );
    Ok(())
}

/// A `PAGES`-page PDF of ordinary pages: 16 lines of English prose each (≈ 1,300 characters,
/// one embedding window), every page's text a little different, in a standard font.
fn ordinary_pdf(pdfium: &Pdfium) -> Result<Vec<u8>, Box<dyn Error>> {
    use pdfium_render::prelude::{PdfPageObjectsCommon, PdfPagePaperSize, PdfPoints};
    const LINES: [&str; 8] = [
        "Customer records are kept for ten years after the account is closed, in the archive",
        "of the branch that opened the account; a copy is held by the compliance office.",
        "A suspicious transaction is reported to the financial intelligence unit within two",
        "working days of its detection, by the officer who detected it or by the branch head.",
        "Transfers above the daily limit need the approval of two officers, one of them from",
        "the risk department, and are logged with the reasons given for the approval.",
        "Staff complete the annual training on data privacy before the end of March, and new",
        "staff within their first month; the training record is kept with the personnel file.",
    ];
    let mut doc = pdfium.create_new_pdf()?;
    let font = doc.fonts_mut().helvetica();
    for n in 0..PAGES {
        let mut page = doc.pages_mut().create_page_at_end(PdfPagePaperSize::a4())?;
        for line in 0..16 {
            let text = format!(
                "{} ({n}.{line})",
                LINES[(line as usize + n as usize) % LINES.len()]
            );
            page.objects_mut().create_text_object(
                PdfPoints::new(40.0),
                PdfPoints::new(780.0 - 16.0 * line as f32),
                text,
                font,
                PdfPoints::new(9.0),
            )?;
        }
    }
    Ok(doc.save_to_bytes()?)
}
