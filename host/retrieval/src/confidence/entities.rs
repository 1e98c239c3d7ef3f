//! The entity rule on a calibrated confidence (issue 50): a query that names an organisation,
//! person or place the searched library does not hold, or whose best hit is not from the
//! document its names point to, is less likely answered than its similarity features say. Applied
//! after the logistic model, as a factor, so the model's fitted coefficients stay what the
//! evaluation measured; the factors were chosen on the tuning part of `eval/entities/` (crate
//! README).

use crate::index::SearchResults;

/// A document "is the one the query names" when its share of the query's name evidence leads the
/// next document's by more than this (`SearchResults::entity_lead`): documents sharing a generic
/// word of their titles ("شركة", "Bank") are not.
pub const IDENTIFIED: f32 = 0.5;

/// The confidence is multiplied by this when the query has a name-like word found nowhere in the
/// searched library and no document is identified by its names.
pub const UNKNOWN_NAME_FACTOR: f64 = 0.2;

/// … and by this when a document is identified but the best hit is from another one.
pub const DISAGREEMENT_FACTOR: f64 = 0.5;

/// `p` (the calibrated answerability) with the entity rule applied.
pub fn with_entities(p: f64, results: &SearchResults) -> f64 {
    let identified = results.entity_lead > IDENTIFIED;
    if results.unknown_names > 0 && !identified {
        return p * UNKNOWN_NAME_FACTOR;
    }
    let top_is_named = results
        .hits
        .first()
        .is_some_and(|h| h.entity_share >= results.entity_best);
    if identified && !top_is_named {
        return p * DISAGREEMENT_FACTOR;
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::Hit;

    fn hit(share: f32) -> Hit {
        Hit {
            chunk_id: 1,
            document_id: "d".into(),
            collection: "c".into(),
            rank: 1,
            score: 1.0,
            vector_sim: 0.9,
            vector_z: 3.0,
            bm25: 0.0,
            vector_rank: Some(1),
            bm25_rank: None,
            terms_matched: 0,
            entity_share: share,
        }
    }

    #[test]
    fn an_unknown_name_lowers_confidence_unless_a_document_is_named() {
        let mut r = SearchResults {
            hits: vec![hit(0.0)],
            name_words: 1,
            unknown_names: 1,
            ..SearchResults::default()
        };
        assert!((with_entities(0.9, &r) - 0.18).abs() < 1e-9);
        r.entity_best = 0.9;
        r.entity_lead = 0.8;
        r.hits = vec![hit(0.9)];
        assert_eq!(with_entities(0.9, &r), 0.9);
    }

    #[test]
    fn a_best_hit_from_another_document_than_the_named_one_lowers_it() {
        let r = SearchResults {
            hits: vec![hit(0.1)],
            entity_best: 0.9,
            entity_lead: 0.8,
            ..SearchResults::default()
        };
        assert!((with_entities(0.8, &r) - 0.4).abs() < 1e-9);
    }

    #[test]
    fn a_query_naming_nothing_is_left_alone() {
        let r = SearchResults {
            hits: vec![hit(0.0)],
            ..SearchResults::default()
        };
        assert_eq!(with_entities(0.7, &r), 0.7);
    }
}
