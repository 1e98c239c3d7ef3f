//! The `DocumentStore` trait's contract on both back ends (issues 15 and 17): documents stored
//! once per team, collection, bytes and source file — also when two replicas upload the same
//! bytes at once — and only ever seen by their team; chunk ids in insertion order; the vectors
//! the search index is rebuilt from, by model and by document; re-embedding; files and vector
//! stores; everything going with its team.

use std::sync::Arc;

use sovereign::store::documents::*;
use sovereign::store::postgres::PgStore;
use sovereign::store::sqlite::SqliteStore;
use sovereign::store::*;

use super::{Backend, T0, clock, on_both_back_ends, team_with_budget};

on_both_back_ends!(
    documents_are_stored_once_per_team_collection_and_bytes_and_scoped_by_team,
    replicas_uploading_the_same_bytes_at_once_store_one_document,
    chunk_ids_derive_from_the_document_and_vectors_are_read_by_model_and_by_document,
    re_embedding_replaces_a_documents_vectors_and_model_only,
    files_and_vector_stores_are_kept_within_their_team,
    deleting_a_team_deletes_its_documents_files_and_vector_stores,
);

/// A new handle on the backend's store, as both traits (one object: a team deleted through
/// `Store` is gone for `DocumentStore` too).
pub(super) async fn open(
    backend: &Backend,
    clock: Arc<ManualClock>,
) -> (Arc<dyn Store>, Arc<dyn DocumentStore>) {
    match backend {
        Backend::Sqlite(dir) => {
            let s = Arc::new(
                SqliteStore::open(&dir.path().join("gateway.db"), clock)
                    .await
                    .unwrap(),
            );
            (s.clone(), s)
        }
        Backend::Postgres(url) => {
            let s = Arc::new(PgStore::connect(url, 16, clock).await.unwrap());
            (s.clone(), s)
        }
    }
}

fn document(team: &TeamId, collection: &str, sha: &str, chunks: usize) -> NewDocument {
    NewDocument {
        id: format!("doc_{}", uuid::Uuid::now_v7().simple()),
        team_id: team.clone(),
        collection: collection.into(),
        filename: "a.pdf".into(),
        kind: "pdf".into(),
        bytes: 1234,
        sha256: sha.into(),
        pages: Some(2),
        metadata: r#"{"dept":"risk"}"#.into(),
        model: "m@1".into(),
        file_id: None,
        chunks: (0..chunks)
            .map(|i| {
                let i = u32::try_from(i).unwrap();
                NewChunk {
                    ordinal: i,
                    page: (i % 2 == 0).then_some(i / 2 + 1),
                    paragraph: i + 1,
                    text: format!("chunk {i} — نص"),
                    vector: vector(i),
                }
            })
            .collect(),
    }
}

/// A chunk's vector bytes: 384 little-endian f32, distinct per chunk.
fn vector(i: u32) -> Vec<u8> {
    (0..384u32)
        .flat_map(|d| f32::from_bits(i * 1000 + d).to_le_bytes())
        .collect()
}

async fn new_document(s: &dyn DocumentStore, d: NewDocument) -> (DocumentRecord, Vec<u64>) {
    match s.insert_document(d).await.unwrap() {
        Inserted::New { record, chunk_ids } => (record, chunk_ids),
        Inserted::Existing(r) => panic!("{} must be new", r.id),
    }
}

async fn documents_are_stored_once_per_team_collection_and_bytes_and_scoped_by_team(
    backend: Backend,
) {
    let c = clock();
    let (s, d) = open(&backend, c.clone()).await;
    let a = team_with_budget(&*s, None).await.id;
    let b = team_with_budget(&*s, None).await.id;

    let (record, chunk_ids) = new_document(&*d, document(&a, "c1", "ff", 3)).await;
    assert_eq!(
        (record.chunks, record.created_at, chunk_ids.len()),
        (3, T0, 3)
    );
    assert_eq!(
        d.document(a.clone(), record.id.clone()).await.unwrap(),
        Some(record.clone())
    );

    // The same bytes again in the same collection: the stored record, nothing written.
    c.advance(5);
    let Inserted::Existing(again) = d
        .insert_document(document(&a, "c1", "ff", 1))
        .await
        .unwrap()
    else {
        panic!("a re-upload must find the stored document");
    };
    assert_eq!(again, record);
    // Another collection, team or source file: a document of its own.
    let mut from_file = document(&a, "c1", "ff", 1);
    from_file.file_id = Some("file_1".into());
    let (from_file, _) = new_document(&*d, from_file).await;
    assert_eq!(from_file.file_id.as_deref(), Some("file_1"));
    let (other_collection, _) = new_document(&*d, document(&a, "c2", "ff", 1)).await;
    let (other_team, _) = new_document(&*d, document(&b, "c1", "ff", 1)).await;
    assert_eq!(
        d.find_document(a.clone(), "c1".into(), "ff".into(), None)
            .await
            .unwrap(),
        Some(record.clone())
    );
    assert_eq!(
        d.find_document(a.clone(), "c1".into(), "ff".into(), Some("file_1".into()))
            .await
            .unwrap(),
        Some(from_file.clone())
    );
    assert_eq!(
        d.find_document(a.clone(), "c3".into(), "ff".into(), None)
            .await
            .unwrap(),
        None
    );

    // Another team never sees it, nor deletes it.
    assert_eq!(
        d.document(b.clone(), record.id.clone()).await.unwrap(),
        None
    );
    assert!(
        !d.delete_document(b.clone(), record.id.clone())
            .await
            .unwrap()
    );
    assert_eq!(
        d.find_document(b.clone(), "c2".into(), "ff".into(), None)
            .await
            .unwrap(),
        None
    );

    // Pages, newest first, optionally one collection's.
    let page = |collection: Option<&str>, after: Option<&str>, limit| DocumentFilter {
        team_id: a.clone(),
        collection: collection.map(str::to_owned),
        after: after.map(str::to_owned),
        limit,
    };
    let all = d.documents(page(None, None, 10)).await.unwrap();
    assert_eq!(
        all,
        vec![other_collection.clone(), from_file.clone(), record.clone()]
    );
    let first = d.documents(page(None, None, 2)).await.unwrap();
    assert_eq!(first, all[..2].to_vec());
    let rest = d
        .documents(page(None, Some(&first[1].id), 2))
        .await
        .unwrap();
    assert_eq!(rest, all[2..].to_vec());
    assert_eq!(
        d.documents(page(Some("c1"), None, 10)).await.unwrap(),
        vec![from_file.clone(), record.clone()]
    );
    assert!(
        d.documents(page(Some("none"), None, 10))
            .await
            .unwrap()
            .is_empty()
    );
    let mut everyone = d.all_documents().await.unwrap();
    assert_eq!(everyone.len(), 4);
    everyone.retain(|r| r.team_id == b);
    assert_eq!(everyone, vec![other_team]);

    // A document of a team that does not exist is refused.
    assert!(
        d.insert_document(document(&TeamId("team_none".into()), "c1", "ee", 1))
            .await
            .is_err()
    );

    // Deleting takes the chunks with it; it happens once.
    assert!(
        d.delete_document(a.clone(), record.id.clone())
            .await
            .unwrap()
    );
    assert!(
        !d.delete_document(a.clone(), record.id.clone())
            .await
            .unwrap()
    );
    assert!(d.chunks(chunk_ids).await.unwrap().is_empty());
    assert!(
        d.document_vectors(record.id.clone())
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(d.document(a.clone(), record.id).await.unwrap(), None);
    // The bytes can be uploaded again: a new document.
    new_document(&*d, document(&a, "c1", "ff", 1)).await;

    // Everything is still there after a restart.
    drop((s, d));
    let (_, d) = open(&backend, c).await;
    assert_eq!(d.documents(page(None, None, 10)).await.unwrap().len(), 3);
    assert_eq!(
        d.document(a.clone(), from_file.id.clone()).await.unwrap(),
        Some(from_file)
    );
}

/// Issue 17, `docs/DOCUMENTS.md`: "Two concurrent uploads of the same bytes store one
/// document" — here from two store handles (two replicas), many times at once: exactly one
/// insert is new, every other answers with that record, and only its chunks exist.
async fn replicas_uploading_the_same_bytes_at_once_store_one_document(backend: Backend) {
    const UPLOADS: usize = 16;
    let c = clock();
    let (s, one) = open(&backend, c.clone()).await;
    let (_, two) = open(&backend, c).await;
    let team = team_with_budget(&*s, None).await.id;
    for round in 0..3 {
        let sha = format!("race{round}");
        let mut tasks = tokio::task::JoinSet::new();
        for i in 0..UPLOADS {
            let store = if i % 2 == 0 { one.clone() } else { two.clone() };
            let d = document(&team, "c1", &sha, 4);
            tasks.spawn(async move { store.insert_document(d).await.unwrap() });
        }
        let mut new = Vec::new();
        let mut existing = Vec::new();
        while let Some(outcome) = tasks.join_next().await {
            match outcome.unwrap() {
                Inserted::New { record, chunk_ids } => new.push((record, chunk_ids)),
                Inserted::Existing(record) => existing.push(record),
            }
        }
        assert_eq!(new.len(), 1, "round {round}: exactly one upload is stored");
        let (record, chunk_ids) = new.pop().unwrap();
        assert_eq!(existing.len(), UPLOADS - 1);
        assert!(existing.iter().all(|r| *r == record), "round {round}");
        let stored: Vec<_> = one
            .all_documents()
            .await
            .unwrap()
            .into_iter()
            .filter(|d| d.sha256 == sha)
            .collect();
        assert_eq!(stored, vec![record.clone()]);
        let vectors = two.document_vectors(record.id).await.unwrap();
        assert_eq!(vectors.iter().map(|v| v.id).collect::<Vec<_>>(), chunk_ids);
    }
    assert_eq!(one.chunk_vectors("m@1".into()).await.unwrap().len(), 3 * 4);
}

async fn chunk_ids_derive_from_the_document_and_vectors_are_read_by_model_and_by_document(
    backend: Backend,
) {
    let (s, d) = open(&backend, clock()).await;
    let a = team_with_budget(&*s, None).await.id;
    let b = team_with_budget(&*s, None).await.id;

    // Large enough to span several insert statements on PostgreSQL.
    let big = document(&a, "c1", "big", 1_234);
    let expected = big.chunks.clone();
    let (big, big_ids) = new_document(&*d, big).await;
    assert_eq!(big_ids.len(), expected.len());
    // Issue 44: each id derives from the document's id and the chunk's ordinal, in ordinal
    // order, so a document ingested again (a resumed job) gets the same ids.
    assert_eq!(
        big_ids,
        (0..expected.len())
            .map(|i| chunk_id(&big.id, u32::try_from(i).unwrap()))
            .collect::<Vec<_>>(),
    );
    let (small, small_ids) = new_document(&*d, document(&b, "c9", "small", 2)).await;
    assert_eq!(
        small_ids,
        vec![chunk_id(&small.id, 0), chunk_id(&small.id, 1)]
    );
    let mut other = document(&a, "c1", "other-model", 3);
    other.model = "m@2".into();
    let (other, _) = new_document(&*d, other).await;

    // The chunks as citations show them; unknown ids are left out.
    let asked = vec![big_ids[7], small_ids[1], 9_999_999, big_ids[0], u64::MAX];
    let mut got = d.chunks(asked).await.unwrap();
    got.sort_by_key(|c| c.id);
    let mut want = vec![
        StoredChunk {
            id: big_ids[0],
            document_id: big.id.clone(),
            page: Some(1),
            paragraph: 1,
            text: expected[0].text.clone(),
        },
        StoredChunk {
            id: big_ids[7],
            document_id: big.id.clone(),
            page: None,
            paragraph: 8,
            text: expected[7].text.clone(),
        },
        StoredChunk {
            id: small_ids[1],
            document_id: small.id.clone(),
            page: None,
            paragraph: 2,
            text: "chunk 1 — نص".into(),
        },
    ];
    want.sort_by_key(|c| c.id);
    assert_eq!(got, want);
    assert!(d.chunks(Vec::new()).await.unwrap().is_empty());

    // A document's chunks in order, with their ids.
    let in_order = d.document_chunks(big.id.clone()).await.unwrap();
    assert_eq!(in_order.iter().map(|c| c.id).collect::<Vec<_>>(), big_ids);
    assert!(
        in_order
            .iter()
            .zip(&expected)
            .all(|(got, want)| got.paragraph == want.paragraph
                && got.page == want.page
                && got.text == want.text)
    );

    // The index rebuild: every chunk of the model's documents, documents in the order they
    // were made and each one's chunks in order, with team and collection.
    let m1 = d.chunk_vectors("m@1".into()).await.unwrap();
    assert_eq!(m1.len(), big_ids.len() + small_ids.len());
    let all_ids: Vec<u64> = big_ids.iter().chain(&small_ids).copied().collect();
    assert_eq!(m1.iter().map(|c| c.id).collect::<Vec<_>>(), all_ids);
    let first = &m1[0];
    assert_eq!(
        (
            first.id,
            first.team_id.as_str(),
            first.collection.as_str(),
            first.document_id.as_str(),
            first.text.as_str(),
        ),
        (
            big_ids[0],
            a.0.as_str(),
            "c1",
            big.id.as_str(),
            expected[0].text.as_str()
        )
    );
    assert!(
        m1.iter()
            .zip(&expected)
            .all(|(got, want)| got.vector == want.vector)
    );
    let last = m1.last().unwrap();
    assert_eq!(
        (
            last.team_id.as_str(),
            last.collection.as_str(),
            last.document_id.as_str()
        ),
        (b.0.as_str(), "c9", small.id.as_str())
    );
    assert_eq!(d.chunk_vectors("m@2".into()).await.unwrap().len(), 3);
    assert!(d.chunk_vectors("none".into()).await.unwrap().is_empty());

    // Another replica's upload, indexed here: one document's vectors.
    let one = d.document_vectors(other.id.clone()).await.unwrap();
    assert_eq!(one.len(), 3);
    assert!(
        one.iter()
            .all(|v| v.document_id == other.id && v.team_id == a.0)
    );
    assert_eq!(
        one.iter().map(|v| v.vector.clone()).collect::<Vec<_>>(),
        vec![vector(0), vector(1), vector(2)]
    );
    assert!(
        d.document_vectors("doc_none".into())
            .await
            .unwrap()
            .is_empty()
    );
}

async fn re_embedding_replaces_a_documents_vectors_and_model_only(backend: Backend) {
    let (s, d) = open(&backend, clock()).await;
    let a = team_with_budget(&*s, None).await.id;
    let (record, ids) = new_document(&*d, document(&a, "c1", "one", 3)).await;
    let (untouched, other_ids) = new_document(&*d, document(&a, "c1", "two", 2)).await;

    let mut vectors: Vec<(u64, Vec<u8>)> = ids.iter().map(|&id| (id, vec![9u8; 16])).collect();
    // A chunk of another document, and one that does not exist: left alone.
    vectors.push((other_ids[0], vec![7u8; 16]));
    vectors.push((u64::MAX, vec![7u8; 16]));
    d.replace_vectors(record.id.clone(), "m@2".into(), vectors)
        .await
        .unwrap();

    let moved = d.chunk_vectors("m@2".into()).await.unwrap();
    assert_eq!(moved.iter().map(|v| v.id).collect::<Vec<_>>(), ids);
    assert!(moved.iter().all(|v| v.vector == vec![9u8; 16]));
    assert_eq!(
        d.document(a.clone(), record.id.clone())
            .await
            .unwrap()
            .unwrap()
            .model,
        "m@2"
    );
    let kept = d.chunk_vectors("m@1".into()).await.unwrap();
    assert_eq!(kept.iter().map(|v| v.id).collect::<Vec<_>>(), other_ids);
    assert_eq!(
        kept.iter().map(|v| v.vector.clone()).collect::<Vec<_>>(),
        vec![vector(0), vector(1)]
    );
    assert_eq!(
        d.document(a.clone(), untouched.id)
            .await
            .unwrap()
            .unwrap()
            .model,
        "m@1"
    );

    // The model only (no vectors given), and a document that is gone: no error.
    d.replace_vectors(record.id.clone(), "m@3".into(), Vec::new())
        .await
        .unwrap();
    assert_eq!(d.chunk_vectors("m@3".into()).await.unwrap().len(), 3);
    d.replace_vectors(
        "doc_none".into(),
        "m@3".into(),
        vec![(ids[0], vec![1u8; 16])],
    )
    .await
    .unwrap();
    assert!(
        d.document_vectors(record.id)
            .await
            .unwrap()
            .iter()
            .all(|v| v.vector == vec![9u8; 16])
    );
}

fn file(team: &TeamId, name: &str, data: &[u8]) -> NewFile {
    NewFile {
        id: format!("file-{}", uuid::Uuid::now_v7().simple()),
        team_id: team.clone(),
        filename: name.into(),
        purpose: "assistants".into(),
        content_type: Some("application/pdf".into()),
        data: data.to_vec(),
    }
}

pub(super) fn vector_store(team: &TeamId, name: &str) -> VectorStoreRecord {
    VectorStoreRecord {
        id: format!("vs_{}", uuid::Uuid::now_v7().simple()),
        team_id: team.clone(),
        name: name.into(),
        metadata: r#"{"b":1,"a":2}"#.into(),
        // Set by the store.
        created_at: 0,
    }
}

async fn files_and_vector_stores_are_kept_within_their_team(backend: Backend) {
    let c = clock();
    let (s, d) = open(&backend, c.clone()).await;
    let a = team_with_budget(&*s, None).await.id;
    let b = team_with_budget(&*s, None).await.id;

    // Files: the bytes as given (all 256 byte values), newest first, only the team's.
    let bytes: Vec<u8> = (0..=255u8).cycle().take(70_000).collect();
    let first = d.create_file(file(&a, "report.pdf", &bytes)).await.unwrap();
    assert_eq!(
        (first.bytes, first.created_at, first.filename.as_str()),
        (70_000, T0, "report.pdf")
    );
    c.advance(10);
    let mut plain = file(&a, "notes.txt", b"");
    plain.content_type = None;
    let second = d.create_file(plain).await.unwrap();
    assert_eq!((second.bytes, second.created_at), (0, T0 + 10));
    let theirs = d.create_file(file(&b, "theirs.pdf", b"b")).await.unwrap();

    assert_eq!(
        d.file(a.clone(), first.id.clone()).await.unwrap(),
        Some((first.clone(), bytes.clone()))
    );
    assert_eq!(
        d.file(a.clone(), second.id.clone()).await.unwrap(),
        Some((second.clone(), Vec::new()))
    );
    assert_eq!(d.file(b.clone(), first.id.clone()).await.unwrap(), None);
    assert_eq!(
        d.files(a.clone()).await.unwrap(),
        vec![second.clone(), first.clone()]
    );
    assert_eq!(d.files(b.clone()).await.unwrap(), vec![theirs.clone()]);
    assert!(
        d.create_file(file(&TeamId("team_none".into()), "x", b"x"))
            .await
            .is_err()
    );
    let mut taken = file(&a, "again", b"x");
    taken.id = first.id.clone();
    assert!(d.create_file(taken).await.is_err(), "an id is one file");

    assert!(!d.delete_file(b.clone(), first.id.clone()).await.unwrap());
    assert!(d.delete_file(a.clone(), first.id.clone()).await.unwrap());
    assert!(!d.delete_file(a.clone(), first.id.clone()).await.unwrap());
    assert_eq!(d.file(a.clone(), first.id.clone()).await.unwrap(), None);
    assert_eq!(d.files(a.clone()).await.unwrap(), vec![second.clone()]);

    // Vector stores: metadata as written, newest first, only the team's.
    let vs1 = d
        .create_vector_store(vector_store(&a, "policies"))
        .await
        .unwrap();
    assert_eq!(
        (vs1.created_at, vs1.metadata.as_str()),
        (T0 + 10, r#"{"b":1,"a":2}"#)
    );
    c.advance(10);
    let vs2 = d
        .create_vector_store(vector_store(&a, "contracts"))
        .await
        .unwrap();
    let vs_b = d
        .create_vector_store(vector_store(&b, "theirs"))
        .await
        .unwrap();
    assert_eq!(
        d.vector_store(a.clone(), vs1.id.clone()).await.unwrap(),
        Some(vs1.clone())
    );
    assert_eq!(
        d.vector_store(b.clone(), vs1.id.clone()).await.unwrap(),
        None
    );
    assert_eq!(
        d.vector_stores(a.clone()).await.unwrap(),
        vec![vs2.clone(), vs1.clone()]
    );
    assert_eq!(
        d.vector_stores(b.clone()).await.unwrap(),
        vec![vs_b.clone()]
    );
    assert!(
        d.create_vector_store(vector_store(&TeamId("team_none".into()), "x"))
            .await
            .is_err()
    );

    // A file attached to a store is a document of the store's collection, one per file: the
    // same bytes from two files are two documents.
    let attach = |vs: &VectorStoreRecord, file_id: &str, sha: &str| {
        let mut doc = document(&vs.team_id, &vs.id, sha, 2);
        doc.file_id = Some(file_id.into());
        doc
    };
    let (in_vs1, in_vs1_ids) = new_document(&*d, attach(&vs1, &second.id, "s1")).await;
    let (also_in_vs1, _) = new_document(&*d, attach(&vs1, "file-other", "s1")).await;
    let (in_vs2, _) = new_document(&*d, attach(&vs2, &second.id, "s1")).await;
    let (in_vs_b, _) = new_document(&*d, attach(&vs_b, &theirs.id, "s1")).await;
    let Inserted::Existing(again) = d
        .insert_document(attach(&vs1, &second.id, "s1"))
        .await
        .unwrap()
    else {
        panic!("attaching the same file twice finds the document");
    };
    assert_eq!(again, in_vs1);

    // Deleting a store deletes its collection's documents and their chunks, nothing else; another
    // team cannot delete it.
    assert!(
        !d.delete_vector_store(b.clone(), vs1.id.clone())
            .await
            .unwrap()
    );
    assert!(
        d.delete_vector_store(a.clone(), vs1.id.clone())
            .await
            .unwrap()
    );
    assert!(
        !d.delete_vector_store(a.clone(), vs1.id.clone())
            .await
            .unwrap()
    );
    assert_eq!(
        d.vector_store(a.clone(), vs1.id.clone()).await.unwrap(),
        None
    );
    assert_eq!(d.document(a.clone(), in_vs1.id).await.unwrap(), None);
    assert_eq!(d.document(a.clone(), also_in_vs1.id).await.unwrap(), None);
    assert!(d.chunks(in_vs1_ids).await.unwrap().is_empty());
    assert_eq!(
        d.document(a.clone(), in_vs2.id.clone()).await.unwrap(),
        Some(in_vs2)
    );
    assert_eq!(
        d.document(b.clone(), in_vs_b.id.clone()).await.unwrap(),
        Some(in_vs_b)
    );
    assert_eq!(d.vector_stores(a.clone()).await.unwrap(), vec![vs2]);
    // The file itself stays (`DELETE /v1/files` is its own call).
    assert!(d.file(a, second.id).await.unwrap().is_some());
}

/// `docs/DOCUMENTS.md`: "A team's deletion deletes its documents, files and stores" — through
/// the `Store` trait, seen through `DocumentStore` on another handle.
async fn deleting_a_team_deletes_its_documents_files_and_vector_stores(backend: Backend) {
    let c = clock();
    let (s, d) = open(&backend, c.clone()).await;
    let (_, other_handle) = open(&backend, c).await;
    let gone = team_with_budget(&*s, None).await.id;
    let kept = team_with_budget(&*s, None).await.id;
    let mut made = Vec::new();
    for team in [&gone, &kept] {
        let (doc, ids) = new_document(&*d, document(team, "c1", "ff", 3)).await;
        let f = d.create_file(file(team, "a.pdf", b"%PDF")).await.unwrap();
        let vs = d
            .create_vector_store(vector_store(team, "vs"))
            .await
            .unwrap();
        let mut attached = document(team, &vs.id, "ff", 1);
        attached.file_id = Some(f.id.clone());
        let (attached, _) = new_document(&*d, attached).await;
        made.push((doc, attached, ids, f, vs));
    }
    let [doomed, survivor] = <[_; 2]>::try_from(made).unwrap();

    assert!(s.delete_team(gone.clone()).await.unwrap());
    let (doc, attached, ids, f, vs) = doomed;
    let h = &other_handle;
    assert_eq!(
        h.document(gone.clone(), doc.id.clone()).await.unwrap(),
        None
    );
    assert_eq!(h.document(gone.clone(), attached.id).await.unwrap(), None);
    assert!(h.chunks(ids).await.unwrap().is_empty());
    assert!(h.document_vectors(doc.id).await.unwrap().is_empty());
    assert_eq!(h.file(gone.clone(), f.id).await.unwrap(), None);
    assert!(h.files(gone.clone()).await.unwrap().is_empty());
    assert_eq!(h.vector_store(gone.clone(), vs.id).await.unwrap(), None);
    assert!(h.vector_stores(gone.clone()).await.unwrap().is_empty());
    assert!(
        h.all_documents()
            .await
            .unwrap()
            .iter()
            .all(|r| r.team_id != gone)
    );
    assert_eq!(h.chunk_vectors("m@1".into()).await.unwrap().len(), 3 + 1);
    // A document for the deleted team is refused.
    assert!(
        h.insert_document(document(&gone, "c1", "new", 1))
            .await
            .is_err()
    );

    let (doc, attached, ids, f, vs) = survivor;
    assert_eq!(
        h.document(kept.clone(), doc.id.clone()).await.unwrap(),
        Some(doc)
    );
    assert_eq!(
        h.document(kept.clone(), attached.id.clone()).await.unwrap(),
        Some(attached)
    );
    assert_eq!(h.chunks(ids).await.unwrap().len(), 3);
    assert!(h.file(kept.clone(), f.id).await.unwrap().is_some());
    assert_eq!(
        h.vector_store(kept.clone(), vs.id.clone()).await.unwrap(),
        Some(vs)
    );
}
