//! The store's policy versions (replicas only): router versions and guardrail versions uploaded
//! through the admin API, kept so every replica loads the same ones and follows the same active
//! one. One process keeps its versions in memory and needs none of this (SQLite stores nothing).
//!
//! Only PostgreSQL keeps them: [`postgres`] holds its statements and its [`PolicyStore`]; a
//! back end that keeps none takes the trait's defaults (`impl PolicyStore for SqliteStore {}`).

pub(crate) mod postgres;
pub(crate) mod schema;

use futures_util::future::BoxFuture;

use super::{StoreResult, UnixMillis};

/// Policy versions shared by replicas (part of [`super::Store`]). The defaults are a back end
/// only one process opens (SQLite), which keeps none: that process holds its versions in memory.
pub trait PolicyStore: Send + Sync {
    /// Stores a version; with `activate`, it becomes its kind's active one, in one transaction.
    fn save_policy(&self, policy: StoredPolicy, activate: bool) -> BoxFuture<'_, StoreResult<()>> {
        let _ = (policy, activate);
        Box::pin(async { Ok(()) })
    }
    /// Makes a stored version its kind's active one; `false` when there is no such version.
    fn activate_policy(&self, kind: PolicyKind, id: String) -> BoxFuture<'_, StoreResult<bool>> {
        let _ = (kind, id);
        Box::pin(async { Ok(true) })
    }
    /// Every stored version of a kind, oldest first, and the id of the active one.
    fn policies(
        &self,
        kind: PolicyKind,
    ) -> BoxFuture<'_, StoreResult<(Vec<StoredPolicy>, Option<String>)>> {
        let _ = kind;
        Box::pin(async { Ok((Vec::new(), None)) })
    }
}

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
