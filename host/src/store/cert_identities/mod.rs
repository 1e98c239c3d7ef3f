//! The store's certificate identities: a client certificate matcher (SAN URI, SAN DNS name or
//! key pin) mapped to a team and a role, as a key is. Made through the admin API (`source`
//! `api`) or declared in the config file (`config`, brought in at start); [`sql`] keeps them in
//! both back ends (implemented once for both by [`impl_cert_identity_store!`]).

pub(crate) mod schema;
pub(crate) mod sql;

use futures_util::future::BoxFuture;

use super::{StoreResult, TeamId, UnixMillis};

/// Certificate identities (mutual TLS) in the store (part of [`super::Store`]).
pub trait CertIdentityStore: Send + Sync {
    /// `Invalid` (field `match`) when another identity has the same matcher.
    fn create_cert_identity(
        &self,
        identity: NewCertIdentity,
    ) -> BoxFuture<'_, StoreResult<CertIdentity>>;
    fn cert_identities(&self) -> BoxFuture<'_, StoreResult<Vec<CertIdentity>>>;
    /// `false` when there was no such identity.
    fn delete_cert_identity(&self, id: String) -> BoxFuture<'_, StoreResult<bool>>;
}

/// [`CertIdentityStore`] for a back end, written once over its "run a step" macro
/// (`store::sql`, "Running a step").
macro_rules! impl_cert_identity_store {
    ($store:ty, $run:ident) => {
        const _: () = {
            use ::futures_util::future::BoxFuture;
            use $crate::store::StoreResult;
            use $crate::store::cert_identities::{
                CertIdentity, CertIdentityStore, NewCertIdentity, sql as steps,
            };

            impl CertIdentityStore for $store {
                fn create_cert_identity(
                    &self,
                    identity: NewCertIdentity,
                ) -> BoxFuture<'_, StoreResult<CertIdentity>> {
                    $run!(self, |c, now| steps::create(&mut c, now, identity))
                }

                fn cert_identities(&self) -> BoxFuture<'_, StoreResult<Vec<CertIdentity>>> {
                    $run!(self, |c, _| steps::list(&c))
                }

                fn delete_cert_identity(&self, id: String) -> BoxFuture<'_, StoreResult<bool>> {
                    $run!(self, |c, _| steps::delete(&c, &id))
                }
            }
        };
    };
}
use crate::domain::Role;
use crate::tls::CertMatch;
pub(crate) use impl_cert_identity_store;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CertIdentity {
    /// `cid_` + UUIDv7 hex: what usage rows, budgets, limits and the journal name as `key_id`.
    pub id: String,
    pub name: String,
    pub team_id: TeamId,
    pub role: Role,
    pub matcher: CertMatch,
    pub source: CertSource,
    pub created_at: UnixMillis,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CertSource {
    Api,
    Config,
}

impl CertSource {
    pub fn as_str(self) -> &'static str {
        match self {
            CertSource::Api => "api",
            CertSource::Config => "config",
        }
    }
}

#[derive(Debug, Clone)]
pub struct NewCertIdentity {
    pub name: String,
    pub team_id: TeamId,
    pub role: Role,
    pub matcher: CertMatch,
    pub source: CertSource,
}
