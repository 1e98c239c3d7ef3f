//! The policy components built from `policies/` by this crate's build script: the built-in rules
//! router, embedded in the gateway binary, and the paths of every component for the host's tests
//! and benchmarks.

/// The built-in rules router (`policies/rules-router`), embedded: `sovereign` routes with it
/// unless the config names another router component.
pub static RULES_ROUTER_COMPONENT: &[u8] = include_bytes!(env!("RULES_ROUTER_WASM"));

/// The built-in PII guardrail (`policies/pii-guardrail`), embedded.
pub static PII_GUARDRAIL_COMPONENT: &[u8] = include_bytes!(env!("PII_GUARDRAIL_WASM"));

/// The built-in webhook shaper (`policies/webhook-shaper`: the event as is), embedded.
pub static WEBHOOK_SHAPER_COMPONENT: &[u8] = include_bytes!(env!("WEBHOOK_SHAPER_WASM"));

/// The built-in tool policy (`policies/tool-allow`: allow, pass), embedded.
pub static TOOL_ALLOW_COMPONENT: &[u8] = include_bytes!(env!("TOOL_ALLOW_WASM"));

/// The built-in retrieval policy (`policies/retrieval-keep`: every candidate, in order),
/// embedded.
pub static RETRIEVAL_KEEP_COMPONENT: &[u8] = include_bytes!(env!("RETRIEVAL_KEEP_WASM"));

/// Path of the built-in rules router (`policies/rules-router`).
pub const RULES_ROUTER: &str = env!("RULES_ROUTER_WASM");
/// A router that loops, grows memory, panics, snoops or lies when a request's `mode` label says so.
pub const HOSTILE: &str = env!("HOSTILE_WASM");
/// A guardrail component: the wrong world for a router.
pub const WRONG_WORLD: &str = env!("WRONG_WORLD_WASM");
/// The Rust example router (`examples/rust-router`, on `sdk/rust`).
pub const RUST_ROUTER_EXAMPLE: &str = env!("RUST_ROUTER_EXAMPLE_WASM");
/// Path of the built-in webhook shaper (`policies/webhook-shaper`).
pub const WEBHOOK_SHAPER: &str = env!("WEBHOOK_SHAPER_WASM");
/// A webhook shaper that passes its smoke call, then traps, loops or answers what the host must
/// filter or refuse, as its settings say (`policies/test-guests/broken-shaper`).
pub const BROKEN_SHAPER: &str = env!("BROKEN_SHAPER_WASM");
/// A tool policy that denies, rewrites, redacts, traps or answers what the host must refuse, as
/// its settings say (`policies/test-guests/tool-rules`).
pub const TOOL_RULES: &str = env!("TOOL_RULES_WASM");
/// The Rust example retrieval policy (`examples/rust-retrieval`: clearance, newest first).
pub const RUST_RETRIEVAL_EXAMPLE: &str = env!("RUST_RETRIEVAL_EXAMPLE_WASM");
/// Path of the built-in tool policy (`policies/tool-allow`).
pub const TOOL_ALLOW: &str = env!("TOOL_ALLOW_WASM");
/// Path of the built-in retrieval policy (`policies/retrieval-keep`).
pub const RETRIEVAL_KEEP: &str = env!("RETRIEVAL_KEEP_WASM");
