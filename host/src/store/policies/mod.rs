//! The store's policy versions (replicas only): router versions and guardrail versions uploaded
//! through the admin API, kept so every replica loads the same ones and follows the same active
//! one. One process keeps its versions in memory and needs none of this (SQLite stores nothing).
//!
//! Only PostgreSQL keeps them: [`postgres`] holds its statements.

pub(crate) mod postgres;

use super::UnixMillis;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PolicyKind {
    Router,
    Guardrail,
}

impl PolicyKind {
    pub fn as_str(self) -> &'static str {
        match self {
            PolicyKind::Router => "router",
            PolicyKind::Guardrail => "guardrail",
        }
    }
}

/// One uploaded version, whole: the component bytes it runs (a document-only upload stores the
/// component it was loaded with), its document (routers), pool mode (`fresh` | `warm`, routers)
/// and settings (guardrails).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredPolicy {
    pub id: String,
    pub kind: PolicyKind,
    pub component: Vec<u8>,
    pub document: Option<String>,
    pub pool: Option<String>,
    pub settings: Option<String>,
    pub created_at: UnixMillis,
}
