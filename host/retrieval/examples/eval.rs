//! Retrieval quality on the bilingual evaluation set in `eval/` (issue 15, item 9): hit@1, hit@5
//! and MRR by document and by paragraph for vector-only, BM25-only and fused ranking, split by
//! question/document language; then the answerable/unanswerable separation of the confidence
//! model (5-fold cross-validated AUC, Brier score, reliability table) and the coefficients
//! fitted on the whole set. `cargo run --release -p sovereign-retrieval --example eval
//! [-- --write-calibration]` (the flag rewrites `src/confidence/fitted.rs`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use sovereign_retrieval::confidence::{self, FEATURE_NAMES, Features, N_FEATURES};
use sovereign_retrieval::embed::E5Model;
use sovereign_retrieval::index::{ChunkInput, Filter, Fusion, Index, Mode, SearchOptions};
use sovereign_retrieval::normalize::TokenizerOptions;

type Error = Box<dyn std::error::Error>;
type Vectors = Vec<Vec<f32>>;

struct Chunk {
    document: String,
    paragraph: usize,
    text: String,
}

struct Question {
    id: String,
    lang: String,
    document: Option<(String, usize)>,
    text: String,
}

impl Question {
    /// "en→en", "ar→ar", "ar→en", "en→ar" or "none".
    fn kind(&self) -> String {
        match &self.document {
            Some((doc, _)) => format!("{}→{}", self.lang, &doc[..2]),
            None => "none".to_owned(),
        }
    }
}

fn eval_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("eval")
}

fn load_corpus() -> Result<Vec<Chunk>, Error> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(eval_dir().join("docs"))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    files.sort();
    let mut chunks = Vec::new();
    for file in files {
        let stem = file
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let text = std::fs::read_to_string(&file)?;
        let paragraphs = text
            .split("\n\n")
            .map(str::trim)
            .filter(|p| !p.is_empty() && !p.starts_with('#'));
        for (i, p) in paragraphs.enumerate() {
            chunks.push(Chunk {
                document: stem.clone(),
                paragraph: i + 1,
                text: p.to_owned(),
            });
        }
    }
    Ok(chunks)
}

fn load_questions() -> Result<Vec<Question>, Error> {
    let text = std::fs::read_to_string(eval_dir().join("questions.tsv"))?;
    let mut out = Vec::new();
    for line in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
    {
        let f: Vec<&str> = line.split('\t').collect();
        let [id, lang, doc, para, q] = f[..] else {
            return Err(format!("bad line: {line}").into());
        };
        out.push(Question {
            id: id.to_owned(),
            lang: lang.to_owned(),
            document: if doc == "-" {
                None
            } else {
                Some((doc.to_owned(), para.parse()?))
            },
            text: q.to_owned(),
        });
    }
    Ok(out)
}

/// Embeddings of the corpus and the questions, cached in the target directory by a hash of the
/// model file and every text (embedding is the slow part on a busy 2-core machine).
fn embed_all(
    model: &E5Model,
    chunks: &[Chunk],
    questions: &[Question],
) -> Result<(Vectors, Vectors), Error> {
    let mut h = Sha256::new();
    h.update(model.sha256());
    for c in chunks {
        h.update(&c.text);
        h.update([0]);
    }
    for q in questions {
        h.update(&q.text);
        h.update([1]);
    }
    let key: String = h
        .finalize()
        .iter()
        .take(8)
        .map(|b| format!("{b:02x}"))
        .collect();
    let cache_dir = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target"));
    let cache = cache_dir.join(format!("retrieval-eval-{key}.f32"));
    let dim = model.dims();
    let total = chunks.len() + questions.len();
    if let Ok(bytes) = std::fs::read(&cache)
        && bytes.len() == total * dim * 4
    {
        let all = sovereign_retrieval::index::vector_from_bytes(&bytes)?;
        let mut rows: Vec<Vec<f32>> = all.chunks_exact(dim).map(<[f32]>::to_vec).collect();
        let qs = rows.split_off(chunks.len());
        eprintln!("embeddings from cache {}", cache.display());
        return Ok((rows, qs));
    }
    let t = std::time::Instant::now();
    let texts: Vec<&str> = chunks.iter().map(|c| c.text.as_str()).collect();
    let vectors = model.embed_passages(&texts)?;
    let mut qvs = Vec::new();
    for q in questions {
        qvs.push(model.embed_query(&q.text)?);
    }
    eprintln!(
        "embedded {} chunks and {} questions in {:.1} s",
        chunks.len(),
        questions.len(),
        t.elapsed().as_secs_f64()
    );
    let mut bytes = Vec::with_capacity(total * dim * 4);
    for v in vectors.iter().chain(&qvs) {
        bytes.extend(sovereign_retrieval::index::vector_to_bytes(v));
    }
    if std::fs::create_dir_all(&cache_dir).is_ok() {
        let _ = std::fs::write(&cache, bytes);
    }
    Ok((vectors, qvs))
}

fn build(
    chunks: &[Chunk],
    vectors: &[Vec<f32>],
    model_key: &str,
    tok: TokenizerOptions,
) -> Result<Index, Error> {
    let mut index = Index::with_tokenizer(vectors[0].len(), model_key, tok);
    for (i, (c, v)) in chunks.iter().zip(vectors).enumerate() {
        index.add(&ChunkInput {
            chunk_id: i as u64,
            tenant: "eval",
            collection: "eval",
            document_id: &c.document,
            text: &c.text,
            vector: v,
        })?;
    }
    Ok(index)
}

#[derive(Default, Clone, Copy)]
struct Tally {
    n: usize,
    doc_hit1: usize,
    doc_hit5: usize,
    doc_rr: f64,
    para_hit1: usize,
    para_hit5: usize,
    para_rr: f64,
}

impl Tally {
    fn add(&mut self, doc_rank: Option<usize>, para_rank: Option<usize>) {
        self.n += 1;
        if let Some(r) = doc_rank {
            self.doc_hit1 += usize::from(r == 1);
            self.doc_hit5 += usize::from(r <= 5);
            self.doc_rr += 1.0 / r as f64;
        }
        if let Some(r) = para_rank {
            self.para_hit1 += usize::from(r == 1);
            self.para_hit5 += usize::from(r <= 5);
            self.para_rr += 1.0 / r as f64;
        }
    }

    fn row(&self, label: &str) -> String {
        let n = self.n.max(1) as f64;
        format!(
            "| {label} | {} | {:.2} | {:.2} | {:.3} | {:.2} | {:.2} | {:.3} |",
            self.n,
            self.doc_hit1 as f64 / n,
            self.doc_hit5 as f64 / n,
            self.doc_rr / n,
            self.para_hit1 as f64 / n,
            self.para_hit5 as f64 / n,
            self.para_rr / n
        )
    }
}

const DEPTH: usize = 20;

fn evaluate(
    index: &Index,
    chunks: &[Chunk],
    questions: &[Question],
    qvs: &[Vec<f32>],
    mode: Mode,
    balance_scripts: bool,
    fusion: Fusion,
) -> Result<BTreeMap<String, Tally>, Error> {
    let mut tallies: BTreeMap<String, Tally> = BTreeMap::new();
    let options = SearchOptions {
        mode,
        balance_scripts,
        fusion,
        ..SearchOptions::default()
    };
    for (q, v) in questions.iter().zip(qvs) {
        let Some((doc, para)) = &q.document else {
            continue;
        };
        let r = index.search_with(v, &q.text, DEPTH, &Filter::default(), &options)?;
        let mut docs_seen: Vec<&str> = Vec::new();
        let mut doc_rank = None;
        let mut para_rank = None;
        for (i, hit) in r.hits.iter().enumerate() {
            let c = &chunks[hit.chunk_id as usize];
            if !docs_seen.contains(&c.document.as_str()) {
                docs_seen.push(&c.document);
                if doc_rank.is_none() && c.document == *doc {
                    doc_rank = Some(docs_seen.len());
                }
            }
            if para_rank.is_none() && c.document == *doc && c.paragraph == *para {
                para_rank = Some(i + 1);
            }
        }
        tallies
            .entry(q.kind())
            .or_default()
            .add(doc_rank, para_rank);
        tallies
            .entry("all".to_owned())
            .or_default()
            .add(doc_rank, para_rank);
    }
    Ok(tallies)
}

fn main() -> Result<(), Error> {
    let write = std::env::args().any(|a| a == "--write-calibration");
    let chunks = load_corpus()?;
    let questions = load_questions()?;
    let model = E5Model::load_default()?;
    let (vectors, qvs) = embed_all(&model, &chunks, &questions)?;
    let model_key = format!("{}:{}", model.model_id(), model.sha256());
    let answerable = questions.iter().filter(|q| q.document.is_some()).count();
    println!(
        "corpus: {} documents, {} chunks (paragraphs); {} questions ({} answerable, {} unanswerable); model {}",
        chunks
            .iter()
            .map(|c| &c.document)
            .collect::<std::collections::BTreeSet<_>>()
            .len(),
        chunks.len(),
        questions.len(),
        answerable,
        questions.len() - answerable,
        model_key
    );

    let stem = TokenizerOptions {
        strip_arabic_prefixes: true,
    };
    let plain = TokenizerOptions {
        strip_arabic_prefixes: false,
    };
    let with_stem = build(&chunks, &vectors, &model_key, stem)?;
    let without = build(&chunks, &vectors, &model_key, plain)?;

    println!("\n## Retrieval (answerable questions; top {DEPTH} chunks searched)\n");
    println!(
        "| ranking / questions | n | doc hit@1 | doc hit@5 | doc MRR | para hit@1 | para hit@5 | para MRR |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    let runs: Vec<(String, &Index, Mode, bool, Fusion)> = vec![
        (
            "vector only, raw cosine".into(),
            &with_stem,
            Mode::VectorOnly,
            false,
            Fusion::Rrf,
        ),
        (
            "vector only, script-balanced".into(),
            &with_stem,
            Mode::VectorOnly,
            true,
            Fusion::Rrf,
        ),
        (
            "BM25 only, no prefix stripping".into(),
            &without,
            Mode::LexicalOnly,
            true,
            Fusion::Rrf,
        ),
        (
            "BM25 only, Arabic prefixes stripped".into(),
            &with_stem,
            Mode::LexicalOnly,
            true,
            Fusion::Rrf,
        ),
        (
            "RRF, raw cosine".into(),
            &with_stem,
            Mode::Hybrid,
            false,
            Fusion::Rrf,
        ),
        (
            "RRF, script-balanced".into(),
            &with_stem,
            Mode::Hybrid,
            true,
            Fusion::Rrf,
        ),
        (
            "evidence-weighted RRF, script-balanced".into(),
            &with_stem,
            Mode::Hybrid,
            true,
            Fusion::EvidenceRrf,
        ),
        (
            "z + 0.5×BM25, script-balanced".into(),
            &with_stem,
            Mode::Hybrid,
            true,
            Fusion::Scores { lexical: 0.5 },
        ),
        (
            "z + 1×BM25, script-balanced, no prefix stripping".into(),
            &without,
            Mode::Hybrid,
            true,
            Fusion::Scores { lexical: 1.0 },
        ),
        (
            "z + 1×BM25, script-balanced, prefixes stripped (default)".into(),
            &with_stem,
            Mode::Hybrid,
            true,
            Fusion::Scores { lexical: 1.0 },
        ),
        (
            "z + 2×BM25, script-balanced".into(),
            &with_stem,
            Mode::Hybrid,
            true,
            Fusion::Scores { lexical: 2.0 },
        ),
        (
            "z + 1×BM25, one scale for both scripts".into(),
            &with_stem,
            Mode::Hybrid,
            false,
            Fusion::Scores { lexical: 1.0 },
        ),
    ];
    for (label, index, mode, balance, fusion) in runs {
        let label = label.as_str();
        let t = evaluate(index, &chunks, &questions, &qvs, mode, balance, fusion)?;
        for (kind, tally) in &t {
            if kind == "all" {
                println!("{}", tally.row(&format!("**{label}**, all")));
            }
        }
        for (kind, tally) in &t {
            if kind != "all" {
                println!("{}", tally.row(&format!("{label}, {kind}")));
            }
        }
    }

    // --- confidence --------------------------------------------------------------------------
    let mut samples: Vec<([f64; N_FEATURES], bool)> = Vec::new();
    for (q, v) in questions.iter().zip(&qvs) {
        let r = with_stem.search(v, &q.text, 5, &Filter::default())?;
        samples.push((Features::from_results(&r).to_array(), q.document.is_some()));
    }
    const FOLDS: usize = 5;
    const L2: f64 = 0.05;
    let mut oof = vec![(0.0, false); samples.len()];
    for fold in 0..FOLDS {
        let train: Vec<_> = samples
            .iter()
            .enumerate()
            .filter(|(i, _)| i % FOLDS != fold)
            .map(|(_, s)| *s)
            .collect();
        let model = confidence::fit(&train, L2);
        for (i, s) in samples
            .iter()
            .enumerate()
            .filter(|(i, _)| i % FOLDS == fold)
        {
            let f = Features {
                top1_cosine: s.0[0],
                cosine_gap: s.0[1],
                bm25_norm: s.0[2],
                list_overlap: s.0[3],
                terms_matched: s.0[4],
                top1_z: s.0[5],
            };
            oof[i] = (model.predict(&f), s.1);
        }
    }
    let raw: Vec<(f64, bool)> = samples.iter().map(|s| (s.0[0], s.1)).collect();
    let raw_z: Vec<(f64, bool)> = samples.iter().map(|s| (s.0[5], s.1)).collect();
    println!(
        "\n## Answerable vs unanswerable ({FOLDS}-fold cross-validation, questions assigned to folds by position; L2 {L2})\n"
    );
    println!("| score | AUC | Brier |");
    println!("|---|---|---|");
    println!(
        "| raw top-1 cosine (not a probability) | {:.3} | – |",
        confidence::auc(&raw)
    );
    println!(
        "| top-1 per-script z-score alone | {:.3} | – |",
        confidence::auc(&raw_z)
    );
    println!(
        "| logistic confidence, out of fold | {:.3} | {:.3} |",
        confidence::auc(&oof),
        confidence::brier(&oof)
    );
    let base = answerable as f64 / questions.len() as f64;
    let constant: Vec<(f64, bool)> = samples.iter().map(|s| (base, s.1)).collect();
    println!(
        "| constant base rate {base:.2} (reference) | 0.500 | {:.3} |",
        confidence::brier(&constant)
    );
    let mean = |b: bool| {
        let v: Vec<f64> = oof.iter().filter(|p| p.1 == b).map(|p| p.0).collect();
        v.iter().sum::<f64>() / v.len().max(1) as f64
    };
    println!(
        "\nmean confidence: answerable {:.2}, unanswerable {:.2}\n",
        mean(true),
        mean(false)
    );
    println!("Reliability (out of fold):\n");
    print!(
        "{}",
        confidence::format_reliability(&confidence::reliability(&oof, 5))
    );

    let mut worst: Vec<(f64, &Question)> = oof
        .iter()
        .zip(&questions)
        .filter(|(p, _)| !p.1)
        .map(|(p, q)| (p.0, q))
        .collect();
    worst.sort_by(|a, b| b.0.total_cmp(&a.0));
    println!("\nMost confident unanswerable questions:");
    for (p, q) in worst.iter().take(3) {
        println!("  {:.2} {} {}", p, q.id, q.text);
    }
    let mut least: Vec<(f64, &Question)> = oof
        .iter()
        .zip(&questions)
        .filter(|(p, _)| p.1)
        .map(|(p, q)| (p.0, q))
        .collect();
    least.sort_by(|a, b| a.0.total_cmp(&b.0));
    println!("Least confident answerable questions:");
    for (p, q) in least.iter().take(3) {
        println!("  {:.2} {} [{}] {}", p, q.id, q.kind(), q.text);
    }

    let full = confidence::fit(&samples, L2);
    println!(
        "\n## Coefficients fitted on all {} questions (standardised features)\n",
        samples.len()
    );
    println!("| feature | mean | scale | weight |");
    println!("|---|---|---|---|");
    for (i, name) in FEATURE_NAMES.iter().enumerate() {
        println!(
            "| {} | {:.4} | {:.4} | {:+.3} |",
            name, full.mean[i], full.scale[i], full.weights[i]
        );
    }
    println!("| bias | | | {:+.3} |", full.bias);

    if write {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/confidence/fitted.rs");
        let arr = |a: &[f64; N_FEATURES]| {
            format!(
                "[{}]",
                a.iter()
                    .map(|x| format!("{x:?}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        let src = format!(
            "//! The committed calibrations, one per embedding model file. Written by\n\
             //! `cargo run --release -p sovereign-retrieval --example eval -- --write-calibration` from the\n\
             //! evaluation set in `eval/`; do not edit by hand.\n\n\
             use super::{{Calibration, Logistic}};\n\n\
             pub static CALIBRATIONS: &[Calibration] = &[Calibration {{\n    \
             model_id: {:?},\n    model_sha256: {:?},\n    \
             fitted_on: \"eval/: {} questions ({} answerable), {} chunks; hybrid search top 5; Newton, L2 {}\",\n    \
             logistic: Logistic {{\n        mean: {},\n        scale: {},\n        weights: {},\n        bias: {:?},\n    }},\n}}];\n",
            model.model_id(),
            model.sha256(),
            questions.len(),
            answerable,
            chunks.len(),
            L2,
            arr(&full.mean),
            arr(&full.scale),
            arr(&full.weights),
            full.bias
        );
        std::fs::write(&path, src)?;
        println!("\nwrote {}", path.display());
    }
    Ok(())
}
