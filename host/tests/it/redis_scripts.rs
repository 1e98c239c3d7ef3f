//! The shared state's scripts against a real Redis (issue 17), where batching must not change an
//! answer: a batch of settlements answers, for each one, what settling them one at a time would
//! have answered (the spend after it, the thresholds it crossed); admissions sent at once, batched
//! into shared script calls, are exact per rate key.

use std::time::Duration;

use sovereign::config::{OnFailure, RedisConfig};
use sovereign::shared::{LeaseTerms, RedisShared, Reserved, Settled, Settlement};

use crate::services::Redis;

const THRESHOLDS: [u32; 3] = [50, 80, 100];
const DAY: i64 = 20_000;

async fn connect(redis: &Redis) -> RedisShared {
    let config = RedisConfig {
        url: redis.url(),
        namespace: "ledger-test".into(),
        on_failure: OnFailure::Closed,
        key_cache_ttl: Duration::from_secs(5),
        timeout: Duration::from_secs(2),
    };
    RedisShared::connect(&config, "replica-a").await.unwrap()
}

fn settlement(reserved: i64, actual: i64, tokens: u64) -> Settlement {
    Settlement {
        scopes: ["team:t".into(), "key:k".into()],
        reserved: [reserved, reserved],
        actual,
        tokens,
        day: DAY,
    }
}

fn settled(spent: i64, limit: i64, newly: u64) -> Settled {
    Settled {
        spent,
        limit: Some(limit),
        newly,
    }
}

#[tokio::test]
async fn a_batch_of_settlements_answers_each_as_if_settled_alone() {
    let Some(redis) = Redis::start() else { return };
    let shared = connect(&redis).await;
    shared
        .load("team:t", Some(50_000), 0, &THRESHOLDS)
        .await
        .unwrap();
    shared
        .load("key:k", Some(100_000), 0, &THRESHOLDS)
        .await
        .unwrap();
    // Ten requests' reservations held in this replica's lease (no headroom: the tail is long).
    let terms = LeaseTerms {
        ttl: Duration::from_secs(30),
        tail: 1_000,
        most: 0,
    };
    let scopes = ["team:t".to_string(), "key:k".to_string()];
    for _ in 0..10 {
        let r = shared
            .acquire(&scopes, 5_000, &[0, 0], terms)
            .await
            .unwrap();
        assert_eq!(r, Reserved::Admitted(vec![Some(0), Some(0)]));
    }
    assert_eq!(
        shared.counters("team:t").await.unwrap().unwrap().reserved,
        50_000
    );

    // All ten settled in one call, each spending what it reserved.
    let batch: Vec<Settlement> = (0..10).map(|_| settlement(5_000, 5_000, 7)).collect();
    let answers = shared.settle(&batch, &THRESHOLDS).await.unwrap();
    let mut expected = Vec::new();
    for i in 1..=10_i64 {
        let team_newly = match i {
            5 => 0b001,
            8 => 0b010,
            10 => 0b100,
            _ => 0,
        };
        expected.push(settled(5_000 * i, 50_000, team_newly));
        expected.push(settled(5_000 * i, 100_000, if i == 10 { 0b001 } else { 0 }));
    }
    assert_eq!(answers, expected);

    // Written once, as the sum: spent, the lease emptied, the day's tokens counted.
    let team = shared.counters("team:t").await.unwrap().unwrap();
    assert_eq!(
        (team.spent, team.reserved, team.limit),
        (50_000, 0, Some(50_000))
    );
    let (_, used) = shared
        .admit(None, Some((scopes.clone(), DAY)))
        .await
        .unwrap();
    assert_eq!(used, Some([70, 70]));

    // The thresholds stay fired: a later settlement announces nothing again.
    let answers = shared
        .settle(&[settlement(0, 1_000, 1)], &THRESHOLDS)
        .await
        .unwrap();
    assert_eq!(
        answers,
        vec![settled(51_000, 50_000, 0), settled(51_000, 100_000, 0)]
    );
}

#[tokio::test]
async fn a_scope_redis_lost_answers_unloaded_and_the_rest_settles() {
    let Some(redis) = Redis::start() else { return };
    let shared = connect(&redis).await;
    shared.load("key:k", None, 100, &THRESHOLDS).await.unwrap();
    // `team:t` was never loaded (as after Redis lost it); `key:k` has no limit.
    let answers = shared
        .settle(&[settlement(0, 10, 3), settlement(0, 20, 4)], &THRESHOLDS)
        .await
        .unwrap();
    let unloaded = Settled {
        spent: -1,
        limit: None,
        newly: 0,
    };
    let unlimited = |spent| Settled {
        spent,
        limit: None,
        newly: 0,
    };
    assert_eq!(
        answers,
        vec![unloaded, unlimited(110), unloaded, unlimited(130)]
    );
    assert!(shared.counters("team:t").await.unwrap().is_none());
    assert_eq!(shared.counters("key:k").await.unwrap().unwrap().spent, 130);
}

#[tokio::test]
async fn admissions_sent_at_once_are_exact_per_rate_key() {
    let Some(redis) = Redis::start() else { return };
    let shared = connect(&redis).await;
    shared
        .add_tokens(&["key:a", "team:t"], DAY, 42)
        .await
        .unwrap();
    let tokens = || Some((["key:a".to_string(), "team:t".to_string()], DAY));
    // Forty on a burst of 5 (one a minute after it), ten on a burst of 20, all at once.
    let a = (0..40).map(|_| shared.admit(Some(("key:a".into(), 1, 5)), tokens()));
    let b = (0..10).map(|_| shared.admit(Some(("key:b".into(), 1, 20)), None));
    let (a, b) = tokio::join!(
        futures_util::future::join_all(a),
        futures_util::future::join_all(b)
    );
    let a: Vec<_> = a.into_iter().map(Result::unwrap).collect();
    let admitted: Vec<u32> = a
        .iter()
        .filter_map(|(d, _)| d.filter(|d| d.retry_after.is_none()).map(|d| d.remaining))
        .collect();
    assert_eq!(
        admitted,
        [4, 3, 2, 1, 0],
        "in order, each sees the ones before it"
    );
    for (d, used) in &a {
        assert_eq!(*used, Some([42, 42]));
        let d = d.unwrap();
        if let Some(wait) = d.retry_after {
            assert!(
                wait > Duration::from_secs(50) && wait <= Duration::from_secs(60),
                "{wait:?}"
            );
        }
    }
    let mut remaining: Vec<u32> = b
        .into_iter()
        .map(|r| {
            let (d, used) = r.unwrap();
            assert_eq!(used, None);
            let d = d.unwrap();
            assert_eq!(d.retry_after, None);
            d.remaining
        })
        .collect();
    remaining.sort_unstable();
    assert_eq!(remaining, (10..20).collect::<Vec<u32>>());
    // The state was written: the next one on `key:a` is refused too.
    let (d, _) = shared
        .admit(Some(("key:a".into(), 1, 5)), None)
        .await
        .unwrap();
    assert!(d.unwrap().retry_after.is_some());
    // Without a rate, only the counts; with neither, nothing.
    assert_eq!(
        shared.admit(None, tokens()).await.unwrap(),
        (None, Some([42, 42]))
    );
    assert_eq!(shared.admit(None, None).await.unwrap(), (None, None));
}

#[tokio::test]
async fn an_admission_nobody_waits_for_any_more_takes_nothing_from_the_rate() {
    let Some(redis) = Redis::start() else { return };
    let shared = connect(&redis).await;
    // Queued, then given up before the admitting task ran (this test's runtime has one thread,
    // so the task runs only when the test awaits).
    let mut gone = Box::pin(shared.admit(Some(("key:c".into(), 1, 1)), None));
    let waker = std::task::Waker::noop();
    let polled = gone
        .as_mut()
        .poll(&mut std::task::Context::from_waker(waker));
    assert!(polled.is_pending());
    drop(gone);
    // The one token of a burst of 1 is still there for the next request.
    let (d, _) = shared
        .admit(Some(("key:c".into(), 1, 1)), None)
        .await
        .unwrap();
    assert_eq!(d.unwrap().retry_after, None);
    let (d, _) = shared
        .admit(Some(("key:c".into(), 1, 1)), None)
        .await
        .unwrap();
    assert!(d.unwrap().retry_after.is_some());
}
