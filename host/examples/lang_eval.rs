//! Measures the language detectors on the labelled short prompts
//! (`host/tests/data/lang_short_prompts.tsv`) and the per-call cost of the facts step:
//! accuracy per language and confusion tables for whatlang (allow-list of the five languages),
//! lingua (high accuracy and low accuracy, restricted to the five) and the gateway's detector
//! (lingua high accuracy after the dominant-script filter), then µs per call and the tokenizer.
//!
//! `cargo run --release -p sovereign --features lang-eval --example lang_eval`

use std::collections::BTreeMap;
use std::hint::black_box;
use std::time::Instant;

use lingua::{Language, LanguageDetectorBuilder};
use sovereign::facts::{FactsEngine, LanguageDetector, TokenCounter};
use whatlang::Lang;

const CODES: [&str; 5] = ["ar", "fa", "ur", "en", "fr"];

fn rss_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

fn per_call_us(f: &dyn Fn(&str) -> String, text: &str) -> f64 {
    for _ in 0..200 {
        black_box(f(black_box(text)));
    }
    let n = 5000;
    let t = Instant::now();
    for _ in 0..n {
        black_box(f(black_box(text)));
    }
    t.elapsed().as_secs_f64() * 1e6 / f64::from(n)
}

fn main() -> anyhow::Result<()> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/lang_short_prompts.tsv"
    );
    let data: Vec<(String, String)> = std::fs::read_to_string(path)?
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .filter_map(|l| l.split_once('\t'))
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();

    let wl = whatlang::Detector::with_allowlist(vec![
        Lang::Ara,
        Lang::Pes,
        Lang::Urd,
        Lang::Eng,
        Lang::Fra,
    ]);
    let wcode = |l: Lang| match l {
        Lang::Ara => "ar",
        Lang::Pes => "fa",
        Lang::Urd => "ur",
        Lang::Eng => "en",
        Lang::Fra => "fr",
        _ => "und",
    };
    let five = [
        Language::Arabic,
        Language::Persian,
        Language::Urdu,
        Language::English,
        Language::French,
    ];
    let lcode = |l: Language| match l {
        Language::Arabic => "ar",
        Language::Persian => "fa",
        Language::Urdu => "ur",
        Language::English => "en",
        Language::French => "fr",
        #[expect(
            unreachable_patterns,
            reason = "only the five languages are compiled in"
        )]
        _ => "und",
    };
    let rss0 = rss_kb();
    let t = Instant::now();
    let high = LanguageDetectorBuilder::from_languages(&five)
        .with_preloaded_language_models()
        .build();
    let low = LanguageDetectorBuilder::from_languages(&five)
        .with_low_accuracy_mode()
        .with_preloaded_language_models()
        .build();
    let ours = LanguageDetector::new(CODES);
    println!(
        "lingua detectors built (models preloaded: fst maps over the binary's bytes) in {:?}, RSS +{} MB",
        t.elapsed(),
        (rss_kb() - rss0) / 1024
    );

    type Detect<'a> = Box<dyn Fn(&str) -> String + 'a>;
    let candidates: Vec<(&str, Detect)> = vec![
        (
            "whatlang 0.18 (allow-list)",
            Box::new(|t: &str| wl.detect(t).map_or("und", |i| wcode(i.lang())).to_string()),
        ),
        (
            "lingua 1.8 low accuracy",
            Box::new(|t: &str| low.detect_language_of(t).map_or("und", lcode).to_string()),
        ),
        (
            "lingua 1.8 high accuracy",
            Box::new(|t: &str| high.detect_language_of(t).map_or("und", lcode).to_string()),
        ),
        (
            "gateway: dominant script + lingua high",
            Box::new(|t: &str| ours.detect(t).to_string()),
        ),
    ];
    let typical = [
        "كيف أتعلم البرمجة بلغة Python بسرعة؟",
        "Summarize this article in three bullet points",
    ];
    println!(
        "\n| detector | ar | fa | ur | en | fr | all | fa/ur → ar | µs/call (ar 36 chars) | µs/call (en 45 chars) |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    let mut confusions = Vec::new();
    for (name, f) in &candidates {
        let mut m: BTreeMap<(&str, String), u32> = BTreeMap::new();
        let mut misses = Vec::new();
        for (label, text) in &data {
            let got = f(text);
            if got != *label {
                misses.push(format!("{label} → {got}: {text}"));
            }
            *m.entry((label.as_str(), got)).or_default() += 1;
        }
        let get = |l: &str, g: &str| m.get(&(l, g.to_string())).copied().unwrap_or(0);
        let count = |l: &str| data.iter().filter(|(x, _)| x == l).count();
        let cells: Vec<String> = CODES
            .iter()
            .map(|l| format!("{}/{}", get(l, l), count(l)))
            .collect();
        let ok: u32 = CODES.iter().map(|l| get(l, l)).sum();
        println!(
            "| {name} | {} | {ok}/{} | {} | {:.1} | {:.1} |",
            cells.join(" | "),
            data.len(),
            get("fa", "ar") + get("ur", "ar"),
            per_call_us(f.as_ref(), typical[0]),
            per_call_us(f.as_ref(), typical[1]),
        );
        let mut table = format!(
            "\n{name} (rows: truth, columns: detected)\n\n| | ar | fa | ur | en | fr | und |\n|---|---|---|---|---|---|---|\n"
        );
        for l in CODES {
            let row: Vec<String> = ["ar", "fa", "ur", "en", "fr", "und"]
                .iter()
                .map(|g| get(l, g).to_string())
                .collect();
            table.push_str(&format!("| {l} | {} |\n", row.join(" | ")));
        }
        for miss in misses {
            table.push_str(&format!("- {miss}\n"));
        }
        confusions.push(table);
    }
    for c in confusions {
        print!("{c}");
    }

    let long = "Explain how the gateway routes requests between models. ".repeat(40);
    println!(
        "\ngateway detector on a {}-char prompt (reads the first 200 chars): {:.1} µs",
        long.chars().count(),
        per_call_us(&|t: &str| ours.detect(t).to_string(), &long)
    );

    println!("RSS after the detectors ran: {} MB", rss_kb() / 1024);

    let rss0 = rss_kb();
    let t = Instant::now();
    let tok = TokenCounter::new()?;
    println!(
        "\no200k_base tokenizer built in {:?}, RSS +{} MB",
        t.elapsed(),
        (rss_kb() - rss0) / 1024
    );
    let body = serde_json::json!({"model": "auto-router", "messages": [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": typical[0]}]});
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    println!(
        "count_messages (system + Arabic user message, {} tokens): {:.2} µs",
        tok.count_messages(&messages),
        per_call_us(&|_| tok.count_messages(&messages).to_string(), "")
    );
    let kib = "The quick brown fox jumps over the lazy dog. ".repeat(23);
    let kib_ar = "هل يمكنك مساعدتي في كتابة سيرة ذاتية؟ ".repeat(15);
    for (name, text) in [("English", &kib), ("Arabic", &kib_ar)] {
        println!(
            "count, {name}, {} bytes: {:.1} µs",
            text.len(),
            per_call_us(&|t: &str| tok.count(t).to_string(), text)
        );
    }
    let engine = FactsEngine::with_languages(CODES)?;
    let map = body.as_object().cloned().unwrap_or_default();
    println!(
        "FactsEngine::extract on that body: {:.1} µs",
        per_call_us(
            &|_| format!("{:?}", engine.extract(&map, None).map(|f| f.prompt_tokens)),
            ""
        )
    );
    Ok(())
}
