//! Confidence in small collections with the real model: a collection of one text or of three
//! chunks. With per-script z-scores taken among the collection's own chunks alone, one chunk always
//! had z = 0 and an answerable question scored near 0 (0.0016 through the gateway); the committed
//! `ScorePrior` keeps the z-score on the scale the calibration was fitted on.

use sovereign_retrieval::confidence::{
    Calibration, Features, calibration_for, calibration_for_key,
};
use sovereign_retrieval::embed::E5Model;
use sovereign_retrieval::index::{ChunkInput, Filter, Index};

struct Collection {
    model: E5Model,
    calibration: &'static Calibration,
    index: Index,
}

impl Collection {
    /// One chunk per text, in one tenant's collection, in an index of its own (the model key as
    /// the host writes it: model id @ the first 12 hex digits of the file's sha256).
    fn new(texts: &[&str]) -> Self {
        let model = E5Model::load_default().unwrap_or_else(|e| panic!("{e}"));
        let calibration = calibration_for(model.model_id(), model.sha256())
            .unwrap_or_else(|| panic!("no calibration for {}", model.sha256()));
        let key = format!("{}@{}", model.model_id(), &model.sha256()[..12]);
        let mut index = Index::new(model.dims(), key.as_str());
        let committed = calibration_for_key(&key).map(|c| c.score_prior);
        assert!(committed.is_some(), "no prior for the model key");
        index.set_score_prior(committed);
        let vectors = model.embed_passages(texts).unwrap();
        for (i, (text, v)) in texts.iter().zip(&vectors).enumerate() {
            index
                .add(&ChunkInput {
                    chunk_id: i as u64,
                    tenant: "team",
                    collection: "policies",
                    document_id: "doc",
                    text,
                    vector: v,
                })
                .unwrap();
        }
        Self {
            model,
            calibration,
            index,
        }
    }

    /// The query's confidence and its best chunk.
    fn ask(&self, question: &str) -> (f64, u64) {
        let (confidence, citations) = self.ask_with_citations(question);
        (confidence, citations[0].0)
    }

    /// The query's confidence and each hit's (`Features::for_hit`, capped at the query's).
    fn ask_with_citations(&self, question: &str) -> (f64, Vec<(u64, f64)>) {
        let v = self.model.embed_query(question).unwrap();
        let filter = Filter {
            tenant: Some("team"),
            collections: Some(&["policies"]),
            ..Filter::default()
        };
        let r = self.index.search(&v, question, 5, &filter).unwrap();
        let confidence = self
            .calibration
            .logistic
            .predict(&Features::from_results(&r));
        eprintln!(
            "{confidence:.3} {question} (z {:.2}, top {:?}, overlap {:.2}) {:?}",
            r.vector_top_z,
            r.vector_top,
            r.list_overlap,
            Features::from_results(&r)
        );
        let citations = r
            .hits
            .iter()
            .map(|h| {
                let c = self.calibration.logistic.predict(&Features::for_hit(&r, h));
                (h.chunk_id, c.min(confidence))
            })
            .collect();
        (confidence, citations)
    }
}

#[test]
fn a_one_text_collection_is_confident_about_its_answer_only() {
    let c = Collection::new(&["Customer records must be kept for ten years."]);
    for q in [
        "How long must customer records be kept?",
        "كم سنة يجب الاحتفاظ بسجلات العملاء؟",
    ] {
        let (confidence, _) = c.ask(q);
        assert!(confidence >= 0.5, "{q}: {confidence:.3}");
    }
    for q in [
        "How do I renew my passport?",
        "What are the visiting hours of the intensive care unit?",
        "كيف أطبخ الكبسة؟",
    ] {
        let (confidence, _) = c.ask(q);
        assert!(confidence < 0.3, "{q}: {confidence:.3}");
    }
}

#[test]
fn a_three_chunk_collection_is_confident_about_its_answers_only() {
    let c = Collection::new(&[
        "Customer records must be kept for ten years after the account is closed.",
        "Employees must lock their screens whenever they leave their desks.",
        "Written complaints are answered within five business days.",
    ]);
    for (q, want) in [
        ("How long must customer records be kept?", 0),
        ("How quickly are written complaints answered?", 2),
        ("هل يجب على الموظفين قفل شاشاتهم؟", 1),
    ] {
        let (confidence, top) = c.ask(q);
        assert_eq!(top, want, "{q}");
        assert!(confidence >= 0.5, "{q}: {confidence:.3}");
    }
    // Each hit's own confidence tells the answer from the other two chunks.
    let (_, citations) = c.ask_with_citations("How long must customer records be kept?");
    eprintln!("citations {citations:?}");
    for (chunk, confidence) in citations {
        if chunk == 0 {
            assert!(confidence >= 0.5, "answer {confidence:.3}");
        } else {
            assert!(confidence < 0.3, "chunk {chunk}: {confidence:.3}");
        }
    }
    for q in [
        "How do I renew my passport?",
        "What is the minimum weight to donate blood?",
        "ما شروط الحصول على تمويل سيارة؟",
    ] {
        let (confidence, _) = c.ask(q);
        assert!(confidence < 0.3, "{q}: {confidence:.3}");
    }
}
