//! Webhook subscriptions in both dialects: rows of `webhooks`. A rotation is one statement
//! whose right-hand sides read the row as it was (the old secret).

use super::{NewWebhook, Webhook};
use crate::store::rules::{from_json, new_id, to_json};
use crate::store::sql::{Db, Row, Sql, Value};
use crate::store::{StoreResult, TeamId, UnixMillis};

/// The columns [`row`] reads.
macro_rules! columns {
    () => {
        "id, url, events, team_id, shaper, secret, description, created_at, previous_secret,
        previous_until"
    };
}

const LIST: Sql<'static> = Sql {
    sqlite: concat!(
        "SELECT ",
        columns!(),
        " FROM webhooks ORDER BY created_at, id"
    ),
    postgres: concat!(
        "SELECT ",
        columns!(),
        " FROM webhooks ORDER BY created_at, id"
    ),
};

const INSERT: Sql<'static> = Sql {
    sqlite:
        "INSERT INTO webhooks (id, url, events, team_id, shaper, secret, description, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    postgres:
        "INSERT INTO webhooks (id, url, events, team_id, shaper, secret, description, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
};

const ROTATE: Sql<'static> = Sql {
    sqlite: concat!(
        "UPDATE webhooks SET
             previous_secret = CASE WHEN ?3 > 0 THEN secret END,
             previous_until = CASE WHEN ?3 > 0 THEN ?4 + ?3 END,
             secret = ?2
         WHERE id = ?1
         RETURNING ",
        columns!()
    ),
    postgres: concat!(
        "UPDATE webhooks SET
             previous_secret = CASE WHEN $3::BIGINT > 0 THEN secret END,
             previous_until = CASE WHEN $3::BIGINT > 0 THEN $4::BIGINT + $3::BIGINT END,
             secret = $2
         WHERE id = $1
         RETURNING ",
        columns!()
    ),
};

const DELETE: Sql<'static> = Sql {
    sqlite: "DELETE FROM webhooks WHERE id = ?1",
    postgres: "DELETE FROM webhooks WHERE id = $1",
};

fn row(r: &Row) -> StoreResult<Webhook> {
    Ok(Webhook {
        id: r.text(0)?,
        url: r.text(1)?,
        events: from_json(&r.text(2)?, "webhooks.events")?,
        team_id: r.opt_text(3)?.map(TeamId),
        shaper: r.opt_text(4)?,
        secret: r.text(5)?,
        description: r.opt_text(6)?,
        created_at: r.i64(7)?,
        previous_secret: r.opt_text(8)?,
        previous_until: r.opt_i64(9)?,
    })
}

pub(crate) async fn create(db: &impl Db, now: UnixMillis, w: NewWebhook) -> StoreResult<Webhook> {
    let id = new_id("wh_");
    db.execute(
        INSERT,
        &[
            Value::from(&id),
            Value::from(&w.url),
            to_json(&w.events)?.into(),
            w.team_id.as_ref().map(|t| t.0.as_str()).into(),
            w.shaper.as_ref().into(),
            Value::from(&w.secret),
            w.description.as_ref().into(),
            now.into(),
        ],
    )
    .await?;
    Ok(Webhook {
        id,
        url: w.url,
        events: w.events,
        team_id: w.team_id,
        shaper: w.shaper,
        secret: w.secret,
        previous_secret: None,
        previous_until: None,
        description: w.description,
        created_at: now,
    })
}

/// Makes `secret` the signing secret; the old one keeps signing for `grace_ms` (0: not at all).
pub(crate) async fn rotate(
    db: &impl Db,
    now: UnixMillis,
    id: &str,
    secret: &str,
    grace_ms: i64,
) -> StoreResult<Option<Webhook>> {
    db.query_opt(
        ROTATE,
        &[id.into(), secret.into(), grace_ms.into(), now.into()],
    )
    .await?
    .as_ref()
    .map(row)
    .transpose()
}

pub(crate) async fn list(db: &impl Db) -> StoreResult<Vec<Webhook>> {
    db.query(LIST, &[]).await?.iter().map(row).collect()
}

/// Deletes the subscription and its outbox (pending deliveries and attempts included).
pub(crate) async fn delete(db: &impl Db, id: &str) -> StoreResult<bool> {
    Ok(db.execute(DELETE, &[id.into()]).await? > 0)
}
