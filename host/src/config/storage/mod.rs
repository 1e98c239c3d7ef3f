//! The sections about what the gateway keeps and for how long: `[store]` and `[shared]`
//! (`store.rs`), `[journal]` (`journal.rs`), `[responses]` (`responses.rs`), `[documents]`
//! (`documents.rs`).

pub(super) mod documents;
pub(super) mod journal;
pub(super) mod responses;
pub(super) mod store;
