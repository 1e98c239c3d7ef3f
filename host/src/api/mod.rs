//! The API's resources, one module each: `chat` (`/v1/chat/completions`), `completions`
//! (legacy), `responses` (`/v1/responses`, over chat), `embeddings`,
//! `models`, `activity` (`/v1/activity/logs`), `transparency` (the journal's checkpoints and
//! proofs), `documents` (`/v1/documents`), `rag`
//! (`/v1/rag/query`), `files` and `vector_stores` (the OpenAI-compatible face of the library, their
//! lists paged by `list_page`, their uploads read by `multipart`), and `validate` (bodies checked
//! against the convention). Each handler runs the pipeline's phases (`crate::pipeline`) in order; what is
//! its own is the body it reads and the answer it gives.

pub mod activity;
pub mod chat;
pub mod completions;
pub mod documents;
pub mod embeddings;
pub mod files;
pub mod list_page;
pub mod models;
pub mod multipart;
pub mod rag;
pub mod responses;
pub mod transparency;
pub mod validate;
pub mod vector_stores;
