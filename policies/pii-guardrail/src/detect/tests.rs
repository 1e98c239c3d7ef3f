//! The detectors together, on whole sentences: per kind positives and look-alikes, Arabic text
//! with Arabic-Indic digits, overlaps between kinds.

use super::*;

fn found(text: &str) -> Vec<(EntityKind, &str)> {
    detect(text)
        .into_iter()
        .map(|d| (d.kind, &text[d.span]))
        .collect()
}

fn kinds(text: &str) -> Vec<EntityKind> {
    detect(text).into_iter().map(|d| d.kind).collect()
}

use EntityKind::*;

#[test]
fn arabic_sentences_with_arabic_indic_digits() {
    assert_eq!(
        found("رقم جوالي ٠٥٥٣٢١٤٧٨٩ اتصل بي بعد المغرب"),
        [(Phone, "٠٥٥٣٢١٤٧٨٩")]
    );
    assert_eq!(
        found("كلمني على ٠١٠٢٣٤٥٦٧٨٩ يا أحمد"),
        [(Phone, "٠١٠٢٣٤٥٦٧٨٩")]
    );
    assert_eq!(
        found("رقم الهوية ۱۰۰۰۰۰۰۰۰۸ والجوال +۹۶۶ ۵۰ ۱۲۳ ۴۵۶۷"),
        [(SaudiId, "۱۰۰۰۰۰۰۰۰۸"), (Phone, "+۹۶۶ ۵۰ ۱۲۳ ۴۵۶۷")]
    );
    assert_eq!(
        found("الرقم القومي ٢٩٥٠١٠٢٣٢٠١٩٥٢ صادر من القاهرة"),
        [(EgyptianId, "٢٩٥٠١٠٢٣٢٠١٩٥٢")]
    );
    assert_eq!(
        found("رقم الهوية الإماراتية ٧٨٤-١٩٨٠-١٢٣٤٥٦٧-٨"),
        [(EmiratesId, "٧٨٤-١٩٨٠-١٢٣٤٥٦٧-٨")]
    );
}

#[test]
fn bidi_controls_inside_an_entity_do_not_hide_it() {
    let text = "جوالي \u{2066}٠٥٠\u{200F}١٢٣\u{200B}٤٥٦٧\u{2069} شكراً";
    let d = detect(text);
    assert_eq!(d.len(), 1);
    assert_eq!(&text[d[0].span.clone()], "٠٥٠\u{200F}١٢٣\u{200B}٤٥٦٧");
}

#[test]
fn dates_prices_and_order_numbers_are_not_entities() {
    for text in [
        "موعدك يوم ٢٠٢٤/٠٣/١٥ الساعة ١٠:٣٠",
        "التاريخ 2024-03-15 والوقت 14:45:10",
        "السعر ١٬٢٥٠ ريال شامل الضريبة",
        "رقم الطلب 1000000008 قيد الشحن",
        "فاتورة رقم 29501023201952",
        "Order 4111111111111112 shipped",
        "Tracking: 1Z999AA10123456784",
        "الكمية 1500 والمجموع 3750.50 درهم",
        "version 1.2.3.4.5 released",
        "call me at 10:30",
        "the ISBN 978-3-16-148410-0",
        "room 1234567 building 7",
        "created at timestamp 1712345675 by the job",
        "upgrade to version 4.2.0.1 tonight",
    ] {
        assert!(found(text).is_empty(), "{text}: {:?}", found(text));
    }
}

#[test]
fn look_alike_ids_are_not_ids() {
    // Luhn-invalid Saudi id, wrong first digit, Emirates id with a bad check digit or year,
    // Egyptian ids with an impossible date or governorate.
    for text in [
        "هويتي 1000000000",
        "هويتي 3000000008",
        "Emirates ID 784-1980-1234567-9",
        "Emirates ID 784-3000-1234567-1",
        "الرقم القومي 29502303201951",
        "الرقم القومي 29501027701952",
        "SSN 000-12-3456, 666-12-3456, 912-34-5678, 123-00-4567, 123-45-0000",
    ] {
        assert!(found(text).is_empty(), "{text}: {:?}", found(text));
    }
}

#[test]
fn each_kind_in_english() {
    assert_eq!(kinds("mail me: first.last@corp.example.ae"), [Email]);
    assert_eq!(kinds("card 5555 5555 5555 4444 exp 12/27"), [CreditCard]);
    assert_eq!(kinds("wire to DE89 3704 0044 0532 0130 00"), [Iban]);
    // A group of letters between groups of digits stays inside the scanned region.
    assert_eq!(
        found("IBAN GB82 WEST 1234 5698 7654 32."),
        [(Iban, "GB82 WEST 1234 5698 7654 32")]
    );
    assert_eq!(
        kinds("from 192.168.10.1 and fe80::1ff:fe23:4567:890a"),
        [IpAddress, IpAddress]
    );
    assert_eq!(kinds("SSN 460-89-9847"), [UsSsn]);
    assert_eq!(kinds("my ssn is 460899847"), [UsSsn]);
    assert_eq!(kinds("a 460899847 b"), Vec::<EntityKind>::new());
    assert_eq!(kinds("iqama 2000000006"), [SaudiId]);
    assert_eq!(kinds("رقم 1712345675"), [SaudiId]); // the timestamp below, without its word
    assert_eq!(
        kinds("call (212) 555-0143 or +44 20 7946 0958"),
        [Phone, Phone]
    );
}

#[test]
fn a_checksum_beats_a_format() {
    // A Luhn-valid 16-digit Visa near "call" is a card, not a phone number.
    assert_eq!(kinds("call about 4111 1111 1111 1111"), [CreditCard]);
    // An IP is not a dotted phone number.
    assert_eq!(kinds("phone home 10.20.30.40"), [IpAddress]);
}

#[test]
fn spans_are_on_char_boundaries_of_the_original() {
    let text = "\u{200F}إيميلي: ali@example.com، ورقمي ٠٥٠١٢٣٤٥٦٧\u{200E}.";
    for d in detect(text) {
        assert!(text.is_char_boundary(d.span.start) && text.is_char_boundary(d.span.end));
    }
    assert_eq!(kinds(text), [Email, Phone]);
}

/// Random text over an alphabet rich in what the detectors look at (digits of three scripts,
/// separators, bidi controls, `@ . : + ( ) -`, Arabic and Latin letters): detection never
/// panics, and every span is non-empty, in bounds, on character boundaries and disjoint.
#[test]
fn random_text_never_breaks_the_detectors() {
    const ALPHABET: &[&str] = &[
        "0",
        "1",
        "2",
        "4",
        "5",
        "7",
        "9",
        "٠",
        "٥",
        "٩",
        "۰",
        "۷",
        "１",
        " ",
        " ",
        "-",
        ".",
        ":",
        "+",
        "(",
        ")",
        "@",
        "/",
        "#",
        "x",
        "a",
        "Z",
        "SA",
        "GB",
        "e",
        "f",
        "ج",
        "و",
        "\u{200F}",
        "\u{2066}",
        "\u{200B}",
        "\u{00A0}",
        "\n",
        "phone ",
        "هوية ",
        "card ",
        "ssn ",
        "784",
        "05",
        "+966",
        "::",
        "٫",
        "😀",
    ];
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for _ in 0..3000 {
        let len = (next() % 80) as usize;
        let text: String = (0..len)
            .map(|_| ALPHABET[(next() % ALPHABET.len() as u64) as usize])
            .collect();
        let found = detect(&text);
        let mut last_end = 0;
        for d in &found {
            assert!(
                d.span.start < d.span.end && d.span.end <= text.len(),
                "{text:?}"
            );
            assert!(text.is_char_boundary(d.span.start) && text.is_char_boundary(d.span.end));
            assert!(d.span.start >= last_end, "overlap in {text:?}");
            last_end = d.span.end;
        }
    }
}
