//! HTTP transport, knowing no endpoint: the accept loop (`serve`: `TCP_NODELAY`, connection cap,
//! header-read timeout, graceful shutdown), request bodies under their limits (`body`), API
//! parameters (`params`) and the one place errors become responses (`error`). TLS goes here.

pub mod body;
pub mod error;
pub mod params;
pub mod serve;
