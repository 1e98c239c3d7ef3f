//! Certificate identities in SQLite: rows of `cert_identities`, one per matcher.

use rusqlite::{Connection, Row, TransactionBehavior, params};

use crate::config::Role;
use crate::store::cert_identities::{CertIdentity, CertSource, NewCertIdentity};
use crate::store::rules::{check_name, new_id};
use crate::store::{StoreError, StoreResult, TeamId, UnixMillis};
use crate::tls::CertMatch;

const SELECT: &str = "SELECT id, name, team_id, role, match_kind, match_value, source, created_at
    FROM cert_identities";

fn row(r: &Row<'_>) -> rusqlite::Result<(CertIdentity, String, String)> {
    let role: String = r.get(3)?;
    let source: String = r.get(6)?;
    Ok((
        CertIdentity {
            id: r.get(0)?,
            name: r.get(1)?,
            team_id: TeamId(r.get(2)?),
            role: match role.as_str() {
                "admin" => Role::Admin,
                "auditor" => Role::Auditor,
                _ => Role::Member,
            },
            matcher: CertMatch::Uri(String::new()),
            source: if source == "config" {
                CertSource::Config
            } else {
                CertSource::Api
            },
            created_at: r.get(7)?,
        },
        r.get(4)?,
        r.get(5)?,
    ))
}

fn finish((mut c, kind, value): (CertIdentity, String, String)) -> StoreResult<CertIdentity> {
    c.matcher = CertMatch::parse(&kind, &value)
        .map_err(|e| StoreError::Corrupt(format!("cert_identities {}: {e}", c.id)))?;
    Ok(c)
}

pub(super) fn create(
    conn: &mut Connection,
    now: UnixMillis,
    new: NewCertIdentity,
) -> StoreResult<CertIdentity> {
    check_name(&new.name)?;
    // One transaction: another connection cannot take the matcher between the check and the
    // insert.
    let c = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let team_exists: bool = c.query_row(
        "SELECT EXISTS (SELECT 1 FROM teams WHERE id = ?1)",
        [&new.team_id.0],
        |r| r.get(0),
    )?;
    if !team_exists {
        return Err(StoreError::TeamNotFound(new.team_id));
    }
    let taken: Option<String> = c
        .query_row(
            "SELECT id FROM cert_identities WHERE match_kind = ?1 AND match_value = ?2",
            params![new.matcher.kind(), new.matcher.value()],
            |r| r.get(0),
        )
        .ok();
    if let Some(other) = taken {
        return Err(StoreError::Invalid {
            field: "match",
            reason: format!("certificate identity {other} already maps {}", new.matcher),
        });
    }
    let id = new_id("cid_");
    c.execute(
        "INSERT INTO cert_identities
             (id, name, team_id, role, match_kind, match_value, source, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        params![
            id,
            new.name,
            new.team_id.0,
            new.role.as_str(),
            new.matcher.kind(),
            new.matcher.value(),
            new.source.as_str(),
            now
        ],
    )?;
    c.commit()?;
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

pub(super) fn list(c: &Connection) -> StoreResult<Vec<CertIdentity>> {
    let mut stmt = c.prepare(&format!("{SELECT} ORDER BY id"))?;
    let rows = stmt.query_map([], row)?.collect::<Result<Vec<_>, _>>()?;
    rows.into_iter().map(finish).collect()
}

pub(super) fn delete(c: &Connection, id: &str) -> StoreResult<bool> {
    Ok(c.execute("DELETE FROM cert_identities WHERE id = ?1", [id])? > 0)
}
