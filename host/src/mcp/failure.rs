//! How a call to an upstream MCP server failed, whatever its transport: what the transports
//! (`streamable.rs`, `stdio.rs`) answer and `upstream.rs` caches and passes on. The caller is told
//! which, never the upstream's content.

/// How an upstream call failed (the caller is told which, never the upstream's content).
#[derive(Debug, thiserror::Error)]
pub enum UpstreamError {
    #[error("the server could not be reached")]
    Unreachable,
    #[error("the server refused the destination: {0}")]
    Refused(String),
    #[error("the server did not answer within {0} ms")]
    Timeout(u128),
    #[error("the server answered HTTP {0}")]
    Status(u16),
    #[error("the server's answer was malformed: {0}")]
    Malformed(String),
    #[error("the server's answer is larger than {0} bytes")]
    TooLarge(usize),
    /// The server answered with a JSON-RPC error (its message is kept for the operator's log).
    #[error("the server answered error {code}")]
    Rpc { code: i64, message: String },
    /// A stdio server's process exited (or was killed) before it answered.
    #[error("the server's process exited ({0})")]
    Exited(String),
    #[error("the session expired")]
    SessionExpired,
    /// Listing failed moments ago; not asked again until `upstream::RETRY_AFTER_FAILURE` has passed.
    #[error("the server failed moments ago ({0})")]
    Unavailable(String),
}
