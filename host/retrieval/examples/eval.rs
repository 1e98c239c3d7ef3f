//! Retrieval quality on the bilingual evaluation set in `eval/` (issue 15, item 9): hit@1, hit@5
//! and MRR by document and by paragraph for vector-only, BM25-only and fused ranking, split by
//! question/document language; the per-script cosine prior (`ScorePrior`) measured on the set;
//! then the answerable/unanswerable separation of the confidence model in two regimes, the full
//! corpus and small collections drawn from it with a fixed seed (5-fold cross-validated AUC and
//! Brier score with folds by question, a sweep of the prior's pseudo-count, reliability tables,
//! citation confidence) and the coefficients fitted on all of it. `cargo run --release -p
//! sovereign-retrieval --example eval [-- --write-calibration]` (the flag rewrites
//! `src/confidence/fitted.rs`: coefficients and prior).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use sovereign_retrieval::confidence::{self, FEATURE_NAMES, Features, N_FEATURES};
use sovereign_retrieval::embed::E5Model;
use sovereign_retrieval::embed::cosine;
use sovereign_retrieval::index::{
    ChunkInput, Filter, Fusion, Index, Mode, ScorePrior, SearchOptions,
};
use sovereign_retrieval::normalize::{TokenizerOptions, is_mostly_arabic};
use sovereign_retrieval::{Hit, SearchResults};

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

/// The model's dimensions.
const DIM: usize = 384;

/// Each document's title (its `#` line), by file stem: the header the gateway gives it.
fn load_titles() -> Result<BTreeMap<String, String>, Error> {
    let mut out = BTreeMap::new();
    for e in std::fs::read_dir(eval_dir().join("docs"))? {
        let path = e?.path();
        if path.extension().is_none_or(|e| e != "md") {
            continue;
        }
        let stem = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let text = std::fs::read_to_string(&path)?;
        let title = text
            .lines()
            .find_map(|l| l.strip_prefix('#'))
            .map(|t| t.trim_start_matches('#').trim().to_owned())
            .unwrap_or_else(|| stem.clone());
        out.insert(stem, title);
    }
    Ok(out)
}

fn build(
    chunks: &[Chunk],
    vectors: &[Vec<f32>],
    model_key: &str,
    tok: TokenizerOptions,
) -> Result<Index, Error> {
    // A chunk's vector may be the chunk alone and after its title, one after the other.
    let dim = vectors.first().map_or(0, Vec::len).min(DIM);
    let mut index = Index::with_tokenizer(dim, model_key, tok);
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

trait WithoutPrior {
    fn without_prior(self) -> Self;
}

impl WithoutPrior for Index {
    fn without_prior(mut self) -> Self {
        self.set_score_prior(None);
        self
    }
}

/// The per-script cosine prior (`ScorePrior`) measured on the questions `use_question` accepts:
/// for each question, the mean and variance of its cosines with the chunks of each script; per
/// (question script, chunk script), the mean of those means and the root of the mean variance.
fn measure_prior(
    chunks: &[Chunk],
    vectors: &[Vec<f32>],
    questions: &[Question],
    qvs: &[Vec<f32>],
    use_question: &dyn Fn(usize) -> bool,
    weight: f64,
) -> ScorePrior {
    let scripts: Vec<usize> = chunks
        .iter()
        .map(|c| usize::from(is_mostly_arabic(&c.text)))
        .collect();
    // [query script][chunk script] -> (questions, Σ mean, Σ variance)
    let mut acc = [[(0f64, 0f64, 0f64); 2]; 2];
    for (qi, (q, qv)) in questions.iter().zip(qvs).enumerate() {
        if !use_question(qi) {
            continue;
        }
        let qs = usize::from(is_mostly_arabic(&q.text));
        for (g, slot) in acc[qs].iter_mut().enumerate() {
            let cos: Vec<f64> = vectors
                .iter()
                .zip(&scripts)
                .filter(|(_, s)| **s == g)
                .map(|(v, _)| f64::from(cosine(qv, v)))
                .collect();
            if cos.is_empty() {
                continue;
            }
            let n = cos.len() as f64;
            let mean = cos.iter().sum::<f64>() / n;
            let var = cos.iter().map(|c| (c - mean).powi(2)).sum::<f64>() / n;
            slot.0 += 1.0;
            slot.1 += mean;
            slot.2 += var;
        }
    }
    ScorePrior {
        cosine: acc.map(|row| {
            row.map(|(n, mean, var)| {
                let n = n.max(1.0);
                (mean / n, (var / n).sqrt())
            })
        }),
        weight,
    }
}

fn print_prior(prior: &ScorePrior) {
    println!(
        "\nscore prior (all questions; pseudo-count {}): mean / sd of a query's cosines",
        prior.weight
    );
    for (qs, q) in ["other", "Arabic"].iter().enumerate() {
        for (g, c) in ["other", "Arabic"].iter().enumerate() {
            let (m, sd) = prior.cosine[qs][g];
            println!("  {q} query, {c} chunks: {m:.4} / {sd:.4}");
        }
    }
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

    fn merge(&mut self, other: &Tally) {
        self.n += other.n;
        self.doc_hit1 += other.doc_hit1;
        self.doc_hit5 += other.doc_hit5;
        self.doc_rr += other.doc_rr;
        self.para_hit1 += other.para_hit1;
        self.para_hit5 += other.para_hit5;
        self.para_rr += other.para_rr;
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

/// `evaluate` with the default search, on some of the questions.
fn evaluate_refs(
    index: &Index,
    chunks: &[Chunk],
    questions: &[&Question],
    qvs: &[&Vec<f32>],
) -> Result<BTreeMap<String, Tally>, Error> {
    let questions: Vec<Question> = questions
        .iter()
        .map(|q| Question {
            id: q.id.clone(),
            lang: q.lang.clone(),
            document: q.document.clone(),
            text: q.text.clone(),
        })
        .collect();
    let qvs: Vec<Vec<f32>> = qvs.iter().map(|v| (*v).clone()).collect();
    evaluate(
        index,
        chunks,
        &questions,
        &qvs,
        Mode::Hybrid,
        true,
        Fusion::default(),
    )
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
    let mut with_stem = build(&chunks, &vectors, &model_key, stem)?;
    let mut without = build(&chunks, &vectors, &model_key, plain)?;
    let no_prior = with_stem.clone().without_prior();
    // The indexes use the prior measured here (the committed one once written), so the tables
    // are the same before and after `--write-calibration`.
    let prior = measure_prior(&chunks, &vectors, &questions, &qvs, &|_| true, PRIOR_WEIGHT);
    with_stem.set_score_prior(Some(prior));
    without.set_score_prior(Some(prior));
    print_prior(&prior);
    // The gateway's indexes: titles as documents' headers (the entity rule), each chunk embedded
    // after its title (`+ctx1`, before) or both alone and after it (`+ctx2`, now).
    let titles = load_titles()?;
    let ctx_chunks: Vec<Chunk> = chunks
        .iter()
        .map(|c| Chunk {
            document: c.document.clone(),
            paragraph: c.paragraph,
            text: format!(
                "{}\n{}",
                titles.get(&c.document).map_or("", String::as_str),
                c.text
            ),
        })
        .collect();
    let (ctx_vectors, _) = embed_all(&model, &ctx_chunks, &questions)?;
    let both_vectors: Vectors = vectors
        .iter()
        .zip(&ctx_vectors)
        .map(|(a, c)| a.iter().chain(c).copied().collect())
        .collect();
    let headed = |vectors: &[Vec<f32>]| -> Result<Index, Error> {
        let mut index = build(&chunks, vectors, &model_key, stem)?;
        index.set_score_prior(Some(prior));
        for (stem, title) in &titles {
            index.set_document_header(stem, title, "");
        }
        Ok(index)
    };
    let (headed_ctx, headed_both) = (headed(&ctx_vectors)?, headed(&both_vectors)?);

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
            "the default with titles as headers, chunks embedded after their title (ctx1, before)"
                .into(),
            &headed_ctx,
            Mode::Hybrid,
            true,
            Fusion::Scores { lexical: 1.0 },
        ),
        (
            "the default with titles as headers, both vectors (ctx2, the gateway)".into(),
            &headed_both,
            Mode::Hybrid,
            true,
            Fusion::Scores { lexical: 1.0 },
        ),
        (
            "default, z-scores without the prior".into(),
            &no_prior,
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

    confidence_section(
        &ConfidenceInput {
            chunks: &chunks,
            vectors: &vectors,
            questions: &questions,
            qvs: &qvs,
            model_key: &model_key,
            tokenizer: stem,
        },
        &no_prior,
        &model,
        write,
    )
}

// --- confidence ----------------------------------------------------------------------------------

const FOLDS: usize = 5;
const L2: f64 = 0.05;
/// Hits searched for the confidence features (as the host's default `top_k`).
const CONFIDENCE_TOP_K: usize = 5;
/// Fixed seed of the small collections.
const SEED: u64 = 0x5eed_2026_1125;
/// The prior's pseudo-count (`ScorePrior::weight`), chosen from the sweep this prints.
const PRIOR_WEIGHT: f64 = 50.0;
/// Pseudo-counts compared.
const SWEEP: [f64; 9] = [0.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0, 1000.0];

struct ConfidenceInput<'a> {
    chunks: &'a [Chunk],
    vectors: &'a [Vec<f32>],
    questions: &'a [Question],
    qvs: &'a [Vec<f32>],
    model_key: &'a str,
    tokenizer: TokenizerOptions,
}

impl ConfidenceInput<'_> {
    /// The prior measured on the questions outside `fold` (all of them for `None`).
    fn prior(&self, fold: Option<usize>, weight: f64) -> ScorePrior {
        measure_prior(
            self.chunks,
            self.vectors,
            self.questions,
            self.qvs,
            &|qi| fold.is_none_or(|f| qi % FOLDS != f),
            weight,
        )
    }
}

/// Where a confidence sample was searched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Regime {
    /// All 104 chunks.
    Full,
    /// A collection of one paragraph or 1–4 documents, indexed on its own (a gateway holding only
    /// it).
    Small,
    /// The same small collections as a filter on the full index (BM25 statistics of all 104
    /// chunks): evaluated, never fitted on.
    Shared,
}

/// What a sample scores.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    /// The query's answerability (`Features::from_results`).
    Query,
    /// A hit as the gateway scores a citation today (`gateway_citation_features`).
    GatewayCitation,
    /// A hit by `Features::for_hit`.
    Citation,
}

/// What a small collection holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Size {
    Whole,
    OneChunk,
    OneDocument,
    Documents,
}

impl Size {
    fn label(self) -> &'static str {
        match self {
            Size::Whole => "full corpus",
            Size::OneChunk => "one paragraph",
            Size::OneDocument => "one document",
            Size::Documents => "2–4 documents",
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Sample {
    /// The search it comes from (a query sample and its citation samples share it).
    search: usize,
    /// The query, or one of its hits as a citation (answerable = the hit is the answer's
    /// paragraph).
    kind: Kind,
    question: usize,
    regime: Regime,
    size: Size,
    x: [f64; N_FEATURES],
    y: bool,
}

/// xorshift64*: the small collections are the same on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    /// `k` distinct items of `pool`, in drawn order.
    fn pick<'a>(&mut self, pool: &[&'a str], k: usize) -> Vec<&'a str> {
        let mut pool = pool.to_vec();
        let mut out = Vec::new();
        while out.len() < k && !pool.is_empty() {
            out.push(pool.swap_remove(self.below(pool.len())));
        }
        out
    }
}

/// A small collection: a question and the chunks it is asked against.
struct SmallCollection {
    question: usize,
    size: Size,
    /// Indexes into the corpus' chunks.
    chunks: Vec<usize>,
    index: Index,
}

/// For each answerable question: its paragraph alone, its document alone, and its document with
/// 1–3 random others; for each unanswerable question: a random paragraph, and 1, 2, 3 and 4
/// random documents. Each indexed on its own (without a prior: `collect_samples` sets it).
fn small_collections(input: &ConfidenceInput<'_>) -> Result<Vec<SmallCollection>, Error> {
    let chunks = input.chunks;
    let mut docs: Vec<&str> = chunks.iter().map(|c| c.document.as_str()).collect();
    docs.dedup();
    let of_docs = |set: &[&str]| -> Vec<usize> {
        (0..chunks.len())
            .filter(|&i| set.contains(&chunks[i].document.as_str()))
            .collect()
    };
    let mut rng = Rng(SEED);
    let mut sets: Vec<(usize, Size, Vec<usize>)> = Vec::new();
    for (qi, q) in input.questions.iter().enumerate() {
        match &q.document {
            Some((doc, para)) => {
                let answer = (0..chunks.len())
                    .filter(|&i| chunks[i].document == *doc && chunks[i].paragraph == *para)
                    .collect();
                sets.push((qi, Size::OneChunk, answer));
                sets.push((qi, Size::OneDocument, of_docs(&[doc.as_str()])));
                let others: Vec<&str> = docs.iter().copied().filter(|d| d != doc).collect();
                let extra = 1 + rng.below(3);
                let mut set = vec![doc.as_str()];
                set.extend(rng.pick(&others, extra));
                sets.push((qi, Size::Documents, of_docs(&set)));
            }
            None => {
                sets.push((qi, Size::OneChunk, vec![rng.below(chunks.len())]));
                for k in 1..=4 {
                    let size = if k == 1 {
                        Size::OneDocument
                    } else {
                        Size::Documents
                    };
                    sets.push((qi, size, of_docs(&rng.pick(&docs, k))));
                }
            }
        }
    }
    sets.into_iter()
        .map(|(question, size, members)| {
            let mut index =
                Index::with_tokenizer(input.vectors[0].len(), input.model_key, input.tokenizer)
                    .without_prior();
            for &i in &members {
                let c = &chunks[i];
                index.add(&ChunkInput {
                    chunk_id: i as u64,
                    tenant: "eval",
                    collection: "eval",
                    document_id: &c.document,
                    text: &c.text,
                    vector: &input.vectors[i],
                })?;
            }
            Ok(SmallCollection {
                question,
                size,
                chunks: members,
                index,
            })
        })
        .collect()
}

/// The confidence features of every question in the full corpus and in each small collection
/// (alone, and as a filter on the full index), with z-scores pooled with `prior`: one query
/// sample per search and one citation sample per hit.
fn collect_samples(
    input: &ConfidenceInput<'_>,
    full: &Index,
    small: &[SmallCollection],
    prior: Option<ScorePrior>,
    options: &SearchOptions,
) -> Result<Vec<Sample>, Error> {
    let mut full = full.clone();
    full.set_score_prior(prior);
    let mut out = Vec::new();
    let mut push = |question: usize, regime: Regime, size: Size, r: &SearchResults| {
        let q = &input.questions[question];
        let search = out.last().map_or(0, |s: &Sample| s.search + 1);
        out.push(Sample {
            search,
            kind: Kind::Query,
            question,
            regime,
            size,
            x: Features::from_results(r).to_array(),
            y: q.document.is_some(),
        });
        for hit in &r.hits {
            let c = &input.chunks[hit.chunk_id as usize];
            let y = q
                .document
                .as_ref()
                .is_some_and(|(d, p)| c.document == *d && c.paragraph == *p);
            for (kind, f) in [
                (Kind::GatewayCitation, gateway_citation_features(r, hit)),
                (Kind::Citation, Features::for_hit(r, hit)),
            ] {
                out.push(Sample {
                    search,
                    kind,
                    question,
                    regime,
                    size,
                    x: f.to_array(),
                    y,
                });
            }
        }
    };
    for (qi, (q, v)) in input.questions.iter().zip(input.qvs).enumerate() {
        let r = full.search_with(v, &q.text, CONFIDENCE_TOP_K, &Filter::default(), options)?;
        push(qi, Regime::Full, Size::Whole, &r);
    }
    for s in small {
        let q = &input.questions[s.question];
        let v = &input.qvs[s.question];
        let mut index = s.index.clone();
        index.set_score_prior(prior);
        let alone = index.search_with(v, &q.text, CONFIDENCE_TOP_K, &Filter::default(), options)?;
        push(s.question, Regime::Small, s.size, &alone);
        let predicate = |m: &sovereign_retrieval::index::ChunkMeta<'_>| {
            s.chunks.contains(&(m.chunk_id as usize))
        };
        let filter = Filter {
            predicate: Some(&predicate),
            ..Filter::default()
        };
        let shared = full.search_with(v, &q.text, CONFIDENCE_TOP_K, &filter, options)?;
        push(s.question, Regime::Shared, s.size, &shared);
    }
    Ok(out)
}

fn features_of(x: &[f64; N_FEATURES]) -> Features {
    Features {
        top1_cosine: x[0],
        cosine_gap: x[1],
        bm25_norm: x[2],
        list_overlap: x[3],
        terms_matched: x[4],
        top1_z: x[5],
    }
}

type SamplesFor<'a> = dyn Fn(usize) -> Result<Vec<Sample>, Error> + 'a;

/// Out-of-fold predictions, folds by question (`question % FOLDS`, so a question's samples in
/// every regime are in the same fold). `samples_for(fold)` gives the samples with features
/// computed from what that fold may know (the prior measured on the other folds' questions); the
/// model is fitted on the other folds' samples that `train` accepts.
fn cross_validate(
    samples_for: &SamplesFor<'_>,
    train: &dyn Fn(&Sample) -> bool,
) -> Result<Vec<(Sample, f64)>, Error> {
    let mut out = Vec::new();
    for fold in 0..FOLDS {
        let samples = samples_for(fold)?;
        let fit_on: Vec<([f64; N_FEATURES], bool)> = samples
            .iter()
            .filter(|s| s.question % FOLDS != fold && train(s))
            .map(|s| (s.x, s.y))
            .collect();
        let model = confidence::fit(&fit_on, L2);
        let mut query = 0.0;
        for s in samples.iter().filter(|s| s.question % FOLDS == fold) {
            let p = model.predict(&features_of(&s.x));
            // A citation is capped at its query's confidence (which comes first), as the
            // gateway does.
            if s.kind != Kind::Query {
                out.push((*s, p.min(query)));
            } else {
                query = p;
                out.push((*s, p));
            }
        }
    }
    out.sort_by_key(|(s, _)| (s.question, s.search, s.kind));
    Ok(out)
}

/// The samples the calibration is fitted on: the queries in the full corpus and in the small
/// collections indexed alone.
fn fitted_regimes(s: &Sample) -> bool {
    s.regime != Regime::Shared && s.kind == Kind::Query
}

/// The query samples `keep` accepts.
fn select(predictions: &[(Sample, f64)], keep: &dyn Fn(&Sample) -> bool) -> Vec<(f64, bool)> {
    predictions
        .iter()
        .filter(|(s, _)| s.kind == Kind::Query && keep(s))
        .map(|(s, p)| (*p, s.y))
        .collect()
}

/// The citation samples of `kind` that `keep` accepts.
fn citations(
    predictions: &[(Sample, f64)],
    kind: Kind,
    keep: &dyn Fn(&Sample) -> bool,
) -> Vec<(f64, bool)> {
    predictions
        .iter()
        .filter(|(s, _)| s.kind == kind && keep(s))
        .map(|(s, p)| (*p, s.y))
        .collect()
}

fn in_regime(predictions: &[(Sample, f64)], regime: Regime) -> Vec<(f64, bool)> {
    select(predictions, &|s| s.regime == regime)
}

fn auc_brier_row(label: &str, full: &[(f64, bool)], small: &[(f64, bool)]) {
    println!(
        "| {label} | {:.3} | {:.3} | {:.3} | {:.3} |",
        confidence::auc(full),
        confidence::brier(full),
        confidence::auc(small),
        confidence::brier(small)
    );
}

fn mean_of(predictions: &[(f64, bool)], answerable: bool) -> f64 {
    let v: Vec<f64> = predictions
        .iter()
        .filter(|p| p.1 == answerable)
        .map(|p| p.0)
        .collect();
    v.iter().sum::<f64>() / v.len().max(1) as f64
}

/// Document and paragraph ranks of the answerable questions in their small collections of two or
/// more documents.
fn small_ranking(
    input: &ConfidenceInput<'_>,
    small: &[SmallCollection],
    prior: Option<ScorePrior>,
    prior_in_ranking: bool,
    fold: Option<usize>,
) -> Result<Tally, Error> {
    let options = SearchOptions {
        prior_in_ranking,
        ..SearchOptions::default()
    };
    let mut tally = Tally::default();
    for s in small
        .iter()
        .filter(|s| s.size == Size::Documents && fold.is_none_or(|f| s.question % FOLDS == f))
    {
        let q = &input.questions[s.question];
        let Some((doc, para)) = &q.document else {
            continue;
        };
        let mut index = s.index.clone();
        index.set_score_prior(prior);
        let r = index.search_with(
            &input.qvs[s.question],
            &q.text,
            DEPTH,
            &Filter::default(),
            &options,
        )?;
        let mut docs_seen: Vec<&str> = Vec::new();
        let (mut doc_rank, mut para_rank) = (None, None);
        for (i, hit) in r.hits.iter().enumerate() {
            let c = &input.chunks[hit.chunk_id as usize];
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
        tally.add(doc_rank, para_rank);
    }
    Ok(tally)
}

/// A citation's features as the gateway fills them today (`host/src/rag/query.rs`,
/// `hit_confidence`): the hit's own cosine, lead over the other hits, BM25 share and terms, with
/// the query's list overlap and best z-score. The gateway caps the citation's confidence at the
/// query's.
fn gateway_citation_features(r: &SearchResults, hit: &Hit) -> Features {
    let best_other = r
        .hits
        .iter()
        .filter(|h| h.chunk_id != hit.chunk_id)
        .map(|h| h.vector_sim)
        .fold(f32::NEG_INFINITY, f32::max);
    let gap = if best_other.is_finite() {
        (hit.vector_sim - best_other).max(0.0)
    } else {
        0.0
    };
    let bm25_norm = if r.bm25_ceiling > 0.0 {
        (hit.bm25 / r.bm25_ceiling).clamp(0.0, 1.0)
    } else {
        0.0
    };
    let terms = if r.query_terms > 0 {
        f64::from(hit.terms_matched) / r.query_terms as f64
    } else {
        0.0
    };
    Features {
        top1_cosine: f64::from(hit.vector_sim),
        cosine_gap: f64::from(gap),
        bm25_norm: f64::from(bm25_norm),
        list_overlap: f64::from(r.list_overlap),
        terms_matched: terms,
        top1_z: f64::from(r.vector_top_z),
    }
}

/// Citation confidences (top 5) of the answerable questions with the committed calibration,
/// labelled by whether the cited chunk is the answer's paragraph: in the full corpus and in the
/// small collections of 2–4 documents; as the gateway fills the features today, and by
/// `Features::for_hit`.
fn citation_report(
    input: &ConfidenceInput<'_>,
    full: &Index,
    small: &[SmallCollection],
    prior: Option<ScorePrior>,
    logistic: &confidence::Logistic,
) -> Result<(), Error> {
    println!(
        "\nCitation confidence with the committed calibration (top {CONFIDENCE_TOP_K} hits of the answerable questions; the answer's paragraph against the other hits; capped at the query's confidence):\n\n| collections | citation features | hits | answer hits | AUC | mean answer hit | mean other hit | other hits ≥ 0.5 |\n|---|---|---|---|---|---|---|---|"
    );
    let mut full = full.clone();
    full.set_score_prior(prior);
    // [collections][features] -> (confidence, is the answer)
    let mut rows = [[(); 2].map(|_| Vec::new()), [(); 2].map(|_| Vec::new())];
    let mut add = |set: usize, r: &SearchResults, is_answer: &dyn Fn(u64) -> bool| {
        let query = logistic.predict(&Features::from_results(r));
        for h in &r.hits {
            let gateway = logistic.predict(&gateway_citation_features(r, h));
            let own = logistic.predict(&Features::for_hit(r, h));
            rows[set][0].push((gateway.min(query), is_answer(h.chunk_id)));
            rows[set][1].push((own.min(query), is_answer(h.chunk_id)));
        }
    };
    for (qi, (q, v)) in input.questions.iter().zip(input.qvs).enumerate() {
        let Some((doc, para)) = &q.document else {
            continue;
        };
        let is_answer = |id: u64| {
            let c = &input.chunks[id as usize];
            c.document == *doc && c.paragraph == *para
        };
        let r = full.search(v, &q.text, CONFIDENCE_TOP_K, &Filter::default())?;
        add(0, &r, &is_answer);
        for s in small
            .iter()
            .filter(|s| s.question == qi && s.size == Size::Documents)
        {
            let mut index = s.index.clone();
            index.set_score_prior(prior);
            let r = index.search(v, &q.text, CONFIDENCE_TOP_K, &Filter::default())?;
            add(1, &r, &is_answer);
        }
    }
    for (set, label) in ["full corpus", "2–4 documents"].iter().enumerate() {
        for (f, features) in [
            "as the gateway fills them (query's z)",
            "`Features::for_hit` (hit's own z)",
        ]
        .iter()
        .enumerate()
        {
            let p = &rows[set][f];
            let others: Vec<f64> = p.iter().filter(|x| !x.1).map(|x| x.0).collect();
            println!(
                "| {label} | {features} | {} | {} | {:.3} | {:.2} | {:.2} | {:.2} |",
                p.len(),
                p.iter().filter(|x| x.1).count(),
                confidence::auc(p),
                mean_of(p, true),
                mean_of(p, false),
                others.iter().filter(|c| **c >= 0.5).count() as f64 / others.len().max(1) as f64
            );
        }
    }
    Ok(())
}

fn confidence_section(
    input: &ConfidenceInput<'_>,
    full: &Index,
    model: &E5Model,
    write: bool,
) -> Result<(), Error> {
    let questions = input.questions;
    let small = small_collections(input)?;
    let count = |size: Size, answerable: bool| {
        small
            .iter()
            .filter(|s| s.size == size && questions[s.question].document.is_some() == answerable)
            .count()
    };
    println!(
        "\n## Answerable vs unanswerable\n\nRegimes: full corpus (118 questions, 104 chunks); small collections, each indexed on its own (seed {SEED:#x}): one paragraph ({} answerable: the answer's paragraph; {} unanswerable: a random one), one document ({} / {}: the answer's document; a random one), 2–4 documents ({} / {}: the answer's document and 1–3 random others; 2, 3 or 4 random documents).",
        count(Size::OneChunk, true),
        count(Size::OneChunk, false),
        count(Size::OneDocument, true),
        count(Size::OneDocument, false),
        count(Size::Documents, true),
        count(Size::Documents, false),
    );

    let ranking_prior = input.prior(None, PRIOR_WEIGHT);
    println!(
        "\nRanking in the small collections of 2–4 documents (answerable questions, default hybrid):\n\n| ranking | n | doc hit@1 | doc hit@5 | doc MRR | para hit@1 | para hit@5 | para MRR |\n|---|---|---|---|---|---|---|---|"
    );
    println!(
        "{}",
        small_ranking(input, &small, None, false, None)?.row("z from the filtered chunks alone")
    );
    println!(
        "{}",
        small_ranking(input, &small, Some(ranking_prior), true, None)?
            .row(&format!("z pooled with the prior (k = {PRIOR_WEIGHT})"))
    );

    let defaults = SearchOptions::default();
    let samples_with = |weight: Option<f64>| -> Box<SamplesFor<'_>> {
        let small = &small;
        Box::new(move |fold: usize| {
            let prior = weight.map(|w| input.prior(Some(fold), w));
            collect_samples(input, full, small, prior, &defaults)
        })
    };

    println!(
        "\n### Prior pseudo-count (5-fold cross-validation by question; prior measured on the training folds' questions; fitted on both regimes)\n"
    );
    println!(
        "| pseudo-count k | full AUC | full Brier | small AUC | small Brier | full doc hit@1 | full doc MRR | full para MRR | ar→en / en→ar doc hit@1 | small (2–4 docs) doc hit@1 | small doc MRR |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    for k in std::iter::once(None).chain(SWEEP.map(Some)) {
        let p = cross_validate(&*samples_with(k), &fitted_regimes)?;
        // Ranking out of fold too: each fold's questions ranked with the prior of the others.
        let mut t: BTreeMap<String, Tally> = BTreeMap::new();
        let mut s = Tally::default();
        for fold in 0..FOLDS {
            let prior = k.map(|w| input.prior(Some(fold), w));
            let mut index = full.clone();
            index.set_score_prior(prior);
            let (qs, vs): (Vec<&Question>, Vec<&Vec<f32>>) = questions
                .iter()
                .zip(input.qvs)
                .enumerate()
                .filter(|(qi, _)| qi % FOLDS == fold)
                .map(|(_, p)| p)
                .unzip();
            let ranked = evaluate_refs(&index, input.chunks, &qs, &vs)?;
            for (kind, tally) in ranked {
                t.entry(kind).or_default().merge(&tally);
            }
            s.merge(&small_ranking(input, &small, prior, true, Some(fold))?);
        }
        let (all, ar_en, en_ar) = (t["all"], t["ar→en"], t["en→ar"]);
        let n = |t: Tally| t.n.max(1) as f64;
        println!(
            "| {} | {:.3} | {:.3} | {:.3} | {:.3} | {:.2} | {:.3} | {:.3} | {:.2} / {:.2} | {:.2} | {:.3} |",
            k.map_or("no prior".to_owned(), |k| k.to_string()),
            confidence::auc(&in_regime(&p, Regime::Full)),
            confidence::brier(&in_regime(&p, Regime::Full)),
            confidence::auc(&in_regime(&p, Regime::Small)),
            confidence::brier(&in_regime(&p, Regime::Small)),
            all.doc_hit1 as f64 / n(all),
            all.doc_rr / n(all),
            all.para_rr / n(all),
            ar_en.doc_hit1 as f64 / n(ar_en),
            en_ar.doc_hit1 as f64 / n(en_ar),
            s.doc_hit1 as f64 / n(s),
            s.doc_rr / n(s),
        );
    }

    let prior = input.prior(None, PRIOR_WEIGHT);
    let samples = collect_samples(input, full, &small, Some(prior), &defaults)?;
    let unshrunk = collect_samples(input, full, &small, None, &defaults)?;
    let committed = confidence::calibration_for(model.model_id(), model.sha256());

    println!(
        "\n### {FOLDS}-fold cross-validation (folds by question: `question % {FOLDS}`), L2 {L2}, prior k = {PRIOR_WEIGHT}\n"
    );
    println!("| score | full AUC | full Brier | small AUC | small Brier |");
    println!("|---|---|---|---|---|");
    let column = |set: &[Sample], i: usize, r: Regime| -> Vec<(f64, bool)> {
        set.iter()
            .filter(|s| s.kind == Kind::Query && s.regime == r)
            .map(|s| (s.x[i], s.y))
            .collect()
    };
    println!(
        "| raw top-1 cosine (not a probability) | {:.3} | – | {:.3} | – |",
        confidence::auc(&column(&samples, 0, Regime::Full)),
        confidence::auc(&column(&samples, 0, Regime::Small))
    );
    println!(
        "| top-1 per-script z-score alone, without the prior | {:.3} | – | {:.3} | – |",
        confidence::auc(&column(&unshrunk, 5, Regime::Full)),
        confidence::auc(&column(&unshrunk, 5, Regime::Small))
    );
    println!(
        "| top-1 per-script z-score alone, pooled with the prior | {:.3} | – | {:.3} | – |",
        confidence::auc(&column(&samples, 5, Regime::Full)),
        confidence::auc(&column(&samples, 5, Regime::Small))
    );
    if let Some(c) = committed {
        let apply = |r: Regime| -> Vec<(f64, bool)> {
            samples
                .iter()
                .filter(|s| s.kind == Kind::Query && s.regime == r)
                .map(|s| (c.logistic.predict(&features_of(&s.x)), s.y))
                .collect()
        };
        auc_brier_row(
            "committed calibration (`fitted.rs`) applied as is",
            &apply(Regime::Full),
            &apply(Regime::Small),
        );
    }
    let full_only = cross_validate(&*samples_with(Some(PRIOR_WEIGHT)), &|s| {
        s.regime == Regime::Full && s.kind == Kind::Query
    })?;
    auc_brier_row(
        "logistic fitted on the full corpus only, out of fold",
        &in_regime(&full_only, Regime::Full),
        &in_regime(&full_only, Regime::Small),
    );
    let both = cross_validate(&*samples_with(Some(PRIOR_WEIGHT)), &fitted_regimes)?;
    let (oof_full, oof_small) = (
        in_regime(&both, Regime::Full),
        in_regime(&both, Regime::Small),
    );
    auc_brier_row(
        "**logistic fitted on both regimes, out of fold**",
        &oof_full,
        &oof_small,
    );
    let base = |r: Regime| -> Vec<(f64, bool)> {
        let v: Vec<bool> = samples
            .iter()
            .filter(|s| s.kind == Kind::Query && s.regime == r)
            .map(|s| s.y)
            .collect();
        let rate = v.iter().filter(|y| **y).count() as f64 / v.len().max(1) as f64;
        v.into_iter().map(|y| (rate, y)).collect()
    };
    auc_brier_row(
        "constant base rate of the regime (reference)",
        &base(Regime::Full),
        &base(Regime::Small),
    );

    // The same model scores each cited hit: how well does it tell the answer's paragraph from
    // the other hits of an answerable question?
    let joint = cross_validate(&*samples_with(Some(PRIOR_WEIGHT)), &|s| {
        s.regime != Regime::Shared && s.kind != Kind::Citation
    })?;
    println!(
        "\nCitations (top {CONFIDENCE_TOP_K} hits of the answerable questions; the answer's paragraph against the other hits; capped at the query's confidence), out of fold:\n\n| fitted on | citation features | query full AUC / Brier | query small AUC / Brier | citation AUC, full corpus | citation AUC, 2–4 documents | other hits ≥ 0.5, full / 2–4 documents |\n|---|---|---|---|---|---|---|"
    );
    for (label, features, p, kind) in [
        (
            "queries",
            "as the gateway fills them (query's z)",
            &both,
            Kind::GatewayCitation,
        ),
        (
            "queries",
            "`Features::for_hit` (hit's own z)",
            &both,
            Kind::Citation,
        ),
        (
            "queries and gateway citations",
            "as the gateway fills them (query's z)",
            &joint,
            Kind::GatewayCitation,
        ),
    ] {
        let answerable = |s: &Sample| input.questions[s.question].document.is_some();
        let full_c = citations(p, kind, &|s| s.regime == Regime::Full && answerable(s));
        let small_c = citations(p, kind, &|s| {
            s.regime == Regime::Small && s.size == Size::Documents && answerable(s)
        });
        let loose = |c: &[(f64, bool)]| {
            let others: Vec<f64> = c.iter().filter(|x| !x.1).map(|x| x.0).collect();
            others.iter().filter(|x| **x >= 0.5).count() as f64 / others.len().max(1) as f64
        };
        let (qf, qs) = (in_regime(p, Regime::Full), in_regime(p, Regime::Small));
        println!(
            "| {label} | {features} | {:.3} / {:.3} | {:.3} / {:.3} | {:.3} | {:.3} | {:.2} / {:.2} |",
            confidence::auc(&qf),
            confidence::brier(&qf),
            confidence::auc(&qs),
            confidence::brier(&qs),
            confidence::auc(&full_c),
            confidence::auc(&small_c),
            loose(&full_c),
            loose(&small_c)
        );
    }

    println!(
        "\nOut of fold, fitted on both regimes, by collection:\n\n| collection | n | answerable | AUC | Brier | mean confidence answerable | mean confidence unanswerable |\n|---|---|---|---|---|---|---|"
    );
    let by = |label: String, p: Vec<(f64, bool)>| {
        println!(
            "| {label} | {} | {} | {:.3} | {:.3} | {:.2} | {:.2} |",
            p.len(),
            p.iter().filter(|x| x.1).count(),
            confidence::auc(&p),
            confidence::brier(&p),
            mean_of(&p, true),
            mean_of(&p, false)
        );
    };
    by("full corpus".into(), oof_full.clone());
    for size in [Size::OneChunk, Size::OneDocument, Size::Documents] {
        by(
            format!("{}, indexed alone", size.label()),
            select(&both, &|s| s.regime == Regime::Small && s.size == size),
        );
    }
    by(
        "small collections as a filter on the full index (not fitted on)".into(),
        in_regime(&both, Regime::Shared),
    );
    if let Some(c) = committed {
        println!(
            "\nThe committed calibration (`fitted.rs`) as the gateway applies it (in sample once written):\n\n| collection | n | answerable | AUC | Brier | mean confidence answerable | mean confidence unanswerable |\n|---|---|---|---|---|---|---|"
        );
        let applied: Vec<(Sample, f64)> = samples
            .iter()
            .map(|s| (*s, c.logistic.predict(&features_of(&s.x))))
            .collect();
        by("full corpus".into(), in_regime(&applied, Regime::Full));
        for size in [Size::OneChunk, Size::OneDocument, Size::Documents] {
            by(
                format!("{}, indexed alone", size.label()),
                select(&applied, &|s| s.regime == Regime::Small && s.size == size),
            );
        }
        by(
            "small collections as a filter on the full index".into(),
            in_regime(&applied, Regime::Shared),
        );
        citation_report(input, full, &small, Some(prior), &c.logistic)?;
    }

    for (label, oof) in [
        ("full corpus", &oof_full),
        ("small collections", &oof_small),
    ] {
        println!("\n{label}, reliability (out of fold):\n");
        print!(
            "{}",
            confidence::format_reliability(&confidence::reliability(oof, 5))
        );
    }

    let mut worst: Vec<&(Sample, f64)> = both
        .iter()
        .filter(|(s, _)| !s.y && s.kind == Kind::Query && fitted_regimes(s))
        .collect();
    worst.sort_by(|a, b| b.1.total_cmp(&a.1));
    println!("\nMost confident unanswerable searches (out of fold):");
    for (s, p) in worst.iter().take(5) {
        let q = &questions[s.question];
        println!("  {:.2} {} {} {}", p, s.size.label(), q.id, q.text);
    }
    let mut least: Vec<&(Sample, f64)> = both
        .iter()
        .filter(|(s, _)| s.y && s.kind == Kind::Query && fitted_regimes(s))
        .collect();
    least.sort_by(|a, b| a.1.total_cmp(&b.1));
    println!("Least confident answerable searches (out of fold):");
    for (s, p) in least.iter().take(5) {
        let q = &questions[s.question];
        println!(
            "  {:.2} {} {} [{}] {}",
            p,
            s.size.label(),
            q.id,
            q.kind(),
            q.text
        );
    }

    let all: Vec<([f64; N_FEATURES], bool)> = samples
        .iter()
        .filter(|s| fitted_regimes(s))
        .map(|s| (s.x, s.y))
        .collect();
    let fitted = confidence::fit(&all, L2);
    println!(
        "\n## Coefficients fitted on all {} samples (standardised features)\n",
        all.len()
    );
    println!("| feature | mean | scale | weight |");
    println!("|---|---|---|---|");
    for (i, name) in FEATURE_NAMES.iter().enumerate() {
        println!(
            "| {} | {:.4} | {:.4} | {:+.3} |",
            name, fitted.mean[i], fitted.scale[i], fitted.weights[i]
        );
    }
    println!("| bias | | | {:+.3} |", fitted.bias);

    if write {
        write_calibration(model, input, all.len(), &fitted, &prior)?;
    }
    Ok(())
}

fn write_calibration(
    model: &E5Model,
    input: &ConfidenceInput<'_>,
    n_samples: usize,
    fitted: &confidence::Logistic,
    prior: &ScorePrior,
) -> Result<(), Error> {
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
    let pair = |(m, s): (f64, f64)| format!("({m:?}, {s:?})");
    let answerable = input
        .questions
        .iter()
        .filter(|q| q.document.is_some())
        .count();
    let src = format!(
        "//! The committed calibrations, one per embedding model file. Written by\n\
         //! `cargo run --release -p sovereign-retrieval --example eval -- --write-calibration` from the\n\
         //! evaluation set in `eval/`; do not edit by hand.\n\n\
         use super::{{Calibration, Logistic, ScorePrior}};\n\n\
         pub static CALIBRATIONS: &[Calibration] = &[Calibration {{\n    \
         model_id: {:?},\n    model_sha256: {:?},\n    \
         fitted_on: \"eval/: {} questions ({} answerable), {} chunks; full corpus and small collections ({} samples, seed {SEED:#x}); hybrid search top {CONFIDENCE_TOP_K}; Newton, L2 {L2}\",\n    \
         logistic: Logistic {{\n        mean: {},\n        scale: {},\n        weights: {},\n        bias: {:?},\n    }},\n    \
         // [query script][chunk script] (0 = other, 1 = Arabic): mean and sd of a query's cosines.\n    \
         score_prior: ScorePrior {{\n        cosine: [\n            [{}, {}],\n            [{}, {}],\n        ],\n        weight: {:?},\n    }},\n}}];\n",
        model.model_id(),
        model.sha256(),
        input.questions.len(),
        answerable,
        input.chunks.len(),
        n_samples,
        arr(&fitted.mean),
        arr(&fitted.scale),
        arr(&fitted.weights),
        fitted.bias,
        pair(prior.cosine[0][0]),
        pair(prior.cosine[0][1]),
        pair(prior.cosine[1][0]),
        pair(prior.cosine[1][1]),
        prior.weight,
    );
    std::fs::write(&path, src)?;
    println!("\nwrote {}", path.display());
    Ok(())
}
