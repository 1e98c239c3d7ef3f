//! The store's guarantees from issue 4, through the `Store` trait only, on both back ends: each
//! test runs on SQLite (a real file) and on PostgreSQL (a fresh database on the test process's
//! private server, `services.rs`): exact budgets under 200 concurrent reservations from two
//! handles, key revocation/rotation/expiry with an injected clock (no sleeps), everything
//! surviving a reopen. `contract.rs` has the rest of the trait's contract (teams, key import,
//! certificate identities, stored responses), `outbox.rs` the webhook part, `documents.rs` the
//! `DocumentStore` trait, `mcp_servers.rs` the MCP servers and key allowlists, `migrations.rs`
//! each back end's own schema checks.

use std::sync::Arc;

use sovereign::auth::hash_secret;
use sovereign::domain::Role;
use sovereign::store::postgres::PgStore;
use sovereign::store::sqlite::SqliteStore;
use sovereign::store::*;

use crate::services::Postgres;

mod contract;
mod documents;
mod ingest_jobs;
mod mcp_servers;
mod migrations;
mod outbox;

const T0: UnixMillis = 1_800_000_000_000;

fn clock() -> Arc<ManualClock> {
    Arc::new(ManualClock::new(T0))
}

/// Where one test's store lives, opened as often as the test likes: two handles at once are two
/// gateway processes sharing it, opening again after dropping a handle is a restart.
#[derive(Debug, Clone)]
pub enum Backend {
    /// A file in a directory of the test's own.
    Sqlite(Arc<tempfile::TempDir>),
    /// A database of the test's own on the private server.
    Postgres(String),
}

impl Backend {
    pub fn sqlite() -> Backend {
        Backend::Sqlite(Arc::new(tempfile::tempdir().unwrap()))
    }

    /// `None` (the test is skipped, with a message) where PostgreSQL is not installed.
    pub async fn postgres() -> Option<Backend> {
        Some(Backend::Postgres(Postgres::get()?.fresh_database().await))
    }

    /// A new handle on the store, only through the trait: a back end that passes these tests
    /// keeps the trait's promises.
    pub async fn open(&self, clock: Arc<ManualClock>) -> Arc<dyn Store> {
        match self {
            Backend::Sqlite(dir) => Arc::new(
                SqliteStore::open(&dir.path().join("gateway.db"), clock)
                    .await
                    .unwrap(),
            ),
            Backend::Postgres(url) => Arc::new(PgStore::connect(url, 16, clock).await.unwrap()),
        }
    }
}

/// Each named `async fn(Backend)` becomes a module of two tests, `<name>::sqlite` and
/// `<name>::postgres`.
macro_rules! on_both_back_ends {
    ($($test:ident),* $(,)?) => {$(
        mod $test {
            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn sqlite() {
                super::$test(super::Backend::sqlite()).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn postgres() {
                if let Some(backend) = super::Backend::postgres().await {
                    super::$test(backend).await;
                }
            }
        }
    )*};
}
pub(crate) use on_both_back_ends;

on_both_back_ends!(
    two_hundred_concurrent_reservations_against_a_budget_for_fifty,
    settle_releases_the_unused_part,
    a_revoked_key_stops_authenticating_when_revoke_returns,
    rotation_keeps_the_old_key_for_the_grace_period_only,
    a_key_stops_at_its_expiry,
    usage_is_summed_per_key_model_and_actor_with_filters,
    everything_survives_a_reopen,
    completion_charges_and_records_together_and_stale_reservations_are_charged_in_full,
);

async fn team_with_budget(s: &dyn Store, budget: Option<Micros>) -> Team {
    s.create_team(NewTeam {
        name: "acme".into(),
        budget,
        ..NewTeam::default()
    })
    .await
    .unwrap()
}

/// Issue 4: "200 concurrent requests against a budget that covers 50: recorded spend never
/// exceeds the budget, and the number served matches the reservation arithmetic".
///
/// Bound: each request reserves its worst case R = 1,000 micros against a budget B = 50,000, so
/// exactly floor(B / R) = 50 are admitted, and spent + reserved <= B at every moment. The 200
/// calls race on two store handles (two SQLite connections on one file, two connection pools on
/// one PostgreSQL database, as two gateway processes would), so the guarantee comes from the
/// database, not from a mutex of ours.
async fn two_hundred_concurrent_reservations_against_a_budget_for_fifty(backend: Backend) {
    const R: Micros = 1_000;
    const B: Micros = 50 * R;
    let c = clock();
    let a = backend.open(c.clone()).await;
    let b = backend.open(c).await;
    let team = team_with_budget(&*a, Some(B)).await;
    let scope = BudgetScope::Team(team.id.clone());

    let stores: [Arc<dyn Store>; 2] = [Arc::clone(&a), b];
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..200 {
        let store = Arc::clone(&stores[i % 2]);
        let scope = scope.clone();
        tasks.spawn(async move { store.reserve(vec![scope], R).await.unwrap() });
    }
    // An observer reads the counters while the race runs: the bound holds at every moment.
    let watcher = {
        let store = Arc::clone(&stores[1]);
        let scope = scope.clone();
        tokio::spawn(async move {
            let mut seen = 0;
            loop {
                let b = store.budget(scope.clone()).await.unwrap().unwrap();
                assert!(b.spent + b.reserved <= B, "{b:?}");
                seen += 1;
                if b.reserved == B || seen >= 10_000 {
                    return seen;
                }
                tokio::task::yield_now().await;
            }
        })
    };
    let mut admitted = Vec::new();
    let mut refused = 0;
    while let Some(outcome) = tasks.join_next().await {
        match outcome.unwrap() {
            ReserveOutcome::Reserved(id) => admitted.push(id),
            ReserveOutcome::Insufficient(s) => {
                assert_eq!(s, scope);
                refused += 1;
            }
        }
    }
    assert_eq!(admitted.len(), usize::try_from(B / R).unwrap());
    assert_eq!(refused, 150);
    assert!(watcher.await.unwrap() >= 1);
    let held = a.budget(scope.clone()).await.unwrap().unwrap();
    assert_eq!((held.spent, held.reserved), (0, B));

    // Each admitted request costs its full reservation: spend reaches the budget, never more.
    let mut settles = tokio::task::JoinSet::new();
    for (i, id) in admitted.into_iter().enumerate() {
        let store = Arc::clone(&stores[i % 2]);
        settles.spawn(async move { store.settle(id, R).await.unwrap() });
    }
    while let Some(r) = settles.join_next().await {
        r.unwrap();
    }
    let done = a.budget(scope.clone()).await.unwrap().unwrap();
    assert_eq!(
        (done.spent, done.reserved, done.remaining()),
        (B, 0, Some(0))
    );
    assert_eq!(
        a.reserve(vec![scope.clone()], 1).await.unwrap(),
        ReserveOutcome::Insufficient(scope)
    );
}

/// Settling below the reservation gives the difference back to the budget at once.
async fn settle_releases_the_unused_part(backend: Backend) {
    let s = backend.open(clock()).await;
    let team = team_with_budget(&*s, Some(10_000)).await;
    let scope = vec![BudgetScope::Team(team.id.clone())];
    let ReserveOutcome::Reserved(r) = s.reserve(scope.clone(), 8_000).await.unwrap() else {
        panic!("8,000 of 10,000 must be admitted")
    };
    // 8,000 held: 3,000 more does not fit.
    assert!(matches!(
        s.reserve(scope.clone(), 3_000).await.unwrap(),
        ReserveOutcome::Insufficient(_)
    ));
    s.settle(r, 2_500).await.unwrap();
    let b = s.budget(scope[0].clone()).await.unwrap().unwrap();
    assert_eq!(
        (b.spent, b.reserved, b.remaining()),
        (2_500, 0, Some(7_500))
    );
    assert!(matches!(
        s.reserve(scope.clone(), 7_500).await.unwrap(),
        ReserveOutcome::Reserved(_)
    ));
}

/// Issue 4: "Revoke, then call at once with the same key → 401 (loop it 100 times)", at the
/// store: once `revoke_key` returns, `authenticate` finds nothing.
async fn a_revoked_key_stops_authenticating_when_revoke_returns(backend: Backend) {
    let s = backend.open(clock()).await;
    let team = team_with_budget(&*s, None).await;
    for _ in 0..100 {
        let k = s
            .create_key(NewKey::new(team.id.clone(), Role::Member))
            .await
            .unwrap();
        let hash = hash_secret(&k.secret);
        assert!(s.authenticate(hash).await.unwrap().is_some());
        let revoked = s.revoke_key(k.info.id.clone()).await.unwrap();
        assert_eq!(revoked.state, KeyState::Revoked);
        assert_eq!(s.authenticate(hash).await.unwrap(), None);
        // Still visible to admins, with its state.
        let seen = s.key_by_hash(hash).await.unwrap().unwrap();
        assert_eq!(seen.state, KeyState::Revoked);
    }
    // Revoking twice keeps the first time; a revoked key cannot be rotated back to life.
    let k = s
        .create_key(NewKey::new(team.id.clone(), Role::Member))
        .await
        .unwrap();
    let first = s.revoke_key(k.info.id.clone()).await.unwrap().revoked_at;
    assert_eq!(
        s.revoke_key(k.info.id.clone()).await.unwrap().revoked_at,
        first
    );
    assert!(matches!(
        s.rotate_key(k.info.id, 0).await,
        Err(StoreError::KeyNotRotatable(_, "revoked"))
    ));
    assert!(matches!(
        s.revoke_key(KeyId("key_nope".into())).await,
        Err(StoreError::KeyNotFound(_))
    ));
}

/// Issue 4: "rotate: both keys work during grace, only the new one after".
async fn rotation_keeps_the_old_key_for_the_grace_period_only(backend: Backend) {
    let c = clock();
    let s = backend.open(c.clone()).await;
    let team = team_with_budget(&*s, None).await;
    let mut nk = NewKey::new(team.id.clone(), Role::Admin);
    nk.name = Some("deploy".into());
    nk.rpm = Some(120);
    nk.budget = Some(9_000);
    let old = s.create_key(nk).await.unwrap();
    let ReserveOutcome::Reserved(r) = s
        .reserve(vec![BudgetScope::Key(old.info.id.clone())], 1_000)
        .await
        .unwrap()
    else {
        panic!("within budget")
    };
    s.settle(r, 1_000).await.unwrap();

    const GRACE: i64 = 60_000;
    let new = s.rotate_key(old.info.id.clone(), GRACE).await.unwrap();
    assert_ne!(new.secret, old.secret);
    assert_ne!(new.info.id, old.info.id);
    // Same team and settings; the key's spend so far carries over.
    assert_eq!(
        (new.info.team_id.clone(), new.info.role, new.info.rpm),
        (team.id.clone(), Role::Admin, Some(120))
    );
    assert_eq!(new.info.name.as_deref(), Some("deploy"));
    let carried = s
        .budget(BudgetScope::Key(new.info.id.clone()))
        .await
        .unwrap()
        .unwrap();
    assert_eq!((carried.limit, carried.spent), (Some(9_000), 1_000));

    let (old_h, new_h) = (hash_secret(&old.secret), hash_secret(&new.secret));
    let during = s.authenticate(old_h).await.unwrap().unwrap();
    assert_eq!(during.state, KeyState::Rotating { until: T0 + GRACE });
    assert_eq!(during.rotated_to.as_ref(), Some(&new.info.id));
    assert!(s.authenticate(new_h).await.unwrap().is_some());
    // A key in its grace is not rotated again (the succession would fork).
    assert!(matches!(
        s.rotate_key(old.info.id.clone(), GRACE).await,
        Err(StoreError::KeyNotRotatable(_, "rotating"))
    ));

    c.advance(GRACE - 1);
    assert!(s.authenticate(old_h).await.unwrap().is_some());
    c.advance(1);
    assert_eq!(s.authenticate(old_h).await.unwrap(), None);
    assert!(s.authenticate(new_h).await.unwrap().is_some());
    let listed = s.keys(Some(team.id.clone())).await.unwrap();
    let states: Vec<_> = listed.iter().map(|k| k.state).collect();
    assert_eq!(states, vec![KeyState::Expired, KeyState::Active]);

    // Grace 0: the old key stops as the rotation returns.
    let newer = s.rotate_key(new.info.id.clone(), 0).await.unwrap();
    assert_eq!(s.authenticate(new_h).await.unwrap(), None);
    assert!(
        s.authenticate(hash_secret(&newer.secret))
            .await
            .unwrap()
            .is_some()
    );
}

/// Issue 4: "expired key → 401", at the store.
async fn a_key_stops_at_its_expiry(backend: Backend) {
    let c = clock();
    let s = backend.open(c.clone()).await;
    let team = team_with_budget(&*s, None).await;
    let mut nk = NewKey::new(team.id, Role::Member);
    nk.expires_at = Some(T0 + 1_000);
    let k = s.create_key(nk).await.unwrap();
    let h = hash_secret(&k.secret);
    c.set(T0 + 999);
    assert!(s.authenticate(h).await.unwrap().is_some());
    c.set(T0 + 1_000);
    assert_eq!(s.authenticate(h).await.unwrap(), None);
    assert_eq!(
        s.key(k.info.id.clone()).await.unwrap().unwrap().state,
        KeyState::Expired
    );
    assert!(matches!(
        s.rotate_key(k.info.id, 10).await,
        Err(StoreError::KeyNotRotatable(_, "expired"))
    ));
}

fn usage(team: &TeamId, key: &KeyId, actor: &str, model: &str, at: UnixMillis) -> UsageRecord {
    UsageRecord {
        at,
        team_id: team.clone(),
        key_id: key.clone(),
        actor: actor.into(),
        model: model.into(),
        tokens_in: 10,
        tokens_out: 20,
        spend: 300,
        request_id: None,
    }
}

async fn usage_is_summed_per_key_model_and_actor_with_filters(backend: Backend) {
    let s = backend.open(clock()).await;
    let t1 = team_with_budget(&*s, None).await.id;
    let t2 = team_with_budget(&*s, None).await.id;
    let k1 = s
        .create_key(NewKey::new(t1.clone(), Role::Member))
        .await
        .unwrap()
        .info
        .id;
    let k2 = s
        .create_key(NewKey::new(t2.clone(), Role::Member))
        .await
        .unwrap()
        .info
        .id;
    for rec in [
        usage(&t1, &k1, "alice", "jais", T0),
        usage(&t1, &k1, "alice", "jais", T0 + 10),
        usage(&t1, &k1, "bob", "jais", T0 + 20),
        usage(&t1, &k1, "alice", "llama", T0 + 30),
        usage(&t2, &k2, "carol", "jais", T0 + 40),
    ] {
        s.record_usage(rec).await.unwrap();
    }
    let all = s.usage(UsageFilter::default()).await.unwrap();
    assert_eq!(all.len(), 4);
    let first = &all
        .iter()
        .find(|r| r.key_id == k1 && r.actor == "alice" && r.model == "jais")
        .unwrap();
    assert_eq!(
        (
            first.requests,
            first.tokens_in,
            first.tokens_out,
            first.spend
        ),
        (2, 20, 40, 600)
    );

    let by_team = |team: &TeamId| UsageFilter {
        team_id: Some(team.clone()),
        ..UsageFilter::default()
    };
    assert_eq!(s.usage(by_team(&t2)).await.unwrap().len(), 1);
    let jais_t1 = UsageFilter {
        model: Some("jais".into()),
        ..by_team(&t1)
    };
    assert_eq!(s.usage(jais_t1).await.unwrap().len(), 2);
    let window = UsageFilter {
        key_id: Some(k1.clone()),
        from: Some(T0 + 10),
        to: Some(T0 + 30),
        ..UsageFilter::default()
    };
    let rows = s.usage(window).await.unwrap();
    let requests: u64 = rows.iter().map(|r| r.requests).sum();
    assert_eq!(requests, 2, "from is inclusive, to exclusive");
    assert!(rows.iter().all(|r| r.day.is_none()));

    // Per UTC day too (issue 49: the console's usage page, one query for a month): the next
    // day's usage of the same key, model and actor is a row of its own.
    const DAY_MS: i64 = 86_400_000;
    s.record_usage(usage(&t1, &k1, "alice", "jais", T0 + DAY_MS))
        .await
        .unwrap();
    let daily = s
        .usage(UsageFilter {
            by_day: true,
            ..jais_of(&t1)
        })
        .await
        .unwrap();
    let days: Vec<(Option<i64>, u64)> = daily
        .iter()
        .filter(|r| r.actor == "alice")
        .map(|r| (r.day, r.requests))
        .collect();
    let today = T0 / DAY_MS * DAY_MS;
    assert_eq!(days, [(Some(today), 2), (Some(today + DAY_MS), 1)]);
}

fn jais_of(team: &TeamId) -> UsageFilter {
    UsageFilter {
        team_id: Some(team.clone()),
        model: Some("jais".into()),
        ..UsageFilter::default()
    }
}

/// Issue 4: "Restart the gateway: teams, keys, usage and remaining budgets survive" — at the
/// store: close the file, open it again.
async fn everything_survives_a_reopen(backend: Backend) {
    let c = clock();
    let (team, key, revoked, held) = {
        let s = backend.open(c.clone()).await;
        let team = team_with_budget(&*s, Some(5_000)).await;
        let key = s
            .create_key(NewKey::new(team.id.clone(), Role::Member))
            .await
            .unwrap();
        let revoked = s
            .create_key(NewKey::new(team.id.clone(), Role::Auditor))
            .await
            .unwrap();
        s.revoke_key(revoked.info.id.clone()).await.unwrap();
        let scope = vec![BudgetScope::Team(team.id.clone())];
        let ReserveOutcome::Reserved(done) = s.reserve(scope.clone(), 1_000).await.unwrap() else {
            panic!("within budget")
        };
        s.settle(done, 700).await.unwrap();
        // One still in flight when the process stops.
        let ReserveOutcome::Reserved(held) = s.reserve(scope, 2_000).await.unwrap() else {
            panic!("within budget")
        };
        s.record_usage(usage(&team.id, &key.info.id, "alice", "jais", T0))
            .await
            .unwrap();
        (team, key, revoked, held)
    };

    let s = backend.open(c).await;
    assert_eq!(s.team(team.id.clone()).await.unwrap(), Some(team.clone()));
    assert_eq!(
        s.authenticate(hash_secret(&key.secret)).await.unwrap(),
        Some(key.info.clone())
    );
    assert_eq!(
        s.authenticate(hash_secret(&revoked.secret)).await.unwrap(),
        None
    );
    let u = s.usage(UsageFilter::default()).await.unwrap();
    assert_eq!((u.len(), u[0].spend), (1, 300));
    let b = s
        .budget(BudgetScope::Team(team.id.clone()))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (b.spent, b.reserved, b.remaining()),
        (700, 2_000, Some(2_300))
    );
    // The reservation made before the restart can still be settled after it.
    s.settle(held, 2_000).await.unwrap();
    let b = s.budget(BudgetScope::Team(team.id)).await.unwrap().unwrap();
    assert_eq!((b.spent, b.reserved), (2_700, 0));
}

/// Issue 4: streamed requests, "including ones the client abandons halfway, are charged" — the
/// store's part: `complete` charges and records in one transaction, and a reservation left by a
/// process that stopped mid-request is charged at its full amount when the next one starts.
async fn completion_charges_and_records_together_and_stale_reservations_are_charged_in_full(
    backend: Backend,
) {
    let c = clock();
    let team;
    let key;
    {
        let s = backend.open(c.clone()).await;
        team = team_with_budget(&*s, Some(10_000)).await.id;
        key = s
            .create_key(NewKey::new(team.clone(), Role::Member))
            .await
            .unwrap()
            .info
            .id;
        let scopes = vec![
            BudgetScope::Team(team.clone()),
            BudgetScope::Key(key.clone()),
        ];
        let ReserveOutcome::Reserved(done) = s.reserve(scopes.clone(), 1_000).await.unwrap() else {
            panic!("within budget")
        };
        s.complete(done, usage(&team, &key, "alice", "jais", T0))
            .await
            .unwrap();
        // The process stops with this one in flight.
        let ReserveOutcome::Reserved(_) = s.reserve(scopes, 4_000).await.unwrap() else {
            panic!("within budget")
        };
    }
    c.advance(1);
    let s = backend.open(c.clone()).await;
    assert_eq!(s.settle_stale(T0 + 1).await.unwrap(), 1);
    assert_eq!(s.settle_stale(T0 + 1).await.unwrap(), 0, "only once");
    let u = s.usage(UsageFilter::default()).await.unwrap();
    assert_eq!((u.len(), u[0].spend), (1, 300));
    for scope in [BudgetScope::Team(team), BudgetScope::Key(key)] {
        let b = s.budget(scope.clone()).await.unwrap().unwrap();
        assert_eq!((b.spent, b.reserved), (300 + 4_000, 0), "{scope:?}");
    }
}
