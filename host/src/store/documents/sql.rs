//! Documents and their chunks in both dialects: `documents` (one row per team, collection,
//! distinct bytes and source file) and `document_chunks` (text, provenance and the vector's bytes
//! of each chunk; deleted with their document by `ON DELETE CASCADE`).
//!
//! A re-upload is decided by the documents' unique identity (team, collection, sha256, file)
//! inside the insert's transaction. On PostgreSQL the insert is `ON CONFLICT ON CONSTRAINT
//! documents_identity DO UPDATE … WHERE FALSE`: when another transaction holds the same identity
//! uncommitted, PostgreSQL waits for it; on a conflict nothing is written but the stored row is
//! locked, so the read that follows finds it even if a deletion is waiting (a plain `DO NOTHING`
//! would leave a gap between the two). SQLite's single writer makes `DO NOTHING` enough. Locks
//! follow the back end's order — the team row first, then document rows, then their chunks — so
//! a deletion never deadlocks with a re-embedding. The chunks' own bulk steps are in
//! [`super::bulk`].

use super::bulk::{Bulk, chunk_row};
use super::{ChunkVector, DocumentFilter, DocumentRecord, Inserted, NewDocument, StoredChunk};
use crate::store::rules::i64_of;
use crate::store::sql::{Db, Row, Sql, Tx, Value};
use crate::store::teams::sql::hold;
use crate::store::{StoreError, StoreResult, TeamId, UnixMillis};

/// The columns [`document_row`] reads, then `$rest`.
macro_rules! select {
    ($rest:literal) => {
        concat!(
            "SELECT id, team_id, collection, filename, kind, bytes, sha256, pages, chunks,
                metadata, model, file_id, created_at FROM documents ",
            $rest
        )
    };
}

const FIND: Sql<'static> = Sql {
    sqlite: select!("WHERE team_id = ?1 AND collection = ?2 AND sha256 = ?3 AND file_id = ?4"),
    postgres: select!("WHERE team_id = $1 AND collection = $2 AND sha256 = $3 AND file_id = $4"),
};

const GET: Sql<'static> = Sql {
    sqlite: select!("WHERE team_id = ?1 AND id = ?2"),
    postgres: select!("WHERE team_id = $1 AND id = $2"),
};

// A listing: one statement per filter given, so PostgreSQL's one plan per statement fits each.
// Ids are UUIDv7 (compared as bytes on PostgreSQL, `COLLATE "C"`): ordering by id is by creation.
const LIST: Sql<'static> = Sql {
    sqlite: select!("WHERE team_id = ?1 ORDER BY id DESC LIMIT ?2"),
    postgres: select!("WHERE team_id = $1 ORDER BY id DESC LIMIT $2"),
};

const LIST_IN: Sql<'static> = Sql {
    sqlite: select!("WHERE team_id = ?1 AND collection = ?2 ORDER BY id DESC LIMIT ?3"),
    postgres: select!("WHERE team_id = $1 AND collection = $2 ORDER BY id DESC LIMIT $3"),
};

const LIST_AFTER: Sql<'static> = Sql {
    sqlite: select!("WHERE team_id = ?1 AND id < ?2 ORDER BY id DESC LIMIT ?3"),
    postgres: select!("WHERE team_id = $1 AND id < $2 ORDER BY id DESC LIMIT $3"),
};

const LIST_IN_AFTER: Sql<'static> = Sql {
    sqlite: select!("WHERE team_id = ?1 AND collection = ?2 AND id < ?3 ORDER BY id DESC LIMIT ?4"),
    postgres: select!(
        "WHERE team_id = $1 AND collection = $2 AND id < $3 ORDER BY id DESC LIMIT $4"
    ),
};

const ALL: Sql<'static> = Sql::same(select!("ORDER BY id"));

const INSERT: Sql<'static> = Sql {
    sqlite: "INSERT INTO documents (id, team_id, collection, filename, kind, bytes, sha256, pages,
             chunks, metadata, model, file_id, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)
         ON CONFLICT (team_id, collection, sha256, file_id) DO NOTHING
         RETURNING id",
    postgres:
        "INSERT INTO documents (id, team_id, collection, filename, kind, bytes, sha256, pages,
             chunks, metadata, model, file_id, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
         ON CONFLICT ON CONSTRAINT documents_identity DO UPDATE SET model = documents.model
             WHERE FALSE
         RETURNING id",
};

const DELETE: Sql<'static> = Sql {
    sqlite: "DELETE FROM documents WHERE team_id = ?1 AND id = ?2",
    postgres: "DELETE FROM documents WHERE team_id = $1 AND id = $2",
};

/// The columns [`chunk_row`] (`bulk.rs`) reads, then `$rest`.
macro_rules! select_chunk {
    ($rest:literal) => {
        concat!(
            "SELECT id, document_id, page, paragraph, text FROM document_chunks ",
            $rest
        )
    };
}

const DOCUMENT_CHUNKS: Sql<'static> = Sql {
    sqlite: select_chunk!("WHERE document_id = ?1 ORDER BY ordinal"),
    postgres: select_chunk!("WHERE document_id = $1 ORDER BY ordinal, id"),
};

/// The columns [`chunk_vector_row`] reads, then `$rest`.
macro_rules! select_vector {
    ($rest:literal) => {
        concat!(
            "SELECT ch.id, d.team_id, d.collection, d.id, ch.text, ch.vector
            FROM document_chunks ch JOIN documents d ON d.id = ch.document_id ",
            $rest
        )
    };
}

const CHUNK_VECTORS: Sql<'static> = Sql {
    sqlite: select_vector!("WHERE d.model = ?1 ORDER BY ch.document_id, ch.ordinal"),
    postgres: select_vector!("WHERE d.model = $1 ORDER BY ch.document_id, ch.ordinal"),
};

const DOCUMENT_VECTORS: Sql<'static> = Sql {
    sqlite: select_vector!("WHERE d.id = ?1 ORDER BY ch.ordinal"),
    postgres: select_vector!("WHERE d.id = $1 ORDER BY ch.ordinal"),
};

const SET_MODEL: Sql<'static> = Sql {
    sqlite: "UPDATE documents SET model = ?1 WHERE id = ?2",
    postgres: "UPDATE documents SET model = $1 WHERE id = $2",
};

fn document_row(r: &Row) -> StoreResult<DocumentRecord> {
    Ok(DocumentRecord {
        id: r.text(0)?,
        team_id: TeamId(r.text(1)?),
        collection: r.text(2)?,
        filename: r.text(3)?,
        kind: r.text(4)?,
        bytes: r.count(5)?,
        sha256: r.text(6)?,
        pages: r.opt_count(7)?,
        chunks: r.count(8)?,
        metadata: r.text(9)?,
        model: r.text(10)?,
        file_id: Some(r.text(11)?).filter(|f| !f.is_empty()),
        created_at: r.i64(12)?,
    })
}

fn chunk_vector_row(r: &Row) -> StoreResult<ChunkVector> {
    Ok(ChunkVector {
        id: r.count(0)?,
        team_id: r.text(1)?,
        collection: r.text(2)?,
        document_id: r.text(3)?,
        text: r.text(4)?,
        vector: r.bytes(5)?,
    })
}

/// The team's document in `collection` with these bytes (from this file), if any.
pub(crate) async fn find(
    db: &impl Db,
    team: &TeamId,
    collection: &str,
    sha256: &str,
    file_id: Option<&str>,
) -> StoreResult<Option<DocumentRecord>> {
    db.query_opt(
        FIND,
        &[
            Value::from(&team.0),
            collection.into(),
            sha256.into(),
            file_id.unwrap_or("").into(),
        ],
    )
    .await?
    .as_ref()
    .map(document_row)
    .transpose()
}

/// The document and its chunks in transaction `tx` (just begun; committed here), unless the
/// team's collection holds these bytes (from this file) already. The back end begins it, as
/// only it knows its transaction's own bulk steps ([`Bulk`]).
pub(crate) async fn insert(
    tx: impl Tx + Bulk,
    now: UnixMillis,
    d: NewDocument,
) -> StoreResult<Inserted> {
    let bytes = i64_of(d.bytes, "bytes")?;
    let chunks = u32::try_from(d.chunks.len()).unwrap_or(u32::MAX);
    if !hold(&tx, &d.team_id).await? {
        return Err(StoreError::TeamNotFound(d.team_id));
    }
    let inserted = tx
        .query_opt(
            INSERT,
            &[
                Value::from(&d.id),
                Value::from(&d.team_id.0),
                Value::from(&d.collection),
                Value::from(&d.filename),
                Value::from(&d.kind),
                bytes.into(),
                Value::from(&d.sha256),
                d.pages.map(i64::from).into(),
                i64::from(chunks).into(),
                Value::from(&d.metadata),
                Value::from(&d.model),
                d.file_id.as_deref().unwrap_or("").into(),
                now.into(),
            ],
        )
        .await?;
    if inserted.is_none() {
        let existing = find(
            &tx,
            &d.team_id,
            &d.collection,
            &d.sha256,
            d.file_id.as_deref(),
        )
        .await?
        .ok_or_else(|| {
            StoreError::Corrupt(format!(
                "documents: the row holding {} of team {} vanished while locked",
                d.sha256, d.team_id
            ))
        })?;
        tx.commit().await?;
        return Ok(Inserted::Existing(existing));
    }
    let chunk_ids = tx.insert_chunks(&d.id, &d.chunks).await?;
    tx.commit().await?;
    Ok(Inserted::New {
        record: DocumentRecord {
            id: d.id,
            team_id: d.team_id,
            collection: d.collection,
            filename: d.filename,
            kind: d.kind,
            bytes: d.bytes,
            sha256: d.sha256,
            pages: d.pages,
            chunks,
            metadata: d.metadata,
            model: d.model,
            file_id: d.file_id,
            created_at: now,
        },
        chunk_ids,
    })
}

pub(crate) async fn get(
    db: &impl Db,
    team: &TeamId,
    id: &str,
) -> StoreResult<Option<DocumentRecord>> {
    db.query_opt(GET, &[Value::from(&team.0), id.into()])
        .await?
        .as_ref()
        .map(document_row)
        .transpose()
}

pub(crate) async fn list(db: &impl Db, f: &DocumentFilter) -> StoreResult<Vec<DocumentRecord>> {
    let team = Value::from(&f.team_id.0);
    let limit = Value::from(i64::from(f.limit));
    let rows = match (&f.collection, &f.after) {
        (None, None) => db.query(LIST, &[team, limit]).await?,
        (Some(c), None) => db.query(LIST_IN, &[team, c.into(), limit]).await?,
        (None, Some(a)) => db.query(LIST_AFTER, &[team, a.into(), limit]).await?,
        (Some(c), Some(a)) => {
            db.query(LIST_IN_AFTER, &[team, c.into(), a.into(), limit])
                .await?
        }
    };
    rows.iter().map(document_row).collect()
}

pub(crate) async fn all(db: &impl Db) -> StoreResult<Vec<DocumentRecord>> {
    db.query(ALL, &[]).await?.iter().map(document_row).collect()
}

/// The document row, then its chunks (`ON DELETE CASCADE`), in one statement.
pub(crate) async fn delete(db: &impl Db, team: &TeamId, id: &str) -> StoreResult<bool> {
    Ok(db
        .execute(DELETE, &[Value::from(&team.0), id.into()])
        .await?
        > 0)
}

pub(crate) async fn chunk_vectors(db: &impl Db, model: &str) -> StoreResult<Vec<ChunkVector>> {
    db.query(CHUNK_VECTORS, &[model.into()])
        .await?
        .iter()
        .map(chunk_vector_row)
        .collect()
}

pub(crate) async fn document_vectors(db: &impl Db, id: &str) -> StoreResult<Vec<ChunkVector>> {
    db.query(DOCUMENT_VECTORS, &[id.into()])
        .await?
        .iter()
        .map(chunk_vector_row)
        .collect()
}

pub(crate) async fn document_chunks(db: &impl Db, id: &str) -> StoreResult<Vec<StoredChunk>> {
    db.query(DOCUMENT_CHUNKS, &[id.into()])
        .await?
        .iter()
        .map(chunk_row)
        .collect()
}

/// In transaction `tx` (just begun; committed here): the model tag first (locking the document
/// row, as a deletion does before its chunks), then the vectors; chunks of another document are
/// left alone.
pub(crate) async fn replace_vectors(
    tx: impl Tx + Bulk,
    id: &str,
    model: &str,
    vectors: &[(u64, Vec<u8>)],
) -> StoreResult<()> {
    let found = tx.execute(SET_MODEL, &[model.into(), id.into()]).await?;
    if found > 0 && !vectors.is_empty() {
        tx.replace_vectors(id, vectors).await?;
    }
    tx.commit().await
}
