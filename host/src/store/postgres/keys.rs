//! Keys in PostgreSQL: creation (only the secret's SHA-256 is stored), import by hash
//! (idempotent, also against another replica importing the same key at the same instant),
//! lookup, listing without secrets, rotation with a grace period, revocation. A key's own budget
//! limit lives in its `budgets` counter row (`key:<id>`).

use deadpool_postgres::{GenericClient, Object};
use tokio_postgres::Row;

use super::{Filters, execute, lock_team, query, query_opt};
use crate::store::rules::{
    check_key, check_not_negative, from_json, key_state, new_id, new_secret, opt_i64_of, to_json,
};
use crate::store::types::role_parse;
use crate::store::{
    CreatedKey, KeyId, KeyInfo, KeyState, NewKey, StoreError, StoreResult, TeamId, UnixMillis,
};

const SELECT: &str = "SELECT k.id, k.team_id, k.name, k.prefix, k.role, k.created_at,
        k.last_used_at, k.expires_at, k.revoked_at, k.rotated_to, k.grace_until,
        k.ip_allowlist, k.rpm, k.tpd, b.limit_micros
    FROM keys k LEFT JOIN budgets b ON b.scope = 'key:' || k.id";

/// Usable now: the same test as [`key_state`], in SQL (`$2` is now).
const USABLE: &str = "k.revoked_at IS NULL AND (k.expires_at IS NULL OR k.expires_at > $2)
    AND (k.grace_until IS NULL OR k.grace_until > $2)";

fn row(r: &Row, now: UnixMillis) -> StoreResult<KeyInfo> {
    let id = KeyId(r.try_get(0)?);
    let role: String = r.try_get(4)?;
    let allowlist: String = r.try_get(11)?;
    let rpm: Option<i64> = r.try_get(12)?;
    let tpd: Option<i64> = r.try_get(13)?;
    let mut k = KeyInfo {
        team_id: TeamId(r.try_get(1)?),
        name: r.try_get(2)?,
        prefix: r.try_get(3)?,
        role: role_parse(&role)
            .ok_or_else(|| StoreError::Corrupt(format!("key {id}: role {role:?}")))?,
        created_at: r.try_get(5)?,
        last_used_at: r.try_get(6)?,
        expires_at: r.try_get(7)?,
        revoked_at: r.try_get(8)?,
        rotated_to: r.try_get::<_, Option<String>>(9)?.map(KeyId),
        grace_until: r.try_get(10)?,
        ip_allowlist: from_json(&allowlist, "keys.ip_allowlist")?,
        rpm: rpm.and_then(|v| u32::try_from(v).ok()),
        tpd: tpd.and_then(|v| u64::try_from(v).ok()),
        budget: r.try_get(14)?,
        state: KeyState::Active,
        id,
    };
    k.state = key_state(&k, now);
    Ok(k)
}

async fn one<C: GenericClient>(
    c: &C,
    sql: &str,
    arg: &(dyn tokio_postgres::types::ToSql + Sync),
    now: UnixMillis,
) -> StoreResult<Option<KeyInfo>> {
    query_opt(c, sql, &[arg])
        .await?
        .map(|r| row(&r, now))
        .transpose()
}

pub(super) async fn get<C: GenericClient>(
    c: &C,
    now: UnixMillis,
    id: &KeyId,
) -> StoreResult<Option<KeyInfo>> {
    one(c, &format!("{SELECT} WHERE k.id = $1"), &id.0, now).await
}

pub(super) async fn by_hash<C: GenericClient>(
    c: &C,
    now: UnixMillis,
    hash: &[u8; 32],
) -> StoreResult<Option<KeyInfo>> {
    one(
        c,
        &format!("{SELECT} WHERE k.hash = $1"),
        &hash.as_slice(),
        now,
    )
    .await
}

pub(super) async fn authenticate<C: GenericClient>(
    c: &C,
    now: UnixMillis,
    hash: &[u8; 32],
) -> StoreResult<Option<KeyInfo>> {
    query_opt(
        c,
        &format!("{SELECT} WHERE k.hash = $1 AND {USABLE}"),
        &[&hash.as_slice(), &now],
    )
    .await?
    .map(|r| row(&r, now))
    .transpose()
}

pub(super) async fn list<C: GenericClient>(
    c: &C,
    now: UnixMillis,
    team: Option<&TeamId>,
) -> StoreResult<Vec<KeyInfo>> {
    let mut w = Filters::default();
    w.given("k.team_id =", team.map(|t| &t.0));
    let sql = format!("{SELECT} {} ORDER BY k.created_at, k.id", w.where_clause());
    query(c, &sql, &w.params)
        .await?
        .iter()
        .map(|r| row(r, now))
        .collect()
}

/// Inserts a key whose secret the store never saw (only its hash) and its budget row, inside
/// the caller's transaction, which has share-locked the team; `spent` carries a predecessor's
/// spend over on rotation. `None` when a key with this hash exists (left as it is).
async fn insert<C: GenericClient>(
    tx: &C,
    now: UnixMillis,
    new: &NewKey,
    spent: i64,
    hash: &[u8; 32],
    prefix: &str,
) -> StoreResult<Option<KeyId>> {
    let id = KeyId(new_id("key_"));
    let inserted = query_opt(
        tx,
        "INSERT INTO keys (id, team_id, name, hash, prefix, role, created_at, expires_at,
             ip_allowlist, rpm, tpd)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
         ON CONFLICT (hash) DO NOTHING
         RETURNING id",
        &[
            &id.0,
            &new.team_id.0,
            &new.name,
            &hash.as_slice(),
            &prefix,
            &new.role.as_str(),
            &now,
            &new.expires_at,
            &to_json(&new.ip_allowlist)?,
            &new.rpm.map(i64::from),
            &opt_i64_of(new.tpd, "tpd")?,
        ],
    )
    .await?;
    if inserted.is_none() {
        return Ok(None);
    }
    execute(
        tx,
        "INSERT INTO budgets (scope, limit_micros, spent_micros)
         VALUES ('key:' || $1::TEXT, $2, $3)",
        &[&id.0, &new.budget, &spent],
    )
    .await?;
    Ok(Some(id))
}

/// A new key with a new secret: the only place the secret exists afterwards is the answer.
async fn insert_new<C: GenericClient>(
    tx: &C,
    now: UnixMillis,
    new: &NewKey,
    spent: i64,
) -> StoreResult<(KeyId, String)> {
    if !lock_team(tx, &new.team_id).await? {
        return Err(StoreError::TeamNotFound(new.team_id.clone()));
    }
    let (secret, hash, prefix) = new_secret();
    // 256 random bits: a hash already taken means the generator is broken, not bad luck.
    let id = insert(tx, now, new, spent, &hash, &prefix)
        .await?
        .ok_or_else(|| StoreError::Corrupt("a new key's hash is taken already".into()))?;
    Ok((id, secret))
}

/// A key known only by its hash (declared in the config file, or the bootstrap admin key from
/// the environment): inserted once; if a key with this hash exists — made earlier, or by
/// another replica importing the same key at the same moment — that key is returned as is.
pub(super) async fn import(
    c: &mut Object,
    now: UnixMillis,
    new: NewKey,
    hash: [u8; 32],
    prefix: String,
) -> StoreResult<KeyInfo> {
    check_key(&new)?;
    let tx = c.transaction().await?;
    if by_hash(&tx, now, &hash).await?.is_none() {
        if !lock_team(&tx, &new.team_id).await? {
            return Err(StoreError::TeamNotFound(new.team_id));
        }
        // A concurrent import of the same hash makes this insert wait for it, then do nothing.
        insert(&tx, now, &new, 0, &hash, &prefix).await?;
    }
    let info = by_hash(&tx, now, &hash)
        .await?
        .ok_or_else(|| StoreError::Corrupt("an imported key vanished".into()))?;
    tx.commit().await?;
    Ok(info)
}

pub(super) async fn create(
    c: &mut Object,
    now: UnixMillis,
    new: NewKey,
) -> StoreResult<CreatedKey> {
    check_key(&new)?;
    let tx = c.transaction().await?;
    let (id, secret) = insert_new(&tx, now, &new, 0).await?;
    let info = get(&tx, now, &id)
        .await?
        .ok_or_else(|| StoreError::KeyNotFound(id.clone()))?;
    tx.commit().await?;
    Ok(CreatedKey { info, secret })
}

pub(super) async fn rotate(
    c: &mut Object,
    now: UnixMillis,
    id: KeyId,
    grace_ms: i64,
) -> StoreResult<CreatedKey> {
    check_not_negative(grace_ms, "grace")?;
    let tx = c.transaction().await?;
    // The lock order: the team (share), then the key, so a team deletion cannot cross us.
    let team: Option<String> = query_opt(&tx, "SELECT team_id FROM keys WHERE id = $1", &[&id.0])
        .await?
        .map(|r| r.try_get(0))
        .transpose()?;
    let Some(team) = team else {
        return Err(StoreError::KeyNotFound(id));
    };
    lock_team(&tx, &TeamId(team)).await?;
    // Locked: two rotations of one key at once would fork the succession; the second waits
    // and then finds the key rotating.
    let old = one(
        &tx,
        &format!("{SELECT} WHERE k.id = $1 FOR UPDATE OF k"),
        &id.0,
        now,
    )
    .await?
    .ok_or_else(|| StoreError::KeyNotFound(id.clone()))?;
    // Only a key that is fully active is rotated: rotating a key already in its grace would
    // fork the succession.
    if old.state != KeyState::Active {
        return Err(StoreError::KeyNotRotatable(id, old.state.as_str()));
    }
    let spent: i64 = query_opt(
        &tx,
        "SELECT spent_micros FROM budgets WHERE scope = 'key:' || $1::TEXT",
        &[&id.0],
    )
    .await?
    .map(|r| r.try_get(0))
    .transpose()?
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
    let (new_id, secret) = insert_new(&tx, now, &new, spent).await?;
    execute(
        &tx,
        "UPDATE keys SET rotated_to = $2, grace_until = $3 WHERE id = $1",
        &[&id.0, &new_id.0, &now.saturating_add(grace_ms)],
    )
    .await?;
    let info = get(&tx, now, &new_id)
        .await?
        .ok_or_else(|| StoreError::KeyNotFound(new_id.clone()))?;
    tx.commit().await?;
    Ok(CreatedKey { info, secret })
}

pub(super) async fn revoke(c: &mut Object, now: UnixMillis, id: KeyId) -> StoreResult<KeyInfo> {
    let tx = c.transaction().await?;
    let n = execute(
        &tx,
        "UPDATE keys SET revoked_at = COALESCE(revoked_at, $2) WHERE id = $1",
        &[&id.0, &now],
    )
    .await?;
    if n == 0 {
        return Err(StoreError::KeyNotFound(id));
    }
    let info = get(&tx, now, &id)
        .await?
        .ok_or_else(|| StoreError::KeyNotFound(id.clone()))?;
    tx.commit().await?;
    Ok(info)
}

pub(super) async fn touch<C: GenericClient>(c: &C, id: KeyId, at: UnixMillis) -> StoreResult<()> {
    let n = execute(
        c,
        "UPDATE keys SET last_used_at = GREATEST(COALESCE(last_used_at, $2), $2) WHERE id = $1",
        &[&id.0, &at],
    )
    .await?;
    if n == 0 {
        return Err(StoreError::KeyNotFound(id));
    }
    Ok(())
}
