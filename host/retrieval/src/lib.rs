//! Sovereign Gateway's retrieval engine, independent of HTTP and of the gateway: in-process
//! multilingual embeddings (`embed`), Arabic-aware text normalisation and tokenising for the
//! lexical side (`normalize`), names matched across Arabic and Latin script (`names`), a hybrid vector + BM25 index fused by reciprocal rank (`index`), and
//! calibrated answerability confidence (`confidence`). Persistence belongs to the host's store; the
//! index is rebuilt from rows of (chunk id, vector bytes, text, metadata).

pub mod confidence;
pub mod embed;
pub mod index;
pub mod names;
pub mod normalize;

pub use embed::{E5Model, EmbedError, find_model};
pub use index::{ChunkInput, ChunkRow, Filter, Hit, Index, IndexError, SearchResults};
