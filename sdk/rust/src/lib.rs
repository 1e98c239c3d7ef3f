//! The Sovereign Gateway policy SDK for Rust: the one guest-side binding of `wit/policy.wit`.
//!
//! A router is a type implementing [`router::Router`] and one [`export_router!`] line; build it
//! with `cargo build --release --target wasm32-wasip2` and the result is a component of the
//! `router-policy` world, ready for `sovereign policy test` and `POST /v1/admin/policies`:
//!
//! ```ignore
//! use sovereign_policy_sdk::router::{ModelInfo, Rejection, RequestFacts, RouteDecision, Router};
//!
//! struct Cheapest;
//!
//! impl Router for Cheapest {
//!     fn route(facts: RequestFacts, candidates: Vec<ModelInfo>) -> Result<RouteDecision, Rejection> {
//!         let best = candidates
//!             .iter()
//!             .filter(|m| m.healthy && m.speaks(&facts.language))
//!             .min_by(|a, b| a.total_cost().total_cmp(&b.total_cost()))
//!             .ok_or_else(|| Rejection::new(503, "no_model", "no healthy model speaks it"))?;
//!         Ok(RouteDecision::new(&best.id, "cheapest", "cheapest-router"))
//!     }
//! }
//!
//! sovereign_policy_sdk::export_router!(Cheapest);
//! ```
//!
//! [`guardrail`], [`webhook`], [`tool`] and [`retrieval`] do the same for the other worlds
//! ([`export_guardrail!`], [`export_webhook_shaper!`], [`export_tool_policy!`],
//! [`export_retrieval_policy!`]). A component exports one world: invoke one of the macros once.
//! [`host`] is the policy's only capability: `log` and `config_get` (its own settings).

#![allow(
    unsafe_code,
    reason = "wit-bindgen's generated glue (lifting, lowering, exports) is unsafe by nature"
)]

// The generated code names this crate by its absolute path, so the export macros work in the
// crates that invoke them; this makes that path resolve here too.
extern crate self as sovereign_policy_sdk;

#[doc(hidden)]
pub mod bindings {
    //! The generated bindings, one module per world. The worlds share `types` and `host`, so
    //! the guardrail and webhook bindings reuse the router's rather than generating copies.

    pub mod router {
        wit_bindgen::generate!({
            world: "router-policy",
            path: "../../wit",
            pub_export_macro: true,
            export_macro_name: "__export_router_policy",
            default_bindings_module: "::sovereign_policy_sdk::bindings::router",
            runtime_path: "::sovereign_policy_sdk::__wit_bindgen::rt",
        });
    }

    pub mod guardrail {
        wit_bindgen::generate!({
            world: "guardrail-policy",
            path: "../../wit",
            pub_export_macro: true,
            export_macro_name: "__export_guardrail_policy",
            default_bindings_module: "::sovereign_policy_sdk::bindings::guardrail",
            runtime_path: "::sovereign_policy_sdk::__wit_bindgen::rt",
            with: {
                "sovereign:policy/types@0.1.0": crate::bindings::router::sovereign::policy::types,
                "sovereign:policy/host@0.1.0": crate::bindings::router::sovereign::policy::host,
            },
        });
    }

    pub mod webhook {
        wit_bindgen::generate!({
            world: "webhook-policy",
            path: "../../wit",
            pub_export_macro: true,
            export_macro_name: "__export_webhook_policy",
            default_bindings_module: "::sovereign_policy_sdk::bindings::webhook",
            runtime_path: "::sovereign_policy_sdk::__wit_bindgen::rt",
            with: {
                "sovereign:policy/host@0.1.0": crate::bindings::router::sovereign::policy::host,
            },
        });
    }

    pub mod tool {
        wit_bindgen::generate!({
            world: "tool-policy",
            path: "../../wit",
            pub_export_macro: true,
            export_macro_name: "__export_tool_policy",
            default_bindings_module: "::sovereign_policy_sdk::bindings::tool",
            runtime_path: "::sovereign_policy_sdk::__wit_bindgen::rt",
            with: {
                "sovereign:policy/types@0.1.0": crate::bindings::router::sovereign::policy::types,
                "sovereign:policy/host@0.1.0": crate::bindings::router::sovereign::policy::host,
            },
        });
    }

    pub mod retrieval {
        wit_bindgen::generate!({
            world: "retrieval-policy",
            path: "../../wit",
            pub_export_macro: true,
            export_macro_name: "__export_retrieval_policy",
            default_bindings_module: "::sovereign_policy_sdk::bindings::retrieval",
            runtime_path: "::sovereign_policy_sdk::__wit_bindgen::rt",
            with: {
                "sovereign:policy/types@0.1.0": crate::bindings::router::sovereign::policy::types,
                "sovereign:policy/host@0.1.0": crate::bindings::router::sovereign::policy::host,
            },
        });
    }
}

/// The `wit-bindgen` runtime the generated code and the export macros refer to, so a policy
/// crate needs no `wit-bindgen` dependency of its own.
#[doc(hidden)]
pub use wit_bindgen as __wit_bindgen;

pub mod host {
    //! What the gateway gives a policy: its log and its own settings. Nothing else — no files,
    //! network, clock or environment (a guest that tries gets nothing).

    pub use crate::bindings::router::sovereign::policy::host::{Level, config_get, log};

    /// `log(Level::Debug, …)`.
    pub fn debug(message: &str) {
        log(Level::Debug, message);
    }

    /// `log(Level::Info, …)`.
    pub fn info(message: &str) {
        log(Level::Info, message);
    }

    /// `log(Level::Warn, …)`.
    pub fn warn(message: &str) {
        log(Level::Warn, message);
    }

    /// `log(Level::Error, …)`.
    pub fn error(message: &str) {
        log(Level::Error, message);
    }

    /// The routing document the policy was uploaded or configured with (setting `policy`).
    pub fn document() -> Option<String> {
        config_get("policy")
    }
}

pub mod router {
    //! The `router-policy` world: choose the model for a request.

    pub use crate::bindings::router::exports::sovereign::policy::router::{
        Guest as Router, RouteDecision,
    };
    pub use crate::bindings::router::sovereign::policy::types::{
        ModelInfo, Rejection, RequestFacts,
    };

    impl RouteDecision {
        /// A decision for `model`, without fallbacks.
        pub fn new(model: &str, rule: &str, policy: &str) -> RouteDecision {
            RouteDecision {
                model: model.to_string(),
                fallbacks: Vec::new(),
                rule: rule.to_string(),
                policy: policy.to_string(),
            }
        }

        /// The same decision, with models to try when the chosen one fails.
        pub fn with_fallbacks<'a>(mut self, ids: impl IntoIterator<Item = &'a str>) -> Self {
            self.fallbacks = ids.into_iter().map(str::to_string).collect();
            self
        }
    }

    impl Rejection {
        /// A refusal the client receives with this HTTP status (4xx) in the OpenAI error shape.
        pub fn new(status: u16, code: &str, message: &str) -> Rejection {
            Rejection {
                status,
                code: code.to_string(),
                message: message.to_string(),
            }
        }
    }

    impl RequestFacts {
        /// The value of a free label, if the request carries it.
        pub fn label(&self, key: &str) -> Option<&str> {
            self.labels
                .iter()
                .find(|(k, _)| k == key)
                .map(|(_, v)| v.as_str())
        }
    }

    impl ModelInfo {
        /// Whether the model lists `language` (ISO 639-1) among the languages it serves well.
        pub fn speaks(&self, language: &str) -> bool {
            self.languages.iter().any(|l| l == language)
        }

        /// Input plus output price per million tokens: one number to compare models by.
        pub fn total_cost(&self) -> f64 {
            self.input_cost_per_mtok + self.output_cost_per_mtok
        }

        /// Whether the model carries `tag`.
        pub fn has_tag(&self, tag: &str) -> bool {
            self.tags.iter().any(|t| t == tag)
        }
    }
}

pub mod guardrail {
    //! The `guardrail-policy` world: check messages on the way in and answers on the way out.
    //! A check answers a [`Verdict`] (block, redactions, flagged entity kinds) or a
    //! [`Rejection`] when the policy cannot decide (e.g. its settings are invalid).

    pub use crate::bindings::guardrail::exports::sovereign::policy::guardrail::{
        Guest as Guardrail, Message, Redaction, Stage, Verdict, Violation,
    };
    pub use crate::bindings::router::sovereign::policy::types::{Rejection, RequestFacts};

    impl Verdict {
        /// Nothing found: allow as is.
        pub fn allow() -> Verdict {
            Verdict {
                block: None,
                redactions: Vec::new(),
                flagged: Vec::new(),
            }
        }
    }
}

pub mod webhook {
    //! The `webhook-policy` world: shape an event into the body one webhook target receives.
    //! `shape` answers `Some(delivery)` (body, content type, extra headers) or `None` (do not
    //! deliver this event to this target). The gateway checks the answer, strips hop-by-hop,
    //! credential and `webhook-*` headers, signs the body and delivers it; a shaper that traps
    //! sends the event to the dead-letter queue. The built-in one is `policies/webhook-shaper`
    //! (the seed's JSON shape); `docs/POLICIES.md` has the details.
    //!
    //! [`Event`]'s `request_id`, `team_id` and `user_id` are empty strings when absent; `id` is
    //! stable across delivery attempts (for deduplication); `details_json` is one JSON value.

    pub use crate::bindings::webhook::exports::sovereign::policy::webhook_shaper::{
        Delivery, Event, Guest as WebhookShaper,
    };

    impl Delivery {
        /// A body of `content_type`, without extra headers.
        pub fn new(body: impl Into<String>, content_type: &str) -> Delivery {
            Delivery {
                body: body.into(),
                content_type: content_type.to_string(),
                headers: Vec::new(),
            }
        }

        /// A JSON body (`application/json`).
        pub fn json(body: impl Into<String>) -> Delivery {
            Delivery::new(body, "application/json")
        }

        /// The same delivery with one more header.
        pub fn with_header(mut self, name: &str, value: &str) -> Delivery {
            self.headers.push((name.to_string(), value.to_string()));
            self
        }
    }

    impl Event {
        /// `request_id`, or `None` when the event has none.
        pub fn request(&self) -> Option<&str> {
            non_empty(&self.request_id)
        }

        /// `team_id`, or `None` when the event has none.
        pub fn team(&self) -> Option<&str> {
            non_empty(&self.team_id)
        }

        /// `user_id`, or `None` when the event has none.
        pub fn user(&self) -> Option<&str> {
            non_empty(&self.user_id)
        }
    }

    fn non_empty(s: &str) -> Option<&str> {
        (!s.is_empty()).then_some(s)
    }
}

pub mod tool {
    //! The `tool-policy` world: decide each MCP `tools/call` before the upstream call
    //! (`check_call`: allow, deny with a reason, rewrite the arguments) and its result after it
    //! (`check_result`: pass, redact, replace). `arguments` and results are JSON text: a
    //! rewrite must be a JSON object, a redacted or replaced result a JSON `CallToolResult`
    //! (`{"content": [...], "isError": false}`); the gateway refuses anything else and fails the
    //! call closed. The built-in one is `policies/tool-allow`; `docs/POLICIES.md` has the
    //! details.

    pub use crate::bindings::router::sovereign::policy::types::Caller;
    pub use crate::bindings::tool::exports::sovereign::policy::tool::{
        CallVerdict, Guest as ToolPolicy, ResultVerdict, ToolCall,
    };
}

pub mod retrieval {
    //! The `retrieval-policy` world: see the caller, the query and the ranked candidate chunks
    //! with their documents' metadata (`Chunk::metadata`, a JSON object as text), and answer
    //! which of them leave the gateway, best first ([`Selection::keep`]: indices into the
    //! candidates; one left out is filtered, never cited or sent to a model). The built-in one
    //! is `policies/retrieval-keep` (every candidate, in order).

    pub use crate::bindings::retrieval::exports::sovereign::policy::retrieval::{
        Chunk, Guest as RetrievalPolicy, Selection,
    };
    pub use crate::bindings::router::sovereign::policy::types::{Caller, Rejection};

    impl Selection {
        /// Every one of `n` candidates, in the ranking's order.
        pub fn all(n: usize, rule: &str) -> Selection {
            Selection {
                keep: (0..u32::try_from(n).unwrap_or(u32::MAX)).collect(),
                rule: rule.to_string(),
            }
        }
    }
}

/// Exports a type implementing [`router::Router`] as the component's `router` interface (world
/// `router-policy`). Invoke once, at the crate root or in any module. On other targets it expands
/// to nothing, so the router's logic can be unit-tested natively with `cargo test`.
#[macro_export]
macro_rules! export_router {
    ($ty:ident) => {
        #[cfg(target_arch = "wasm32")]
        $crate::bindings::router::__export_router_policy!(
            $ty with_types_in $crate::bindings::router
        );
    };
}

/// Exports a type implementing [`guardrail::Guardrail`] (world `guardrail-policy`).
#[macro_export]
macro_rules! export_guardrail {
    ($ty:ident) => {
        #[cfg(target_arch = "wasm32")]
        $crate::bindings::guardrail::__export_guardrail_policy!(
            $ty with_types_in $crate::bindings::guardrail
        );
    };
}

/// Exports a type implementing [`webhook::WebhookShaper`] (world `webhook-policy`).
#[macro_export]
macro_rules! export_webhook_shaper {
    ($ty:ident) => {
        #[cfg(target_arch = "wasm32")]
        $crate::bindings::webhook::__export_webhook_policy!(
            $ty with_types_in $crate::bindings::webhook
        );
    };
}

/// Exports a type implementing [`tool::ToolPolicy`] (world `tool-policy`).
#[macro_export]
macro_rules! export_tool_policy {
    ($ty:ident) => {
        #[cfg(target_arch = "wasm32")]
        $crate::bindings::tool::__export_tool_policy!(
            $ty with_types_in $crate::bindings::tool
        );
    };
}

/// Exports a type implementing [`retrieval::RetrievalPolicy`] (world `retrieval-policy`).
#[macro_export]
macro_rules! export_retrieval_policy {
    ($ty:ident) => {
        #[cfg(target_arch = "wasm32")]
        $crate::bindings::retrieval::__export_retrieval_policy!(
            $ty with_types_in $crate::bindings::retrieval
        );
    };
}
