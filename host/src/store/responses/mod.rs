//! The store's Responses API state (issue 22): a stored response, team-scoped — the messages its
//! turn added to the conversation (after the guardrail's redaction, in chat form) and the
//! response object as answered. `previous_response_id` chains are rebuilt from these rows, on any
//! replica that shares the store. [`sql`] reads and deletes them on both back ends; each back
//! end writes its batches itself (`put_in`, inside its charge's transaction:
//! `Store::charge_and_store`). The reads are [`ResponseStore`], implemented once for both by
//! [`impl_response_store!`].

pub(crate) mod schema;
pub(crate) mod sql;

use futures_util::future::BoxFuture;

use super::{StoreResult, TeamId, UnixMillis};

/// Stored responses, read and deleted (part of [`super::Store`]; written by
/// `Store::charge_and_store`).
pub trait ResponseStore: Send + Sync {
    /// Only within `team`: another team's id is `None`.
    fn response(
        &self,
        team: TeamId,
        id: String,
    ) -> BoxFuture<'_, StoreResult<Option<StoredResponse>>>;
    fn delete_response(&self, team: TeamId, id: String) -> BoxFuture<'_, StoreResult<bool>>;
    /// Deletes responses created before `before`; how many.
    fn purge_responses(&self, before: UnixMillis) -> BoxFuture<'_, StoreResult<u64>>;
}

/// [`ResponseStore`] for a back end, written once over its "run a step" macro (`store::sql`,
/// "Running a step").
macro_rules! impl_response_store {
    ($store:ty, $run:ident) => {
        const _: () = {
            use ::futures_util::future::BoxFuture;
            use $crate::store::responses::{ResponseStore, StoredResponse, sql as steps};
            use $crate::store::{StoreResult, TeamId, UnixMillis};

            impl ResponseStore for $store {
                fn response(
                    &self,
                    team: TeamId,
                    id: String,
                ) -> BoxFuture<'_, StoreResult<Option<StoredResponse>>> {
                    $run!(self, |c, _| steps::get(&c, &team, &id))
                }

                fn delete_response(
                    &self,
                    team: TeamId,
                    id: String,
                ) -> BoxFuture<'_, StoreResult<bool>> {
                    $run!(self, |c, _| steps::delete(&c, &team, &id))
                }

                fn purge_responses(&self, before: UnixMillis) -> BoxFuture<'_, StoreResult<u64>> {
                    $run!(self, |c, _| steps::purge(&c, before))
                }
            }
        };
    };
}
pub(crate) use impl_response_store;

#[derive(Debug, Clone, PartialEq)]
pub struct StoredResponse {
    /// `resp_` + UUIDv7 hex.
    pub id: String,
    pub team_id: TeamId,
    /// The caller's key or certificate identity id.
    pub key_id: String,
    pub previous_id: Option<String>,
    /// The chat messages this turn added (instructions excluded: they do not carry over).
    pub input: serde_json::Value,
    /// The response object as answered (its `output` items included).
    pub response: serde_json::Value,
    pub created_at: UnixMillis,
}
