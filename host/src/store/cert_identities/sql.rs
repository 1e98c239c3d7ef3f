//! Certificate identities in both dialects: rows of `cert_identities`, one per matcher. The
//! unique matcher decides between two writers creating the same matcher at once; the team row is
//! share-locked on PostgreSQL (as a foreign key check would) so it cannot go before the insert.

use super::{CertIdentity, CertSource, NewCertIdentity};
use crate::domain::Role;
use crate::store::rules::{check_name, new_id};
use crate::store::sql::{Conn, Db, Row, Sql, Tx, Value, refused_foreign_key};
use crate::store::teams::sql::hold;
use crate::store::types::role_parse;
use crate::store::{StoreError, StoreResult, TeamId, UnixMillis};
use crate::tls::CertMatch;

const LIST: Sql<'static> = Sql {
    sqlite: "SELECT id, name, team_id, role, match_kind, match_value, source, created_at
        FROM cert_identities ORDER BY id",
    postgres: "SELECT id, name, team_id, role, match_kind, match_value, source, created_at
        FROM cert_identities ORDER BY id",
};

const INSERT: Sql<'static> = Sql {
    sqlite: "INSERT INTO cert_identities
             (id, name, team_id, role, match_kind, match_value, source, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
         ON CONFLICT (match_kind, match_value) DO NOTHING
         RETURNING id",
    postgres: "INSERT INTO cert_identities
             (id, name, team_id, role, match_kind, match_value, source, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
         ON CONFLICT ON CONSTRAINT cert_identities_matcher DO NOTHING
         RETURNING id",
};

const HOLDER: Sql<'static> = Sql {
    sqlite: "SELECT id FROM cert_identities WHERE match_kind = ?1 AND match_value = ?2",
    postgres: "SELECT id FROM cert_identities WHERE match_kind = $1 AND match_value = $2",
};

const DELETE: Sql<'static> = Sql {
    sqlite: "DELETE FROM cert_identities WHERE id = ?1",
    postgres: "DELETE FROM cert_identities WHERE id = $1",
};

fn row(r: &Row) -> StoreResult<CertIdentity> {
    let id = r.text(0)?;
    let source = r.text(6)?;
    Ok(CertIdentity {
        matcher: CertMatch::parse(&r.text(4)?, &r.text(5)?)
            .map_err(|e| StoreError::Corrupt(format!("cert_identities {id}: {e}")))?,
        id,
        name: r.text(1)?,
        team_id: TeamId(r.text(2)?),
        role: role_parse(&r.text(3)?).unwrap_or(Role::Member),
        source: if source == "config" {
            CertSource::Config
        } else {
            CertSource::Api
        },
        created_at: r.i64(7)?,
    })
}

/// `Invalid` (field `match`) when another identity has the matcher.
pub(crate) async fn create(
    c: &mut impl Conn,
    now: UnixMillis,
    new: NewCertIdentity,
) -> StoreResult<CertIdentity> {
    check_name(&new.name)?;
    let tx = c.begin().await?;
    if !hold(&tx, &new.team_id).await? {
        return Err(StoreError::TeamNotFound(new.team_id));
    }
    let id = new_id("cid_");
    let inserted = tx
        .query_opt(
            INSERT,
            &[
                Value::from(&id),
                Value::from(&new.name),
                Value::from(&new.team_id.0),
                new.role.as_str().into(),
                new.matcher.kind().into(),
                new.matcher.value().into(),
                new.source.as_str().into(),
                now.into(),
            ],
        )
        .await;
    let inserted = match inserted {
        // The team was deleted between the check and the insert.
        Err(e) if refused_foreign_key(&e) => return Err(StoreError::TeamNotFound(new.team_id)),
        other => other?,
    };
    if inserted.is_none() {
        let holder = tx
            .query_opt(
                HOLDER,
                &[new.matcher.kind().into(), new.matcher.value().into()],
            )
            .await?
            .map(|r| r.text(0))
            .transpose()?;
        let by = holder.map_or_else(
            || "another certificate identity".to_string(),
            |o| format!("certificate identity {o}"),
        );
        return Err(StoreError::Invalid {
            field: "match",
            reason: format!("{by} already maps {}", new.matcher),
        });
    }
    tx.commit().await?;
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

pub(crate) async fn list(db: &impl Db) -> StoreResult<Vec<CertIdentity>> {
    db.query(LIST, &[]).await?.iter().map(row).collect()
}

pub(crate) async fn delete(db: &impl Db, id: &str) -> StoreResult<bool> {
    Ok(db.execute(DELETE, &[id.into()]).await? > 0)
}
