//! The `IngestJobStore` contract on both back ends (issue 44): a job per upload, kept once per
//! team, collection, bytes and file while unfinished, seen only by its team; claims fair across
//! teams (the least recently served team's oldest job), leases that expire and are taken over by
//! another handle (another replica), a job abandoned too often failed; progress and cancellation
//! ending a worker's hold; the queue's limits and figures; concurrent claims on two handles
//! taking each job once; an earlier life's jobs requeued at start; jobs going with their team;
//! a vector store's file jobs read and forgotten, file batches kept, cancelled and deleted with
//! their store.

use std::collections::HashSet;
use std::sync::Arc;

use sovereign::store::ingest_jobs::*;
use sovereign::store::*;

use super::{Backend, T0, clock, on_both_back_ends, team_with_budget};

on_both_back_ends!(
    jobs_are_enqueued_once_while_unfinished_and_scoped_by_team,
    claims_take_turns_across_teams_oldest_first,
    an_expired_lease_is_taken_over_and_the_old_owner_stops,
    a_job_abandoned_too_often_is_failed,
    cancelling_ends_a_queued_or_running_job_and_the_workers_hold,
    limits_refuse_by_team_and_in_all_and_the_queue_is_measured,
    two_handles_claiming_at_once_take_each_job_once,
    an_earlier_life_of_a_replica_gives_its_jobs_back_at_start,
    deleting_a_team_deletes_its_jobs,
    a_stores_file_jobs_are_read_forgotten_and_batched,
);

fn job(team: &TeamId, sha: &str, data: &[u8]) -> NewIngestJob {
    NewIngestJob {
        id: format!("doc_{}", uuid::Uuid::now_v7().simple()),
        team_id: team.clone(),
        collection: "default".into(),
        filename: "a.pdf".into(),
        content_type: Some("application/pdf".into()),
        metadata: r#"{"dept":"risk"}"#.into(),
        file_id: None,
        sha256: sha.into(),
        key_id: "key_1".into(),
        actor: "alice".into(),
        request_id: "req_1".into(),
        data: data.to_vec(),
    }
}

async fn enqueue(s: &dyn Store, j: NewIngestJob) -> IngestJob {
    match s.enqueue_ingest(j, QueueLimits::NONE).await.unwrap() {
        Enqueued::New(job) => job,
        other => panic!("must be new: {other:?}"),
    }
}

const LEASE: i64 = 30_000;

async fn jobs_are_enqueued_once_while_unfinished_and_scoped_by_team(backend: Backend) {
    let c = clock();
    let s = backend.open(c.clone()).await;
    let a = team_with_budget(&*s, None).await.id;
    let b = team_with_budget(&*s, None).await.id;

    let first = enqueue(&*s, job(&a, "ff", b"%PDF-1.7 bytes")).await;
    assert_eq!(first.state, JobState::Queued);
    assert_eq!((first.bytes, first.created_at, first.attempts), (14, T0, 0));
    assert_eq!(first.progress, Progress::default());
    assert_eq!(first.file_id, None);
    assert_eq!(
        (
            first.key_id.as_str(),
            first.actor.as_str(),
            first.request_id.as_str()
        ),
        ("key_1", "alice", "req_1")
    );
    assert_eq!(
        s.ingest_job(a.clone(), first.id.clone()).await.unwrap(),
        Some(first.clone())
    );
    assert_eq!(
        s.ingest_data(first.id.clone()).await.unwrap().as_deref(),
        Some(&b"%PDF-1.7 bytes"[..])
    );
    // The same bytes again while it waits: the waiting job, nothing written.
    let Enqueued::Existing(again) = s
        .enqueue_ingest(job(&a, "ff", b"%PDF-1.7 bytes"), QueueLimits::NONE)
        .await
        .unwrap()
    else {
        panic!("the unfinished job must be found");
    };
    assert_eq!(again, first);
    // Another team, or another source file: a job of its own.
    enqueue(&*s, job(&b, "ff", b"x")).await;
    let mut from_file = job(&a, "ff", b"x");
    from_file.file_id = Some("file_1".into());
    assert_eq!(
        enqueue(&*s, from_file).await.file_id.as_deref(),
        Some("file_1")
    );
    // Another team never sees it nor cancels it.
    assert_eq!(
        s.ingest_job(b.clone(), first.id.clone()).await.unwrap(),
        None
    );
    assert!(
        s.cancel_ingest(b.clone(), first.id.clone())
            .await
            .unwrap()
            .is_none()
    );
    // A team that does not exist is refused.
    assert!(
        s.enqueue_ingest(
            job(&TeamId("team_none".into()), "ee", b"x"),
            QueueLimits::NONE
        )
        .await
        .is_err()
    );
    // Once it ended, the same bytes make a new job; the ended one has no bytes any more.
    let cancelled = s
        .cancel_ingest(a.clone(), first.id.clone())
        .await
        .unwrap()
        .unwrap();
    assert!(cancelled.ended_now);
    let cancelled = cancelled.job;
    assert_eq!(cancelled.state, JobState::Cancelled);
    assert_eq!(s.ingest_data(first.id.clone()).await.unwrap(), None);
    let next = enqueue(&*s, job(&a, "ff", b"%PDF-1.7 bytes")).await;
    assert_ne!(next.id, first.id);
}

async fn claims_take_turns_across_teams_oldest_first(backend: Backend) {
    let c = clock();
    let s = backend.open(c.clone()).await;
    let a = team_with_budget(&*s, None).await.id;
    let b = team_with_budget(&*s, None).await.id;
    // Team A queues three large jobs, then team B one small one.
    let mut a_jobs = Vec::new();
    for i in 0..3 {
        a_jobs.push(enqueue(&*s, job(&a, &format!("a{i}"), &[0; 100])).await.id);
        c.advance(1);
    }
    let b_job = enqueue(&*s, job(&b, "b0", b"x")).await.id;
    let mut order = Vec::new();
    while let Some(j) = s
        .claim_ingest("r1#x".into(), c.now_ms() + LEASE)
        .await
        .unwrap()
    {
        assert_eq!((j.state, j.attempts), (JobState::Running, 1));
        assert_eq!(j.owner.as_deref(), Some("r1#x"));
        assert_eq!(j.lease_until, Some(c.now_ms() + LEASE));
        order.push(j.id);
    }
    // A's oldest, then B (served least recently), then A's others in age order.
    assert_eq!(
        order,
        vec![
            a_jobs[0].clone(),
            b_job,
            a_jobs[1].clone(),
            a_jobs[2].clone()
        ]
    );
    // B comes back with new work while A's is served: B goes next.
    let a_late = enqueue(&*s, job(&a, "a3", b"x")).await.id;
    c.advance(1);
    let b_late = enqueue(&*s, job(&b, "b1", b"x")).await.id;
    let claim = || s.claim_ingest("r1#x".into(), c.now_ms() + LEASE);
    assert_eq!(claim().await.unwrap().unwrap().id, b_late);
    assert_eq!(claim().await.unwrap().unwrap().id, a_late);
    assert_eq!(claim().await.unwrap(), None);
}

async fn an_expired_lease_is_taken_over_and_the_old_owner_stops(backend: Backend) {
    let c = clock();
    let r1 = backend.open(c.clone()).await;
    let r2 = backend.open(c.clone()).await;
    let a = team_with_budget(&*r1, None).await.id;
    let id = enqueue(&*r1, job(&a, "ff", b"bytes")).await.id;

    let mine = r1
        .claim_ingest("r1#x".into(), c.now_ms() + LEASE)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(mine.id, id);
    // While the lease holds, the other replica finds nothing; progress renews it.
    assert_eq!(
        r2.claim_ingest("r2#y".into(), c.now_ms() + LEASE)
            .await
            .unwrap(),
        None
    );
    c.advance(LEASE - 1);
    let progress = Progress {
        pages: Some(10),
        pages_done: 4,
        chunks: Some(40),
        chunks_done: 16,
    };
    assert!(
        r1.renew_ingest(id.clone(), "r1#x".into(), c.now_ms() + LEASE, progress)
            .await
            .unwrap()
    );
    c.advance(LEASE - 1);
    assert_eq!(
        r2.claim_ingest("r2#y".into(), c.now_ms() + LEASE)
            .await
            .unwrap(),
        None
    );
    let seen = r2.ingest_job(a.clone(), id.clone()).await.unwrap().unwrap();
    assert_eq!((seen.state, seen.progress), (JobState::Running, progress));

    // r1 stops renewing (it died): once the lease expires, r2 takes the job over.
    c.advance(2);
    let taken = r2
        .claim_ingest("r2#y".into(), c.now_ms() + LEASE)
        .await
        .unwrap()
        .unwrap();
    assert_eq!((taken.id.as_str(), taken.attempts), (id.as_str(), 2));
    assert_eq!(taken.owner.as_deref(), Some("r2#y"));
    assert_eq!(taken.progress, progress, "progress survives the takeover");
    assert_eq!(
        r2.ingest_data(id.clone()).await.unwrap().as_deref(),
        Some(&b"bytes"[..])
    );
    // The old owner learns it no longer holds it: neither renewing nor finishing writes.
    assert!(
        !r1.renew_ingest(
            id.clone(),
            "r1#x".into(),
            c.now_ms() + LEASE,
            Progress::default()
        )
        .await
        .unwrap()
    );
    assert!(
        !r1.finish_ingest(id.clone(), "r1#x".into(), None)
            .await
            .unwrap()
    );
    // The new owner finishes it: completed, its bytes gone.
    c.advance(7);
    assert!(
        r2.finish_ingest(id.clone(), "r2#y".into(), None)
            .await
            .unwrap()
    );
    let done = r1.ingest_job(a.clone(), id.clone()).await.unwrap().unwrap();
    assert_eq!(done.state, JobState::Completed);
    assert_eq!((done.error, done.finished_at), (None, Some(c.now_ms())));
    assert_eq!(r1.ingest_data(id.clone()).await.unwrap(), None);
    assert!(
        !r2.finish_ingest(id.clone(), "r2#y".into(), None)
            .await
            .unwrap(),
        "an ended job is not ended twice"
    );
    assert_eq!(
        r1.claim_ingest("r1#x".into(), c.now_ms() + LEASE)
            .await
            .unwrap(),
        None
    );

    // A worker's failure is kept with the job, in the error shape's terms.
    let failing = enqueue(&*r1, job(&a, "ee", b"bytes")).await.id;
    r1.claim_ingest("r1#x".into(), c.now_ms() + LEASE)
        .await
        .unwrap()
        .unwrap();
    let error = JobError {
        status: 415,
        kind: "invalid_request_error".into(),
        code: "unsupported_file".into(),
        message: "not a document".into(),
    };
    assert!(
        r1.finish_ingest(failing.clone(), "r1#x".into(), Some(error.clone()))
            .await
            .unwrap()
    );
    let failed = r2.ingest_job(a, failing).await.unwrap().unwrap();
    assert_eq!(
        (failed.state, failed.error),
        (JobState::Failed, Some(error))
    );
}

async fn a_job_abandoned_too_often_is_failed(backend: Backend) {
    let c = clock();
    let s = backend.open(c.clone()).await;
    let a = team_with_budget(&*s, None).await.id;
    let poison = enqueue(&*s, job(&a, "ff", b"bytes")).await.id;
    c.advance(1);
    let fine = enqueue(&*s, job(&a, "ee", b"bytes")).await.id;
    for attempt in 1..=MAX_ATTEMPTS {
        let j = s
            .claim_ingest(format!("r#{attempt}"), c.now_ms() + LEASE)
            .await
            .unwrap()
            .unwrap();
        assert_eq!((j.id.as_str(), j.attempts), (poison.as_str(), attempt));
        // Its worker dies; the other job is claimed meanwhile and finished.
        if attempt == 1 {
            let other = s
                .claim_ingest("other#1".into(), c.now_ms() + LEASE)
                .await
                .unwrap()
                .unwrap();
            assert_eq!(other.id, fine);
            assert!(
                s.finish_ingest(fine.clone(), "other#1".into(), None)
                    .await
                    .unwrap()
            );
        }
        c.advance(LEASE + 1);
    }
    // The next claim fails it rather than handing it out again.
    assert_eq!(
        s.claim_ingest("r#9".into(), c.now_ms() + LEASE)
            .await
            .unwrap(),
        None
    );
    let failed = s.ingest_job(a, poison.clone()).await.unwrap().unwrap();
    assert_eq!(failed.state, JobState::Failed);
    assert_eq!(failed.error.map(|e| e.code).as_deref(), Some("abandoned"));
    assert_eq!(s.ingest_data(poison).await.unwrap(), None);
}

async fn cancelling_ends_a_queued_or_running_job_and_the_workers_hold(backend: Backend) {
    let c = clock();
    let s = backend.open(c.clone()).await;
    let a = team_with_budget(&*s, None).await.id;
    let running = enqueue(&*s, job(&a, "ff", b"bytes")).await.id;
    c.advance(1);
    let queued = enqueue(&*s, job(&a, "ee", b"bytes")).await.id;
    s.claim_ingest("r#1".into(), c.now_ms() + LEASE)
        .await
        .unwrap()
        .unwrap();

    c.advance(3);
    for id in [&queued, &running] {
        let j = s
            .cancel_ingest(a.clone(), id.clone())
            .await
            .unwrap()
            .unwrap();
        assert!(j.ended_now);
        assert_eq!(
            (j.job.state, j.job.finished_at),
            (JobState::Cancelled, Some(c.now_ms()))
        );
    }
    // The worker learns at its next report; nothing is left to claim.
    assert!(
        !s.renew_ingest(
            running.clone(),
            "r#1".into(),
            c.now_ms() + LEASE,
            Progress::default()
        )
        .await
        .unwrap()
    );
    assert!(
        !s.finish_ingest(running.clone(), "r#1".into(), None)
            .await
            .unwrap()
    );
    assert_eq!(
        s.claim_ingest("r#2".into(), c.now_ms() + LEASE)
            .await
            .unwrap(),
        None
    );
    // Cancelling an ended job changes nothing.
    c.advance(5);
    let again = s.cancel_ingest(a.clone(), running).await.unwrap().unwrap();
    assert!(!again.ended_now, "only the call that ended it is told so");
    assert_eq!(again.job.finished_at, Some(c.now_ms() - 5));
}

async fn limits_refuse_by_team_and_in_all_and_the_queue_is_measured(backend: Backend) {
    let c = clock();
    let s = backend.open(c.clone()).await;
    let a = team_with_budget(&*s, None).await.id;
    let b = team_with_budget(&*s, None).await.id;
    assert_eq!(s.ingest_queue().await.unwrap(), QueueStats::default());
    let limits = QueueLimits {
        team_bytes: 100,
        team_pages: 50,
        total_bytes: 150,
        total_pages: 80,
    };
    let put =
        |team: &TeamId, sha: &str, n: usize| s.enqueue_ingest(job(team, sha, &vec![7; n]), limits);
    let Enqueued::New(first) = put(&a, "a0", 60).await.unwrap() else {
        panic!("under every limit");
    };
    assert_eq!(
        put(&a, "a1", 41).await.unwrap(),
        Enqueued::Full(QueueFull::TeamBytes)
    );
    assert!(matches!(put(&a, "a1", 40).await.unwrap(), Enqueued::New(_)));
    assert_eq!(
        put(&b, "b0", 51).await.unwrap(),
        Enqueued::Full(QueueFull::TotalBytes)
    );
    assert!(matches!(put(&b, "b0", 10).await.unwrap(), Enqueued::New(_)));
    // Pages count once extraction has counted them.
    c.advance(10);
    let claimed = s
        .claim_ingest("r#1".into(), c.now_ms() + LEASE)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(claimed.id, first.id);
    let pages = |n| Progress {
        pages: Some(n),
        ..Progress::default()
    };
    assert!(
        s.renew_ingest(
            first.id.clone(),
            "r#1".into(),
            c.now_ms() + LEASE,
            pages(50)
        )
        .await
        .unwrap()
    );
    assert_eq!(
        s.ingest_queue().await.unwrap(),
        QueueStats {
            queued: 2,
            running: 1,
            bytes: 110,
            pages: 50,
            oldest: Some(T0),
        }
    );
    assert_eq!(
        put(&a, "a2", 0).await.unwrap(),
        Enqueued::Full(QueueFull::TeamPages)
    );
    let fewer = QueueLimits {
        team_pages: 1000,
        total_pages: 50,
        ..limits
    };
    assert_eq!(
        s.enqueue_ingest(job(&b, "b1", b""), fewer).await.unwrap(),
        Enqueued::Full(QueueFull::TotalPages)
    );
    // An ended job no longer counts.
    assert!(s.finish_ingest(first.id, "r#1".into(), None).await.unwrap());
    let after = s.ingest_queue().await.unwrap();
    assert_eq!(
        (after.queued, after.running, after.bytes, after.pages),
        (2, 0, 50, 0)
    );
    assert!(after.oldest.is_some_and(|t| t > T0 - 1));
    assert!(matches!(put(&a, "a2", 50).await.unwrap(), Enqueued::New(_)));
}

async fn two_handles_claiming_at_once_take_each_job_once(backend: Backend) {
    let c = clock();
    let r1 = backend.open(c.clone()).await;
    let r2 = backend.open(c.clone()).await;
    let mut all = HashSet::new();
    for t in 0..4 {
        let team = team_with_budget(&*r1, None).await.id;
        for i in 0..10 {
            all.insert(
                enqueue(&*r1, job(&team, &format!("{t}-{i}"), b"x"))
                    .await
                    .id,
            );
        }
    }
    let stores: [Arc<dyn Store>; 2] = [r1, r2];
    let mut tasks = tokio::task::JoinSet::new();
    for w in 0..8 {
        let s = Arc::clone(&stores[w % 2]);
        let until = c.now_ms() + LEASE;
        tasks.spawn(async move {
            let mut mine = Vec::new();
            while let Some(j) = s
                .claim_ingest(format!("r{}#{w}", w % 2), until)
                .await
                .unwrap()
            {
                mine.push(j.id);
            }
            mine
        });
    }
    let mut claimed = Vec::new();
    while let Some(mine) = tasks.join_next().await {
        claimed.extend(mine.unwrap());
    }
    assert_eq!(claimed.len(), all.len(), "no job claimed twice");
    assert_eq!(claimed.into_iter().collect::<HashSet<_>>(), all);
}

async fn an_earlier_life_of_a_replica_gives_its_jobs_back_at_start(backend: Backend) {
    let c = clock();
    let s = backend.open(c.clone()).await;
    let a = team_with_budget(&*s, None).await.id;
    for sha in ["a", "b", "c"] {
        enqueue(&*s, job(&a, sha, b"x")).await;
    }
    let old = s
        .claim_ingest("gw-1#old".into(), c.now_ms() + LEASE)
        .await
        .unwrap()
        .unwrap();
    let other = s
        .claim_ingest("gw-10#x".into(), c.now_ms() + LEASE)
        .await
        .unwrap()
        .unwrap();
    let current = s
        .claim_ingest("gw-1#new".into(), c.now_ms() + LEASE)
        .await
        .unwrap()
        .unwrap();
    // Restarted as `gw-1#new`: only the old life's job goes back, at once.
    assert_eq!(
        s.requeue_ingest("gw-1#".into(), "gw-1#new".into())
            .await
            .unwrap(),
        1
    );
    let back = s
        .ingest_job(a.clone(), old.id.clone())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (back.state, back.owner, back.attempts),
        (JobState::Queued, None, 1)
    );
    for id in [other.id, current.id] {
        let j = s.ingest_job(a.clone(), id).await.unwrap().unwrap();
        assert_eq!(j.state, JobState::Running);
    }
    let again = s
        .claim_ingest("gw-1#new".into(), c.now_ms() + LEASE)
        .await
        .unwrap()
        .unwrap();
    assert_eq!((again.id, again.attempts), (old.id, 2));
}

async fn deleting_a_team_deletes_its_jobs(backend: Backend) {
    let c = clock();
    let s = backend.open(c.clone()).await;
    let a = team_with_budget(&*s, None).await.id;
    let id = enqueue(&*s, job(&a, "ff", b"x")).await.id;
    s.claim_ingest("r#1".into(), c.now_ms() + LEASE)
        .await
        .unwrap()
        .unwrap();
    assert!(s.delete_team(a.clone()).await.unwrap());
    assert_eq!(s.ingest_job(a, id.clone()).await.unwrap(), None);
    assert_eq!(s.ingest_data(id).await.unwrap(), None);
    assert_eq!(s.ingest_queue().await.unwrap(), QueueStats::default());
}

async fn a_stores_file_jobs_are_read_forgotten_and_batched(backend: Backend) {
    let (s, d) = super::documents::open(&backend, clock()).await;
    let a = team_with_budget(&*s, None).await.id;
    let b = team_with_budget(&*s, None).await.id;
    let vs = d
        .create_vector_store(super::documents::vector_store(&a, "s"))
        .await
        .unwrap();
    let of_store = |sha: &str, file: Option<&str>| NewIngestJob {
        collection: vs.id.clone(),
        file_id: file.map(str::to_string),
        ..job(&a, sha, sha.as_bytes())
    };
    let one = enqueue(&*s, of_store("f1", Some("file-1"))).await;
    let two = enqueue(&*s, of_store("f2", Some("file-2"))).await;
    // A document uploaded into the same collection is not one of the store's files.
    enqueue(&*s, of_store("f3", None)).await;
    let ids = |jobs: Vec<IngestJob>| jobs.into_iter().map(|j| j.id).collect::<Vec<_>>();

    // Newest first, the team's only.
    let jobs = s
        .collection_ingests(a.clone(), vs.id.clone())
        .await
        .unwrap();
    assert_eq!(ids(jobs), vec![two.id.clone(), one.id.clone()]);
    assert!(
        s.collection_ingests(b.clone(), vs.id.clone())
            .await
            .unwrap()
            .is_empty()
    );
    // A file's jobs in every store (a deleted file's), the team's only.
    let of_file = |team: &TeamId, file: &str| s.file_ingests(team.clone(), file.to_string());
    assert_eq!(
        ids(of_file(&a, "file-1").await.unwrap()),
        vec![one.id.clone()]
    );
    assert!(of_file(&b, "file-1").await.unwrap().is_empty());
    assert!(of_file(&a, "file-9").await.unwrap().is_empty());
    // A detached file's jobs are gone; another team forgets nothing of it.
    let forget = |team: &TeamId, file: Option<&str>| {
        s.forget_ingests(team.clone(), vs.id.clone(), file.map(str::to_string))
    };
    assert_eq!(forget(&b, Some("file-1")).await.unwrap(), 0);
    assert_eq!(forget(&a, Some("file-1")).await.unwrap(), 1);
    assert_eq!(s.ingest_job(a.clone(), one.id.clone()).await.unwrap(), None);
    let jobs = s
        .collection_ingests(a.clone(), vs.id.clone())
        .await
        .unwrap();
    assert_eq!(ids(jobs), vec![two.id.clone()]);

    // A batch: kept with its files, the team's only, cancelled once.
    let batch = s
        .create_file_batch(FileBatch {
            id: "vsfb_1".into(),
            team_id: a.clone(),
            vector_store_id: vs.id.clone(),
            file_ids: vec!["file-2".into(), "file-9".into()],
            cancelled: false,
            created_at: 0,
        })
        .await
        .unwrap();
    assert_eq!(batch.created_at, T0);
    let get = |team: &TeamId| s.file_batch(team.clone(), "vsfb_1".into());
    assert_eq!(get(&a).await.unwrap(), Some(batch.clone()));
    assert_eq!(get(&b).await.unwrap(), None);
    assert!(
        !s.cancel_file_batch(b.clone(), "vsfb_1".into())
            .await
            .unwrap()
    );
    assert!(
        s.cancel_file_batch(a.clone(), "vsfb_1".into())
            .await
            .unwrap()
    );
    assert!(get(&a).await.unwrap().unwrap().cancelled);

    // The whole store's jobs (files and documents) forgotten; its deletion takes its batches.
    assert_eq!(forget(&a, None).await.unwrap(), 2);
    assert!(
        d.delete_vector_store(a.clone(), vs.id.clone())
            .await
            .unwrap()
    );
    assert_eq!(get(&a).await.unwrap(), None);
}
