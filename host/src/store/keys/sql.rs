//! Keys in both dialects: creation (only the secret's SHA-256 is stored), import by hash
//! (idempotent, also against another replica importing the same key at the same instant),
//! lookup, listing without secrets, rotation with a grace period, revocation. A key's own budget
//! limit lives in its `budgets` counter row (`key:<id>`).
//!
//! PostgreSQL's lock order (the team, share-locked; then the key) keeps a team deletion from
//! crossing a rotation, and two rotations of one key at once from forking the succession (the
//! second waits, then finds the key rotating); SQLite's single writer gives both.

use super::{CreatedKey, KeyInfo, KeyLimits, KeyState, NewKey};
use crate::store::rules::{
    check_key, check_not_negative, from_json, key_state, new_id, new_secret, opt_i64_of, to_json,
};
use crate::store::sql::{Conn, Db, Row, Sql, Tx, Value};
use crate::store::teams::sql::hold;
use crate::store::types::role_parse;
use crate::store::{KeyId, StoreError, StoreResult, TeamId, UnixMillis};

/// The columns [`row`] reads, then `$rest`.
macro_rules! select {
    ($rest:literal) => {
        concat!(
            "SELECT k.id, k.team_id, k.name, k.prefix, k.role, k.created_at,
                k.last_used_at, k.expires_at, k.revoked_at, k.rotated_to, k.grace_until,
                k.ip_allowlist, k.rpm, k.tpd, b.limit_micros
            FROM keys k LEFT JOIN budgets b ON b.scope = 'key:' || k.id ",
            $rest
        )
    };
}

const GET: Sql<'static> = Sql {
    sqlite: select!("WHERE k.id = ?1"),
    postgres: select!("WHERE k.id = $1"),
};

const GET_FOR_UPDATE: Sql<'static> = Sql {
    sqlite: select!("WHERE k.id = ?1"),
    postgres: select!("WHERE k.id = $1 FOR UPDATE OF k"),
};

const BY_HASH: Sql<'static> = Sql {
    sqlite: select!("WHERE k.hash = ?1"),
    postgres: select!("WHERE k.hash = $1"),
};

/// Usable now: the same test as [`key_state`], in SQL (the second parameter is now).
const AUTHENTICATE: Sql<'static> = Sql {
    sqlite: select!(
        "WHERE k.hash = ?1 AND k.revoked_at IS NULL AND (k.expires_at IS NULL OR k.expires_at > ?2)
            AND (k.grace_until IS NULL OR k.grace_until > ?2)"
    ),
    postgres: select!(
        "WHERE k.hash = $1 AND k.revoked_at IS NULL AND (k.expires_at IS NULL OR k.expires_at > $2)
            AND (k.grace_until IS NULL OR k.grace_until > $2)"
    ),
};

/// Listings: one statement per filter given, so PostgreSQL's one plan per statement fits each.
const LIST_ALL: Sql<'static> = Sql {
    sqlite: select!("ORDER BY k.created_at, k.id"),
    postgres: select!("ORDER BY k.created_at, k.id"),
};

const LIST_TEAM: Sql<'static> = Sql {
    sqlite: select!("WHERE k.team_id = ?1 ORDER BY k.created_at, k.id"),
    postgres: select!("WHERE k.team_id = $1 ORDER BY k.created_at, k.id"),
};

const INSERT: Sql<'static> = Sql {
    sqlite: "INSERT INTO keys (id, team_id, name, hash, prefix, role, created_at, expires_at,
             ip_allowlist, rpm, tpd)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)
         ON CONFLICT (hash) DO NOTHING
         RETURNING id",
    postgres: "INSERT INTO keys (id, team_id, name, hash, prefix, role, created_at, expires_at,
             ip_allowlist, rpm, tpd)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
         ON CONFLICT (hash) DO NOTHING
         RETURNING id",
};

const INSERT_COUNTER: Sql<'static> = Sql {
    sqlite: "INSERT INTO budgets (scope, limit_micros, spent_micros) VALUES ('key:' || ?1, ?2, ?3)",
    postgres: "INSERT INTO budgets (scope, limit_micros, spent_micros)
         VALUES ('key:' || $1::TEXT, $2, $3)",
};

const TEAM_OF: Sql<'static> = Sql {
    sqlite: "SELECT team_id FROM keys WHERE id = ?1",
    postgres: "SELECT team_id FROM keys WHERE id = $1",
};

const SPENT: Sql<'static> = Sql {
    sqlite: "SELECT spent_micros FROM budgets WHERE scope = 'key:' || ?1",
    postgres: "SELECT spent_micros FROM budgets WHERE scope = 'key:' || $1::TEXT",
};

const SUCCEED: Sql<'static> = Sql {
    sqlite: "UPDATE keys SET rotated_to = ?2, grace_until = ?3 WHERE id = ?1",
    postgres: "UPDATE keys SET rotated_to = $2, grace_until = $3 WHERE id = $1",
};

const REVOKE: Sql<'static> = Sql {
    sqlite: "UPDATE keys SET revoked_at = COALESCE(revoked_at, ?2) WHERE id = ?1",
    postgres: "UPDATE keys SET revoked_at = COALESCE(revoked_at, $2) WHERE id = $1",
};

const SET_LIMITS: Sql<'static> = Sql {
    sqlite: "UPDATE keys SET rpm = ?2, tpd = ?3 WHERE id = ?1",
    postgres: "UPDATE keys SET rpm = $2, tpd = $3 WHERE id = $1",
};

/// A key's budget limit; a key made before its counter row existed gets one.
const SET_BUDGET: Sql<'static> = Sql {
    sqlite: "INSERT INTO budgets (scope, limit_micros) VALUES ('key:' || ?1, ?2)
             ON CONFLICT (scope) DO UPDATE SET limit_micros = excluded.limit_micros",
    postgres: "INSERT INTO budgets (scope, limit_micros) VALUES ('key:' || $1::TEXT, $2)
             ON CONFLICT (scope) DO UPDATE SET limit_micros = excluded.limit_micros",
};

const TOUCH: Sql<'static> = Sql {
    sqlite: "UPDATE keys SET last_used_at = MAX(COALESCE(last_used_at, ?2), ?2) WHERE id = ?1",
    postgres: "UPDATE keys SET last_used_at = GREATEST(COALESCE(last_used_at, $2), $2)
         WHERE id = $1",
};

fn row(r: &Row, now: UnixMillis) -> StoreResult<KeyInfo> {
    let id = KeyId(r.text(0)?);
    let role = r.text(4)?;
    let mut k = KeyInfo {
        team_id: TeamId(r.text(1)?),
        name: r.opt_text(2)?,
        prefix: r.text(3)?,
        role: role_parse(&role)
            .ok_or_else(|| StoreError::Corrupt(format!("key {id}: role {role:?}")))?,
        created_at: r.i64(5)?,
        last_used_at: r.opt_i64(6)?,
        expires_at: r.opt_i64(7)?,
        revoked_at: r.opt_i64(8)?,
        rotated_to: r.opt_text(9)?.map(KeyId),
        grace_until: r.opt_i64(10)?,
        ip_allowlist: from_json(&r.text(11)?, "keys.ip_allowlist")?,
        rpm: r.opt_i64(12)?.and_then(|v| u32::try_from(v).ok()),
        tpd: r.opt_i64(13)?.and_then(|v| u64::try_from(v).ok()),
        budget: r.opt_i64(14)?,
        state: KeyState::Active,
        id,
    };
    k.state = key_state(&k, now);
    Ok(k)
}

async fn one(
    db: &impl Db,
    sql: Sql<'_>,
    params: &[Value],
    now: UnixMillis,
) -> StoreResult<Option<KeyInfo>> {
    db.query_opt(sql, params)
        .await?
        .map(|r| row(&r, now))
        .transpose()
}

pub(crate) async fn get(db: &impl Db, now: UnixMillis, id: &KeyId) -> StoreResult<Option<KeyInfo>> {
    one(db, GET, &[Value::from(&id.0)], now).await
}

pub(crate) async fn by_hash(
    db: &impl Db,
    now: UnixMillis,
    hash: &[u8; 32],
) -> StoreResult<Option<KeyInfo>> {
    one(db, BY_HASH, &[hash.to_vec().into()], now).await
}

pub(crate) async fn authenticate(
    db: &impl Db,
    now: UnixMillis,
    hash: &[u8; 32],
) -> StoreResult<Option<KeyInfo>> {
    one(db, AUTHENTICATE, &[hash.to_vec().into(), now.into()], now).await
}

pub(crate) async fn list(
    db: &impl Db,
    now: UnixMillis,
    team: Option<&TeamId>,
) -> StoreResult<Vec<KeyInfo>> {
    let rows = match team {
        Some(team) => db.query(LIST_TEAM, &[Value::from(&team.0)]).await?,
        None => db.query(LIST_ALL, &[]).await?,
    };
    rows.iter().map(|r| row(r, now)).collect()
}

/// Inserts a key whose secret the store never saw (only its hash) and its budget row, inside
/// the caller's transaction, which has held the team ([`hold`]); `spent` carries a
/// predecessor's spend over on rotation. `None` when a key with this hash exists (left as it
/// is).
async fn insert(
    tx: &impl Db,
    now: UnixMillis,
    new: &NewKey,
    spent: i64,
    hash: &[u8; 32],
    prefix: &str,
) -> StoreResult<Option<KeyId>> {
    let id = KeyId(new_id("key_"));
    let inserted = tx
        .query_opt(
            INSERT,
            &[
                Value::from(&id.0),
                Value::from(&new.team_id.0),
                new.name.as_ref().into(),
                hash.to_vec().into(),
                prefix.into(),
                new.role.as_str().into(),
                now.into(),
                new.expires_at.into(),
                to_json(&new.ip_allowlist)?.into(),
                new.rpm.map(i64::from).into(),
                opt_i64_of(new.tpd, "tpd")?.into(),
            ],
        )
        .await?;
    if inserted.is_none() {
        return Ok(None);
    }
    tx.execute(
        INSERT_COUNTER,
        &[Value::from(&id.0), new.budget.into(), spent.into()],
    )
    .await?;
    Ok(Some(id))
}

/// A new key with a new secret: the only place the secret exists afterwards is the answer.
async fn insert_new(
    tx: &impl Db,
    now: UnixMillis,
    new: &NewKey,
    spent: i64,
) -> StoreResult<(KeyId, String)> {
    if !hold(tx, &new.team_id).await? {
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
pub(crate) async fn import(
    c: &mut impl Conn,
    now: UnixMillis,
    new: NewKey,
    hash: [u8; 32],
    prefix: String,
) -> StoreResult<KeyInfo> {
    check_key(&new)?;
    let tx = c.begin().await?;
    if by_hash(&tx, now, &hash).await?.is_none() {
        if !hold(&tx, &new.team_id).await? {
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

pub(crate) async fn create(
    c: &mut impl Conn,
    now: UnixMillis,
    new: NewKey,
) -> StoreResult<CreatedKey> {
    check_key(&new)?;
    let tx = c.begin().await?;
    let (id, secret) = insert_new(&tx, now, &new, 0).await?;
    let info = get(&tx, now, &id)
        .await?
        .ok_or_else(|| StoreError::KeyNotFound(id.clone()))?;
    tx.commit().await?;
    Ok(CreatedKey { info, secret })
}

pub(crate) async fn rotate(
    c: &mut impl Conn,
    now: UnixMillis,
    id: KeyId,
    grace_ms: i64,
) -> StoreResult<CreatedKey> {
    check_not_negative(grace_ms, "grace")?;
    let tx = c.begin().await?;
    let key = [Value::from(&id.0)];
    let Some(team) = tx.query_opt(TEAM_OF, &key).await? else {
        return Err(StoreError::KeyNotFound(id));
    };
    hold(&tx, &TeamId(team.text(0)?)).await?;
    let old = one(&tx, GET_FOR_UPDATE, &key, now)
        .await?
        .ok_or_else(|| StoreError::KeyNotFound(id.clone()))?;
    // Only a key that is fully active is rotated: rotating a key already in its grace would
    // fork the succession.
    if old.state != KeyState::Active {
        return Err(StoreError::KeyNotRotatable(id, old.state.as_str()));
    }
    let spent = match tx.query_opt(SPENT, &key).await? {
        Some(r) => r.i64(0)?,
        None => 0,
    };
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
    tx.execute(
        SUCCEED,
        &[
            Value::from(&id.0),
            Value::from(&new_id.0),
            now.saturating_add(grace_ms).into(),
        ],
    )
    .await?;
    let info = get(&tx, now, &new_id)
        .await?
        .ok_or_else(|| StoreError::KeyNotFound(new_id.clone()))?;
    tx.commit().await?;
    Ok(CreatedKey { info, secret })
}

/// Changes the limits `l` names, in one transaction; the key's spend stays.
pub(crate) async fn update_limits(
    c: &mut impl Conn,
    now: UnixMillis,
    id: KeyId,
    l: KeyLimits,
) -> StoreResult<KeyInfo> {
    if let Some(Some(budget)) = l.budget {
        check_not_negative(budget, "budget")?;
    }
    let tx = c.begin().await?;
    let key = [Value::from(&id.0)];
    let mut k = one(&tx, GET_FOR_UPDATE, &key, now)
        .await?
        .ok_or_else(|| StoreError::KeyNotFound(id.clone()))?;
    if let Some(rpm) = l.rpm {
        k.rpm = rpm;
    }
    if let Some(tpd) = l.tpd {
        k.tpd = tpd;
    }
    tx.execute(
        SET_LIMITS,
        &[
            Value::from(&id.0),
            k.rpm.map(i64::from).into(),
            opt_i64_of(k.tpd, "tpd")?.into(),
        ],
    )
    .await?;
    if let Some(budget) = l.budget {
        tx.execute(SET_BUDGET, &[Value::from(&id.0), budget.into()])
            .await?;
    }
    let info = get(&tx, now, &id)
        .await?
        .ok_or_else(|| StoreError::KeyNotFound(id.clone()))?;
    tx.commit().await?;
    Ok(info)
}

pub(crate) async fn revoke(c: &mut impl Conn, now: UnixMillis, id: KeyId) -> StoreResult<KeyInfo> {
    let tx = c.begin().await?;
    let n = tx
        .execute(REVOKE, &[Value::from(&id.0), now.into()])
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

pub(crate) async fn touch(db: &impl Db, id: KeyId, at: UnixMillis) -> StoreResult<()> {
    let n = db.execute(TOUCH, &[Value::from(&id.0), at.into()]).await?;
    if n == 0 {
        return Err(StoreError::KeyNotFound(id));
    }
    Ok(())
}
