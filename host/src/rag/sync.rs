//! Replicas on one document store: each keeps its own in-memory index, so a document another
//! replica added or deleted is brought into (or out of) this one's index and catalogue when the
//! change is heard (`shared::Change::Document`), from the store — the one source of truth.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use serde_json::{Map, Value};
use sovereign_retrieval::index::ChunkRow;

use super::{Entry, Library, RagError, blocking, read, write};
use crate::shared::Change;
use crate::store::TeamId;

impl Library {
    /// Tells the other replicas that the team's document changed (added or deleted).
    pub(super) async fn announce(&self, team: &str, id: &str) {
        if let Some((shared, metrics)) = &self.replicas {
            let change = Change::Document {
                team: team.to_owned(),
                id: id.to_owned(),
            };
            shared.announce(change, metrics).await;
        }
    }

    /// Every document the store has and this index lacks is indexed, and the other way round:
    /// after a gap in hearing the other replicas, and once a minute (a lost message costs at
    /// most that).
    pub async fn reconcile(&self) {
        if self.replicas.is_none() {
            return;
        }
        let stored = match self.store.all_documents().await {
            Ok(all) => all,
            Err(e) => {
                tracing::warn!(error = %e, "reconciling the document index: the store failed");
                return;
            }
        };
        let known: HashMap<String, String> = read(&self.catalogue)
            .iter()
            .map(|(id, e)| (id.clone(), e.team_id.clone()))
            .collect();
        let in_store: HashSet<&str> = stored.iter().map(|d| d.id.as_str()).collect();
        let missing = stored
            .iter()
            .filter(|d| !known.contains_key(&d.id))
            .map(|d| (d.id.clone(), d.team_id.0.clone()));
        let gone = known
            .iter()
            .filter(|(id, _)| !in_store.contains(id.as_str()))
            .map(|(id, team)| (id.clone(), team.clone()));
        let changed: Vec<(String, String)> = missing.chain(gone).collect();
        for (id, team) in changed {
            if let Err(e) = self.sync_document(&team, &id).await {
                tracing::warn!(error = %e, document = %id, "reconciling the document index failed");
            }
        }
    }

    /// Another replica added or deleted the team's document: this index follows the store.
    pub async fn sync_document(&self, team: &str, id: &str) -> Result<(), RagError> {
        let stored = self
            .store
            .document(TeamId(team.to_owned()), id.to_owned())
            .await?;
        let Some(record) = stored else {
            write(&self.index).delete_document(id);
            write(&self.catalogue).remove(id);
            return Ok(());
        };
        if read(&self.catalogue).contains_key(id) || record.model != self.model_key {
            return Ok(());
        }
        let rows = self.store.document_vectors(id.to_owned()).await?;
        let metadata =
            serde_json::from_str::<Map<String, Value>>(&record.metadata).unwrap_or_default();
        let (title, names) = (
            super::headers::title(&record.filename, &metadata),
            super::headers::names(&metadata),
        );
        let document = id.to_owned();
        let index = Arc::clone(&self.index);
        blocking(move || {
            let mut index = write(&index);
            for r in &rows {
                index
                    .add_row(&ChunkRow {
                        chunk_id: r.id,
                        tenant: &r.team_id,
                        collection: &r.collection,
                        document_id: &r.document_id,
                        text: &r.text,
                        vector_bytes: &r.vector,
                    })
                    .map_err(|e| RagError::Worker(format!("indexing: {e}")))?;
            }
            index.set_document_header(&document, &title, &names);
            Ok(())
        })
        .await?;
        write(&self.catalogue).insert(
            record.id.clone(),
            Arc::new(Entry {
                team_id: record.team_id.0,
                collection: record.collection,
                filename: record.filename,
                bytes: record.bytes,
                file_id: record.file_id,
                metadata,
            }),
        );
        Ok(())
    }
}
