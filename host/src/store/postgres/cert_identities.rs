//! Certificate identities in PostgreSQL: rows of `cert_identities`, one per matcher (the unique
//! constraint decides between two replicas creating the same matcher at once).

use deadpool_postgres::GenericClient;
use tokio_postgres::Row;

use super::{execute, lock_team, query, query_opt};
use crate::config::Role;
use crate::store::cert_identities::{CertIdentity, CertSource, NewCertIdentity};
use crate::store::rules::{check_name, new_id};
use crate::store::types::role_parse;
use crate::store::{StoreError, StoreResult, TeamId, UnixMillis};
use crate::tls::CertMatch;

const SELECT: &str = "SELECT id, name, team_id, role, match_kind, match_value, source, created_at
    FROM cert_identities";

fn row(r: &Row) -> StoreResult<CertIdentity> {
    let id: String = r.try_get(0)?;
    let role: String = r.try_get(3)?;
    let kind: String = r.try_get(4)?;
    let value: String = r.try_get(5)?;
    let source: String = r.try_get(6)?;
    Ok(CertIdentity {
        matcher: CertMatch::parse(&kind, &value)
            .map_err(|e| StoreError::Corrupt(format!("cert_identities {id}: {e}")))?,
        id,
        name: r.try_get(1)?,
        team_id: TeamId(r.try_get(2)?),
        role: role_parse(&role).unwrap_or(Role::Member),
        source: if source == "config" {
            CertSource::Config
        } else {
            CertSource::Api
        },
        created_at: r.try_get(7)?,
    })
}

/// `Invalid` (field `match`) when another identity has the matcher, as SQLite answers.
pub(super) async fn create<C: GenericClient>(
    c: &C,
    now: UnixMillis,
    new: NewCertIdentity,
) -> StoreResult<CertIdentity> {
    check_name(&new.name)?;
    if !lock_team(c, &new.team_id).await? {
        return Err(StoreError::TeamNotFound(new.team_id));
    }
    let id = new_id("cid_");
    let inserted = query_opt(
        c,
        "INSERT INTO cert_identities
             (id, name, team_id, role, match_kind, match_value, source, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
         ON CONFLICT ON CONSTRAINT cert_identities_matcher DO NOTHING
         RETURNING id",
        &[
            &id,
            &new.name,
            &new.team_id.0,
            &new.role.as_str(),
            &new.matcher.kind(),
            &new.matcher.value(),
            &new.source.as_str(),
            &now,
        ],
    )
    .await;
    let inserted = match inserted {
        Err(e) if super::is(&e, &tokio_postgres::error::SqlState::FOREIGN_KEY_VIOLATION) => {
            // The team was deleted between the check and the insert.
            return Err(StoreError::TeamNotFound(new.team_id));
        }
        other => other?,
    };
    if inserted.is_none() {
        let other: Option<String> = query_opt(
            c,
            "SELECT id FROM cert_identities WHERE match_kind = $1 AND match_value = $2",
            &[&new.matcher.kind(), &new.matcher.value()],
        )
        .await?
        .map(|r| r.try_get(0))
        .transpose()?;
        let by = other.map_or_else(
            || "another certificate identity".to_string(),
            |o| format!("certificate identity {o}"),
        );
        return Err(StoreError::Invalid {
            field: "match",
            reason: format!("{by} already maps {}", new.matcher),
        });
    }
    Ok(CertIdentity {
        id,
        name: new.name,
        team_id: new.team_id,
        role: new.role,
        matcher: new.matcher,
        source: new.source,
        created_at: now,
    })
}

pub(super) async fn list<C: GenericClient>(c: &C) -> StoreResult<Vec<CertIdentity>> {
    query(c, &format!("{SELECT} ORDER BY id"), &[])
        .await?
        .iter()
        .map(row)
        .collect()
}

pub(super) async fn delete<C: GenericClient>(c: &C, id: &str) -> StoreResult<bool> {
    Ok(execute(c, "DELETE FROM cert_identities WHERE id = $1", &[&id]).await? > 0)
}
