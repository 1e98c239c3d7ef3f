//! The request pipeline: the phases a request passes through, in order, each in its own module,
//! sharing one per-request context. ARCHITECTURE.md, "The request path", names the function of
//! every phase.
//!
//! Layers: `context` (request id) → `observe` (metrics) → `admission::authenticate` →
//! `audit::journal` → `admission::admit` → `admission::require` → `events::events_persisted`.
//! Inference phases (run by the endpoints in `crate::api`, through [`call::Call`]): the
//! conversation phases in [`converse::converse`] — guardrail input (`guard`) → facts and route
//! with the residency guard (`route`) → budget (`spend`) → upstream with fallback (`fallback`) —,
//! then the answer phases in [`answer::answer`] — read or relay, guardrail output, settle, label,
//! `request.completed` (`events`) —, then the journal entry.

pub mod admission;
pub mod answer;
pub mod audit;
pub mod call;
pub mod context;
pub mod converse;
pub mod events;
pub mod fallback;
pub mod guard;
pub mod library;
pub mod observe;
pub mod route;
pub mod spend;

use http::HeaderName;

pub use context::{ClientIp, RequestCtx};

pub const X_SOVEREIGN_ID: HeaderName = HeaderName::from_static("x-sovereign-id");
pub const X_AUDIT_TRACE_ID: HeaderName = HeaderName::from_static("x-audit-trace-id");
pub const X_ROUTE_POLICY: HeaderName = HeaderName::from_static("x-route-policy");
pub const X_DATA_RESIDENCY: HeaderName = HeaderName::from_static("x-data-residency");
