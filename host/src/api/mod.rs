//! The API's resources, one module each: `chat` (`/v1/chat/completions`), `completions`
//! (legacy), `responses` (`/v1/responses`, over chat), `embeddings`, `models`, `activity`
//! (`/v1/activity/logs`, and the journal's checkpoints and proofs in `activity::transparency`),
//! `documents` (`/v1/documents`), `rag` (`/v1/rag/query`), `files` and `vector_stores` (the
//! OpenAI-compatible face of the library); and the HTTP edge's shared helpers, which are no
//! endpoint: `validate` (bodies checked against the convention), `list_page` (the files and
//! vector-store lists paged) and `multipart` (uploads read). Each handler runs the pipeline's
//! phases (`crate::pipeline`) in order; what is its own is the body it reads and the answer it
//! gives. No endpoint imports another (the layer test, `tests/it/layers.rs`, keeps it so).

pub mod activity;
pub mod chat;
pub mod completions;
pub mod documents;
pub mod embeddings;
pub mod files;
pub mod list_page;
pub mod mcp;
pub mod messages;
pub mod models;
pub mod multipart;
pub mod rag;
pub mod responses;
pub mod validate;
pub mod vector_stores;
