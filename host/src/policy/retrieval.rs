//! Retrieval policies: a component of the `retrieval-policy` world (the built-in one is
//! `policies/retrieval-keep`: every candidate, in the ranking's order) that sees the caller, the
//! query and the ranked candidate chunks with their documents' metadata, and answers which of
//! them leave the gateway and in which order (filter and re-rank). Loaded like every policy
//! (compile, world check, pre-instantiation, smoke call, off the request path), called in a
//! fresh store per query under a deadline and memory cap. The answer is checked before use:
//! every index names a candidate, none twice. A failed call — trap, timeout, rejection, an answer
//! the host refuses — fails the query closed (nothing is cited).
//!
//! [`RetrievalPolicies`] holds the active version, hot-swapped by
//! `POST /v1/admin/retrieval-policy` and kept in `<data_dir>/policies` across restarts. The
//! request path calls it in `pipeline::library::review`, after the ranking and before citation
//! or generation.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::bindings::{CallState, RetrievalPolicyPre, WitSelection};
use super::slot::{Installed, Kept, Slot};
use super::{CallLimits, PolicyError, PolicyHost};

/// The caller and one candidate, as the policy sees them (the WIT records themselves, so a call
/// lowers them into the guest without a copy first).
pub use super::bindings::retrieval_world::exports::sovereign::policy::retrieval::Chunk;
pub use super::bindings::sovereign::policy::types::Caller;

/// The world every retrieval policy component must export.
pub const WORLD: &str = "sovereign:policy/retrieval-policy@0.1.0";
/// Longest `rule` accepted, in bytes.
const MAX_RULE_BYTES: usize = 256;
/// Most candidates one call reviews (a query cites at most `rag::MAX_TOP_K`).
pub const MAX_CANDIDATES: usize = 1000;

/// Limits of each review: 20 ms of running time (it sees up to a query's whole candidate list,
/// text included) and the 32 MiB of every policy.
pub fn limits() -> CallLimits {
    CallLimits {
        deadline: Duration::from_millis(20),
        ..CallLimits::default()
    }
}

/// A checked answer: indices into the candidates, best first, each once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selection {
    pub keep: Vec<usize>,
    pub rule: String,
}

impl Selection {
    /// How many of `of` candidates it leaves out.
    pub fn removed(&self, of: usize) -> usize {
        of.saturating_sub(self.keep.len())
    }

    /// Whether it keeps every candidate in the ranking's order.
    pub fn is_identity(&self, of: usize) -> bool {
        self.keep.len() == of && self.keep.iter().enumerate().all(|(i, k)| i == *k)
    }
}

/// A loaded retrieval policy. Cheap to share; calls run concurrently.
pub struct RetrievalPolicy {
    host: PolicyHost,
    id: Arc<str>,
    sha256: String,
    pre: RetrievalPolicyPre<CallState>,
    settings: Arc<HashMap<String, String>>,
    limits: CallLimits,
}

impl std::fmt::Debug for RetrievalPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RetrievalPolicy")
            .field("id", &self.id)
            .field("sha256", &self.sha256)
            .finish_non_exhaustive()
    }
}

/// The caller of every retrieval policy's smoke call.
pub fn smoke_caller() -> Caller {
    Caller {
        team_id: "smoke".into(),
        key_id: "smoke".into(),
        role: "member".into(),
        identity: None,
    }
}

/// The candidates of every retrieval policy's smoke call: two chunks of two documents.
pub fn smoke_candidates() -> Vec<Chunk> {
    (0..2u32)
        .map(|i| Chunk {
            document_id: format!("doc_smoke{i}"),
            filename: format!("smoke{i}.txt"),
            chunk_id: u64::from(i),
            score: 1.0 / (1.0 + i as f32),
            confidence: 0.5,
            metadata: "{}".into(),
            text: "hello".into(),
        })
        .collect()
}

impl RetrievalPolicy {
    /// Compiles (or reads from the cache), checks the exports against the `retrieval-policy`
    /// world, pre-instantiates off the runtime, then smoke-calls it on [`smoke_candidates`]: a
    /// checked selection or a 4xx rejection passes, anything else fails the load.
    pub async fn load(
        host: &PolicyHost,
        wasm: Arc<[u8]>,
        settings: Option<String>,
        limits: CallLimits,
    ) -> Result<RetrievalPolicy, PolicyError> {
        let host = host.clone();
        let policy = tokio::task::spawn_blocking(move || {
            let started = Instant::now();
            let (sha256, instance_pre) = super::call::compile_and_link(&host, &wasm, WORLD)?;
            let pre = RetrievalPolicyPre::new(instance_pre)
                .map_err(|e| super::call::wrong_world(WORLD, &e))?;
            tracing::info!(sha256, elapsed = ?started.elapsed(), "retrieval policy compiled");
            let mut map = HashMap::new();
            if let Some(s) = settings {
                map.insert("settings".to_string(), s);
            }
            Ok::<_, PolicyError>(RetrievalPolicy {
                limits: super::call::capped(&host, limits),
                host,
                id: "retrieval-policy".into(),
                sha256,
                pre,
                settings: Arc::new(map),
            })
        })
        .await
        .map_err(|e| PolicyError::Cancelled(e.to_string()))??;
        match policy
            .review(&smoke_caller(), "smoke call", &smoke_candidates())
            .await
        {
            Ok(_) => Ok(policy),
            Err(PolicyError::Rejected { status, .. }) if (400..500).contains(&status) => Ok(policy),
            Err(e) => Err(PolicyError::SmokeCall {
                policy: policy.id.to_string(),
                cause: Box::new(e),
            }),
        }
    }

    /// sha256 of the component, hex.
    pub fn sha256(&self) -> &str {
        &self.sha256
    }

    /// Which candidates leave the gateway and in which order.
    pub async fn review(
        &self,
        caller: &Caller,
        query: &str,
        candidates: &[Chunk],
    ) -> Result<Selection, PolicyError> {
        if candidates.len() > MAX_CANDIDATES {
            return Err(PolicyError::TooLarge {
                policy: self.id.to_string(),
                bytes: candidates.len(),
                max: MAX_CANDIDATES,
            });
        }
        let budget = self.host.ticks(self.limits.deadline);
        let mut store = super::call::new_store(
            &self.host,
            self.id.clone(),
            self.settings.clone(),
            self.limits,
            budget,
        );
        let instance = self
            .pre
            .instantiate_async(&mut store)
            .await
            .map_err(|e| super::call::classify(&self.id, self.limits, &store, e, true))?;
        let answer = instance
            .sovereign_policy_retrieval()
            .call_review(&mut store, caller, query, candidates)
            .await
            .map_err(|e| super::call::classify(&self.id, self.limits, &store, e, false))?;
        drop(store);
        match answer {
            Ok(selection) => {
                checked(selection, candidates.len()).map_err(|reason| PolicyError::BadAnswer {
                    policy: self.id.to_string(),
                    reason,
                })
            }
            Err(r) if (400..600).contains(&r.status) => Err(PolicyError::Rejected {
                policy: self.id.to_string(),
                status: r.status,
                code: r.code.chars().take(64).collect(),
                message: r.message.chars().take(1024).collect(),
            }),
            Err(r) => Err(PolicyError::BadAnswer {
                policy: self.id.to_string(),
                reason: format!("rejection status {} is not a 4xx or 5xx", r.status),
            }),
        }
    }
}

/// A selection checked against `n` candidates: every index in range, none twice, a short rule.
fn checked(s: WitSelection, n: usize) -> Result<Selection, String> {
    if s.rule.len() > MAX_RULE_BYTES {
        return Err(format!(
            "the rule name is longer than {MAX_RULE_BYTES} bytes"
        ));
    }
    if s.keep.len() > n {
        return Err(format!(
            "{} indices for {n} candidates: an index was named twice",
            s.keep.len()
        ));
    }
    let mut seen = vec![false; n];
    let mut keep = Vec::with_capacity(s.keep.len());
    for k in s.keep {
        let i = usize::try_from(k).unwrap_or(usize::MAX);
        match seen.get_mut(i) {
            None => return Err(format!("index {k} names no candidate (there are {n})")),
            Some(true) => return Err(format!("index {k} was named twice")),
            Some(slot) => *slot = true,
        }
        keep.push(i);
    }
    Ok(Selection { keep, rule: s.rule })
}

/// The active retrieval policy, hot-swappable: each query runs on the version it loaded at its
/// start; a version that fails to load never becomes active.
pub struct RetrievalPolicies {
    host: PolicyHost,
    limits: CallLimits,
    slot: Slot<RetrievalPolicy>,
    /// Where an installed version is kept across restarts, when set.
    kept: Option<Kept>,
}

impl RetrievalPolicies {
    /// With the built-in policy (`policies/retrieval-keep`: every candidate, in order) active.
    pub async fn builtin(host: PolicyHost) -> Result<RetrievalPolicies, PolicyError> {
        let limits = limits();
        let wasm: Arc<[u8]> = Arc::from(policy_artifacts::RETRIEVAL_KEEP_COMPONENT);
        let policy = RetrievalPolicy::load(&host, wasm.clone(), None, limits).await?;
        Ok(RetrievalPolicies {
            host,
            limits,
            slot: Slot::new(Installed {
                policy,
                wasm,
                settings: None,
                builtin: true,
            }),
            kept: None,
        })
    }

    /// Keeps installed versions in `dir` (`retrieval.wasm`, `retrieval.settings`) from now on, and
    /// makes the one kept there by an earlier run active again. One that no longer loads fails
    /// the start: the gateway never falls back to the built-in policy on its own.
    pub async fn kept_in(mut self, dir: std::path::PathBuf) -> Result<Self, PolicyError> {
        let kept = Kept {
            dir,
            name: "retrieval",
        };
        if let Some((wasm, settings)) = kept.read_async().await? {
            let wasm: Arc<[u8]> = Arc::from(wasm);
            let policy =
                RetrievalPolicy::load(&self.host, wasm.clone(), settings.clone(), self.limits)
                    .await?;
            tracing::info!(
                sha256 = policy.sha256(),
                "the installed retrieval policy restored"
            );
            self.slot.replace(Installed {
                policy,
                wasm,
                settings,
                builtin: false,
            });
        }
        self.kept = Some(kept);
        Ok(self)
    }

    pub fn active(&self) -> Arc<Installed<RetrievalPolicy>> {
        self.slot.active()
    }

    /// Loads a new version (the part not given taken from the active one), then makes it
    /// active; queries in flight finish on the one they started with.
    pub async fn swap(
        &self,
        wasm: Option<Vec<u8>>,
        settings: Option<String>,
    ) -> Result<Arc<Installed<RetrievalPolicy>>, PolicyError> {
        let current = self.active();
        let builtin = wasm.is_none() && current.builtin;
        let wasm = wasm.map_or_else(|| current.wasm.clone(), Arc::from);
        let settings = settings.or_else(|| current.settings.clone());
        let policy =
            RetrievalPolicy::load(&self.host, wasm.clone(), settings.clone(), self.limits).await?;
        let installed = self.slot.replace(Installed {
            policy,
            wasm: wasm.clone(),
            settings: settings.clone(),
            builtin,
        });
        if let Some(kept) = &self.kept {
            kept.write_async(wasm, settings).await;
        }
        Ok(installed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sel(keep: &[u32]) -> WitSelection {
        WitSelection {
            keep: keep.to_vec(),
            rule: "r".into(),
        }
    }

    #[test]
    fn selections_filter_and_reorder() {
        let s = checked(sel(&[2, 0]), 3).unwrap();
        assert_eq!(s.keep, [2, 0]);
        assert_eq!(s.removed(3), 1);
        assert!(!s.is_identity(3));
        assert!(checked(sel(&[0, 1, 2]), 3).unwrap().is_identity(3));
        assert_eq!(checked(sel(&[]), 3).unwrap().removed(3), 3);
    }

    #[test]
    fn selections_naming_no_candidate_or_one_twice_are_refused() {
        assert!(
            checked(sel(&[3]), 3)
                .unwrap_err()
                .contains("names no candidate")
        );
        assert!(checked(sel(&[1, 1]), 3).unwrap_err().contains("twice"));
        assert!(checked(sel(&[0, 1, 2, 0]), 3).is_err());
        assert!(checked(sel(&[u32::MAX]), 3).is_err());
        let mut long = sel(&[0]);
        long.rule = "x".repeat(MAX_RULE_BYTES + 1);
        assert!(checked(long, 1).is_err());
    }
}
