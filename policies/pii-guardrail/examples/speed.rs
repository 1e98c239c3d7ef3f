//! Time of one guardrail decision on a 2 KB prompt, natively: settings parsed, every message
//! normalised and scanned, verdict built — what the component does per call, without the
//! instantiation and the component-model copying the host adds.
//!
//! ```sh
//! cargo run --manifest-path policies/Cargo.toml -p pii-guardrail --example speed --release
//! ```

use std::hint::black_box;
use std::time::Instant;

use pii_guardrail::settings::Settings;
use pii_guardrail::verdict::{Stage, check};

const SETTINGS: &str = r#"{"default": "redact", "entities": {"credit_card": "block", "phone": "flag"},
  "teams": {"research": {"credit_card": "redact"}}}"#;

/// A 2 KB Arabic/English support ticket with some personal data (the host's `guardrail_bench`
/// "support ticket").
fn prompt() -> String {
    let parts = [
        "مرحباً، أنا أحمد من الرياض. أحتاج مساعدة في تحديث بيانات حسابي لدى البنك، ",
        "Please summarise the following customer ticket and draft a polite answer in Arabic. ",
        "العميل يقول إن رقم جواله ٠٥٥٣٢١٤٧٨٩ وإيميله ahmed.alharbi@example.sa وإن الطلب رقم 784512 ",
        "تأخر منذ ٢٠٢٤/٠٣/١٥، والمبلغ المدفوع ١٬٢٥٠ ريال عبر بطاقة مدى. ",
        "The customer also mentioned the server at 10.20.30.40 returned an error 503 twice. ",
    ];
    let mut out = String::new();
    let mut i = 0;
    while out.len() < 2048 {
        out.push_str(parts[i % parts.len()]);
        i += 1;
    }
    out
}

/// 2 KB of prose without personal data (the common case).
fn prose() -> String {
    let part = "يرجى تلخيص المقال التالي عن الطاقة المتجددة في الخليج وذكر أهم التحديات. \
                Please keep the answer short and in formal Arabic, with a title. ";
    part.repeat(2048 / part.len() + 1)
}

/// 2 KB dense with personal data: an e-mail, a phone, an IBAN and an IP every 128 bytes (the
/// host's `guardrail_bench` prompt of the same name).
fn dense() -> String {
    let s = "Call Salem on +966 50 123 4567 or mail salem@example.sa; the account is \
             SA03 8000 0000 6080 1016 7519 and the server 10.0.0.12. ";
    let mut t = s.repeat(2048 / s.len() + 1);
    t.truncate(2048);
    while !t.is_char_boundary(t.len()) {
        t.pop();
    }
    t
}

fn main() {
    measure("support ticket (ar/en)", &prompt());
    measure("prose prompt", &prose());
    measure("dense personal data", &dense());
}

fn measure(name: &str, text: &str) {
    let mut samples = Vec::with_capacity(20_000);
    for _ in 0..20_000 {
        let started = Instant::now();
        let settings = Settings::parse(black_box(SETTINGS)).unwrap_or_default();
        let v = check(Stage::Input, "research", &[black_box(text)], &settings);
        black_box(v);
        samples.push(started.elapsed().as_nanos());
    }
    samples.sort_unstable();
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q) as usize] as f64 / 1000.0;
    let v = check(
        Stage::Input,
        "research",
        &[text],
        &Settings::parse(SETTINGS).unwrap_or_default(),
    );
    println!(
        "{name}, {} bytes, {} redactions, flagged {:?}: p50 {:.1} µs, p90 {:.1} µs, p99 {:.1} µs",
        text.len(),
        v.redactions.len(),
        v.flagged,
        at(0.5),
        at(0.9),
        at(0.99)
    );
}
