//! Unit tests of the SQLite back end, each on a fresh file with a hand-moved clock. The
//! issue-level guarantees (concurrency, restart, rotation grace) are in `tests/it/store.rs`.

#![allow(
    clippy::unwrap_used,
    clippy::panic,
    reason = "test code: a failed unwrap is a failed test"
)]

use std::sync::Arc;

use super::SqliteStore;
use crate::auth::hash_secret;
use crate::domain::Role;
use crate::store::*;

const T0: UnixMillis = 1_800_000_000_000;

fn open() -> (tempfile::TempDir, Arc<ManualClock>, SqliteStore) {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(T0));
    let store = SqliteStore::open_blocking(&dir.path().join("s.db"), clock.clone()).unwrap();
    (dir, clock, store)
}

fn team(name: &str, budget: Option<Micros>) -> NewTeam {
    NewTeam {
        id: None,
        name: name.into(),
        budget,
        ..NewTeam::default()
    }
}

#[tokio::test]
async fn teams_create_get_list_update_delete() {
    let (_d, clock, s) = open();
    let a = s
        .create_team(NewTeam {
            id: None,
            name: "alpha".into(),
            plan: Plan::Professional,
            budget: Some(5_000_000),
            token_cap_per_day: Some(100_000),
            allowed_regions: vec!["sa-riyadh".into()],
            sensitive_only: false,
            allowed_models: Vec::new(),
        })
        .await
        .unwrap();
    assert!(a.id.0.starts_with("team_"));
    assert_eq!(a.plan, Plan::Professional);
    assert_eq!(a.budget, Some(5_000_000));
    assert_eq!(a.created_at, T0);
    let b = s.create_team(team("beta", None)).await.unwrap();
    assert_eq!(s.team(a.id.clone()).await.unwrap().as_ref(), Some(&a));
    assert_eq!(s.teams().await.unwrap(), vec![a.clone(), b.clone()]);

    clock.advance(1_000);
    let patched = s
        .update_team(
            a.id.clone(),
            TeamPatch {
                name: Some("alpha-2".into()),
                budget: Some(None),
                token_cap_per_day: Some(None),
                allowed_regions: Some(vec![]),
                ..TeamPatch::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(patched.name, "alpha-2");
    assert_eq!(patched.plan, Plan::Professional, "untouched fields stay");
    assert_eq!(patched.budget, None);
    assert_eq!(patched.token_cap_per_day, None);
    assert!(patched.allowed_regions.is_empty());
    assert_eq!(patched.updated_at, T0 + 1_000);
    assert_eq!(patched.created_at, T0);

    assert!(s.delete_team(a.id.clone()).await.unwrap());
    assert!(!s.delete_team(a.id.clone()).await.unwrap());
    assert_eq!(s.team(a.id.clone()).await.unwrap(), None);
    assert_eq!(s.teams().await.unwrap(), vec![b]);
    assert!(matches!(
        s.update_team(a.id, TeamPatch::default()).await,
        Err(StoreError::TeamNotFound(_))
    ));
}

#[tokio::test]
async fn invalid_input_is_refused() {
    let (_d, _c, s) = open();
    for bad in [team("", None), team("x", Some(-1))] {
        assert!(matches!(
            s.create_team(bad).await,
            Err(StoreError::Invalid { .. })
        ));
    }
    let missing = NewKey::new(TeamId("team_nope".into()), Role::Member);
    assert!(matches!(
        s.create_key(missing).await,
        Err(StoreError::TeamNotFound(_))
    ));
}

#[tokio::test]
async fn keys_are_stored_as_hashes_and_listed_without_secrets() {
    let (_d, clock, s) = open();
    let t = s.create_team(team("t", None)).await.unwrap();
    let mut new = NewKey::new(t.id.clone(), Role::Auditor);
    new.name = Some("ci".into());
    new.ip_allowlist = vec!["10.0.0.0/8".into(), "::1/128".into()];
    new.rpm = Some(60);
    new.tpd = Some(10_000);
    new.budget = Some(1_000_000);
    let created = s.create_key(new).await.unwrap();
    assert!(created.secret.starts_with("sk-sov-"));
    assert!(created.secret.starts_with(&created.info.prefix));
    assert_eq!(created.info.prefix.len(), "sk-sov-".len() + 6);
    assert!(!format!("{created:?}").contains(&created.secret));
    assert_eq!(created.info.role, Role::Auditor);
    assert_eq!(created.info.state, KeyState::Active);
    assert_eq!(created.info.rpm, Some(60));
    assert_eq!(created.info.budget, Some(1_000_000));

    let found = s
        .authenticate(hash_secret(&created.secret))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(found, created.info);
    assert_eq!(
        s.authenticate(hash_secret("sk-sov-other")).await.unwrap(),
        None
    );

    clock.advance(5);
    s.touch_key(found.id.clone(), T0 + 5).await.unwrap();
    s.touch_key(found.id.clone(), T0 + 1).await.unwrap();
    let listed = s.keys(Some(t.id.clone())).await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].last_used_at, Some(T0 + 5), "keeps the latest");
    assert_eq!(s.keys(Some(TeamId("team_x".into()))).await.unwrap(), vec![]);
    assert_eq!(s.keys(None).await.unwrap().len(), 1);
}

#[tokio::test]
async fn deleting_a_team_stops_its_keys_and_drops_its_counters_but_keeps_usage() {
    let (_d, _c, s) = open();
    let t = s.create_team(team("t", Some(10))).await.unwrap();
    let k = s
        .create_key(NewKey::new(t.id.clone(), Role::Member))
        .await
        .unwrap();
    s.record_usage(UsageRecord {
        at: T0,
        team_id: t.id.clone(),
        key_id: k.info.id.clone(),
        actor: "u".into(),
        model: "m".into(),
        tokens_in: 1,
        tokens_out: 2,
        spend: 3,
        request_id: None,
    })
    .await
    .unwrap();
    assert!(s.delete_team(t.id.clone()).await.unwrap());
    assert_eq!(s.authenticate(hash_secret(&k.secret)).await.unwrap(), None);
    assert_eq!(s.key(k.info.id.clone()).await.unwrap(), None);
    assert_eq!(
        s.budget(BudgetScope::Team(t.id.clone())).await.unwrap(),
        None
    );
    assert_eq!(s.budget(BudgetScope::Key(k.info.id)).await.unwrap(), None);
    assert_eq!(s.usage(UsageFilter::default()).await.unwrap().len(), 1);
}

#[tokio::test]
async fn unlimited_scopes_count_spend_and_limits_can_change() {
    let (_d, _c, s) = open();
    let t = s.create_team(team("t", None)).await.unwrap();
    let scope = vec![BudgetScope::Team(t.id.clone())];
    let ReserveOutcome::Reserved(r) = s.reserve(scope.clone(), 1_000_000).await.unwrap() else {
        panic!("unlimited must admit")
    };
    s.settle(r, 700).await.unwrap();
    let b = s.budget(scope[0].clone()).await.unwrap().unwrap();
    assert_eq!((b.limit, b.spent, b.remaining()), (None, 700, None));

    // A limit set below what is spent blocks new reservations; the spend stays.
    let patch = TeamPatch {
        budget: Some(Some(500)),
        ..TeamPatch::default()
    };
    assert_eq!(
        s.update_team(t.id.clone(), patch).await.unwrap().budget,
        Some(500)
    );
    assert_eq!(
        s.reserve(scope.clone(), 0).await.unwrap(),
        ReserveOutcome::Insufficient(scope[0].clone())
    );
}

#[test]
fn key_state_follows_revocation_expiry_and_grace() {
    use crate::store::rules::key_state as state;
    let k = |revoked, expires, grace| KeyInfo {
        id: KeyId("k".into()),
        team_id: TeamId("t".into()),
        name: None,
        prefix: String::new(),
        role: Role::Member,
        created_at: 0,
        last_used_at: None,
        expires_at: expires,
        revoked_at: revoked,
        rotated_to: None,
        grace_until: grace,
        ip_allowlist: vec![],
        rpm: None,
        tpd: None,
        budget: None,
        state: KeyState::Active,
    };
    assert_eq!(state(&k(None, None, None), 10), KeyState::Active);
    assert_eq!(state(&k(Some(1), None, None), 10), KeyState::Revoked);
    assert_eq!(state(&k(None, Some(11), None), 10), KeyState::Active);
    assert_eq!(state(&k(None, Some(10), None), 10), KeyState::Expired);
    assert_eq!(
        state(&k(None, None, Some(11)), 10),
        KeyState::Rotating { until: 11 }
    );
    assert_eq!(state(&k(None, None, Some(10)), 10), KeyState::Expired);
    assert_eq!(state(&k(Some(1), Some(5), Some(5)), 10), KeyState::Revoked);
}
