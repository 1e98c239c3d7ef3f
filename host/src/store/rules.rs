//! What every back end applies around its SQL, so SQLite and PostgreSQL answer alike: the input
//! checks (names, config ids, budgets, amounts), new ids (`team_`/`key_`/`wh_`/`cid_` + UUIDv7
//! hex), a key's state at a given time, the prefix shown for a secret, the column encodings
//! (string lists as JSON text, unsigned counts in signed 64-bit columns), a charge's spend
//! summed per budget counter, and a usage query's conditions.

use std::collections::BTreeMap;

use crate::auth::{KEY_PREFIX, generate_secret, hash_secret};

use super::{
    BudgetScope, KeyInfo, KeyState, Micros, NewKey, StoreError, StoreResult, UnixMillis,
    UsageFilter, UsageRecord,
};

/// A new time-ordered id: `prefix` + a UUIDv7 in hex (`team_`, `key_`, `wh_`, `cid_`).
pub(crate) fn new_id(prefix: &str) -> String {
    format!("{prefix}{}", uuid::Uuid::now_v7().simple())
}

/// Hex digits of the secret shown in listings after `sk-sov-`.
const SHOWN_HEX: usize = 6;

/// A new key secret, its hash (all the store keeps) and the prefix listings show.
pub(crate) fn new_secret() -> (String, [u8; 32], String) {
    let secret = generate_secret();
    let prefix = secret
        .get(..KEY_PREFIX.len() + SHOWN_HEX)
        .unwrap_or(KEY_PREFIX)
        .to_string();
    let hash = hash_secret(&secret);
    (secret, hash, prefix)
}

/// A team's or certificate identity's name: 1 to 200 characters, not only spaces.
pub(crate) fn check_name(name: &str) -> StoreResult<()> {
    if name.trim().is_empty() || name.len() > 200 {
        return Err(StoreError::Invalid {
            field: "name",
            reason: "must be 1 to 200 characters".into(),
        });
    }
    Ok(())
}

/// Ids given from outside (config-file teams): short, and safe in URLs, logs and file names.
pub(crate) fn check_team_id(id: &str) -> StoreResult<()> {
    let ok = !id.is_empty()
        && id.len() <= 64
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'));
    if ok {
        Ok(())
    } else {
        Err(StoreError::Invalid {
            field: "id",
            reason: "must be 1 to 64 letters, digits, '_', '-' or '.'".into(),
        })
    }
}

pub(crate) fn check_budget(budget: Option<Micros>) -> StoreResult<()> {
    if budget.is_some_and(|b| b < 0) {
        return Err(StoreError::Invalid {
            field: "budget",
            reason: "must not be negative".into(),
        });
    }
    Ok(())
}

pub(crate) fn check_key(new: &NewKey) -> StoreResult<()> {
    check_budget(new.budget)?;
    if new.name.as_ref().is_some_and(|n| n.len() > 200) {
        return Err(StoreError::Invalid {
            field: "name",
            reason: "must be at most 200 characters".into(),
        });
    }
    Ok(())
}

/// An amount of money or a duration that must not be negative (`amount`, `actual`, `spend`,
/// `grace`).
pub(crate) fn check_not_negative(v: i64, field: &'static str) -> StoreResult<()> {
    if v < 0 {
        return Err(StoreError::Invalid {
            field,
            reason: "must not be negative".into(),
        });
    }
    Ok(())
}

/// Whether a key authenticates at `now`; the back ends' `authenticate` queries test the same in
/// SQL.
pub(crate) fn key_state(k: &KeyInfo, now: UnixMillis) -> KeyState {
    if k.revoked_at.is_some() {
        KeyState::Revoked
    } else if k.expires_at.is_some_and(|e| e <= now) {
        KeyState::Expired
    } else {
        match k.grace_until {
            Some(until) if until <= now => KeyState::Expired,
            Some(until) => KeyState::Rotating { until },
            None => KeyState::Active,
        }
    }
}

/// A list of strings as its JSON text column.
pub(crate) fn to_json(v: &[String]) -> StoreResult<String> {
    serde_json::to_string(v).map_err(|e| StoreError::Corrupt(e.to_string()))
}

pub(crate) fn from_json(s: &str, what: &str) -> StoreResult<Vec<String>> {
    serde_json::from_str(s).map_err(|e| StoreError::Corrupt(format!("{what}: {e}")))
}

/// A count or cap into a signed 64-bit column.
pub(crate) fn i64_of(v: u64, field: &'static str) -> StoreResult<i64> {
    i64::try_from(v).map_err(|_| StoreError::Invalid {
        field,
        reason: "too large".into(),
    })
}

pub(crate) fn opt_i64_of(v: Option<u64>, field: &'static str) -> StoreResult<Option<i64>> {
    v.map(|v| i64_of(v, field)).transpose()
}

/// A charged batch's spend per budget counter row (`team:<id>`, `key:<id>`), in scope order:
/// each counter moves once per batch, by the sum of its rows (zero sums left out: they move
/// nothing).
pub(crate) fn spend_by_scope(batch: &[UsageRecord]) -> StoreResult<BTreeMap<String, Micros>> {
    let mut spend: BTreeMap<String, Micros> = BTreeMap::new();
    for u in batch {
        check_not_negative(u.spend, "spend")?;
        if u.spend == 0 {
            continue;
        }
        for scope in [
            BudgetScope::Team(u.team_id.clone()),
            BudgetScope::Key(u.key_id.clone()),
        ] {
            let sum = spend.entry(scope.column()).or_insert(0);
            *sum = sum.checked_add(u.spend).ok_or(StoreError::Invalid {
                field: "spend",
                reason: "too large".into(),
            })?;
        }
    }
    Ok(spend)
}

/// A value a usage query binds: text (team, key, model) or a time.
pub(crate) enum UsageArg<'a> {
    Text(&'a String),
    Time(&'a UnixMillis),
}

/// The usage query's day column and the extra grouping it needs: the UTC day's start in Unix ms
/// (`at` is Unix ms, so integer division) with [`UsageFilter::by_day`], else NULL.
pub(crate) fn usage_day(f: &UsageFilter) -> (&'static str, &'static str) {
    if f.by_day {
        ("((at / 86400000) * 86400000)", ", 9")
    } else {
        ("NULL", "")
    }
}

/// The `WHERE` clause of a usage query with only the filters given (empty when none), its
/// placeholders numbered after `mark` (`?` for SQLite, `$` for PostgreSQL), and the values they
/// bind in order. A catch-all `(?1 IS NULL OR team_id = ?1)` kept both stores off the team and
/// key indexes (SQLite scanned the table; PostgreSQL's generic plan likewise). At most 32 texts.
pub(crate) fn usage_conditions(f: &UsageFilter, mark: char) -> (String, Vec<UsageArg<'_>>) {
    let given = [
        (
            "team_id =",
            f.team_id.as_ref().map(|t| UsageArg::Text(&t.0)),
        ),
        ("key_id =", f.key_id.as_ref().map(|k| UsageArg::Text(&k.0))),
        ("model =", f.model.as_ref().map(UsageArg::Text)),
        ("at >=", f.from.as_ref().map(UsageArg::Time)),
        ("at <", f.to.as_ref().map(UsageArg::Time)),
    ];
    let mut clauses = Vec::new();
    let mut args = Vec::new();
    for (clause, arg) in given {
        if let Some(arg) = arg {
            args.push(arg);
            clauses.push(format!("{clause} {mark}{}", args.len()));
        }
    }
    let filtered = if clauses.is_empty() {
        String::new()
    } else {
        format!("WHERE {}", clauses.join(" AND "))
    };
    (filtered, args)
}
