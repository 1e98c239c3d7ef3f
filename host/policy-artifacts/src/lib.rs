//! Paths of the policy components built from `policies/` by this crate's build script, for the
//! host's tests and benchmarks. Not part of the gateway.

/// The built-in rules router (`policies/rules-router`).
pub const RULES_ROUTER: &str = env!("RULES_ROUTER_WASM");
/// A router that loops, grows memory, panics, snoops or lies when a request's `mode` label says so.
pub const HOSTILE: &str = env!("HOSTILE_WASM");
/// A guardrail component: the wrong world for a router.
pub const WRONG_WORLD: &str = env!("WRONG_WORLD_WASM");
