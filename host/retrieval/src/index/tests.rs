//! Unit tests of the hybrid index: fusion, filters, delete, replace, rebuild, compaction.

use super::chunks::REBUILD_BATCH;
use super::rank::Scored;
use super::search::PARALLEL_SCAN;
use super::*;

const DIM: usize = 8;

/// A unit vector pointing mostly along axis `axis`, with a small tilt toward `axis + 1`.
fn vec_at(axis: usize, tilt: f32) -> Vec<f32> {
    let mut v = vec![0.0; DIM];
    v[axis % DIM] = 1.0;
    v[(axis + 1) % DIM] = tilt;
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.into_iter().map(|x| x / n).collect()
}

fn add(
    index: &mut Index,
    id: u64,
    tenant: &str,
    collection: &str,
    doc: &str,
    text: &str,
    v: &[f32],
) {
    index
        .add(&ChunkInput {
            chunk_id: id,
            tenant,
            collection,
            document_id: doc,
            text,
            vector: v,
        })
        .unwrap();
}

fn sample() -> Index {
    let mut index = Index::new(DIM, "test-model");
    add(
        &mut index,
        1,
        "t1",
        "policies",
        "d1",
        "Wire transfers above 50,000 SAR need form WT-9.",
        &vec_at(0, 0.0),
    );
    add(
        &mut index,
        2,
        "t1",
        "policies",
        "d1",
        "Branches open at 8:30 and close at 15:00.",
        &vec_at(1, 0.0),
    );
    add(
        &mut index,
        3,
        "t1",
        "circulars",
        "d2",
        "تحويل الأموال يتطلب النموذج WT-9 للمبالغ الكبيرة",
        &vec_at(0, 0.3),
    );
    add(
        &mut index,
        4,
        "t2",
        "policies",
        "d3",
        "Wire transfers for team two.",
        &vec_at(0, 0.1),
    );
    index
}

fn ids(results: &SearchResults) -> Vec<u64> {
    results.hits.iter().map(|h| h.chunk_id).collect()
}

#[test]
fn hybrid_ranks_by_both_signals_and_reports_each() {
    let index = sample();
    let r = index
        .search(&vec_at(0, 0.0), "form WT-9", 3, &Filter::default())
        .unwrap();
    assert_eq!(r.hits[0].chunk_id, 1);
    let top = &r.hits[0];
    assert_eq!((top.vector_rank, top.bm25_rank), (Some(1), Some(1)));
    assert!((top.vector_sim - 1.0).abs() < 0.01);
    assert!(top.bm25 > 0.0);
    assert_eq!(top.terms_matched, 3);
    assert_eq!(r.query_terms, 3);
    assert_eq!(top.rank, 1);
    assert_eq!(&*top.document_id, "d1");
    assert!(r.bm25_top > 0.0 && r.bm25_top < r.bm25_ceiling);
    assert_eq!(r.vector_top.len(), 2);
}

#[test]
fn lexical_match_on_a_code_lifts_a_vector_miss() {
    let index = sample();
    // The vector points at chunk 2 (opening hours); the code "WT-9" only matches 1 and 3.
    let vector_only = index
        .search_with(
            &vec_at(1, 0.0),
            "WT-9",
            2,
            &Filter::default(),
            &SearchOptions {
                mode: Mode::VectorOnly,
                ..SearchOptions::default()
            },
        )
        .unwrap();
    assert_eq!(vector_only.hits[0].chunk_id, 2);
    let lexical = index
        .search_with(
            &vec_at(1, 0.0),
            "WT-9",
            4,
            &Filter::default(),
            &SearchOptions {
                mode: Mode::LexicalOnly,
                ..SearchOptions::default()
            },
        )
        .unwrap();
    let mut l = ids(&lexical);
    l.sort_unstable();
    assert_eq!(l, [1, 3]);
}

#[test]
fn tenant_collection_and_predicate_filters_hold() {
    let index = sample();
    let q = vec_at(0, 0.0);
    let t2 = index
        .search(
            &q,
            "wire transfers",
            10,
            &Filter {
                tenant: Some("t2"),
                ..Filter::default()
            },
        )
        .unwrap();
    assert_eq!(ids(&t2), [4]);
    let circulars = index
        .search(
            &q,
            "wire",
            10,
            &Filter {
                tenant: Some("t1"),
                collections: Some(&["circulars"]),
                ..Filter::default()
            },
        )
        .unwrap();
    assert_eq!(ids(&circulars), [3]);
    let not_d1 = |m: &ChunkMeta<'_>| m.document_id != "d1";
    let r = index
        .search(
            &q,
            "wire",
            10,
            &Filter {
                tenant: Some("t1"),
                predicate: Some(&not_d1),
                ..Filter::default()
            },
        )
        .unwrap();
    assert_eq!(ids(&r), [3]);
    let nobody = index
        .search(
            &q,
            "wire",
            10,
            &Filter {
                tenant: Some("t9"),
                ..Filter::default()
            },
        )
        .unwrap();
    assert!(nobody.hits.is_empty());
    let no_coll = index
        .search(
            &q,
            "wire",
            10,
            &Filter {
                collections: Some(&["nope"]),
                ..Filter::default()
            },
        )
        .unwrap();
    assert!(no_coll.hits.is_empty());
}

#[test]
fn deleted_documents_vanish_at_once() {
    let mut index = sample();
    assert_eq!(index.delete_document("d1"), 2);
    assert_eq!(index.delete_document("d1"), 0);
    assert_eq!(index.len(), 2);
    let r = index
        .search(&vec_at(0, 0.0), "form WT-9", 10, &Filter::default())
        .unwrap();
    assert!(
        !ids(&r).contains(&1) && !ids(&r).contains(&2),
        "{:?}",
        ids(&r)
    );
    assert!(index.delete_chunk(3));
    assert!(!index.delete_chunk(3));
    let r = index
        .search(&vec_at(0, 0.0), "WT-9", 10, &Filter::default())
        .unwrap();
    assert_eq!(ids(&r), [4]);
}

#[test]
fn adding_an_existing_chunk_id_replaces_it() {
    let mut index = sample();
    add(
        &mut index,
        2,
        "t1",
        "policies",
        "d1",
        "Branches now open at 9:00.",
        &vec_at(5, 0.0),
    );
    assert_eq!(index.len(), 4);
    let r = index
        .search(&vec_at(5, 0.0), "9", 10, &Filter::default())
        .unwrap();
    assert_eq!(r.hits[0].chunk_id, 2);
    assert!(r.hits[0].vector_sim > 0.99);
}

#[test]
fn wrong_dimensions_are_refused() {
    let mut index = sample();
    let err = index.search(&[1.0; 3], "x", 1, &Filter::default()).err();
    assert_eq!(
        err,
        Some(IndexError::Vector(VectorError::Dimensions {
            got: 3,
            want: DIM
        }))
    );
    let bad = ChunkInput {
        chunk_id: 9,
        tenant: "t",
        collection: "c",
        document_id: "d",
        text: "x",
        vector: &[0.0; 4],
    };
    assert!(index.add(&bad).is_err());
    assert_eq!(index.len(), 4);
}

#[test]
fn rebuilding_from_rows_gives_the_same_results() {
    let index = sample();
    let texts = [
        (
            1,
            "t1",
            "policies",
            "d1",
            "Wire transfers above 50,000 SAR need form WT-9.",
            vec_at(0, 0.0),
        ),
        (
            2,
            "t1",
            "policies",
            "d1",
            "Branches open at 8:30 and close at 15:00.",
            vec_at(1, 0.0),
        ),
        (
            3,
            "t1",
            "circulars",
            "d2",
            "تحويل الأموال يتطلب النموذج WT-9 للمبالغ الكبيرة",
            vec_at(0, 0.3),
        ),
        (
            4,
            "t2",
            "policies",
            "d3",
            "Wire transfers for team two.",
            vec_at(0, 0.1),
        ),
    ];
    let bytes: Vec<Vec<u8>> = texts.iter().map(|t| vector_to_bytes(&t.5)).collect();
    let rows = texts.iter().zip(&bytes).map(|(t, b)| ChunkRow {
        chunk_id: t.0,
        tenant: t.1,
        collection: t.2,
        document_id: t.3,
        text: t.4,
        vector_bytes: b,
    });
    let rebuilt = Index::from_rows(DIM, "test-model", rows).unwrap();
    let q = vec_at(0, 0.2);
    let a = index
        .search(&q, "تحويل WT-9", 4, &Filter::default())
        .unwrap();
    let b = rebuilt
        .search(&q, "تحويل WT-9", 4, &Filter::default())
        .unwrap();
    assert_eq!(a, b);
}

#[test]
fn compaction_after_many_deletes_keeps_the_survivors_searchable() {
    let mut index = Index::new(DIM, "m");
    for i in 0..200u64 {
        let doc = format!("doc{}", i / 2);
        let text = format!("chunk number {i} topic{}", i % 7);
        add(
            &mut index,
            i,
            "t",
            "c",
            &doc,
            &text,
            &vec_at(i as usize, 0.1),
        );
    }
    for d in 0..60 {
        index.delete_document(&format!("doc{d}"));
    }
    assert_eq!(index.len(), 80);
    // Compaction ran at 64 dead of 200 slots; the later deletions are tombstones.
    assert_eq!((index.slots.len(), index.dead), (136, 56));
    // Vectors repeat every DIM chunks: 150 shares its vector with 126, 134, …, its number with none.
    let r = index
        .search(&vec_at(150, 0.1), "topic3 150", 5, &Filter::default())
        .unwrap();
    assert!(r.hits.iter().all(|h| h.chunk_id >= 120));
    assert_eq!(r.hits[0].chunk_id, 150);
    assert_eq!(index.delete_document("doc75"), 2);
    let r = index
        .search(&vec_at(150, 0.1), "150", 5, &Filter::default())
        .unwrap();
    assert!(!ids(&r).contains(&150));
}

#[test]
fn arabic_spelling_variants_match_lexically() {
    let mut index = Index::new(DIM, "m");
    add(
        &mut index,
        1,
        "t",
        "c",
        "d",
        "تُقدَّم الطلبات إلى إدارة الموارد البشرية",
        &vec_at(0, 0.0),
    );
    add(
        &mut index,
        2,
        "t",
        "c",
        "d2",
        "جدول المناوبات الليلية",
        &vec_at(1, 0.0),
    );
    let r = index
        .search_with(
            &vec_at(4, 0.0),
            "ادارة الموارد",
            2,
            &Filter::default(),
            &SearchOptions {
                mode: Mode::LexicalOnly,
                ..SearchOptions::default()
            },
        )
        .unwrap();
    assert_eq!(ids(&r), [1]);
}

/// A unit vector with cosine `c` to axis 0, the rest on axis `axis`.
fn with_cosine(c: f32, axis: usize, dim: usize) -> Vec<f32> {
    let mut v = vec![0.0; dim];
    v[0] = c;
    v[axis] = (1.0 - c * c).sqrt();
    v
}

#[test]
fn script_balancing_lets_a_standout_in_the_other_language_win() {
    // English chunks all score ~0.8 against the query (e5's same-language bonus), Arabic ones
    // ~0.6 except the answer at 0.7: on raw cosine English wins, per script the answer stands out.
    let dim = 16;
    let mut index = Index::new(dim, "m");
    let english = [0.80, 0.79, 0.79, 0.78, 0.78];
    let arabic = [0.70, 0.60, 0.61, 0.60, 0.59];
    for (i, c) in english.iter().enumerate() {
        add(
            &mut index,
            i as u64,
            "t",
            "c",
            "en",
            "opening hours of the branch",
            &with_cosine(*c, i + 1, dim),
        );
    }
    for (i, c) in arabic.iter().enumerate() {
        add(
            &mut index,
            10 + i as u64,
            "t",
            "c",
            "ar",
            "ساعات عمل الفرع",
            &with_cosine(*c, i + 6, dim),
        );
    }
    let q = with_cosine(1.0, 1, dim);
    let search = |balance_scripts| {
        index
            .search_with(
                &q,
                "",
                3,
                &Filter::default(),
                &SearchOptions {
                    mode: Mode::VectorOnly,
                    balance_scripts,
                    ..SearchOptions::default()
                },
            )
            .unwrap()
    };
    assert_eq!(search(false).hits[0].chunk_id, 0);
    let balanced = search(true);
    assert_eq!(balanced.hits[0].chunk_id, 10);
    // The reported similarity stays the raw cosine; the z-score is reported for confidence.
    assert!((balanced.hits[0].vector_sim - 0.70).abs() < 0.01);
    assert!((balanced.vector_top[0] - 0.80).abs() < 0.01);
    assert!(balanced.vector_top_z > 1.5, "{}", balanced.vector_top_z);
}

#[test]
fn every_fusion_keeps_an_agreed_winner_first() {
    let index = sample();
    for fusion in [
        Fusion::Rrf,
        Fusion::EvidenceRrf,
        Fusion::Scores { lexical: 1.0 },
    ] {
        let r = index
            .search_with(
                &vec_at(0, 0.0),
                "form WT-9",
                3,
                &Filter::default(),
                &SearchOptions {
                    fusion,
                    ..SearchOptions::default()
                },
            )
            .unwrap();
        assert_eq!(r.hits[0].chunk_id, 1, "{fusion:?}");
    }
}

#[test]
fn the_threaded_scan_ranks_exactly_like_the_sequential_one() {
    // Above PARALLEL_SCAN slots the vector scan is split over threads.
    let n = PARALLEL_SCAN as u64 + 1234;
    let mut index = Index::new(DIM, "m");
    for i in 0..n {
        let tenant = if i % 3 == 0 { "a" } else { "b" };
        add(
            &mut index,
            i,
            tenant,
            "c",
            &format!("d{}", i / 10),
            "x",
            &vec_at(i as usize, (i % 97) as f32 / 97.0),
        );
    }
    let q = vec_at(5, 0.5);
    let prepared = index.vectors.prepare(&q).unwrap();
    let accept = |slot: usize| index.slots[slot].tenant == index.names.get("a").unwrap_or(u32::MAX);
    let threaded = index.scan(&index.vectors, &prepared, &accept);
    let sequential: Vec<Scored> = (0..index.slots.len())
        .filter(|&s| accept(s))
        .map(|s| Scored(index.vectors.similarity(&prepared, s), s as u32))
        .collect();
    assert_eq!(threaded, sequential);
    let r = index
        .search(
            &q,
            "",
            5,
            &Filter {
                tenant: Some("a"),
                ..Filter::default()
            },
        )
        .unwrap();
    assert!(r.hits.iter().all(|h| h.chunk_id % 3 == 0));
}

#[test]
fn a_rebuild_over_several_batches_matches_adding_one_by_one() {
    let n = REBUILD_BATCH + 777;
    let texts: Vec<String> = (0..n)
        .map(|i| format!("بند {i} clause{} الفقرة", i % 13))
        .collect();
    let vectors: Vec<Vec<u8>> = (0..n)
        .map(|i| vector_to_bytes(&vec_at(i, (i % 11) as f32 / 11.0)))
        .collect();
    let docs: Vec<String> = (0..n).map(|i| format!("d{}", i / 5)).collect();
    let rows = (0..n).map(|i| ChunkRow {
        chunk_id: i as u64,
        tenant: "t",
        collection: "c",
        document_id: &docs[i],
        text: &texts[i],
        vector_bytes: &vectors[i],
    });
    let rebuilt = Index::from_rows(DIM, "m", rows).unwrap();
    let mut added = Index::new(DIM, "m");
    for i in 0..n {
        add(
            &mut added,
            i as u64,
            "t",
            "c",
            &docs[i],
            &texts[i],
            &vector_from_bytes(&vectors[i]).unwrap(),
        );
    }
    assert_eq!(rebuilt.len(), n);
    let q = vec_at(3, 0.4);
    for text in ["بند 4100 clause5", "الفقره clause12", ""] {
        let a = rebuilt.search(&q, text, 10, &Filter::default()).unwrap();
        let b = added.search(&q, text, 10, &Filter::default()).unwrap();
        assert_eq!(a, b, "{text}");
    }
    let bad = [ChunkRow {
        chunk_id: 1,
        tenant: "t",
        collection: "c",
        document_id: "d",
        text: "x",
        vector_bytes: &[1, 2, 3],
    }];
    assert!(Index::from_rows(DIM, "m", bad).is_err());
}

fn random_unit(seed: u64, dim: usize) -> Vec<f32> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let v: Vec<f32> = (0..dim)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 40) as f32 / (1u64 << 24) as f32 - 0.5
        })
        .collect();
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.into_iter().map(|x| x / n).collect()
}

#[test]
fn the_hnsw_path_agrees_with_exact_search_filters_and_deletes() {
    let (n, dim) = (2000u64, 32);
    let mut index = Index::new(dim, "m");
    for i in 0..n {
        let tenant = if i % 10 == 0 { "small" } else { "big" };
        let text = format!("clause {i}");
        add(
            &mut index,
            i,
            tenant,
            "c",
            &format!("d{i}"),
            &text,
            &random_unit(i, dim),
        );
    }
    index.enable_ann();
    assert!(index.has_ann());
    let exact = SearchOptions {
        exact_vectors: true,
        mode: Mode::VectorOnly,
        ..SearchOptions::default()
    };
    let approx = SearchOptions {
        mode: Mode::VectorOnly,
        ..SearchOptions::default()
    };
    let mut same_top = 0;
    for q in 0..40 {
        let v = random_unit(10_000 + q, dim);
        let a = index
            .search_with(&v, "", 5, &Filter::default(), &approx)
            .unwrap();
        let e = index
            .search_with(&v, "", 5, &Filter::default(), &exact)
            .unwrap();
        same_top += usize::from(a.hits[0].chunk_id == e.hits[0].chunk_id);
    }
    assert!(same_top >= 38, "top-1 agreement {same_top}/40");
    // A filter keeping a tenth of the chunks scans exactly: only that tenant comes back.
    let small = Filter {
        tenant: Some("small"),
        ..Filter::default()
    };
    let r = index
        .search_with(&random_unit(7, dim), "", 10, &small, &approx)
        .unwrap();
    assert_eq!(r.hits.len(), 10);
    assert!(r.hits.iter().all(|h| h.chunk_id % 10 == 0));
    // Deleted chunks never come back from the graph either.
    let target = random_unit(1234, dim);
    let before = index
        .search_with(&target, "", 1, &Filter::default(), &approx)
        .unwrap();
    assert_eq!(before.hits[0].chunk_id, 1234);
    index.delete_document("d1234");
    let after = index
        .search_with(&target, "", 5, &Filter::default(), &approx)
        .unwrap();
    assert!(after.hits.iter().all(|h| h.chunk_id != 1234));
    // Compaction renumbers slots and rebuilds the graph.
    for d in 0..600 {
        index.delete_document(&format!("d{d}"));
    }
    assert!(index.has_ann());
    let v = random_unit(1500, dim);
    let r = index
        .search_with(&v, "", 1, &Filter::default(), &approx)
        .unwrap();
    assert_eq!(r.hits[0].chunk_id, 1500);
}

#[test]
fn the_prior_gives_a_lone_chunk_a_z_score_and_fades_in_a_large_collection() {
    let dim = 16;
    let prior = ScorePrior {
        cosine: [[(0.5, 0.1); 2]; 2],
        weight: 10.0,
    };
    let q = with_cosine(1.0, 1, dim);
    let mut index = Index::new(dim, "m");
    assert!(index.score_prior().is_none());
    add(
        &mut index,
        1,
        "t",
        "c",
        "d",
        "records",
        &with_cosine(0.8, 1, dim),
    );
    // Without a prior one chunk is its own mean: z = 0, and no lead over anything.
    let alone = index.search(&q, "", 5, &Filter::default()).unwrap();
    assert_eq!(alone.vector_top_z, 0.0);
    assert!((alone.vector_top_baseline - 0.8).abs() < 0.01);
    assert_eq!(alone.vector_candidates, 1);
    // With it: the chunk among 10 virtual chunks of mean 0.5, sd 0.1.
    index.set_score_prior(Some(prior));
    let r = index.search(&q, "", 5, &Filter::default()).unwrap();
    let x = f64::from(r.vector_top[0]);
    let mean = (x + 10.0 * 0.5) / 11.0;
    let sd = ((x * x + 10.0 * (0.01 + 0.25)) / 11.0 - mean * mean).sqrt();
    assert!(
        (f64::from(r.vector_top_z) - (x - mean) / sd).abs() < 1e-4,
        "{} vs {}",
        r.vector_top_z,
        (x - mean) / sd
    );
    assert!(r.vector_top_z > 2.0, "{}", r.vector_top_z);
    assert!((f64::from(r.vector_top_baseline) - mean).abs() < 1e-4);

    // A thousand chunks: the prior's ten virtual ones barely move the z-score.
    let mut large = Index::new(dim, "m");
    for i in 0..1000u64 {
        let c = 0.3 + 0.4 * (i as f32 / 1000.0);
        add(&mut large, i, "t", "c", "d", "x", &with_cosine(c, 2, dim));
    }
    add(
        &mut large,
        5000,
        "t",
        "c",
        "d",
        "x",
        &with_cosine(0.95, 2, dim),
    );
    let plain = large.search(&q, "", 1, &Filter::default()).unwrap();
    large.set_score_prior(Some(prior));
    let pooled = large.search(&q, "", 1, &Filter::default()).unwrap();
    assert_eq!(plain.hits[0].chunk_id, 5000);
    assert_eq!(pooled.hits[0].chunk_id, 5000);
    assert!(
        (plain.vector_top_z - pooled.vector_top_z).abs() < 0.05,
        "{} vs {}",
        plain.vector_top_z,
        pooled.vector_top_z
    );
}

#[test]
fn list_overlap_counts_out_of_the_chunks_a_small_collection_has() {
    let mut index = Index::new(DIM, "m");
    add(
        &mut index,
        1,
        "t",
        "c",
        "d",
        "records kept ten years",
        &vec_at(0, 0.0),
    );
    add(
        &mut index,
        2,
        "t",
        "c",
        "d",
        "screens locked",
        &vec_at(1, 0.0),
    );
    add(
        &mut index,
        3,
        "t",
        "c",
        "d",
        "complaints answered",
        &vec_at(2, 0.0),
    );
    // Only chunk 1 matches a term: one of the three possible, not one of five.
    let r = index
        .search(&vec_at(0, 0.0), "records", 5, &Filter::default())
        .unwrap();
    assert!(
        (r.list_overlap - 1.0 / 3.0).abs() < 1e-6,
        "{}",
        r.list_overlap
    );
}

#[test]
fn an_index_starts_without_a_prior_and_takes_the_one_it_is_given() {
    // `index` stays below `confidence`: the host looks the committed prior up and sets it.
    let c = &crate::confidence::CALIBRATIONS[0];
    let host_key = format!("{}@{}", c.model_id, &c.model_sha256[..12]);
    let mut index = Index::new(DIM, host_key.as_str());
    assert!(index.score_prior().is_none());
    index.set_score_prior(Some(c.score_prior));
    assert_eq!(index.score_prior(), Some(&c.score_prior));
    index.set_score_prior(None);
    assert!(index.score_prior().is_none());
}
