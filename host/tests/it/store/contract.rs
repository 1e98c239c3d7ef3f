//! The rest of the `Store` trait's contract, on both back ends: teams, key import (idempotent by
//! hash, also when two replicas import at once), reservations across scopes, certificate
//! identities (one per matcher) and stored responses (team-scoped, charged in one transaction).
//! The webhook outbox is in `outbox.rs`.

use std::collections::HashSet;
use std::sync::Arc;

use serde_json::json;
use sovereign::auth::hash_secret;
use sovereign::domain::Role;
use sovereign::store::responses::StoredResponse;
use sovereign::store::*;
use sovereign::tls::CertMatch;

use super::{Backend, T0, clock, on_both_back_ends, team_with_budget};

on_both_back_ends!(
    teams_are_created_updated_listed_and_deleted,
    imported_keys_are_idempotent_by_hash_even_when_replicas_race,
    reservations_are_all_or_none_across_scopes,
    usage_rows_sort_as_bytes,
    concurrent_charges_over_shared_scopes_all_land,
    journal_rows_copied_twice_are_kept_once,
    journal_pages_narrow_by_every_filter_combination,
    certificate_identities_are_one_per_matcher,
    stored_responses_are_charged_and_kept_within_their_team,
);

async fn teams_are_created_updated_listed_and_deleted(backend: Backend) {
    let c = clock();
    let s = backend.open(c.clone()).await;
    let a = s
        .create_team(NewTeam {
            id: Some(TeamId("acme".into())),
            name: "Acme".into(),
            plan: Plan::Professional,
            budget: Some(5_000_000),
            token_cap_per_day: Some(100_000),
            allowed_regions: vec!["sa-riyadh".into()],
            sensitive_only: true,
            allowed_models: vec!["jais".into()],
        })
        .await
        .unwrap();
    assert_eq!(a.id.0, "acme");
    assert_eq!(
        (a.plan, a.budget, a.token_cap_per_day, a.sensitive_only),
        (Plan::Professional, Some(5_000_000), Some(100_000), true)
    );
    assert_eq!((a.created_at, a.updated_at), (T0, T0));
    let b = team_with_budget(&*s, None).await;
    assert!(
        b.id.0.starts_with("team_") && b.id.0.len() == 5 + 32,
        "{}",
        b.id
    );
    assert_eq!(s.team(a.id.clone()).await.unwrap().as_ref(), Some(&a));
    assert_eq!(s.teams().await.unwrap(), vec![a.clone(), b.clone()]);

    // Refused: an id taken already, bad names, ids and budgets.
    let again = NewTeam {
        id: Some(TeamId("acme".into())),
        name: "other".into(),
        ..NewTeam::default()
    };
    assert!(s.create_team(again).await.is_err());
    for bad in [
        NewTeam {
            name: " ".into(),
            ..NewTeam::default()
        },
        NewTeam {
            name: "x".into(),
            budget: Some(-1),
            ..NewTeam::default()
        },
        NewTeam {
            id: Some(TeamId("no spaces".into())),
            name: "x".into(),
            ..NewTeam::default()
        },
    ] {
        assert!(matches!(
            s.create_team(bad).await,
            Err(StoreError::Invalid { .. })
        ));
    }

    c.advance(1_000);
    let patched = s
        .update_team(
            a.id.clone(),
            TeamPatch {
                name: Some("Acme 2".into()),
                budget: Some(None),
                token_cap_per_day: Some(None),
                allowed_regions: Some(vec![]),
                ..TeamPatch::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(
        (
            patched.name.as_str(),
            patched.plan,
            patched.budget,
            patched.token_cap_per_day
        ),
        ("Acme 2", Plan::Professional, None, None)
    );
    assert!(patched.allowed_regions.is_empty());
    assert_eq!(patched.allowed_models, vec!["jais".to_string()]);
    assert_eq!((patched.created_at, patched.updated_at), (T0, T0 + 1_000));

    // Deleting the team stops its keys and drops the counters, but keeps the usage history.
    let key = s
        .create_key(NewKey::new(a.id.clone(), Role::Member))
        .await
        .unwrap();
    s.record_usage(UsageRecord {
        at: T0,
        team_id: a.id.clone(),
        key_id: key.info.id.clone(),
        actor: "alice".into(),
        model: "jais".into(),
        tokens_in: 1,
        tokens_out: 2,
        spend: 3,
        request_id: None,
    })
    .await
    .unwrap();
    assert!(s.delete_team(a.id.clone()).await.unwrap());
    assert!(!s.delete_team(a.id.clone()).await.unwrap());
    assert_eq!(s.team(a.id.clone()).await.unwrap(), None);
    assert_eq!(s.teams().await.unwrap(), vec![b]);
    assert_eq!(
        s.authenticate(hash_secret(&key.secret)).await.unwrap(),
        None
    );
    assert_eq!(s.key(key.info.id.clone()).await.unwrap(), None);
    for scope in [
        BudgetScope::Team(a.id.clone()),
        BudgetScope::Key(key.info.id),
    ] {
        assert_eq!(s.budget(scope).await.unwrap(), None);
    }
    assert_eq!(s.usage(UsageFilter::default()).await.unwrap().len(), 1);
    assert!(matches!(
        s.update_team(a.id.clone(), TeamPatch::default()).await,
        Err(StoreError::TeamNotFound(_))
    ));
    assert!(matches!(
        s.create_key(NewKey::new(a.id, Role::Member)).await,
        Err(StoreError::TeamNotFound(_))
    ));
}

/// Config-file keys are imported by every replica at start: the same hash imported at once from
/// two handles is one key, and every import answers with it.
async fn imported_keys_are_idempotent_by_hash_even_when_replicas_race(backend: Backend) {
    let c = clock();
    let (a, b) = (backend.open(c.clone()).await, backend.open(c).await);
    let team = team_with_budget(&*a, None).await;
    let hash = hash_secret("sk-sov-config-key");
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..20 {
        let store = Arc::clone(if i % 2 == 0 { &a } else { &b });
        let mut new = NewKey::new(team.id.clone(), Role::Admin);
        new.name = Some("from-config".into());
        new.budget = Some(7_000);
        tasks.spawn(async move {
            store
                .import_key(new, hash, "sk-sov-(config)".into())
                .await
                .unwrap()
        });
    }
    let mut ids = HashSet::new();
    while let Some(k) = tasks.join_next().await {
        let k = k.unwrap();
        assert_eq!(
            (k.prefix.as_str(), k.role, k.budget, k.state),
            (
                "sk-sov-(config)",
                Role::Admin,
                Some(7_000),
                KeyState::Active
            )
        );
        ids.insert(k.id);
    }
    assert_eq!(ids.len(), 1, "one key, whoever imported it");
    assert_eq!(a.keys(Some(team.id.clone())).await.unwrap().len(), 1);
    let found = b.authenticate(hash).await.unwrap().unwrap();
    assert!(ids.contains(&found.id));

    // An existing hash answers with its key as it is, whatever the new settings say.
    let other = team_with_budget(&*a, None).await;
    let again = a
        .import_key(NewKey::new(other.id, Role::Member), hash, "x".into())
        .await
        .unwrap();
    assert_eq!(again, found);
    // A revoked config key stays revoked when imported again.
    a.revoke_key(found.id.clone()).await.unwrap();
    let again = a
        .import_key(NewKey::new(team.id, Role::Admin), hash, "x".into())
        .await
        .unwrap();
    assert_eq!(again.state, KeyState::Revoked);
    let missing = NewKey::new(TeamId("team_nope".into()), Role::Member);
    assert!(matches!(
        a.import_key(missing, hash_secret("other"), "x".into())
            .await,
        Err(StoreError::TeamNotFound(_))
    ));
}

async fn reservations_are_all_or_none_across_scopes(backend: Backend) {
    let s = backend.open(clock()).await;
    let team = team_with_budget(&*s, Some(10_000)).await;
    let mut nk = NewKey::new(team.id.clone(), Role::Member);
    nk.budget = Some(3_000);
    let key = s.create_key(nk).await.unwrap().info.id;
    let scopes = vec![
        BudgetScope::Team(team.id.clone()),
        BudgetScope::Key(key.clone()),
    ];

    // The key cannot cover 4,000: nothing is held on the team either.
    assert_eq!(
        s.reserve(scopes.clone(), 4_000).await.unwrap(),
        ReserveOutcome::Insufficient(BudgetScope::Key(key.clone()))
    );
    for scope in &scopes {
        assert_eq!(s.budget(scope.clone()).await.unwrap().unwrap().reserved, 0);
    }
    let ReserveOutcome::Reserved(r) = s.reserve(scopes.clone(), 2_000).await.unwrap() else {
        panic!("within both budgets")
    };
    for scope in &scopes {
        assert_eq!(
            s.budget(scope.clone()).await.unwrap().unwrap().reserved,
            2_000
        );
    }
    // An unknown scope is an error, and holds nothing elsewhere.
    let ghost = vec![
        BudgetScope::Team(team.id.clone()),
        BudgetScope::Key(KeyId("key_nope".into())),
    ];
    assert!(matches!(
        s.reserve(ghost, 1).await,
        Err(StoreError::KeyNotFound(_))
    ));
    assert!(matches!(
        s.reserve(scopes.clone(), -1).await,
        Err(StoreError::Invalid {
            field: "amount",
            ..
        })
    ));
    // Settled above the reservation: charged in full; settled twice: not found.
    s.settle(r, 2_500).await.unwrap();
    assert!(matches!(
        s.settle(r, 2_500).await,
        Err(StoreError::ReservationNotFound(_))
    ));
    let k = s.budget(scopes[1].clone()).await.unwrap().unwrap();
    assert_eq!((k.spent, k.reserved, k.remaining()), (2_500, 0, Some(500)));

    // Unlimited scopes still count, and a lowered limit blocks new reservations.
    let free = team_with_budget(&*s, None).await;
    let free_scope = vec![BudgetScope::Team(free.id.clone())];
    let ReserveOutcome::Reserved(r) = s.reserve(free_scope.clone(), 9_999).await.unwrap() else {
        panic!("unlimited")
    };
    s.settle(r, 9_999).await.unwrap();
    let patch = TeamPatch {
        budget: Some(Some(9_000)),
        ..TeamPatch::default()
    };
    s.update_team(free.id.clone(), patch).await.unwrap();
    let f = s.budget(free_scope[0].clone()).await.unwrap().unwrap();
    assert_eq!((f.limit, f.spent), (Some(9_000), 9_999));
    assert_eq!(
        s.reserve(free_scope.clone(), 0).await.unwrap(),
        ReserveOutcome::Insufficient(free_scope[0].clone())
    );
}

/// Usage rows order by key, model and actor as bytes (upper case before `_` before lower case),
/// whatever the database's collation.
async fn usage_rows_sort_as_bytes(backend: Backend) {
    let s = backend.open(clock()).await;
    let team = team_with_budget(&*s, None).await;
    let key = s
        .create_key(NewKey::new(team.id.clone(), Role::Member))
        .await
        .unwrap()
        .info
        .id;
    let batch: Vec<UsageRecord> = ["alice", "_batch", "Bob", "bob", "Ünal"]
        .into_iter()
        .map(|actor| UsageRecord {
            at: T0,
            team_id: team.id.clone(),
            key_id: key.clone(),
            actor: actor.into(),
            model: "jais".into(),
            tokens_in: 1,
            tokens_out: 1,
            // A free request still leaves its row; it moves no counter.
            spend: if actor == "_batch" { 0 } else { 10 },
            request_id: None,
        })
        .collect();
    s.charge(batch).await.unwrap();
    let actors: Vec<String> = s
        .usage(UsageFilter::default())
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.actor)
        .collect();
    assert_eq!(actors, ["Bob", "_batch", "alice", "bob", "Ünal"]);
    for scope in [BudgetScope::Key(key), BudgetScope::Team(team.id)] {
        let spent = s.budget(scope).await.unwrap().unwrap().spent;
        assert_eq!(spent, 40);
    }
}

/// Charges from two handles (two replicas) race over the same team and key counters, some
/// batches naming them in the opposite order, while reservations lock the same rows: none
/// deadlocks, and every micro of spend lands on each scope.
async fn concurrent_charges_over_shared_scopes_all_land(backend: Backend) {
    let c = clock();
    let (a, b) = (backend.open(c.clone()).await, backend.open(c).await);
    let team = team_with_budget(&*a, None).await;
    let mut keys = Vec::new();
    for _ in 0..2 {
        let k = a.create_key(NewKey::new(team.id.clone(), Role::Member));
        keys.push(k.await.unwrap().info.id);
    }
    let record = |key: &KeyId, spend: Micros| UsageRecord {
        at: T0,
        team_id: team.id.clone(),
        key_id: key.clone(),
        actor: "a".into(),
        model: "jais".into(),
        tokens_in: 1,
        tokens_out: 1,
        spend,
        request_id: None,
    };
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..40 {
        let s = if i % 2 == 0 { a.clone() } else { b.clone() };
        let (first, second) = if i % 3 == 0 { (0, 1) } else { (1, 0) };
        let batch = vec![record(&keys[first], 3), record(&keys[second], 5)];
        let scopes = vec![
            BudgetScope::Team(team.id.clone()),
            BudgetScope::Key(keys[first].clone()),
        ];
        tasks.spawn(async move {
            let held = s.reserve(scopes, 7).await.unwrap();
            s.charge(batch).await.unwrap();
            if let ReserveOutcome::Reserved(id) = held {
                s.settle(id, 0).await.unwrap();
            }
        });
    }
    while let Some(done) = tasks.join_next().await {
        done.unwrap();
    }
    let spent = |scope| {
        let s = a.clone();
        async move { s.budget(scope).await.unwrap().unwrap() }
    };
    let t = spent(BudgetScope::Team(team.id.clone())).await;
    assert_eq!((t.spent, t.reserved), (40 * 8, 0));
    let per_key: Vec<Micros> = [
        spent(BudgetScope::Key(keys[0].clone())).await.spent,
        spent(BudgetScope::Key(keys[1].clone())).await.spent,
    ]
    .into();
    // Key 0 is `first` (3) in 14 batches of 40 and `second` (5) in the other 26.
    assert_eq!(per_key, [14 * 3 + 26 * 5, 26 * 3 + 14 * 5]);
}

/// A replica that copies rows the index already has (a restart before its last copy was
/// acknowledged) neither fails nor duplicates them, and the rest of its batch lands. The
/// embedded store keeps no index (one replica reads its own files).
async fn journal_rows_copied_twice_are_kept_once(backend: Backend) {
    let s = backend.open(clock()).await;
    let row = |seq: i64, line: &str| JournalRow {
        replica: "r1".into(),
        seq,
        timestamp: format!("2026-11-27T00:00:0{seq}.000Z"),
        team_id: "acme".into(),
        line: line.into(),
    };
    s.index_journal(vec![row(1, "one"), row(2, "two")])
        .await
        .unwrap();
    s.index_journal(vec![row(2, "two again"), row(3, "three")])
        .await
        .unwrap();
    let chain = s.journal_chain("r1".into(), 0, 10).await.unwrap();
    let lines: Vec<&str> = chain.iter().map(|r| r.line.as_str()).collect();
    match backend {
        Backend::Sqlite(_) => assert!(lines.is_empty()),
        Backend::Postgres(_) => assert_eq!(lines, ["one", "two", "three"]),
    }
    assert_eq!(
        s.journal_indexed_to("r1".into()).await.unwrap(),
        lines.len() as i64
    );
}

/// Every combination of a page's filters (cursor, team, replica, from, to) gives exactly the rows
/// a plain filter over the index gives, in (timestamp, replica, seq) order: PostgreSQL builds each
/// combination's statement from the filters given (one plan per statement).
async fn journal_pages_narrow_by_every_filter_combination(backend: Backend) {
    let s = backend.open(clock()).await;
    let mut all = Vec::new();
    for seq in 1..=12_i64 {
        for replica in ["r1", "r2"] {
            all.push(JournalRow {
                replica: replica.into(),
                seq,
                // Two entries share each second, across replicas: the order is by replica then.
                timestamp: format!("2026-11-27T00:00:{:02}.000Z", seq / 2),
                team_id: if seq % 3 == 0 { "beta" } else { "acme" }.into(),
                line: format!("{replica}/{seq}"),
            });
        }
    }
    s.index_journal(all.clone()).await.unwrap();
    all.sort_by(|a, b| (&a.timestamp, &a.replica, a.seq).cmp(&(&b.timestamp, &b.replica, b.seq)));
    let cursor = ("2026-11-27T00:00:02.000Z".to_string(), "r1".to_string(), 4);
    let pick = |bit: u32, v: &str| (bit != 0).then(|| v.to_string());
    for combo in 0..64_u32 {
        let descending = combo & 32 != 0;
        let scan = JournalScan {
            after: (combo & 1 != 0).then(|| cursor.clone()),
            descending,
            team_id: pick(combo & 2, "acme"),
            replica: pick(combo & 4, "r2"),
            from: pick(combo & 8, "2026-11-27T00:00:01.000Z"),
            to: pick(combo & 16, "2026-11-27T00:00:05.000Z"),
            limit: 7,
        };
        let ordered: Vec<&JournalRow> = if descending {
            all.iter().rev().collect()
        } else {
            all.iter().collect()
        };
        let expected: Vec<&str> = ordered
            .into_iter()
            .filter(|r| {
                scan.after.as_ref().is_none_or(|(t, rep, q)| {
                    let key = (&r.timestamp, &r.replica, r.seq);
                    if descending {
                        key < (t, rep, *q)
                    } else {
                        key > (t, rep, *q)
                    }
                }) && scan.team_id.as_ref().is_none_or(|t| &r.team_id == t)
                    && scan.replica.as_ref().is_none_or(|rep| &r.replica == rep)
                    && scan.from.as_ref().is_none_or(|f| &r.timestamp >= f)
                    && scan.to.as_ref().is_none_or(|t| &r.timestamp < t)
            })
            .take(7)
            .map(|r| r.line.as_str())
            .collect();
        let got = s.journal_rows(scan.clone()).await.unwrap();
        let got: Vec<&str> = got.iter().map(|r| r.line.as_str()).collect();
        match backend {
            Backend::Sqlite(_) => assert!(got.is_empty()),
            Backend::Postgres(_) => assert_eq!(got, expected, "filters {scan:?}"),
        }
    }
}

async fn certificate_identities_are_one_per_matcher(backend: Backend) {
    let c = clock();
    let (a, b) = (backend.open(c.clone()).await, backend.open(c).await);
    let team = team_with_budget(&*a, None).await;
    let identity = |name: &str, uri: &str| NewCertIdentity {
        name: name.into(),
        team_id: team.id.clone(),
        role: Role::Auditor,
        matcher: CertMatch::Uri(uri.into()),
        source: CertSource::Config,
    };
    let made = a
        .create_cert_identity(identity("billing", "spiffe://acme/billing"))
        .await
        .unwrap();
    assert!(made.id.starts_with("cid_"));
    assert_eq!(made.created_at, T0);
    assert_eq!(b.cert_identities().await.unwrap(), vec![made.clone()]);
    let err = b
        .create_cert_identity(identity("again", "spiffe://acme/billing"))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, StoreError::Invalid { field: "match", reason } if reason.contains(&made.id)),
        "{err:?}"
    );
    assert!(matches!(
        a.create_cert_identity(identity(" ", "spiffe://acme/x"))
            .await,
        Err(StoreError::Invalid { field: "name", .. })
    ));
    let mut ghost = identity("ghost", "spiffe://acme/ghost");
    ghost.team_id = TeamId("team_nope".into());
    assert!(matches!(
        a.create_cert_identity(ghost).await,
        Err(StoreError::TeamNotFound(_))
    ));

    // Two replicas creating the same matcher at once: one identity, the other told why.
    let (x, y) = tokio::join!(
        a.create_cert_identity(identity("x", "spiffe://acme/race")),
        b.create_cert_identity(identity("y", "spiffe://acme/race"))
    );
    assert!(x.is_ok() != y.is_ok(), "{x:?} {y:?}");
    let refused = x.err().or(y.err()).unwrap();
    assert!(
        matches!(refused, StoreError::Invalid { field: "match", .. }),
        "{refused:?}"
    );
    assert_eq!(a.cert_identities().await.unwrap().len(), 2);

    assert!(a.delete_cert_identity(made.id.clone()).await.unwrap());
    assert!(!a.delete_cert_identity(made.id).await.unwrap());
    // The team's deletion takes its identities with it.
    a.delete_team(team.id.clone()).await.unwrap();
    assert!(a.cert_identities().await.unwrap().is_empty());
}

async fn stored_responses_are_charged_and_kept_within_their_team(backend: Backend) {
    let s = backend.open(clock()).await;
    let team = team_with_budget(&*s, Some(1_000)).await;
    let other = team_with_budget(&*s, None).await;
    let key = s
        .create_key(NewKey::new(team.id.clone(), Role::Member))
        .await
        .unwrap()
        .info
        .id;
    // Key order as written (not sorted): the response object goes back out as it came in.
    let response = json!({"id": "resp_1", "object": "response", "output": [{"z": 1, "a": 2}]});
    let stored = |id: &str, team: &TeamId, at| StoredResponse {
        id: id.into(),
        team_id: team.clone(),
        key_id: key.0.clone(),
        previous_id: Some("resp_0".into()),
        input: json!([{"role": "user", "content": "مرحبا"}]),
        response: response.clone(),
        created_at: at,
    };
    let charge = UsageRecord {
        at: T0,
        team_id: team.id.clone(),
        key_id: key.clone(),
        actor: "alice".into(),
        model: "jais".into(),
        tokens_in: 5,
        tokens_out: 7,
        spend: 300,
        request_id: None,
    };
    s.charge_and_store(
        vec![charge],
        vec![
            stored("resp_1", &team.id, T0),
            stored("resp_2", &team.id, T0 + 10),
            // Its team is gone: skipped, the rest of the batch goes in.
            stored("resp_3", &TeamId("team_gone".into()), T0),
        ],
    )
    .await
    .unwrap();
    let spent = s
        .budget(BudgetScope::Team(team.id.clone()))
        .await
        .unwrap()
        .unwrap()
        .spent;
    assert_eq!(spent, 300);
    assert_eq!(s.usage(UsageFilter::default()).await.unwrap()[0].spend, 300);

    let got = s
        .response(team.id.clone(), "resp_1".into())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(got, stored("resp_1", &team.id, T0));
    assert_eq!(got.response.to_string(), response.to_string());
    assert_eq!(
        s.response(other.id.clone(), "resp_1".into()).await.unwrap(),
        None
    );
    assert_eq!(
        s.response(TeamId("team_gone".into()), "resp_3".into())
            .await
            .unwrap(),
        None
    );
    // Storing the same id again changes nothing.
    s.charge_and_store(vec![], vec![stored("resp_1", &team.id, T0 + 99)])
        .await
        .unwrap();
    let kept = s.response(team.id.clone(), "resp_1".into()).await.unwrap();
    assert_eq!(kept.unwrap().created_at, T0);

    assert!(!s.delete_response(other.id, "resp_1".into()).await.unwrap());
    assert!(
        s.delete_response(team.id.clone(), "resp_1".into())
            .await
            .unwrap()
    );
    assert_eq!(s.purge_responses(T0 + 10).await.unwrap(), 0);
    assert_eq!(s.purge_responses(T0 + 11).await.unwrap(), 1);
    assert_eq!(s.response(team.id, "resp_2".into()).await.unwrap(), None);
}
