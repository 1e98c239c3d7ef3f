//! The document library in PostgreSQL: `documents` (one row per team, collection, distinct bytes
//! and source file), `document_chunks` (text, provenance and the vector's bytes of each chunk;
//! deleted with their document), `files` and `vector_stores`, as SQLite keeps them.
//!
//! A re-upload is decided by the unique constraint `documents_identity` inside the insert's
//! transaction: of two replicas storing the same bytes at once, the second waits for the first's
//! commit and then finds its document. Locks follow the back end's order — the team row first,
//! then document rows, then their chunks — so a deletion never deadlocks with a re-embedding.

use deadpool_postgres::{GenericClient, Object};
use tokio_postgres::Row;
use tokio_postgres::error::SqlState;

use super::{Filters, execute, is, lock_team, query, query_opt};
use crate::store::documents::{
    ChunkVector, DocumentFilter, DocumentRecord, FileRecord, FileWithData, Inserted, NewDocument,
    NewFile, StoredChunk, VectorStoreRecord,
};
use crate::store::rules::i64_of;
use crate::store::{StoreError, StoreResult, TeamId, UnixMillis};

/// Chunks inserted per statement: one round trip for most documents, bounded for the largest.
const CHUNKS_PER_STATEMENT: usize = 500;

const SELECT_DOCUMENT: &str = "SELECT id, team_id, collection, filename, kind, bytes, sha256,
        pages, chunks, metadata, model, file_id, created_at FROM documents";

/// A count stored as `BIGINT` back into its Rust type; out of range is a corrupt row.
fn count<T: TryFrom<i64>>(v: i64, column: &str) -> StoreResult<T> {
    T::try_from(v).map_err(|_| StoreError::Corrupt(format!("{column}: {v} is out of range")))
}

fn document_row(r: &Row) -> StoreResult<DocumentRecord> {
    let file_id: String = r.try_get(11)?;
    Ok(DocumentRecord {
        id: r.try_get(0)?,
        team_id: TeamId(r.try_get(1)?),
        collection: r.try_get(2)?,
        filename: r.try_get(3)?,
        kind: r.try_get(4)?,
        bytes: count(r.try_get(5)?, "documents.bytes")?,
        sha256: r.try_get(6)?,
        pages: r
            .try_get::<_, Option<i64>>(7)?
            .map(|p| count(p, "documents.pages"))
            .transpose()?,
        chunks: count(r.try_get(8)?, "documents.chunks")?,
        metadata: r.try_get(9)?,
        model: r.try_get(10)?,
        file_id: Some(file_id).filter(|f| !f.is_empty()),
        created_at: r.try_get(12)?,
    })
}

fn chunk_row(r: &Row) -> StoreResult<StoredChunk> {
    Ok(StoredChunk {
        id: count(r.try_get(0)?, "document_chunks.id")?,
        document_id: r.try_get(1)?,
        page: r
            .try_get::<_, Option<i64>>(2)?
            .map(|p| count(p, "document_chunks.page"))
            .transpose()?,
        paragraph: count(r.try_get(3)?, "document_chunks.paragraph")?,
        text: r.try_get(4)?,
    })
}

fn chunk_vector_row(r: &Row) -> StoreResult<ChunkVector> {
    Ok(ChunkVector {
        id: count(r.try_get(0)?, "document_chunks.id")?,
        team_id: r.try_get(1)?,
        collection: r.try_get(2)?,
        document_id: r.try_get(3)?,
        text: r.try_get(4)?,
        vector: r.try_get(5)?,
    })
}

/// Chunk ids asked for from outside: one above `i64::MAX` cannot exist.
fn chunk_ids(ids: &[u64]) -> Vec<i64> {
    ids.iter()
        .filter_map(|&id| i64::try_from(id).ok())
        .collect()
}

pub(super) async fn find<C: GenericClient>(
    c: &C,
    team: &TeamId,
    collection: &str,
    sha256: &str,
    file_id: Option<&str>,
) -> StoreResult<Option<DocumentRecord>> {
    query_opt(
        c,
        &format!(
            "{SELECT_DOCUMENT}
             WHERE team_id = $1 AND collection = $2 AND sha256 = $3 AND file_id = $4"
        ),
        &[&team.0, &collection, &sha256, &file_id.unwrap_or("")],
    )
    .await?
    .as_ref()
    .map(document_row)
    .transpose()
}

/// The document and its chunks in one transaction, unless the team's collection holds these
/// bytes (from this file) already.
///
/// The insert is `ON CONFLICT (team, collection, sha256, file) DO UPDATE … WHERE FALSE`: when
/// another transaction holds the same identity uncommitted, PostgreSQL waits for it; on a
/// conflict nothing is written but the stored row is locked, so the read that follows finds it
/// even if a deletion is waiting (a plain `DO NOTHING` would leave a gap between the two).
pub(super) async fn insert(
    c: &mut Object,
    now: UnixMillis,
    d: NewDocument,
) -> StoreResult<Inserted> {
    let bytes = i64_of(d.bytes, "bytes")?;
    let chunks = u32::try_from(d.chunks.len()).unwrap_or(u32::MAX);
    let file_id = d.file_id.as_deref().unwrap_or("");
    let tx = c.transaction().await?;
    if !lock_team(&tx, &d.team_id).await? {
        return Err(StoreError::TeamNotFound(d.team_id));
    }
    let inserted = query_opt(
        &tx,
        "INSERT INTO documents (id, team_id, collection, filename, kind, bytes, sha256, pages,
             chunks, metadata, model, file_id, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
         ON CONFLICT ON CONSTRAINT documents_identity DO UPDATE SET model = documents.model
             WHERE FALSE
         RETURNING id",
        &[
            &d.id,
            &d.team_id.0,
            &d.collection,
            &d.filename,
            &d.kind,
            &bytes,
            &d.sha256,
            &d.pages.map(i64::from),
            &i64::from(chunks),
            &d.metadata,
            &d.model,
            &file_id,
            &now,
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
    let mut chunk_ids = Vec::with_capacity(d.chunks.len());
    for batch in d.chunks.chunks(CHUNKS_PER_STATEMENT) {
        let ordinals: Vec<i64> = batch.iter().map(|c| i64::from(c.ordinal)).collect();
        let pages: Vec<Option<i64>> = batch.iter().map(|c| c.page.map(i64::from)).collect();
        let paragraphs: Vec<i64> = batch.iter().map(|c| i64::from(c.paragraph)).collect();
        let texts: Vec<&str> = batch.iter().map(|c| c.text.as_str()).collect();
        let vectors: Vec<&[u8]> = batch.iter().map(|c| c.vector.as_slice()).collect();
        // Ids are drawn row by row in `position` order (volatile defaults are evaluated after
        // the sort), so ascending ids are the batch's order.
        let rows = query(
            &tx,
            "INSERT INTO document_chunks (document_id, ordinal, page, paragraph, text, vector)
             SELECT $1, u.ordinal, u.page, u.paragraph, u.text, u.vector
             FROM UNNEST($2::BIGINT[], $3::BIGINT[], $4::BIGINT[], $5::TEXT[], $6::BYTEA[])
                 WITH ORDINALITY AS u(ordinal, page, paragraph, text, vector, position)
             ORDER BY u.position
             RETURNING id",
            &[&d.id, &ordinals, &pages, &paragraphs, &texts, &vectors],
        )
        .await?;
        let mut ids = rows
            .iter()
            .map(|r| count(r.try_get(0)?, "document_chunks.id"))
            .collect::<StoreResult<Vec<u64>>>()?;
        ids.sort_unstable();
        chunk_ids.extend(ids);
    }
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

pub(super) async fn get<C: GenericClient>(
    c: &C,
    team: &TeamId,
    id: &str,
) -> StoreResult<Option<DocumentRecord>> {
    query_opt(
        c,
        &format!("{SELECT_DOCUMENT} WHERE team_id = $1 AND id = $2"),
        &[&team.0, &id],
    )
    .await?
    .as_ref()
    .map(document_row)
    .transpose()
}

pub(super) async fn list<C: GenericClient>(
    c: &C,
    f: &DocumentFilter,
) -> StoreResult<Vec<DocumentRecord>> {
    // Ids are UUIDv7 and compared as bytes (`COLLATE "C"`): ordering by id is by creation.
    let limit = i64::from(f.limit);
    let mut w = Filters::default();
    w.given("team_id =", Some(&f.team_id.0));
    w.given("collection =", f.collection.as_ref());
    w.given("id <", f.after.as_ref());
    let sql = format!(
        "{SELECT_DOCUMENT} {} ORDER BY id DESC LIMIT {}",
        w.where_clause(),
        w.bind(&limit)
    );
    query(c, &sql, &w.params)
        .await?
        .iter()
        .map(document_row)
        .collect()
}

pub(super) async fn all<C: GenericClient>(c: &C) -> StoreResult<Vec<DocumentRecord>> {
    query(c, &format!("{SELECT_DOCUMENT} ORDER BY id"), &[])
        .await?
        .iter()
        .map(document_row)
        .collect()
}

/// The document row, then its chunks (`ON DELETE CASCADE`), in one statement.
pub(super) async fn delete<C: GenericClient>(c: &C, team: &TeamId, id: &str) -> StoreResult<bool> {
    Ok(execute(
        c,
        "DELETE FROM documents WHERE team_id = $1 AND id = $2",
        &[&team.0, &id],
    )
    .await?
        > 0)
}

pub(super) async fn chunks<C: GenericClient>(c: &C, ids: &[u64]) -> StoreResult<Vec<StoredChunk>> {
    let ids = chunk_ids(ids);
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    query(
        c,
        "SELECT id, document_id, page, paragraph, text FROM document_chunks WHERE id = ANY($1)",
        &[&ids],
    )
    .await?
    .iter()
    .map(chunk_row)
    .collect()
}

pub(super) async fn chunk_vectors<C: GenericClient>(
    c: &C,
    model: &str,
) -> StoreResult<Vec<ChunkVector>> {
    query(
        c,
        "SELECT ch.id, d.team_id, d.collection, d.id, ch.text, ch.vector
         FROM document_chunks ch JOIN documents d ON d.id = ch.document_id
         WHERE d.model = $1 ORDER BY ch.id",
        &[&model],
    )
    .await?
    .iter()
    .map(chunk_vector_row)
    .collect()
}

pub(super) async fn document_vectors<C: GenericClient>(
    c: &C,
    id: &str,
) -> StoreResult<Vec<ChunkVector>> {
    query(
        c,
        "SELECT ch.id, d.team_id, d.collection, d.id, ch.text, ch.vector
         FROM document_chunks ch JOIN documents d ON d.id = ch.document_id
         WHERE d.id = $1 ORDER BY ch.id",
        &[&id],
    )
    .await?
    .iter()
    .map(chunk_vector_row)
    .collect()
}

pub(super) async fn document_chunks<C: GenericClient>(
    c: &C,
    id: &str,
) -> StoreResult<Vec<StoredChunk>> {
    query(
        c,
        "SELECT id, document_id, page, paragraph, text FROM document_chunks
         WHERE document_id = $1 ORDER BY ordinal, id",
        &[&id],
    )
    .await?
    .iter()
    .map(chunk_row)
    .collect()
}

/// The model tag first (locking the document row, as a deletion does before its chunks), then
/// every vector in one statement; chunks of another document are left alone.
pub(super) async fn replace_vectors(
    c: &mut Object,
    id: &str,
    model: &str,
    vectors: &[(u64, Vec<u8>)],
) -> StoreResult<()> {
    let tx = c.transaction().await?;
    let found = execute(
        &tx,
        "UPDATE documents SET model = $1 WHERE id = $2",
        &[&model, &id],
    )
    .await?;
    if found > 0 && !vectors.is_empty() {
        let (ids, bytes): (Vec<i64>, Vec<&[u8]>) = vectors
            .iter()
            .filter_map(|(chunk, v)| Some((i64::try_from(*chunk).ok()?, v.as_slice())))
            .unzip();
        execute(
            &tx,
            "UPDATE document_chunks ch SET vector = u.vector
             FROM UNNEST($1::BIGINT[], $2::BYTEA[]) AS u(id, vector)
             WHERE ch.id = u.id AND ch.document_id = $3",
            &[&ids, &bytes, &id],
        )
        .await?;
    }
    tx.commit().await?;
    Ok(())
}

const SELECT_FILE: &str =
    "SELECT id, team_id, filename, purpose, content_type, bytes, created_at FROM files";

fn file_row(r: &Row) -> StoreResult<FileRecord> {
    Ok(FileRecord {
        id: r.try_get(0)?,
        team_id: TeamId(r.try_get(1)?),
        filename: r.try_get(2)?,
        purpose: r.try_get(3)?,
        content_type: r.try_get(4)?,
        bytes: count(r.try_get(5)?, "files.bytes")?,
        created_at: r.try_get(6)?,
    })
}

/// A row of a team that must exist: `TeamNotFound` otherwise, also when the team is deleted
/// between the check and the insert.
async fn insert_for_team<C: GenericClient>(
    c: &C,
    team: &TeamId,
    sql: &str,
    params: super::Params<'_>,
) -> StoreResult<()> {
    if !lock_team(c, team).await? {
        return Err(StoreError::TeamNotFound(team.clone()));
    }
    match execute(c, sql, params).await {
        Err(e) if is(&e, &SqlState::FOREIGN_KEY_VIOLATION) => {
            Err(StoreError::TeamNotFound(team.clone()))
        }
        other => other.map(|_| ()),
    }
}

pub(super) async fn create_file<C: GenericClient>(
    c: &C,
    now: UnixMillis,
    f: NewFile,
) -> StoreResult<FileRecord> {
    let bytes = f.data.len() as u64;
    insert_for_team(
        c,
        &f.team_id,
        "INSERT INTO files (id, team_id, filename, purpose, content_type, bytes, data, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
        &[
            &f.id,
            &f.team_id.0,
            &f.filename,
            &f.purpose,
            &f.content_type,
            &i64_of(bytes, "bytes")?,
            &f.data,
            &now,
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

pub(super) async fn file<C: GenericClient>(
    c: &C,
    team: &TeamId,
    id: &str,
) -> StoreResult<Option<FileWithData>> {
    let Some(r) = query_opt(
        c,
        "SELECT id, team_id, filename, purpose, content_type, bytes, created_at, data FROM files
         WHERE team_id = $1 AND id = $2",
        &[&team.0, &id],
    )
    .await?
    else {
        return Ok(None);
    };
    Ok(Some((file_row(&r)?, r.try_get(7)?)))
}

pub(super) async fn files<C: GenericClient>(c: &C, team: &TeamId) -> StoreResult<Vec<FileRecord>> {
    query(
        c,
        &format!("{SELECT_FILE} WHERE team_id = $1 ORDER BY id DESC"),
        &[&team.0],
    )
    .await?
    .iter()
    .map(file_row)
    .collect()
}

pub(super) async fn delete_file<C: GenericClient>(
    c: &C,
    team: &TeamId,
    id: &str,
) -> StoreResult<bool> {
    Ok(execute(
        c,
        "DELETE FROM files WHERE team_id = $1 AND id = $2",
        &[&team.0, &id],
    )
    .await?
        > 0)
}

const SELECT_VECTOR_STORE: &str =
    "SELECT id, team_id, name, metadata, created_at FROM vector_stores";

fn vector_store_row(r: &Row) -> StoreResult<VectorStoreRecord> {
    Ok(VectorStoreRecord {
        id: r.try_get(0)?,
        team_id: TeamId(r.try_get(1)?),
        name: r.try_get(2)?,
        metadata: r.try_get(3)?,
        created_at: r.try_get(4)?,
    })
}

pub(super) async fn create_vector_store<C: GenericClient>(
    c: &C,
    now: UnixMillis,
    mut v: VectorStoreRecord,
) -> StoreResult<VectorStoreRecord> {
    v.created_at = now;
    insert_for_team(
        c,
        &v.team_id,
        "INSERT INTO vector_stores (id, team_id, name, metadata, created_at)
         VALUES ($1, $2, $3, $4, $5)",
        &[&v.id, &v.team_id.0, &v.name, &v.metadata, &v.created_at],
    )
    .await?;
    Ok(v)
}

pub(super) async fn vector_store<C: GenericClient>(
    c: &C,
    team: &TeamId,
    id: &str,
) -> StoreResult<Option<VectorStoreRecord>> {
    query_opt(
        c,
        &format!("{SELECT_VECTOR_STORE} WHERE team_id = $1 AND id = $2"),
        &[&team.0, &id],
    )
    .await?
    .as_ref()
    .map(vector_store_row)
    .transpose()
}

pub(super) async fn vector_stores<C: GenericClient>(
    c: &C,
    team: &TeamId,
) -> StoreResult<Vec<VectorStoreRecord>> {
    query(
        c,
        &format!("{SELECT_VECTOR_STORE} WHERE team_id = $1 ORDER BY id DESC"),
        &[&team.0],
    )
    .await?
    .iter()
    .map(vector_store_row)
    .collect()
}

/// The store and every document of its collection (their chunks cascade), in one transaction
/// that holds the team row first, as the team's deletion takes it, so the two never deadlock.
pub(super) async fn delete_vector_store(
    c: &mut Object,
    team: &TeamId,
    id: &str,
) -> StoreResult<bool> {
    let tx = c.transaction().await?;
    if !lock_team(&tx, team).await? {
        return Ok(false);
    }
    let n = execute(
        &tx,
        "DELETE FROM vector_stores WHERE team_id = $1 AND id = $2",
        &[&team.0, &id],
    )
    .await?;
    if n > 0 {
        execute(
            &tx,
            "DELETE FROM documents WHERE team_id = $1 AND collection = $2",
            &[&team.0, &id],
        )
        .await?;
    }
    tx.commit().await?;
    Ok(n > 0)
}
