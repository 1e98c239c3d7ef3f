//! The Anthropic Messages API (`POST /v1/messages`, `POST /v1/messages/count_tokens`) served
//! over the same phases as chat completions: the body converted to a chat body
//! (`request.rs`), the pipeline's phases on it, and the answer re-told as a `message` or as the
//! Messages stream's named events (`reply.rs`, `stream.rs`).

pub mod errors;
pub mod reply;
pub mod request;
pub mod stream;
