//! The store's certificate identities: a client certificate matcher (SAN URI, SAN DNS name or
//! key pin) mapped to a team and a role, as a key is. Made through the admin API (`source`
//! `api`) or declared in the config file (`config`, brought in at start); [`sql`] keeps them in
//! both back ends.

pub(crate) mod sql;

use super::{TeamId, UnixMillis};
use crate::domain::Role;
use crate::tls::CertMatch;

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
