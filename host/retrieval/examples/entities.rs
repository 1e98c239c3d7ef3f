//! The entity evaluation (issue 50): look-alike documents of several organisations that cover the
//! same topics with different figures (every document the others' distractor), paraphrased
//! questions naming the organisation, questions in the other language with the name
//! transliterated, and unanswerable questions (an organisation not in the library). Two parts,
//! `eval/entities/tune` (banks; the entity rule's weights were chosen on it) and
//! `eval/entities/heldout` (other organisations and topics; reported, never tuned on). Each part is
//! indexed alone. Prints hit@1 / hit@3 (the right paragraph of the right document), by language
//! pair, and the AUROC of the committed confidence, answerable vs unanswerable, for the ranking
//! before the entity rule, with headers (titles, aliases) and the rule, and variants. Then the
//! same for the original evaluation set (`eval/docs`, titles as headers) so its figures can be
//! checked not to drop. `cargo run --release -p sovereign-retrieval --example entities
//! [-- --part tune|heldout|original] [--weights 0,1,2,3]`.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use sovereign_retrieval::confidence::{self, Features, Logistic};
use sovereign_retrieval::embed::E5Model;
use sovereign_retrieval::index::{ChunkInput, ENTITY_WEIGHT, Filter, Index, SearchOptions};
use sovereign_retrieval::{SearchResults, normalize::is_mostly_arabic};

type Error = Box<dyn std::error::Error>;
type Vectors = Vec<Vec<f32>>;

/// The model's dimensions (a "both" run's chunk vectors are twice as long: alone, then after the
/// title, as the gateway stores them).
const DIM: usize = 384;

struct Doc {
    stem: String,
    title: String,
    aliases: String,
}

struct Chunk {
    document: String,
    paragraph: usize,
    text: String,
}

struct Question {
    lang: String,
    target: Option<(String, usize)>,
    text: String,
}

impl Question {
    fn kind(&self) -> &'static str {
        match &self.target {
            None => "none",
            Some((doc, _)) if doc.starts_with(&self.lang) && self.lang == "en" => "en→en",
            Some((doc, _)) if doc.starts_with(&self.lang) => "ar→ar",
            Some(_) => "cross",
        }
    }
}

struct Part {
    docs: Vec<Doc>,
    chunks: Vec<Chunk>,
    questions: Vec<Question>,
}

fn load(dir: &Path, questions_file: &Path) -> Result<Part, Error> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    files.sort();
    let (mut docs, mut chunks) = (Vec::new(), Vec::new());
    for file in files {
        let stem = file
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let text = std::fs::read_to_string(&file)?;
        let mut doc = Doc {
            stem: stem.clone(),
            title: String::new(),
            aliases: String::new(),
        };
        let mut n = 0;
        for p in text.split("\n\n").map(str::trim).filter(|p| !p.is_empty()) {
            if let Some(title) = p.strip_prefix('#') {
                doc.title = title.trim_start_matches('#').trim().to_owned();
            } else if let Some(aliases) = p.strip_prefix("aliases:") {
                doc.aliases = aliases.trim().to_owned();
            } else {
                n += 1;
                chunks.push(Chunk {
                    document: stem.clone(),
                    paragraph: n,
                    text: p.to_owned(),
                });
            }
        }
        docs.push(doc);
    }
    let mut questions = Vec::new();
    for line in std::fs::read_to_string(questions_file)?
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
    {
        let f: Vec<&str> = line.split('\t').collect();
        let [_, lang, doc, para, q] = f[..] else {
            return Err(format!("bad line: {line}").into());
        };
        questions.push(Question {
            lang: lang.to_owned(),
            target: (doc != "-")
                .then(|| para.parse().map(|p| (doc.to_owned(), p)))
                .transpose()?,
            text: q.to_owned(),
        });
    }
    Ok(Part {
        docs,
        chunks,
        questions,
    })
}

/// Chunk and question vectors, cached in the target directory by a hash of the model and texts.
fn embed(model: &E5Model, part: &Part, contextual: bool) -> Result<(Vectors, Vectors), Error> {
    // Contextual chunk headers: each chunk embedded after its document's title.
    let texts: Vec<String> = part
        .chunks
        .iter()
        .map(|c| match part.docs.iter().find(|d| d.stem == c.document) {
            Some(d) if contextual => format!("{}\n{}", d.title, c.text),
            _ => c.text.clone(),
        })
        .collect();
    let mut h = Sha256::new();
    h.update(model.sha256());
    for t in &texts {
        h.update(t);
        h.update([0]);
    }
    for q in &part.questions {
        h.update(&q.text);
        h.update([1]);
    }
    let key: String = h.finalize()[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let dir = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target"));
    let cache = dir.join(format!("retrieval-entities-{key}.f32"));
    let dim = model.dims();
    let n = part.chunks.len() + part.questions.len();
    let mut rows: Vec<Vec<f32>> = match std::fs::read(&cache) {
        Ok(bytes) if bytes.len() == n * dim * 4 => {
            sovereign_retrieval::index::vector_from_bytes(&bytes)?
                .chunks_exact(dim)
                .map(<[f32]>::to_vec)
                .collect()
        }
        _ => {
            let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
            let mut rows = model.embed_passages(&texts)?;
            for q in &part.questions {
                rows.push(model.embed_query(&q.text)?);
            }
            let bytes: Vec<u8> = rows
                .iter()
                .flat_map(|v| sovereign_retrieval::index::vector_to_bytes(v))
                .collect();
            let _ = std::fs::create_dir_all(&dir);
            let _ = std::fs::write(&cache, bytes);
            rows
        }
    };
    let questions = rows.split_off(part.chunks.len());
    Ok((rows, questions))
}

/// Both vectors per chunk with the second made from the first and its document's title vector
/// (`alone + m · title`, normalised) rather than by embedding the title and the chunk together.
fn mixed_vectors(model: &E5Model, part: &Part, alone: &Vectors, m: f32) -> Result<Vectors, Error> {
    let titles: Vec<&str> = part.docs.iter().map(|d| d.title.as_str()).collect();
    let title_vectors = model.embed_passages(&titles)?;
    Ok(part
        .chunks
        .iter()
        .zip(alone)
        .map(|(c, a)| {
            let t = part
                .docs
                .iter()
                .position(|d| d.stem == c.document)
                .map(|i| &title_vectors[i]);
            let mut titled: Vec<f32> = match t {
                Some(t) => a.iter().zip(t).map(|(x, y)| x + m * y).collect(),
                None => a.clone(),
            };
            let norm = titled
                .iter()
                .map(|x| x * x)
                .sum::<f32>()
                .sqrt()
                .max(f32::EPSILON);
            titled.iter_mut().for_each(|x| *x /= norm);
            a.iter().chain(&titled).copied().collect()
        })
        .collect())
}

/// What a document's header is made of in a run.
#[derive(Clone, Copy, PartialEq)]
enum Headers {
    None,
    Title,
    TitleAndAliases,
}

fn build(part: &Part, vectors: &[Vec<f32>], key: &str, headers: Headers) -> Result<Index, Error> {
    let mut index = Index::new(DIM, key);
    index.set_score_prior(confidence::calibration_for_key(key).map(|c| c.score_prior));
    for (i, (c, v)) in part.chunks.iter().zip(vectors).enumerate() {
        index.add(&ChunkInput {
            chunk_id: i as u64,
            tenant: "eval",
            collection: "eval",
            document_id: &c.document,
            text: &c.text,
            vector: v,
        })?;
    }
    for d in &part.docs {
        match headers {
            Headers::None => {}
            Headers::Title => index.set_document_header(&d.stem, &d.title, ""),
            Headers::TitleAndAliases => index.set_document_header(&d.stem, &d.title, &d.aliases),
        }
    }
    Ok(index)
}

#[derive(Default)]
struct Tally {
    n: usize,
    hit1: usize,
    hit3: usize,
    doc1: usize,
}

impl Tally {
    fn cell(&self) -> String {
        let r = |x: usize| x as f64 / self.n.max(1) as f64;
        format!(
            "{}/{} ({:.2}) | {}/{} ({:.2}) | {:.2}",
            self.hit1,
            self.n,
            r(self.hit1),
            self.hit3,
            self.n,
            r(self.hit3),
            r(self.doc1)
        )
    }
}

struct Run {
    label: String,
    headers: Headers,
    weight: f32,
    rule: bool,
    verbose: bool,
}

/// One row: hit@1 / hit@3 by kind and overall, and the AUROC of the (adjusted) confidence.
fn run(
    part: &Part,
    vectors: &[Vec<f32>],
    qvs: &[Vec<f32>],
    key: &str,
    logistic: Option<&Logistic>,
    r: &Run,
) -> Result<String, Error> {
    let index = build(part, vectors, key, r.headers)?;
    let options = SearchOptions {
        entity_weight: r.weight,
        ..SearchOptions::default()
    };
    let kinds = ["en→en", "ar→ar", "cross"];
    let mut tallies: Vec<Tally> = kinds.iter().map(|_| Tally::default()).collect();
    let mut all = Tally::default();
    let mut scored = Vec::new();
    let mut nanos = Vec::new();
    for (q, v) in part.questions.iter().zip(qvs) {
        let t = std::time::Instant::now();
        let res: SearchResults = index.search_with(v, &q.text, 10, &Filter::default(), &options)?;
        nanos.push(t.elapsed().as_nanos());
        let p = logistic.map_or(0.5, |l| l.predict(&Features::from_results(&res)));
        let p = if r.rule {
            confidence::with_entities(p, &res)
        } else {
            p
        };
        scored.push((p, q.target.is_some()));
        if r.verbose {
            let top: Vec<String> = res
                .hits
                .iter()
                .take(3)
                .map(|h| {
                    let c = &part.chunks[h.chunk_id as usize];
                    format!("{}#{} {:.2}", c.document, c.paragraph, h.entity_share)
                })
                .collect();
            eprintln!(
                "{:5} p={:.3} best={:.2} names={} unknown={} want={:?} got={top:?} | {}",
                q.kind(),
                p,
                res.entity_best,
                res.name_words,
                res.unknown_names,
                q.target,
                q.text
            );
        }
        let Some((doc, para)) = &q.target else {
            continue;
        };
        let right = |i: usize| {
            res.hits.get(i).is_some_and(|h| {
                let c = &part.chunks[h.chunk_id as usize];
                &c.document == doc && c.paragraph == *para
            })
        };
        let first_doc = res
            .hits
            .first()
            .is_some_and(|h| &*h.document_id == doc.as_str());
        for t in tallies
            .iter_mut()
            .zip(kinds)
            .filter(|(_, k)| *k == q.kind())
            .map(|(t, _)| t)
            .chain(std::iter::once(&mut all))
        {
            t.n += 1;
            t.hit1 += usize::from(right(0));
            t.hit3 += usize::from((0..3).any(right));
            t.doc1 += usize::from(first_doc);
        }
    }
    nanos.sort_unstable();
    let p50 = nanos.get(nanos.len() / 2).copied().unwrap_or(0) as f64 / 1e3;
    let cells: Vec<String> = tallies.iter().map(Tally::cell).collect();
    Ok(format!(
        "| {} | {} | {} | {} | {} | {:.3} | {:.0} |",
        r.label,
        all.cell(),
        cells[0],
        cells[1],
        cells[2],
        confidence::auc(&scored),
        p50
    ))
}

fn original(root: &Path) -> Result<Part, Error> {
    let mut part = load(&root.join("docs"), &root.join("questions.tsv"))?;
    // The original questions carry their own language; their documents' prefix says theirs.
    for q in &mut part.questions {
        if q.lang != "en" && q.lang != "ar" {
            q.lang = if is_mostly_arabic(&q.text) {
                "ar"
            } else {
                "en"
            }
            .into();
        }
    }
    Ok(part)
}

fn main() -> Result<(), Error> {
    let args: Vec<String> = std::env::args().collect();
    let arg = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1).cloned())
    };
    let parts: Vec<String> = arg("--part").map_or_else(
        || vec!["tune".into(), "heldout".into(), "original".into()],
        |p| vec![p],
    );
    let weights: Vec<f32> = arg("--weights")
        .unwrap_or_else(|| "1,2,4".into())
        .split(',')
        .map(str::parse)
        .collect::<Result<_, _>>()?;
    // Per-question lines on stderr (for the tuning part: looking at the held-out part's questions
    // one by one is tuning on it).
    let verbose = args.iter().any(|a| a == "--verbose");
    // Experiment: the titled vector made without a second pass of the model, as the chunk's own
    // vector plus `m` times its document's title vector (normalised), for each `m` given.
    let mixes: Vec<f32> = arg("--mix").map_or_else(
        || Ok(Vec::new()),
        |m| m.split(',').map(str::parse).collect::<Result<_, _>>(),
    )?;
    let model = E5Model::load_default()?;
    let key = format!("{}:{}", model.model_id(), model.sha256());
    let logistic = confidence::calibration_for_key(&key).map(|c| c.logistic);
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("eval");
    for name in parts {
        let part = match name.as_str() {
            "original" => original(&root)?,
            other => {
                let dir = root.join("entities").join(other);
                load(&dir.join("docs"), &dir.join("questions.tsv"))?
            }
        };
        let (vectors, qvs) = embed(&model, &part, false)?;
        let (ctx_vectors, _) = embed(&model, &part, true)?;
        let answerable = part.questions.iter().filter(|q| q.target.is_some()).count();
        println!(
            "\n## {name}: {} documents, {} chunks, {} questions ({} answerable)\n",
            part.docs.len(),
            part.chunks.len(),
            part.questions.len(),
            answerable
        );
        println!(
            "| ranking | all: hit@1 | hit@3 | doc hit@1 | en→en: hit@1 | hit@3 | doc hit@1 | ar→ar: hit@1 | hit@3 | doc hit@1 | cross: hit@1 | hit@3 | doc hit@1 | AUROC | search p50 µs |"
        );
        println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
        // Both vectors per chunk, as the gateway stores them: alone, then after the title.
        let both_vectors: Vectors = vectors
            .iter()
            .zip(&ctx_vectors)
            .map(|(a, c)| a.iter().chain(c).copied().collect())
            .collect();
        let mixed: Vec<(f32, Vectors)> = mixes
            .iter()
            .map(|&m| Ok((m, mixed_vectors(&model, &part, &vectors, m)?)))
            .collect::<Result<_, Error>>()?;
        let (alone, ctx, both) = (
            "chunks embedded alone",
            "chunks embedded after their title",
            "both vectors (ranked after the title when a document is identified)",
        );
        // (label, which vectors, headers, weight, confidence rule)
        let mut runs: Vec<(String, &Vectors, Headers, f32, bool)> = vec![(
            "before: no headers, no entity rule".into(),
            &vectors,
            Headers::None,
            0.0,
            false,
        )];
        for (how, vs) in [
            (alone, &vectors),
            (ctx, &ctx_vectors),
            (both, &both_vectors),
        ] {
            for &w in &weights {
                runs.push((
                    format!("{how}; titles + aliases, entity weight {w}, confidence rule"),
                    vs,
                    Headers::TitleAndAliases,
                    w,
                    true,
                ));
            }
        }
        runs.push((
            format!("{both}; titles only (no aliases), weight {ENTITY_WEIGHT}, rule"),
            &both_vectors,
            Headers::Title,
            ENTITY_WEIGHT,
            true,
        ));
        runs.push((
            format!("{both}; titles + aliases, confidence rule only (weight 0)"),
            &both_vectors,
            Headers::TitleAndAliases,
            0.0,
            true,
        ));
        for (m, vs) in &mixed {
            runs.push((
                format!(
                    "alone + {m} × title vector; titles + aliases, weight {ENTITY_WEIGHT}, rule"
                ),
                vs,
                Headers::TitleAndAliases,
                ENTITY_WEIGHT,
                true,
            ));
        }
        runs.push((
            format!("{ctx}; no headers, no rule"),
            &ctx_vectors,
            Headers::None,
            0.0,
            false,
        ));
        for (label, vectors, headers, weight, rule) in runs {
            let r = Run {
                verbose: verbose
                    && std::ptr::eq(vectors, &both_vectors)
                    && weight == ENTITY_WEIGHT
                    && headers == Headers::TitleAndAliases,
                label,
                headers,
                weight,
                rule,
            };
            println!(
                "{}",
                run(&part, vectors, &qvs, &key, logistic.as_ref(), &r)?
            );
        }
    }
    Ok(())
}
