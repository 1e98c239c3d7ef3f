//! HTTP transport, knowing no endpoint: the accept loop (`serve`: `TCP_NODELAY`, connection cap,
//! header-read timeout, graceful shutdown), the threads connections are served on (`lanes`),
//! request bodies under their limits (`body`), API parameters (`params`), the one place errors
//! become responses (`error`) and the HTTPS side of the listener (`tls`: handshake deadline,
//! client certificates, hot reload).

pub mod body;
pub mod error;
pub mod lanes;
pub mod params;
pub mod serve;
pub mod tls;
