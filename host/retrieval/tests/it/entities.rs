//! The entity rule through `Index::search` (issue 50), on synthetic vectors: the vector side is
//! made to prefer the look-alike in the question's script, and the document the question names
//! (transliterated, or through a given alias) must still come first; an organisation the library
//! does not hold is flagged; deleting a document forgets its header; the rule can be turned off.

use sovereign_retrieval::index::{ChunkInput, Filter, Index, SearchOptions};

/// Two look-alike card paragraphs: an Arabic bank's and an English bank's. The query vector is
/// closer to the Arabic one (what e5 does for an Arabic question).
fn library() -> Index {
    let mut index = Index::new(3, "test");
    let chunks = [
        (
            1,
            "wefaq",
            "تبلغ رسوم استبدال البطاقة المسروقة 25 ريالاً",
            [1.0, 0.0, 0.0],
        ),
        (
            2,
            "wefaq",
            "يصنف الحساب راكداً بعد ستة أشهر",
            [0.0, 1.0, 0.0],
        ),
        (
            3,
            "northgate",
            "A stolen card is replaced for a fee of 35 SAR",
            [0.9, 0.1, 0.0],
        ),
        (
            4,
            "northgate",
            "An account is dormant after 12 months",
            [0.0, 0.9, 0.1],
        ),
    ];
    for (id, doc, text, v) in chunks {
        let vector: Vec<f32> = v.to_vec();
        index
            .add(&ChunkInput {
                chunk_id: id,
                tenant: "t",
                collection: "c",
                document_id: doc,
                text,
                vector: &vector,
            })
            .unwrap();
    }
    index.set_document_header("wefaq", "بنك الوفاق", "Dawn Trust Bank");
    index.set_document_header("northgate", "Northgate Bank", "");
    index
}

const CARD_QUERY_VECTOR: [f32; 3] = [1.0, 0.05, 0.0];

#[test]
fn the_named_document_comes_first_across_scripts() {
    let index = library();
    for (query, doc) in [
        (
            "كم رسوم استبدال البطاقة المسروقة في بنك نورثغيت؟",
            "northgate",
        ),
        ("كم رسوم استبدال البطاقة المسروقة في نورث غيت؟", "northgate"),
        ("What does Al-Wifaq Bank charge for a stolen card?", "wefaq"),
        ("What does Dawn Trust charge for a stolen card?", "wefaq"),
    ] {
        let r = index
            .search(&CARD_QUERY_VECTOR, query, 4, &Filter::default())
            .unwrap();
        assert_eq!(&*r.hits[0].document_id, doc, "{query}: {r:?}");
        assert!(
            r.entity_lead > 0.5 && r.unknown_names == 0,
            "{query}: {r:?}"
        );
    }
    // Off, the Arabic look-alike wins the Arabic question about the English bank.
    let off = SearchOptions {
        entity_weight: 0.0,
        ..SearchOptions::default()
    };
    let r = index
        .search_with(
            &CARD_QUERY_VECTOR,
            "كم رسوم استبدال البطاقة المسروقة في بنك نورثغيت؟",
            4,
            &Filter::default(),
            &off,
        )
        .unwrap();
    assert_eq!(&*r.hits[0].document_id, "wefaq");
}

#[test]
fn an_organisation_the_library_does_not_hold_is_flagged() {
    let index = library();
    for query in [
        "What does Eastbridge Bank charge for a stolen card?",
        "كم رسوم استبدال البطاقة المسروقة في بنك الشروق؟",
    ] {
        let r = index
            .search(&CARD_QUERY_VECTOR, query, 4, &Filter::default())
            .unwrap();
        assert_eq!(r.unknown_names, 1, "{query}: {r:?}");
        assert!(r.entity_lead < 0.5, "{query}: {r:?}");
    }
    // A question naming nothing is left alone.
    let r = index
        .search(
            &CARD_QUERY_VECTOR,
            "What is the fee for a stolen card?",
            4,
            &Filter::default(),
        )
        .unwrap();
    assert_eq!((r.unknown_names, r.entity_best), (0, 0.0));
}

#[test]
fn a_deleted_document_takes_its_header_along() {
    let mut index = library();
    index.delete_document("northgate");
    let r = index
        .search(
            &CARD_QUERY_VECTOR,
            "What does Northgate Bank charge?",
            4,
            &Filter::default(),
        )
        .unwrap();
    assert!(r.hits.iter().all(|h| &*h.document_id == "wefaq"), "{r:?}");
    assert_eq!(r.unknown_names, 1, "{r:?}");
}

/// Chunks given both vectors (alone, then after their title: `ChunkInput::vector` of 2 × dim):
/// a query whose names identify a document ranks on the vectors after the title, one naming
/// nothing on the vectors alone; a chunk without a second vector ranks on its own in both.
#[test]
fn a_query_naming_a_document_ranks_on_the_vectors_after_the_title() {
    let mut index = Index::new(3, "test");
    // Alone, chunk 1 (the card fee) matches the card query; after its title (which the vector
    // model reads as the bank's name), chunk 2 does. Chunk 3 has no second vector.
    let chunks: [(u64, &str, &str, Vec<f32>); 3] = [
        (
            1,
            "northgate",
            "A stolen card is replaced for a fee of 35 SAR",
            vec![1.0, 0.0, 0.0, 0.0, 1.0, 0.0],
        ),
        (
            2,
            "northgate",
            "An account is dormant after 12 months",
            vec![0.0, 1.0, 0.0, 1.0, 0.0, 0.0],
        ),
        (
            3,
            "harbor",
            "Harbor Trust replaces cards",
            vec![0.0, 0.0, 1.0],
        ),
    ];
    for (id, doc, text, vector) in &chunks {
        index
            .add(&ChunkInput {
                chunk_id: *id,
                tenant: "t",
                collection: "c",
                document_id: doc,
                text,
                vector,
            })
            .unwrap();
    }
    index.set_document_header("northgate", "Northgate Bank", "");
    index.set_document_header("harbor", "Harbor Trust Bank", "");
    assert!(index.has_context_vectors());
    let q = [1.0, 0.0, 0.0];
    let named = index
        .search(
            &q,
            "What is the replacement charge at Northgate?",
            3,
            &Filter::default(),
        )
        .unwrap();
    assert!(named.entity_lead > 0.5, "{named:?}");
    assert_eq!(named.hits[0].chunk_id, 2, "{named:?}");
    assert!(named.hits[0].vector_sim > 0.99, "{named:?}");
    let plain = index
        .search(&q, "What is the replacement charge?", 3, &Filter::default())
        .unwrap();
    assert_eq!(plain.hits[0].chunk_id, 1, "{plain:?}");
    assert!(plain.hits[0].vector_sim > 0.99, "{plain:?}");
    // A vector of another length is still refused.
    let bad = index.add(&ChunkInput {
        chunk_id: 9,
        tenant: "t",
        collection: "c",
        document_id: "x",
        text: "x",
        vector: &[1.0, 0.0, 0.0, 0.0],
    });
    assert!(bad.is_err());
    // Deleting and compacting keep the two stores aligned.
    index.delete_document("northgate");
    index.compact();
    let r = index
        .search(
            &[0.0, 0.0, 1.0],
            "cards at Harbor Trust",
            3,
            &Filter::default(),
        )
        .unwrap();
    assert_eq!(r.hits[0].chunk_id, 3, "{r:?}");
    assert!(r.hits[0].vector_sim > 0.99, "{r:?}");
}
