//! The document library in SQLite: `documents` (one row per team, collection and distinct bytes)
//! and `document_chunks` (text, provenance and the int8-ready f32 vector of each chunk; deleted
//! with their document).

use rusqlite::{Connection, OptionalExtension, Row, TransactionBehavior, params};

use crate::store::documents::{
    ChunkVector, DocumentFilter, DocumentRecord, FileRecord, FileWithData, Inserted, NewDocument,
    NewFile, StoredChunk, VectorStoreRecord,
};
use crate::store::{StoreResult, TeamId, UnixMillis};

const SELECT_DOCUMENT: &str = "SELECT id, team_id, collection, filename, kind, bytes, sha256,
        pages, chunks, metadata, model, file_id, created_at FROM documents";

fn document_row(r: &Row<'_>) -> rusqlite::Result<DocumentRecord> {
    Ok(DocumentRecord {
        id: r.get(0)?,
        team_id: TeamId(r.get(1)?),
        collection: r.get(2)?,
        filename: r.get(3)?,
        kind: r.get(4)?,
        bytes: r.get::<_, i64>(5)?.unsigned_abs(),
        sha256: r.get(6)?,
        pages: r.get(7)?,
        chunks: r.get(8)?,
        metadata: r.get(9)?,
        model: r.get(10)?,
        file_id: Some(r.get::<_, String>(11)?).filter(|f| !f.is_empty()),
        created_at: r.get(12)?,
    })
}

fn chunk_row(r: &Row<'_>) -> rusqlite::Result<StoredChunk> {
    Ok(StoredChunk {
        id: r.get::<_, i64>(0)?.unsigned_abs(),
        document_id: r.get(1)?,
        page: r.get(2)?,
        paragraph: r.get(3)?,
        text: r.get(4)?,
    })
}

fn find(
    c: &Connection,
    team: &TeamId,
    collection: &str,
    sha256: &str,
    file_id: Option<&str>,
) -> StoreResult<Option<DocumentRecord>> {
    Ok(c.query_row(
        &format!(
            "{SELECT_DOCUMENT} WHERE team_id = ?1 AND collection = ?2 AND sha256 = ?3 AND file_id = ?4"
        ),
        params![team.0, collection, sha256, file_id.unwrap_or("")],
        document_row,
    )
    .optional()?)
}

pub(super) fn insert(c: &mut Connection, now: UnixMillis, d: NewDocument) -> StoreResult<Inserted> {
    let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
    if let Some(existing) = find(
        &tx,
        &d.team_id,
        &d.collection,
        &d.sha256,
        d.file_id.as_deref(),
    )? {
        return Ok(Inserted::Existing(existing));
    }
    let chunks = u32::try_from(d.chunks.len()).unwrap_or(u32::MAX);
    tx.execute(
        "INSERT INTO documents (id, team_id, collection, filename, kind, bytes, sha256, pages,
             chunks, metadata, model, file_id, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
        params![
            d.id,
            d.team_id.0,
            d.collection,
            d.filename,
            d.kind,
            i64::try_from(d.bytes).unwrap_or(i64::MAX),
            d.sha256,
            d.pages,
            chunks,
            d.metadata,
            d.model,
            d.file_id.as_deref().unwrap_or(""),
            now
        ],
    )?;
    let mut chunk_ids = Vec::with_capacity(d.chunks.len());
    {
        let mut st = tx.prepare(
            "INSERT INTO document_chunks (document_id, ordinal, page, paragraph, text, vector)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        )?;
        for chunk in &d.chunks {
            st.execute(params![
                d.id,
                chunk.ordinal,
                chunk.page,
                chunk.paragraph,
                chunk.text,
                chunk.vector
            ])?;
            chunk_ids.push(tx.last_insert_rowid().unsigned_abs());
        }
    }
    tx.commit()?;
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

pub(super) fn find_document(
    c: &Connection,
    team: &TeamId,
    collection: &str,
    sha256: &str,
    file_id: Option<&str>,
) -> StoreResult<Option<DocumentRecord>> {
    find(c, team, collection, sha256, file_id)
}

pub(super) fn get(c: &Connection, team: &TeamId, id: &str) -> StoreResult<Option<DocumentRecord>> {
    Ok(c.query_row(
        &format!("{SELECT_DOCUMENT} WHERE team_id = ?1 AND id = ?2"),
        params![team.0, id],
        document_row,
    )
    .optional()?)
}

pub(super) fn list(c: &Connection, f: &DocumentFilter) -> StoreResult<Vec<DocumentRecord>> {
    // Ids are UUIDv7: ordering by id is ordering by creation.
    let mut st = c.prepare(&format!(
        "{SELECT_DOCUMENT} WHERE team_id = ?1 AND (?2 IS NULL OR collection = ?2)
         AND (?3 IS NULL OR id < ?3) ORDER BY id DESC LIMIT ?4"
    ))?;
    let rows = st.query_map(
        params![f.team_id.0, f.collection, f.after, f.limit],
        document_row,
    )?;
    Ok(rows.collect::<Result<_, _>>()?)
}

pub(super) fn all(c: &Connection) -> StoreResult<Vec<DocumentRecord>> {
    let mut st = c.prepare(&format!("{SELECT_DOCUMENT} ORDER BY id"))?;
    let rows = st.query_map([], document_row)?;
    Ok(rows.collect::<Result<_, _>>()?)
}

pub(super) fn delete(c: &mut Connection, team: &TeamId, id: &str) -> StoreResult<bool> {
    let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
    tx.execute(
        "DELETE FROM document_chunks WHERE document_id IN
             (SELECT id FROM documents WHERE team_id = ?1 AND id = ?2)",
        params![team.0, id],
    )?;
    let n = tx.execute(
        "DELETE FROM documents WHERE team_id = ?1 AND id = ?2",
        params![team.0, id],
    )?;
    tx.commit()?;
    Ok(n > 0)
}

pub(super) fn chunks(c: &Connection, ids: &[u64]) -> StoreResult<Vec<StoredChunk>> {
    let mut st = c.prepare_cached(
        "SELECT id, document_id, page, paragraph, text FROM document_chunks WHERE id = ?1",
    )?;
    let mut out = Vec::with_capacity(ids.len());
    for id in ids {
        let id = i64::try_from(*id).unwrap_or(i64::MAX);
        if let Some(chunk) = st.query_row([id], chunk_row).optional()? {
            out.push(chunk);
        }
    }
    Ok(out)
}

pub(super) fn chunk_vectors(c: &Connection, model: &str) -> StoreResult<Vec<ChunkVector>> {
    let mut st = c.prepare(
        "SELECT ch.id, d.team_id, d.collection, d.id, ch.text, ch.vector
         FROM document_chunks ch JOIN documents d ON d.id = ch.document_id
         WHERE d.model = ?1 ORDER BY ch.id",
    )?;
    let rows = st.query_map([model], chunk_vector_row)?;
    Ok(rows.collect::<Result<_, _>>()?)
}

pub(super) fn document_vectors(c: &Connection, id: &str) -> StoreResult<Vec<ChunkVector>> {
    let mut st = c.prepare(
        "SELECT ch.id, d.team_id, d.collection, d.id, ch.text, ch.vector
         FROM document_chunks ch JOIN documents d ON d.id = ch.document_id
         WHERE d.id = ?1 ORDER BY ch.id",
    )?;
    let rows = st.query_map([id], chunk_vector_row)?;
    Ok(rows.collect::<Result<_, _>>()?)
}

fn chunk_vector_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<ChunkVector> {
    Ok(ChunkVector {
        id: r.get::<_, i64>(0)?.unsigned_abs(),
        team_id: r.get(1)?,
        collection: r.get(2)?,
        document_id: r.get(3)?,
        text: r.get(4)?,
        vector: r.get(5)?,
    })
}

pub(super) fn document_chunks(c: &Connection, id: &str) -> StoreResult<Vec<StoredChunk>> {
    let mut st = c.prepare(
        "SELECT id, document_id, page, paragraph, text FROM document_chunks
         WHERE document_id = ?1 ORDER BY ordinal",
    )?;
    let rows = st.query_map([id], chunk_row)?;
    Ok(rows.collect::<Result<_, _>>()?)
}

pub(super) fn replace_vectors(
    c: &mut Connection,
    id: &str,
    model: &str,
    vectors: &[(u64, Vec<u8>)],
) -> StoreResult<()> {
    let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
    {
        let mut st = tx
            .prepare("UPDATE document_chunks SET vector = ?1 WHERE id = ?2 AND document_id = ?3")?;
        for (chunk, vector) in vectors {
            let chunk = i64::try_from(*chunk).unwrap_or(i64::MAX);
            st.execute(params![vector, chunk, id])?;
        }
    }
    tx.execute(
        "UPDATE documents SET model = ?1 WHERE id = ?2",
        params![model, id],
    )?;
    tx.commit()?;
    Ok(())
}

const SELECT_FILE: &str =
    "SELECT id, team_id, filename, purpose, content_type, bytes, created_at FROM files";

fn file_row(r: &Row<'_>) -> rusqlite::Result<FileRecord> {
    Ok(FileRecord {
        id: r.get(0)?,
        team_id: TeamId(r.get(1)?),
        filename: r.get(2)?,
        purpose: r.get(3)?,
        content_type: r.get(4)?,
        bytes: r.get::<_, i64>(5)?.unsigned_abs(),
        created_at: r.get(6)?,
    })
}

pub(super) fn create_file(c: &Connection, now: UnixMillis, f: NewFile) -> StoreResult<FileRecord> {
    let bytes = f.data.len() as u64;
    c.execute(
        "INSERT INTO files (id, team_id, filename, purpose, content_type, bytes, data, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        params![
            f.id,
            f.team_id.0,
            f.filename,
            f.purpose,
            f.content_type,
            i64::try_from(bytes).unwrap_or(i64::MAX),
            f.data,
            now
        ],
    )?;
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

pub(super) fn file(c: &Connection, team: &TeamId, id: &str) -> StoreResult<Option<FileWithData>> {
    Ok(c.query_row(
        "SELECT id, team_id, filename, purpose, content_type, bytes, created_at, data FROM files
         WHERE team_id = ?1 AND id = ?2",
        params![team.0, id],
        |r| Ok((file_row(r)?, r.get(7)?)),
    )
    .optional()?)
}

pub(super) fn files(c: &Connection, team: &TeamId) -> StoreResult<Vec<FileRecord>> {
    let mut st = c.prepare(&format!(
        "{SELECT_FILE} WHERE team_id = ?1 ORDER BY id DESC"
    ))?;
    let rows = st.query_map([&team.0], file_row)?;
    Ok(rows.collect::<Result<_, _>>()?)
}

pub(super) fn delete_file(c: &Connection, team: &TeamId, id: &str) -> StoreResult<bool> {
    Ok(c.execute(
        "DELETE FROM files WHERE team_id = ?1 AND id = ?2",
        params![team.0, id],
    )? > 0)
}

fn vector_store_row(r: &Row<'_>) -> rusqlite::Result<VectorStoreRecord> {
    Ok(VectorStoreRecord {
        id: r.get(0)?,
        team_id: TeamId(r.get(1)?),
        name: r.get(2)?,
        metadata: r.get(3)?,
        created_at: r.get(4)?,
    })
}

pub(super) fn create_vector_store(
    c: &Connection,
    now: UnixMillis,
    mut v: VectorStoreRecord,
) -> StoreResult<VectorStoreRecord> {
    v.created_at = now;
    c.execute(
        "INSERT INTO vector_stores (id, team_id, name, metadata, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5)",
        params![v.id, v.team_id.0, v.name, v.metadata, v.created_at],
    )?;
    Ok(v)
}

pub(super) fn vector_store(
    c: &Connection,
    team: &TeamId,
    id: &str,
) -> StoreResult<Option<VectorStoreRecord>> {
    Ok(c.query_row(
        "SELECT id, team_id, name, metadata, created_at FROM vector_stores
         WHERE team_id = ?1 AND id = ?2",
        params![team.0, id],
        vector_store_row,
    )
    .optional()?)
}

pub(super) fn vector_stores(c: &Connection, team: &TeamId) -> StoreResult<Vec<VectorStoreRecord>> {
    let mut st = c.prepare(
        "SELECT id, team_id, name, metadata, created_at FROM vector_stores
         WHERE team_id = ?1 ORDER BY id DESC",
    )?;
    let rows = st.query_map([&team.0], vector_store_row)?;
    Ok(rows.collect::<Result<_, _>>()?)
}

pub(super) fn delete_vector_store(
    c: &mut Connection,
    team: &TeamId,
    id: &str,
) -> StoreResult<bool> {
    let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let n = tx.execute(
        "DELETE FROM vector_stores WHERE team_id = ?1 AND id = ?2",
        params![team.0, id],
    )?;
    if n > 0 {
        tx.execute(
            "DELETE FROM document_chunks WHERE document_id IN
                 (SELECT id FROM documents WHERE team_id = ?1 AND collection = ?2)",
            params![team.0, id],
        )?;
        tx.execute(
            "DELETE FROM documents WHERE team_id = ?1 AND collection = ?2",
            params![team.0, id],
        )?;
    }
    tx.commit()?;
    Ok(n > 0)
}
