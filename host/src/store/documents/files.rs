//! Files and vector stores in both dialects (the OpenAI-compatible surface over the library):
//! `files` (uploaded bytes kept as is) and `vector_stores` (a vector store's documents are its
//! collection). A row of a team that must exist: `TeamNotFound` otherwise, also when the team is
//! deleted between the check and the insert. A vector store's deletion holds the team row first,
//! as the team's deletion takes it, so the two never deadlock on PostgreSQL.

use super::{FileRecord, FileWithData, NewFile, VectorStoreRecord};
use crate::store::rules::i64_of;
use crate::store::sql::{Conn, Db, Row, Sql, Tx, Value, refused_foreign_key};
use crate::store::teams::sql::hold;
use crate::store::{StoreError, StoreResult, TeamId, UnixMillis};

/// The columns [`file_row`] reads (and the bytes after them), then `$rest`.
macro_rules! select_file {
    ($rest:literal) => {
        concat!(
            "SELECT id, team_id, filename, purpose, content_type, bytes, created_at, data
            FROM files ",
            $rest
        )
    };
}

const INSERT_FILE: Sql<'static> = Sql {
    sqlite: "INSERT INTO files (id, team_id, filename, purpose, content_type, bytes, data,
             created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    postgres: "INSERT INTO files (id, team_id, filename, purpose, content_type, bytes, data,
             created_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
};

const FILE: Sql<'static> = Sql {
    sqlite: select_file!("WHERE team_id = ?1 AND id = ?2"),
    postgres: select_file!("WHERE team_id = $1 AND id = $2"),
};

/// Without the bytes.
const FILES: Sql<'static> = Sql {
    sqlite: "SELECT id, team_id, filename, purpose, content_type, bytes, created_at FROM files
         WHERE team_id = ?1 ORDER BY id DESC",
    postgres: "SELECT id, team_id, filename, purpose, content_type, bytes, created_at FROM files
         WHERE team_id = $1 ORDER BY id DESC",
};

const DELETE_FILE: Sql<'static> = Sql {
    sqlite: "DELETE FROM files WHERE team_id = ?1 AND id = ?2",
    postgres: "DELETE FROM files WHERE team_id = $1 AND id = $2",
};

/// The columns [`vector_store_row`] reads, then `$rest`.
macro_rules! select_store {
    ($rest:literal) => {
        concat!(
            "SELECT id, team_id, name, metadata, created_at FROM vector_stores ",
            $rest
        )
    };
}

const INSERT_STORE: Sql<'static> = Sql {
    sqlite: "INSERT INTO vector_stores (id, team_id, name, metadata, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5)",
    postgres: "INSERT INTO vector_stores (id, team_id, name, metadata, created_at)
         VALUES ($1, $2, $3, $4, $5)",
};

const STORE: Sql<'static> = Sql {
    sqlite: select_store!("WHERE team_id = ?1 AND id = ?2"),
    postgres: select_store!("WHERE team_id = $1 AND id = $2"),
};

const STORES: Sql<'static> = Sql {
    sqlite: select_store!("WHERE team_id = ?1 ORDER BY id DESC"),
    postgres: select_store!("WHERE team_id = $1 ORDER BY id DESC"),
};

const DELETE_STORE: Sql<'static> = Sql {
    sqlite: "DELETE FROM vector_stores WHERE team_id = ?1 AND id = ?2",
    postgres: "DELETE FROM vector_stores WHERE team_id = $1 AND id = $2",
};

/// Every document of the store's collection (their chunks cascade).
const DELETE_COLLECTION: Sql<'static> = Sql {
    sqlite: "DELETE FROM documents WHERE team_id = ?1 AND collection = ?2",
    postgres: "DELETE FROM documents WHERE team_id = $1 AND collection = $2",
};

fn file_row(r: &Row) -> StoreResult<FileRecord> {
    Ok(FileRecord {
        id: r.text(0)?,
        team_id: TeamId(r.text(1)?),
        filename: r.text(2)?,
        purpose: r.text(3)?,
        content_type: r.opt_text(4)?,
        bytes: r.count(5)?,
        created_at: r.i64(6)?,
    })
}

fn vector_store_row(r: &Row) -> StoreResult<VectorStoreRecord> {
    Ok(VectorStoreRecord {
        id: r.text(0)?,
        team_id: TeamId(r.text(1)?),
        name: r.text(2)?,
        metadata: r.text(3)?,
        created_at: r.i64(4)?,
    })
}

/// `sql` with `params` as a row of `team`, in one transaction that holds the team.
async fn insert_for_team(
    c: &mut impl Conn,
    team: &TeamId,
    sql: Sql<'_>,
    params: &[Value],
) -> StoreResult<()> {
    let tx = c.begin().await?;
    if !hold(&tx, team).await? {
        return Err(StoreError::TeamNotFound(team.clone()));
    }
    match tx.execute(sql, params).await {
        Err(e) if refused_foreign_key(&e) => return Err(StoreError::TeamNotFound(team.clone())),
        other => other?,
    };
    tx.commit().await
}

pub(crate) async fn create_file(
    c: &mut impl Conn,
    now: UnixMillis,
    f: NewFile,
) -> StoreResult<FileRecord> {
    let bytes = f.data.len() as u64;
    insert_for_team(
        c,
        &f.team_id,
        INSERT_FILE,
        &[
            Value::from(&f.id),
            Value::from(&f.team_id.0),
            Value::from(&f.filename),
            Value::from(&f.purpose),
            f.content_type.as_deref().into(),
            i64_of(bytes, "bytes")?.into(),
            Value::Bytes(f.data),
            now.into(),
        ],
    )
    .await?;
    Ok(FileRecord {
        id: f.id,
        team_id: f.team_id,
        filename: f.filename,
        purpose: f.purpose,
        content_type: f.content_type,
        bytes,
        created_at: now,
    })
}

/// The team's file and its bytes.
pub(crate) async fn file(
    db: &impl Db,
    team: &TeamId,
    id: &str,
) -> StoreResult<Option<FileWithData>> {
    let Some(r) = db
        .query_opt(FILE, &[Value::from(&team.0), id.into()])
        .await?
    else {
        return Ok(None);
    };
    Ok(Some((file_row(&r)?, r.bytes(7)?)))
}

pub(crate) async fn files(db: &impl Db, team: &TeamId) -> StoreResult<Vec<FileRecord>> {
    db.query(FILES, &[Value::from(&team.0)])
        .await?
        .iter()
        .map(file_row)
        .collect()
}

pub(crate) async fn delete_file(db: &impl Db, team: &TeamId, id: &str) -> StoreResult<bool> {
    Ok(db
        .execute(DELETE_FILE, &[Value::from(&team.0), id.into()])
        .await?
        > 0)
}

pub(crate) async fn create_vector_store(
    c: &mut impl Conn,
    now: UnixMillis,
    mut v: VectorStoreRecord,
) -> StoreResult<VectorStoreRecord> {
    v.created_at = now;
    insert_for_team(
        c,
        &v.team_id,
        INSERT_STORE,
        &[
            Value::from(&v.id),
            Value::from(&v.team_id.0),
            Value::from(&v.name),
            Value::from(&v.metadata),
            v.created_at.into(),
        ],
    )
    .await?;
    Ok(v)
}

pub(crate) async fn vector_store(
    db: &impl Db,
    team: &TeamId,
    id: &str,
) -> StoreResult<Option<VectorStoreRecord>> {
    db.query_opt(STORE, &[Value::from(&team.0), id.into()])
        .await?
        .as_ref()
        .map(vector_store_row)
        .transpose()
}

pub(crate) async fn vector_stores(
    db: &impl Db,
    team: &TeamId,
) -> StoreResult<Vec<VectorStoreRecord>> {
    db.query(STORES, &[Value::from(&team.0)])
        .await?
        .iter()
        .map(vector_store_row)
        .collect()
}

/// The store and every document of its collection, in one transaction. `false` when none.
pub(crate) async fn delete_vector_store(
    c: &mut impl Conn,
    team: &TeamId,
    id: &str,
) -> StoreResult<bool> {
    let key = [Value::from(&team.0), id.into()];
    let tx = c.begin().await?;
    if !hold(&tx, team).await? {
        return Ok(false);
    }
    let n = tx.execute(DELETE_STORE, &key).await?;
    if n > 0 {
        tx.execute(DELETE_COLLECTION, &key).await?;
    }
    tx.commit().await?;
    Ok(n > 0)
}
