//! The document library's steps each back end does its own way, side by side: a document's
//! chunks inserted, their vectors replaced, chunks read by id. The statements differ because the
//! fast way differs: SQLite runs one cached prepared statement per row on the connection it
//! already holds (no round trip, the vector bytes borrowed, not copied), PostgreSQL sends a whole
//! batch as arrays (`UNNEST`, `= ANY`) in one round trip, which [`Value`] does not carry.
//! Everything around them — the transaction, the team's lock, the identity check — is written
//! once in [`super::sql`].

use std::ops::Deref;

use deadpool_postgres::GenericClient;
use rusqlite::{Connection, params};

use super::{NewChunk, StoredChunk, chunk_id};
use crate::store::StoreResult;
use crate::store::sql::postgres::{Pg, row};
use crate::store::sql::{Db, Row, Sql, Value};

/// Chunks inserted per PostgreSQL statement: one round trip for most documents, bounded for the
/// largest.
const CHUNKS_PER_STATEMENT: usize = 500;

/// SQLite: one chunk (its id is the row id); PostgreSQL: a batch, ids drawn row by row in
/// `position` order (volatile defaults are evaluated after the sort), so ascending ids are the
/// batch's order.
const INSERT_CHUNKS: Sql<'static> = Sql {
    sqlite: "INSERT INTO document_chunks (id, document_id, ordinal, page, paragraph, text, vector)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    postgres:
        "INSERT INTO document_chunks (id, document_id, ordinal, page, paragraph, text, vector)
             OVERRIDING SYSTEM VALUE
             SELECT u.id, $1, u.ordinal, u.page, u.paragraph, u.text, u.vector
             FROM UNNEST($7::BIGINT[], $2::BIGINT[], $3::BIGINT[], $4::BIGINT[], $5::TEXT[],
                 $6::BYTEA[]) AS u(id, ordinal, page, paragraph, text, vector)",
};

/// SQLite: one chunk's vector; PostgreSQL: all of them.
const REPLACE_VECTORS: Sql<'static> = Sql {
    sqlite: "UPDATE document_chunks SET vector = ?1 WHERE id = ?2 AND document_id = ?3",
    postgres: "UPDATE document_chunks ch SET vector = u.vector
             FROM UNNEST($1::BIGINT[], $2::BYTEA[]) AS u(id, vector)
             WHERE ch.id = u.id AND ch.document_id = $3",
};

/// SQLite: one chunk; PostgreSQL: all of them.
const CHUNKS: Sql<'static> = Sql {
    sqlite: "SELECT id, document_id, page, paragraph, text FROM document_chunks WHERE id = ?1",
    postgres: "SELECT id, document_id, page, paragraph, text FROM document_chunks
             WHERE id = ANY($1)",
};

/// A chunk row as a citation shows it (`id, document_id, page, paragraph, text`), read alike
/// by the steps written once (`sql.rs`) and by each back end's own.
pub(super) fn chunk_row(r: &Row) -> StoreResult<StoredChunk> {
    Ok(StoredChunk {
        id: r.count(0)?,
        document_id: r.text(1)?,
        page: r.opt_count(2)?,
        paragraph: r.count(3)?,
        text: r.text(4)?,
    })
}

/// A connection or transaction whose back end has its own way with many chunks at once.
pub(crate) trait Bulk: Db {
    /// The chunks of `document`, inside the transaction that inserted it; their ids in ordinal
    /// order.
    async fn insert_chunks(&self, document: &str, chunks: &[NewChunk]) -> StoreResult<Vec<u64>>;
    /// The vectors of `document`'s chunks (`(chunk id, vector bytes)`); other chunks are left
    /// alone.
    async fn replace_vectors(&self, document: &str, vectors: &[(u64, Vec<u8>)]) -> StoreResult<()>;
    /// The chunks with these ids that still exist, in no particular order.
    async fn chunks(&self, ids: &[u64]) -> StoreResult<Vec<StoredChunk>>;
}

/// A connection or a transaction (both dereference to the connection).
impl<C: Deref<Target = Connection>> Bulk for C {
    async fn insert_chunks(&self, document: &str, chunks: &[NewChunk]) -> StoreResult<Vec<u64>> {
        let mut st = self.prepare_cached(INSERT_CHUNKS.sqlite)?;
        let mut ids = Vec::with_capacity(chunks.len());
        for chunk in chunks {
            let id = chunk_id(document, chunk.ordinal);
            st.execute(params![
                i64::try_from(id).unwrap_or(i64::MAX),
                document,
                chunk.ordinal,
                chunk.page,
                chunk.paragraph,
                chunk.text,
                chunk.vector
            ])?;
            ids.push(id);
        }
        Ok(ids)
    }

    async fn replace_vectors(&self, document: &str, vectors: &[(u64, Vec<u8>)]) -> StoreResult<()> {
        let mut st = self.prepare_cached(REPLACE_VECTORS.sqlite)?;
        for (chunk, vector) in vectors {
            let chunk = i64::try_from(*chunk).unwrap_or(i64::MAX);
            st.execute(params![vector, chunk, document])?;
        }
        Ok(())
    }

    async fn chunks(&self, ids: &[u64]) -> StoreResult<Vec<StoredChunk>> {
        let mut out = Vec::with_capacity(ids.len());
        for id in ids {
            let id = i64::try_from(*id).unwrap_or(i64::MAX);
            if let Some(r) = self.query_opt(CHUNKS, &[Value::Int(id)]).await? {
                out.push(chunk_row(&r)?);
            }
        }
        Ok(out)
    }
}

impl<C: GenericClient + Sync> Bulk for Pg<C> {
    async fn insert_chunks(&self, document: &str, chunks: &[NewChunk]) -> StoreResult<Vec<u64>> {
        let st = self.0.prepare_cached(INSERT_CHUNKS.postgres).await?;
        let mut chunk_ids = Vec::with_capacity(chunks.len());
        for batch in chunks.chunks(CHUNKS_PER_STATEMENT) {
            let ordinals: Vec<i64> = batch.iter().map(|c| i64::from(c.ordinal)).collect();
            let pages: Vec<Option<i64>> = batch.iter().map(|c| c.page.map(i64::from)).collect();
            let paragraphs: Vec<i64> = batch.iter().map(|c| i64::from(c.paragraph)).collect();
            let texts: Vec<&str> = batch.iter().map(|c| c.text.as_str()).collect();
            let vectors: Vec<&[u8]> = batch.iter().map(|c| c.vector.as_slice()).collect();
            let ids: Vec<u64> = batch
                .iter()
                .map(|c| chunk_id(document, c.ordinal))
                .collect();
            let keys: Vec<i64> = ids
                .iter()
                .map(|&id| i64::try_from(id).unwrap_or(i64::MAX))
                .collect();
            self.0
                .execute(
                    &st,
                    &[
                        &document,
                        &ordinals,
                        &pages,
                        &paragraphs,
                        &texts,
                        &vectors,
                        &keys,
                    ],
                )
                .await?;
            chunk_ids.extend(ids);
        }
        Ok(chunk_ids)
    }

    async fn replace_vectors(&self, document: &str, vectors: &[(u64, Vec<u8>)]) -> StoreResult<()> {
        let (ids, bytes): (Vec<i64>, Vec<&[u8]>) = vectors
            .iter()
            .filter_map(|(chunk, v)| Some((i64::try_from(*chunk).ok()?, v.as_slice())))
            .unzip();
        let st = self.0.prepare_cached(REPLACE_VECTORS.postgres).await?;
        self.0.execute(&st, &[&ids, &bytes, &document]).await?;
        Ok(())
    }

    async fn chunks(&self, ids: &[u64]) -> StoreResult<Vec<StoredChunk>> {
        // One above `i64::MAX` cannot exist.
        let ids: Vec<i64> = ids
            .iter()
            .filter_map(|&id| i64::try_from(id).ok())
            .collect();
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let st = self.0.prepare_cached(CHUNKS.postgres).await?;
        self.0
            .query(&st, &[&ids])
            .await?
            .iter()
            .map(|r| chunk_row(&row(r)?))
            .collect()
    }
}
