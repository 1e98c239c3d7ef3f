//! The webhook part of the `Store` trait's contract, on both back ends: subscriptions, secret
//! rotation, the outbox (seqs in order, attempts, re-drive, pruning), deliveries becoming visible
//! in seq order when replicas enqueue at once, and the delivery lease.

use std::collections::HashSet;
use std::sync::Arc;

use sovereign::store::webhooks::{
    Attempt, AttemptRecord, DeliveryFilter, DeliveryState, NewDelivery, NewWebhook, Outcome,
};
use sovereign::store::*;

use super::{Backend, T0, clock, on_both_back_ends};

on_both_back_ends!(
    the_outbox_keeps_order_and_records_attempts,
    deliveries_become_visible_in_seq_order_across_replicas,
    one_replica_at_a_time_holds_a_webhook_lease,
);

fn delivery(webhook: &str, n: usize) -> NewDelivery {
    NewDelivery {
        webhook_id: webhook.into(),
        event_id: format!("evt_{n}"),
        kind: "key.created".into(),
        payload: format!(r#"{{"n":{n}}}"#),
    }
}

async fn the_outbox_keeps_order_and_records_attempts(backend: Backend) {
    let c = clock();
    let s = backend.open(c.clone()).await;
    let w = s
        .create_webhook(NewWebhook {
            url: "https://example.com/hook".into(),
            events: vec!["key.created".into(), "team.*".into()],
            team_id: None,
            shaper: Some("slack".into()),
            secret: "whsec_one".into(),
            description: Some("ops".into()),
        })
        .await
        .unwrap();
    assert!(w.id.starts_with("wh_"));
    assert_eq!(s.webhooks().await.unwrap(), vec![w.clone()]);

    // Rotation: the old secret signs for the grace, then (grace 0) not at all.
    let r = s
        .rotate_webhook_secret(w.id.clone(), "whsec_two".into(), 60_000)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (
            r.secret.as_str(),
            r.previous_secret.as_deref(),
            r.previous_until
        ),
        ("whsec_two", Some("whsec_one"), Some(T0 + 60_000))
    );
    let r = s
        .rotate_webhook_secret(w.id.clone(), "whsec_three".into(), 0)
        .await
        .unwrap()
        .unwrap();
    assert_eq!((r.previous_secret, r.previous_until), (None, None));
    assert_eq!(
        s.rotate_webhook_secret("wh_nope".into(), "x".into(), 0)
            .await
            .unwrap(),
        None
    );

    // A batch takes its seqs in order; a subscription that is gone takes nothing (0).
    let seqs = s
        .enqueue_deliveries(vec![
            delivery(&w.id, 1),
            delivery("wh_gone", 2),
            delivery(&w.id, 3),
            delivery(&w.id, 4),
        ])
        .await
        .unwrap();
    assert_eq!(seqs[1], 0);
    assert!(
        seqs[0] > 0 && seqs[0] < seqs[2] && seqs[2] < seqs[3],
        "{seqs:?}"
    );
    let pending = s.pending_deliveries(w.id.clone(), 0, 10).await.unwrap();
    let got: Vec<i64> = pending.iter().map(|d| d.seq).collect();
    assert_eq!(got, [seqs[0], seqs[2], seqs[3]]);
    assert_eq!(
        (
            pending[0].state,
            pending[0].attempts,
            pending[0].created_at,
            pending[0].age_from,
            pending[0].next_attempt_at
        ),
        (DeliveryState::Pending, 0, T0, T0, T0)
    );
    assert_eq!(pending[0].payload, r#"{"n":1}"#);
    let after = s
        .pending_deliveries(w.id.clone(), seqs[0], 1)
        .await
        .unwrap();
    assert_eq!(after.len(), 1);
    assert_eq!(after[0].seq, seqs[2]);

    let attempt = |at, status: Option<u16>, error: Option<&str>| Attempt {
        at,
        duration_ms: 12,
        status,
        error: error.map(str::to_string),
    };
    s.record_attempts(vec![
        AttemptRecord {
            seq: seqs[0],
            attempt: attempt(T0 + 1, Some(500), Some("server error")),
            outcome: Outcome::Retry { next_at: T0 + 100 },
        },
        AttemptRecord {
            seq: seqs[0],
            attempt: attempt(T0 + 100, Some(200), None),
            outcome: Outcome::Delivered,
        },
        AttemptRecord {
            seq: seqs[2],
            attempt: attempt(T0 + 2, None, Some("refused")),
            outcome: Outcome::Dead,
        },
        AttemptRecord {
            seq: 999_999,
            attempt: attempt(T0 + 3, None, None),
            outcome: Outcome::Dead,
        },
    ])
    .await
    .unwrap();
    let all = s
        .deliveries(
            w.id.clone(),
            DeliveryFilter {
                limit: 10,
                ..DeliveryFilter::default()
            },
        )
        .await
        .unwrap();
    let newest_first: Vec<i64> = all.iter().map(|d| d.seq).collect();
    assert_eq!(newest_first, [seqs[3], seqs[2], seqs[0]]);
    let first = &all[2];
    assert_eq!(
        (
            first.state,
            first.attempts,
            first.last_status,
            first.done_at,
            first.next_attempt_at
        ),
        (
            DeliveryState::Delivered,
            2,
            Some(200),
            Some(T0 + 100),
            T0 + 100
        )
    );
    assert_eq!(
        first.log,
        vec![
            attempt(T0 + 1, Some(500), Some("server error")),
            attempt(T0 + 100, Some(200), None)
        ]
    );
    let dead = s
        .deliveries(
            w.id.clone(),
            DeliveryFilter {
                state: Some(DeliveryState::Dead),
                before_seq: None,
                limit: 10,
            },
        )
        .await
        .unwrap();
    assert_eq!(dead.len(), 1);
    assert_eq!(
        (dead[0].seq, dead[0].last_error.as_deref()),
        (seqs[2], Some("refused"))
    );
    let page = s
        .deliveries(
            w.id.clone(),
            DeliveryFilter {
                state: None,
                before_seq: Some(seqs[3]),
                limit: 1,
            },
        )
        .await
        .unwrap();
    assert_eq!(page.len(), 1);
    assert_eq!(page[0].seq, seqs[2]);

    // Re-drive: dead letters back to pending, their age counted afresh.
    c.advance(5_000);
    assert_eq!(
        s.redrive(w.id.clone(), Some(vec![seqs[0], seqs[2]]))
            .await
            .unwrap(),
        1
    );
    assert_eq!(s.redrive(w.id.clone(), None).await.unwrap(), 0);
    let pending = s.pending_deliveries(w.id.clone(), 0, 10).await.unwrap();
    let redriven = pending.iter().find(|d| d.seq == seqs[2]).unwrap();
    assert_eq!(
        (
            redriven.age_from,
            redriven.next_attempt_at,
            redriven.done_at
        ),
        (T0 + 5_000, T0 + 5_000, None)
    );
    // Pruning takes finished deliveries only.
    assert_eq!(s.prune_deliveries(T0 + 100).await.unwrap(), 0);
    assert_eq!(s.prune_deliveries(T0 + 101).await.unwrap(), 1);
    // Deleting the subscription takes its outbox.
    assert!(s.delete_webhook(w.id.clone()).await.unwrap());
    assert!(!s.delete_webhook(w.id.clone()).await.unwrap());
    assert!(
        s.pending_deliveries(w.id.clone(), 0, 10)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        s.enqueue_deliveries(vec![delivery(&w.id, 5)])
            .await
            .unwrap(),
        [0]
    );
}

/// A webhook worker reads its outbox after the highest seq it has seen. With batches enqueued at
/// once from two handles (two replicas), a delivery must never become visible after one with a
/// higher seq, or the worker would pass it by: the reader here sees every one, exactly once, in
/// order.
async fn deliveries_become_visible_in_seq_order_across_replicas(backend: Backend) {
    const WRITERS: usize = 6;
    const BATCHES: usize = 15;
    const PER_BATCH: usize = 3;
    let c = clock();
    let (a, b) = (backend.open(c.clone()).await, backend.open(c).await);
    let w = a
        .create_webhook(NewWebhook {
            url: "https://example.com/hook".into(),
            events: vec!["*".into()],
            team_id: None,
            shaper: None,
            secret: "whsec_x".into(),
            description: None,
        })
        .await
        .unwrap();
    let mut writers = tokio::task::JoinSet::new();
    for i in 0..WRITERS {
        let store = Arc::clone(if i % 2 == 0 { &a } else { &b });
        let id = w.id.clone();
        writers.spawn(async move {
            for n in 0..BATCHES {
                let batch = (0..PER_BATCH)
                    .map(|k| delivery(&id, (i * BATCHES + n) * PER_BATCH + k))
                    .collect();
                store.enqueue_deliveries(batch).await.unwrap();
            }
        });
    }
    let reader = {
        let store = Arc::clone(&b);
        let id = w.id.clone();
        tokio::spawn(async move {
            let (mut after, mut seen) = (0, Vec::new());
            while seen.len() < WRITERS * BATCHES * PER_BATCH {
                let page = store
                    .pending_deliveries(id.clone(), after, 7)
                    .await
                    .unwrap();
                if let Some(last) = page.last() {
                    after = last.seq;
                }
                seen.extend(page.into_iter().map(|d| d.event_id));
                tokio::task::yield_now().await;
            }
            seen
        })
    };
    while let Some(r) = writers.join_next().await {
        r.unwrap();
    }
    let seen = tokio::time::timeout(std::time::Duration::from_secs(30), reader)
        .await
        .expect("the reader missed deliveries (one became visible behind its cursor)")
        .unwrap();
    let unique: HashSet<&String> = seen.iter().collect();
    assert_eq!(unique.len(), WRITERS * BATCHES * PER_BATCH);
}

/// The right to deliver a subscription's outbox: exclusive where replicas share the store, until
/// it lapses by the store's clock; SQLite, which one process opens, grants it always.
async fn one_replica_at_a_time_holds_a_webhook_lease(backend: Backend) {
    let shared = matches!(backend, Backend::Postgres(_));
    let c = clock();
    let (a, b) = (backend.open(c.clone()).await, backend.open(c.clone()).await);
    let w = a
        .create_webhook(NewWebhook {
            url: "https://example.com/hook".into(),
            events: vec!["*".into()],
            team_id: None,
            shaper: None,
            secret: "whsec_x".into(),
            description: None,
        })
        .await
        .unwrap();
    let claim = |s: &Arc<dyn Store>, owner: &str, until| {
        let (s, id, owner) = (Arc::clone(s), w.id.clone(), owner.to_string());
        async move { s.claim_webhook(id, owner, until).await.unwrap() }
    };
    // Two replicas at once: one wins.
    let (x, y) = tokio::join!(
        claim(&a, "replica-a", T0 + 10_000),
        claim(&b, "replica-b", T0 + 10_000)
    );
    if shared {
        assert!(x != y, "exactly one holds it: {x} {y}");
    } else {
        assert!(x && y);
    }
    let (holder, other, hs, os) = if x {
        ("replica-a", "replica-b", &a, &b)
    } else {
        ("replica-b", "replica-a", &b, &a)
    };
    // The holder renews; the other is refused until the lease lapses.
    assert!(claim(hs, holder, T0 + 20_000).await);
    c.set(T0 + 19_999);
    assert_eq!(claim(os, other, T0 + 30_000).await, !shared);
    c.set(T0 + 20_000);
    assert!(claim(os, other, T0 + 30_000).await);
    assert_eq!(claim(hs, holder, T0 + 30_000).await, !shared);
    if shared {
        assert!(
            !a.claim_webhook("wh_gone".into(), "replica-a".into(), T0 + 30_000)
                .await
                .unwrap()
        );
    }
}
