//! Keys in SQLite: creation (the secret leaves in the answer, only its SHA-256 is stored),
//! lookup by hash, listing without secrets, rotation with a grace period, revocation. A key's
//! own budget limit lives in its `budgets` counter row (`key:<id>`).

use rusqlite::{Connection, OptionalExtension, Row, TransactionBehavior, params};

use super::{from_json, opt_i64_of, to_json};
use crate::store::rules::{check_key, check_not_negative, key_state, new_id, new_secret};
use crate::store::types::role_parse;
use crate::store::{
    CreatedKey, KeyId, KeyInfo, KeyState, NewKey, StoreError, StoreResult, TeamId, UnixMillis,
};

const SELECT: &str = "SELECT k.id, k.team_id, k.name, k.prefix, k.role, k.created_at,
        k.last_used_at, k.expires_at, k.revoked_at, k.rotated_to, k.grace_until,
        k.ip_allowlist, k.rpm, k.tpd, b.limit_micros
    FROM keys k LEFT JOIN budgets b ON b.scope = 'key:' || k.id";

/// Usable now: the same test as [`state`], in SQL (`?2` is now).
const USABLE: &str = "k.revoked_at IS NULL AND (k.expires_at IS NULL OR k.expires_at > ?2)
    AND (k.grace_until IS NULL OR k.grace_until > ?2)";

struct RawKey {
    info: KeyInfo,
    role: String,
    allowlist: String,
    rpm: Option<i64>,
    tpd: Option<i64>,
}

fn row(r: &Row<'_>) -> rusqlite::Result<RawKey> {
    Ok(RawKey {
        info: KeyInfo {
            id: KeyId(r.get(0)?),
            team_id: TeamId(r.get(1)?),
            name: r.get(2)?,
            prefix: r.get(3)?,
            role: crate::config::Role::Member,
            created_at: r.get(5)?,
            last_used_at: r.get(6)?,
            expires_at: r.get(7)?,
            revoked_at: r.get(8)?,
            rotated_to: r.get::<_, Option<String>>(9)?.map(KeyId),
            grace_until: r.get(10)?,
            ip_allowlist: Vec::new(),
            rpm: None,
            tpd: None,
            budget: r.get(14)?,
            state: KeyState::Active,
        },
        role: r.get(4)?,
        allowlist: r.get(11)?,
        rpm: r.get(12)?,
        tpd: r.get(13)?,
    })
}

fn finish(raw: RawKey, now: UnixMillis) -> StoreResult<KeyInfo> {
    let mut k = raw.info;
    k.role = role_parse(&raw.role)
        .ok_or_else(|| StoreError::Corrupt(format!("key {}: role {:?}", k.id, raw.role)))?;
    k.ip_allowlist = from_json(&raw.allowlist, "keys.ip_allowlist")?;
    k.rpm = raw.rpm.and_then(|v| u32::try_from(v).ok());
    k.tpd = raw.tpd.and_then(|v| u64::try_from(v).ok());
    k.state = key_state(&k, now);
    Ok(k)
}

/// One key matching `filter`, which sees `arg` as `?1` and now as `?2` (a filter that does not
/// need the time says `?2 = ?2`, since every bound parameter must appear in the statement).
fn one(
    conn: &Connection,
    filter: &str,
    arg: &dyn rusqlite::ToSql,
    now: UnixMillis,
) -> StoreResult<Option<KeyInfo>> {
    let found = conn
        .prepare_cached(&format!("{SELECT} WHERE {filter}"))?
        .query_row(params![arg, now], row)
        .optional()?;
    found.map(|r| finish(r, now)).transpose()
}

pub(super) fn get(conn: &Connection, now: UnixMillis, id: &KeyId) -> StoreResult<Option<KeyInfo>> {
    one(conn, "k.id = ?1 AND ?2 = ?2", &id.0, now)
}

pub(super) fn by_hash(
    conn: &Connection,
    now: UnixMillis,
    hash: &[u8; 32],
) -> StoreResult<Option<KeyInfo>> {
    one(conn, "k.hash = ?1 AND ?2 = ?2", &hash.as_slice(), now)
}

pub(super) fn authenticate(
    conn: &Connection,
    now: UnixMillis,
    hash: &[u8; 32],
) -> StoreResult<Option<KeyInfo>> {
    one(
        conn,
        &format!("k.hash = ?1 AND {USABLE}"),
        &hash.as_slice(),
        now,
    )
}

pub(super) fn list(
    conn: &Connection,
    now: UnixMillis,
    team: Option<&TeamId>,
) -> StoreResult<Vec<KeyInfo>> {
    let mut st = conn.prepare_cached(&format!(
        "{SELECT} WHERE (?1 IS NULL OR k.team_id = ?1) ORDER BY k.created_at, k.id"
    ))?;
    let rows = st.query_map([team.map(|t| t.0.as_str())], row)?;
    rows.map(|r| finish(r?, now)).collect()
}

/// Inserts a key and its budget row inside the caller's transaction; `spent` carries a
/// predecessor's spend over on rotation.
fn insert(
    tx: &Connection,
    now: UnixMillis,
    new: &NewKey,
    spent: i64,
) -> StoreResult<(KeyId, String)> {
    let (secret, hash, prefix) = new_secret();
    let id = insert_hashed(tx, now, new, spent, &hash, &prefix)?;
    Ok((id, secret))
}

/// Inserts a key whose secret the store never saw (only its hash).
fn insert_hashed(
    tx: &Connection,
    now: UnixMillis,
    new: &NewKey,
    spent: i64,
    hash: &[u8; 32],
    prefix: &str,
) -> StoreResult<KeyId> {
    let team_exists: bool = tx.query_row(
        "SELECT EXISTS (SELECT 1 FROM teams WHERE id = ?1)",
        [&new.team_id.0],
        |r| r.get(0),
    )?;
    if !team_exists {
        return Err(StoreError::TeamNotFound(new.team_id.clone()));
    }
    let id = KeyId(new_id("key_"));
    tx.execute(
        "INSERT INTO keys (id, team_id, name, hash, prefix, role, created_at, expires_at,
             ip_allowlist, rpm, tpd)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
        params![
            id.0,
            new.team_id.0,
            new.name,
            hash.as_slice(),
            prefix,
            new.role.as_str(),
            now,
            new.expires_at,
            to_json(&new.ip_allowlist)?,
            new.rpm.map(i64::from),
            opt_i64_of(new.tpd, "tpd")?,
        ],
    )?;
    tx.execute(
        "INSERT INTO budgets (scope, limit_micros, spent_micros) VALUES ('key:' || ?1, ?2, ?3)",
        params![id.0, new.budget, spent],
    )?;
    Ok(id)
}

/// A key known only by its hash (declared in the config file, or the bootstrap admin key from
/// the environment): inserted once; if a key with this hash exists, that key is returned as is.
pub(super) fn import(
    conn: &mut Connection,
    now: UnixMillis,
    new: NewKey,
    hash: [u8; 32],
    prefix: String,
) -> StoreResult<KeyInfo> {
    check_key(&new)?;
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let id = match by_hash(&tx, now, &hash)? {
        Some(existing) => existing.id,
        None => insert_hashed(&tx, now, &new, 0, &hash, &prefix)?,
    };
    let info = get(&tx, now, &id)?.ok_or_else(|| StoreError::KeyNotFound(id.clone()))?;
    tx.commit()?;
    Ok(info)
}

pub(super) fn create(
    conn: &mut Connection,
    now: UnixMillis,
    new: NewKey,
) -> StoreResult<CreatedKey> {
    check_key(&new)?;
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let (id, secret) = insert(&tx, now, &new, 0)?;
    let info = get(&tx, now, &id)?.ok_or_else(|| StoreError::KeyNotFound(id.clone()))?;
    tx.commit()?;
    Ok(CreatedKey { info, secret })
}

pub(super) fn rotate(
    conn: &mut Connection,
    now: UnixMillis,
    id: KeyId,
    grace_ms: i64,
) -> StoreResult<CreatedKey> {
    check_not_negative(grace_ms, "grace")?;
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let old = get(&tx, now, &id)?.ok_or_else(|| StoreError::KeyNotFound(id.clone()))?;
    // Only a key that is fully active is rotated: rotating a key already in its grace would
    // fork the succession.
    if old.state != KeyState::Active {
        return Err(StoreError::KeyNotRotatable(id, old.state.as_str()));
    }
    let spent: i64 = tx
        .query_row(
            "SELECT spent_micros FROM budgets WHERE scope = 'key:' || ?1",
            [&id.0],
            |r| r.get(0),
        )
        .optional()?
        .unwrap_or(0);
    let new = NewKey {
        team_id: old.team_id.clone(),
        name: old.name.clone(),
        role: old.role,
        expires_at: old.expires_at,
        ip_allowlist: old.ip_allowlist.clone(),
        rpm: old.rpm,
        tpd: old.tpd,
        budget: old.budget,
    };
    let (new_id, secret) = insert(&tx, now, &new, spent)?;
    tx.execute(
        "UPDATE keys SET rotated_to = ?2, grace_until = ?3 WHERE id = ?1",
        params![id.0, new_id.0, now.saturating_add(grace_ms)],
    )?;
    let info = get(&tx, now, &new_id)?.ok_or_else(|| StoreError::KeyNotFound(new_id.clone()))?;
    tx.commit()?;
    Ok(CreatedKey { info, secret })
}

pub(super) fn revoke(conn: &mut Connection, now: UnixMillis, id: KeyId) -> StoreResult<KeyInfo> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let n = tx.execute(
        "UPDATE keys SET revoked_at = COALESCE(revoked_at, ?2) WHERE id = ?1",
        params![id.0, now],
    )?;
    if n == 0 {
        return Err(StoreError::KeyNotFound(id));
    }
    let info = get(&tx, now, &id)?.ok_or_else(|| StoreError::KeyNotFound(id.clone()))?;
    tx.commit()?;
    Ok(info)
}

pub(super) fn touch(conn: &Connection, id: KeyId, at: UnixMillis) -> StoreResult<()> {
    let n = conn.execute(
        "UPDATE keys SET last_used_at = MAX(COALESCE(last_used_at, ?2), ?2) WHERE id = ?1",
        params![id.0, at],
    )?;
    if n == 0 {
        return Err(StoreError::KeyNotFound(id));
    }
    Ok(())
}
