//! The built-in retrieval policy: every candidate chunk leaves, in the ranking's order. What the
//! gateway does with no retrieval policy installed: the ranking alone decides what is cited.

#[cfg(target_arch = "wasm32")]
mod component {
    use sovereign_policy_sdk::retrieval::{Caller, Chunk, Rejection, RetrievalPolicy, Selection};

    struct KeepAll;

    impl RetrievalPolicy for KeepAll {
        fn review(
            _caller: Caller,
            _query: String,
            candidates: Vec<Chunk>,
        ) -> Result<Selection, Rejection> {
            Ok(Selection::all(candidates.len(), "keep-all"))
        }
    }

    sovereign_policy_sdk::export_retrieval_policy!(KeepAll);
}
