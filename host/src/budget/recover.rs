//! Start-up: the charges a crash or a power failure took from the store, taken back from the
//! journal (docs/STORE.md, "Charges ride the journal's fsync"). A charge the journal carries is
//! committed to SQLite without anyone waiting (`Charger::charge_carried`), so the last of them
//! may be missing after a crash; their entries were fsynced before the answers left.
//! Before anything reads usage or budget counters, every entry from the store's marker on is
//! read, and a carried charge with no usage row of the same request, model, tokens and spend is
//! applied again. Then a new marker (the journal's head) is committed with a sync.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::UNIX_EPOCH;

use crate::journal::query::{Filter, query};
use crate::journal::{Journal, JournalConfig, Record, parse_iso8601};
use crate::store::{KeyId, Store, StoreResult, TeamId, UsageRecord};

/// Entries read per page.
const PAGE: usize = 4_096;

/// What [`charges`] did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Recovered {
    /// Entries read from the marker on.
    pub entries: usize,
    /// Charges applied again.
    pub charges: usize,
}

/// Takes back, from the journal `journal` (opened on `cfg`), the charges the store lost; then
/// marks the journal's head. Nothing to do unless charges ride the journal (a durable journal and
/// a store that can: `Store::charges_ride_journal`).
pub async fn charges(
    store: &Arc<dyn Store>,
    journal: &Journal,
    cfg: &JournalConfig,
) -> anyhow::Result<Recovered> {
    if !(journal.is_durable() && store.charges_ride_journal()) {
        return Ok(Recovered::default());
    }
    let head = journal.durable_seq();
    let mut done = Recovered::default();
    let mut lost = Vec::new();
    // No marker: no charge has ever ridden this journal (every start marks before serving).
    let from = store.charges_marker().await?;
    let mut next = from;
    while let Some(seq) = next {
        let (dir, id) = (cfg.dir.clone(), cfg.sovereign_id.clone());
        let page = tokio::task::spawn_blocking(move || {
            query(&dir, &id, &Filter::default(), seq, head, PAGE, PAGE as u64)
        })
        .await??;
        done.entries += page.entries.len();
        lost.extend(
            missing(
                store.as_ref(),
                page.entries.into_iter().map(|h| h.record).collect(),
            )
            .await?,
        );
        next = page.next_seq;
    }
    done.charges = lost.len();
    if !lost.is_empty() {
        tracing::warn!(
            charges = lost.len(),
            from_seq = from,
            "charges missing from the store (a crash?) applied again from the journal"
        );
    }
    store.charge_and_mark(lost, head + 1).await?;
    Ok(done)
}

/// The charges these entries carry that have no usage row of their own.
async fn missing(store: &dyn Store, entries: Vec<Record>) -> StoreResult<Vec<UsageRecord>> {
    let carrying: Vec<Record> = entries
        .into_iter()
        .filter(|r| !r.entry.charges.is_empty())
        .collect();
    if carrying.is_empty() {
        return Ok(Vec::new());
    }
    let ids = carrying
        .iter()
        .map(|r| r.entry.request_id.clone())
        .collect();
    let mut rows: HashMap<String, Vec<UsageRecord>> = HashMap::new();
    for row in store.charged(ids).await? {
        rows.entry(row.request_id.clone().unwrap_or_default())
            .or_default()
            .push(row);
    }
    let mut lost = Vec::new();
    for record in carrying {
        let e = record.entry;
        let mut found = rows.remove(&e.request_id).unwrap_or_default();
        let at = parse_iso8601(&e.timestamp)
            .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
        for c in e.charges {
            let spend = i64::try_from(c.spend_micros).unwrap_or(i64::MAX);
            let same = |u: &UsageRecord| {
                u.model == c.model
                    && u.tokens_in == c.tokens_in
                    && u.tokens_out == c.tokens_out
                    && u.spend == spend
            };
            match found.iter().position(same) {
                // Each row accounts for one charge.
                Some(i) => drop(found.swap_remove(i)),
                None => lost.push(UsageRecord {
                    at,
                    team_id: TeamId(e.team_id.clone()),
                    key_id: KeyId(e.key_id.clone()),
                    actor: e.actor_id.clone(),
                    model: c.model,
                    tokens_in: c.tokens_in,
                    tokens_out: c.tokens_out,
                    spend,
                    request_id: Some(e.request_id.clone()),
                }),
            }
        }
    }
    Ok(lost)
}

#[cfg(test)]
mod tests {
    use std::time::SystemTime;

    use super::*;
    use crate::journal::{Charge, EntryDraft, Status};
    use crate::store::sqlite::SqliteStore;
    use crate::store::{BudgetScope, ManualClock, NewTeam};

    fn charge(model: &str, spend_micros: u64, tokens_out: u64) -> Charge {
        Charge {
            model: model.into(),
            spend_micros,
            tokens_in: 3,
            tokens_out,
        }
    }

    fn entry(request: &str, team: &TeamId, charges: Vec<Charge>) -> EntryDraft {
        EntryDraft {
            timestamp: SystemTime::now(),
            request_id: request.into(),
            actor_id: "alice".into(),
            team_id: team.0.clone(),
            key_id: "key_1".into(),
            auth: Some("key".into()),
            cert_sha256: None,
            charges,
            action: "chat.completions".into(),
            model: Some("m".into()),
            prompt_hash: None,
            routing_policy: None,
            residency_boundary: None,
            retrieval_filtered: None,
            status: Status::Success,
            prompt_tokens: Some(3),
            completion_tokens: Some(5),
            latency_us: 1,
            mcp: None,
        }
    }

    /// What the store holds of a charge: its usage row (and its spend on the counters).
    fn row(request: &str, team: &TeamId, c: &Charge) -> UsageRecord {
        UsageRecord {
            at: 1,
            team_id: team.clone(),
            key_id: KeyId("key_1".into()),
            actor: "alice".into(),
            model: c.model.clone(),
            tokens_in: c.tokens_in,
            tokens_out: c.tokens_out,
            spend: i64::try_from(c.spend_micros).unwrap(),
            request_id: Some(request.into()),
        }
    }

    /// Four entries carry five charges; the store took three of them (and a row of the same
    /// request that no entry carries, as a document's embedding usage is). Recovery applies the
    /// other two exactly, from the marker on; a second start finds nothing to do.
    #[tokio::test]
    async fn lost_charges_are_applied_again_once() {
        let tmp = tempfile::tempdir().unwrap();
        let clock = Arc::new(ManualClock::new(1_800_000_000_000));
        let store: Arc<dyn Store> = Arc::new(
            SqliteStore::open(&tmp.path().join("s.db"), clock)
                .await
                .unwrap(),
        );
        let team = store
            .create_team(NewTeam {
                name: "t".into(),
                budget: Some(1_000_000),
                ..NewTeam::default()
            })
            .await
            .unwrap()
            .id;
        let cfg = JournalConfig::new(tmp.path().join("j"), "r1", tmp.path().join("k"));
        let (journal, _) = Journal::open(cfg.clone()).unwrap();
        // Before the marker: never read, whatever it carries.
        journal
            .append(entry("req-0", &team, vec![charge("m", 999, 1)]))
            .await
            .unwrap();
        assert_eq!(
            charges(&store, &journal, &cfg).await.unwrap(),
            Recovered::default()
        );
        let (a, b, c) = (charge("m", 10, 1), charge("m", 20, 2), charge("e", 0, 0));
        let d = charge("m", 40, 4);
        let embedding = UsageRecord {
            model: "e5".into(),
            ..row("req-2", &team, &charge("e5", 0, 0))
        };
        for (request, carried) in [
            ("req-1", vec![a.clone()]),
            ("req-2", vec![b.clone(), c.clone()]),
            ("req-3", vec![]),
            ("req-4", vec![d.clone(), a.clone()]),
        ] {
            journal
                .append(entry(request, &team, carried))
                .await
                .unwrap();
        }
        // The store kept req-1's charge, req-2's first and its embedding row, req-4's second.
        store
            .charge(vec![
                row("req-1", &team, &a),
                row("req-2", &team, &b),
                embedding,
                row("req-4", &team, &a),
            ])
            .await
            .unwrap();
        let spent = || async {
            store
                .budget(BudgetScope::Team(team.clone()))
                .await
                .unwrap()
                .unwrap()
                .spent
        };
        assert_eq!(spent().await, 10 + 20 + 10);

        let done = charges(&store, &journal, &cfg).await.unwrap();
        assert_eq!(
            done,
            Recovered {
                entries: 4,
                charges: 2
            }
        );
        assert_eq!(
            spent().await,
            10 + 20 + 10 + 40,
            "req-4's lost charge of 40"
        );
        let mut rows = store
            .charged(vec!["req-2".into(), "req-4".into()])
            .await
            .unwrap();
        rows.sort_by_key(|u| (u.request_id.clone(), u.model.clone(), u.spend));
        let kept: Vec<_> = rows
            .iter()
            .map(|u| (u.request_id.as_deref().unwrap(), u.model.as_str(), u.spend))
            .collect();
        assert_eq!(
            kept,
            [
                ("req-2", "e", 0),
                ("req-2", "e5", 0),
                ("req-2", "m", 20),
                ("req-4", "m", 10),
                ("req-4", "m", 40)
            ]
        );
        assert_eq!(store.charges_marker().await.unwrap(), Some(6));

        assert_eq!(
            charges(&store, &journal, &cfg).await.unwrap(),
            Recovered::default()
        );
        assert_eq!(spent().await, 80);
    }
}
