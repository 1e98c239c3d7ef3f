//! HTTP transport, knowing no endpoint: the accept loop (`serve`: `TCP_NODELAY`, connection cap,
//! header-read timeout, graceful shutdown), the threads connections are served on (`lanes`),
//! request bodies under their limits (`body`), API parameters (`params`), the one place errors
//! become responses (`error`; `parse_errors` gives hyper's own 400/414/431 its body) and the HTTPS side of the listener (`tls`: handshake deadline,
//! client certificates, hot reload).

pub mod body;
pub mod error;
pub mod lanes;
pub mod params;
pub mod parse_errors;
pub mod serve;
pub mod tls;
