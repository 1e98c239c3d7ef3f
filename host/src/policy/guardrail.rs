//! Guardrail policies: a component of the `guardrail-policy` world (the built-in one is
//! `policies/pii-guardrail`), pre-instantiated once, called in a fresh store per check under the
//! same deadline and memory cap as routers. The host checks every answer before using it: each
//! redaction names a message that exists and a span inside it, on character boundaries, sorted
//! and not overlapping; entity names are short. Fail mode: a guardrail that fails refuses the
//! request (fail-closed, DESIGN.md).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::bindings::{CallState, GuardrailInstance, GuardrailPolicyPre, WitMessage, WitStage};
use super::pool::{Warm, WarmPool};
use super::{CallLimits, PolicyError, PolicyHost, PoolMode, RouteFacts};
use crate::config::guardrail_defaults;

/// The world every guardrail component must export.
pub const WORLD: &str = "sovereign:policy/guardrail-policy@0.1.0";
/// Longest entity kind or placeholder accepted from a guardrail, in bytes.
const MAX_NAME_BYTES: usize = 64;

/// Which side of the model a check is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    Input,
    Output,
}

/// A checked verdict, in the host's types.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Verdict {
    /// Entity kinds that block the request (empty: not blocked).
    pub blocked: Vec<String>,
    /// Sorted, non-overlapping, in bounds and on character boundaries of their message.
    pub redactions: Vec<Redaction>,
    /// Entity kinds found whose action is `flag` (the request becomes sensitive).
    pub flagged: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redaction {
    pub message: usize,
    pub start: usize,
    pub end: usize,
    pub replacement: String,
    pub entity: String,
}

impl Verdict {
    /// Entity kinds redacted, each once, in first-seen order.
    pub fn redacted_entities(&self) -> Vec<String> {
        let mut kinds: Vec<String> = Vec::new();
        for r in &self.redactions {
            if !kinds.contains(&r.entity) {
                kinds.push(r.entity.clone());
            }
        }
        kinds
    }
}

/// Applies checked redactions to `texts` (the messages' contents, in the order checked).
pub fn apply(texts: &mut [String], redactions: &[Redaction]) {
    // Right to left within a message, so earlier offsets stay valid.
    for r in redactions.iter().rev() {
        if let Some(t) = texts.get_mut(r.message) {
            t.replace_range(r.start..r.end, &r.replacement);
        }
    }
}

/// How a guardrail call's limits grow with the text it checks, and the most text it checks: a
/// long prompt gets a longer deadline and more memory instead of a timeout (docs/GUARDRAIL.md,
/// "Large inputs").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InputScaling {
    /// Added to the deadline per MiB of text.
    pub deadline_per_mib: Duration,
    /// Added to the memory cap per MiB of text (the host's cap still bounds the sum).
    pub memory_per_mib: usize,
    /// The most text (bytes, all messages) one call checks; more is refused before the call.
    pub max_bytes: usize,
}

impl Default for InputScaling {
    fn default() -> Self {
        InputScaling {
            deadline_per_mib: Duration::from_millis(guardrail_defaults::DEADLINE_MS_PER_MIB),
            memory_per_mib: guardrail_defaults::MEMORY_MIB_PER_MIB << 20,
            max_bytes: guardrail_defaults::MAX_SCANNED_MIB << 20,
        }
    }
}

impl InputScaling {
    /// `base` grown for `bytes` of text: deadline and memory each add their share per MiB.
    pub fn limits_for(&self, base: CallLimits, bytes: usize) -> CallLimits {
        const MIB: u128 = 1 << 20;
        let bytes = bytes as u128;
        let extra_ns = self.deadline_per_mib.as_nanos() * bytes / MIB;
        let extra_mem = (self.memory_per_mib as u128 * bytes).div_ceil(MIB);
        CallLimits {
            deadline: base.deadline.saturating_add(Duration::from_nanos(
                u64::try_from(extra_ns).unwrap_or(u64::MAX),
            )),
            memory_bytes: base
                .memory_bytes
                .saturating_add(usize::try_from(extra_mem).unwrap_or(usize::MAX)),
            ..base
        }
    }
}

/// A loaded guardrail. Cheap to share; calls run concurrently.
pub struct GuardrailPolicy {
    host: PolicyHost,
    id: Arc<str>,
    sha256: String,
    pre: GuardrailPolicyPre<CallState>,
    settings: Arc<HashMap<String, String>>,
    limits: CallLimits,
    scaling: InputScaling,
    /// Idle instances, with [`PoolMode::Warm`] (`[guardrail] pool = "warm"`).
    warm: Option<WarmPool<GuardrailInstance>>,
}

/// The most text a call may bring to a warm instance: its store's memory cap is set when it is
/// made (for this much text), so a larger check runs in a fresh instance sized for it.
const WARM_MAX_BYTES: usize = 64 << 10;

impl std::fmt::Debug for GuardrailPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GuardrailPolicy")
            .field("id", &self.id)
            .field("sha256", &self.sha256)
            .finish_non_exhaustive()
    }
}

impl GuardrailPolicy {
    /// Compiles (or reads from the cache), checks the exports against the `guardrail-policy`
    /// world, pre-instantiates, and smoke-calls it on a golden message, off the runtime.
    pub async fn load(
        host: &PolicyHost,
        id: &str,
        wasm: Vec<u8>,
        settings: HashMap<String, String>,
        limits: CallLimits,
    ) -> Result<GuardrailPolicy, PolicyError> {
        let host = host.clone();
        let id: Arc<str> = id.into();
        let policy = tokio::task::spawn_blocking(move || {
            let started = Instant::now();
            let (sha256, instance_pre) = super::call::compile_and_link(&host, &wasm, WORLD)?;
            let pre = GuardrailPolicyPre::new(instance_pre)
                .map_err(|e| super::call::wrong_world(WORLD, &e))?;
            tracing::info!(policy = &*id, sha256, elapsed = ?started.elapsed(), "guardrail compiled");
            let limits = super::call::capped(&host, limits);
            let warm =
                (limits.pool == PoolMode::Warm).then(|| WarmPool::new(limits.warm_max_calls));
            Ok::<_, PolicyError>(GuardrailPolicy {
                host: host.clone(),
                id,
                sha256,
                pre,
                settings: Arc::new(settings),
                limits,
                scaling: InputScaling::default(),
                warm,
            })
        })
        .await
        .map_err(|e| PolicyError::Cancelled(e.to_string()))??;
        let golden = ["Hello, how are you?".to_string()];
        if let Err(e) = policy
            .check(Stage::Input, &RouteFacts::default(), &golden)
            .await
        {
            return Err(PolicyError::SmokeCall {
                policy: policy.id.to_string(),
                cause: Box::new(e),
            });
        }
        Ok(policy)
    }

    pub fn id(&self) -> &str {
        &self.id
    }

    pub fn sha256(&self) -> &str {
        &self.sha256
    }

    /// The same policy with its limits scaled by `scaling` (the default until set).
    #[must_use]
    pub fn with_scaling(mut self, scaling: InputScaling) -> Self {
        self.scaling = scaling;
        self
    }

    /// Checks `texts` (message contents; roles are not needed by the built-in guardrail and are
    /// passed as `user` for input and `assistant` for output) in a fresh instance, under limits
    /// grown for their size; more text than the scaling's maximum is refused without a call.
    pub async fn check(
        &self,
        stage: Stage,
        facts: &RouteFacts,
        texts: &[String],
    ) -> Result<Verdict, PolicyError> {
        let bytes = texts.iter().map(String::len).sum::<usize>();
        if bytes > self.scaling.max_bytes {
            return Err(PolicyError::TooLarge {
                policy: self.id.to_string(),
                bytes,
                max: self.scaling.max_bytes,
            });
        }
        let warm = self.warm.as_ref().filter(|_| bytes <= WARM_MAX_BYTES);
        let sized_for = if warm.is_some() {
            WARM_MAX_BYTES
        } else {
            bytes
        };
        let limits =
            super::call::capped(&self.host, self.scaling.limits_for(self.limits, sized_for));
        let role = match stage {
            Stage::Input => "user",
            Stage::Output => "assistant",
        };
        let messages: Vec<WitMessage> = texts
            .iter()
            .map(|t| WitMessage {
                role: role.into(),
                content: t.clone(),
            })
            .collect();
        let wit_stage = match stage {
            Stage::Input => WitStage::Input,
            Stage::Output => WitStage::Output,
        };
        let budget = self.host.ticks(limits.deadline);
        let mut w = match warm.and_then(|p| p.take_for(budget)) {
            Some(w) => w,
            None => self.instantiate(limits, budget, warm).await?,
        };
        let answer = match w
            .instance
            .sovereign_policy_guardrail()
            .call_check(&mut w.store, wit_stage, facts, &messages)
            .await
        {
            Ok(a) => a,
            // The store is dropped here: never entered again after a trap.
            Err(e) => return Err(super::call::classify(&self.id, limits, &w.store, e, false)),
        };
        if let Some(pool) = warm {
            pool.give_back(w);
        }
        match answer {
            Ok(v) => self.checked(v, texts),
            Err(r) => Err(PolicyError::Rejected {
                policy: self.id.to_string(),
                status: r.status,
                code: r.code.chars().take(MAX_NAME_BYTES).collect(),
                message: r.message.chars().take(1024).collect(),
            }),
        }
    }

    /// With a warm pool: (instances made, calls served by a reused instance, idle instances).
    pub fn pool_stats(&self) -> Option<(u64, u64, usize)> {
        self.warm.as_ref().map(WarmPool::stats)
    }

    /// A new store and instance under `limits`; instantiation runs under the call's budget.
    async fn instantiate(
        &self,
        limits: CallLimits,
        budget: u64,
        warm: Option<&WarmPool<GuardrailInstance>>,
    ) -> Result<Warm<GuardrailInstance>, PolicyError> {
        let mut store = super::call::new_store(
            &self.host,
            self.id.clone(),
            self.settings.clone(),
            limits,
            budget,
        );
        let instance = match self.pre.instantiate_async(&mut store).await {
            Ok(i) => i,
            Err(e) => return Err(super::call::classify(&self.id, limits, &store, e, true)),
        };
        if let Some(pool) = warm {
            pool.made_one();
        }
        Ok(Warm {
            store,
            instance,
            calls: 0,
        })
    }

    fn checked(
        &self,
        v: super::bindings::WitVerdict,
        texts: &[String],
    ) -> Result<Verdict, PolicyError> {
        let bad = |reason: String| PolicyError::BadAnswer {
            policy: self.id.to_string(),
            reason,
        };
        let name = |s: String| {
            if s.is_empty() || s.len() > MAX_NAME_BYTES {
                Err(bad(format!(
                    "entity names must be 1 to {MAX_NAME_BYTES} bytes"
                )))
            } else {
                Ok(s)
            }
        };
        let mut out = Verdict::default();
        if let Some(b) = v.block {
            out.blocked = b.entities.into_iter().map(name).collect::<Result<_, _>>()?;
            if out.blocked.is_empty() {
                out.blocked.push("unspecified".into());
            }
            return Ok(out);
        }
        let mut last: Option<(usize, usize)> = None;
        for r in v.redactions {
            let (m, start, end) = (r.message as usize, r.start as usize, r.end as usize);
            let text = texts
                .get(m)
                .ok_or_else(|| bad(format!("redaction names message {m} of {}", texts.len())))?;
            if start > end
                || end > text.len()
                || !text.is_char_boundary(start)
                || !text.is_char_boundary(end)
            {
                return Err(bad(format!(
                    "redaction {start}..{end} of message {m} is out of bounds or not on character boundaries"
                )));
            }
            if last.is_some_and(|(lm, lend)| m < lm || (m == lm && start < lend)) {
                return Err(bad("redactions must be sorted and must not overlap".into()));
            }
            if r.replacement.len() > MAX_NAME_BYTES {
                return Err(bad("a replacement is too long".into()));
            }
            last = Some((m, end));
            out.redactions.push(Redaction {
                message: m,
                start,
                end,
                replacement: r.replacement,
                entity: name(r.entity)?,
            });
        }
        out.flagged = v.flagged.into_iter().map(name).collect::<Result<_, _>>()?;
        Ok(out)
    }
}

/// The active guardrail and what a swap needs to load the next one: swapped whole (an
/// `ArcSwap`), so a request checks its input and its answer with the version it started with...
/// or the newer one, never a half-loaded one; a version that fails to load never becomes active.
pub struct GuardrailSlot {
    host: PolicyHost,
    limits: CallLimits,
    scaling: InputScaling,
    active: arc_swap::ArcSwap<Loaded>,
    swaps: std::sync::Mutex<()>,
}

/// A loaded guardrail with the inputs it was loaded from.
pub struct Loaded {
    pub policy: GuardrailPolicy,
    pub wasm: Arc<[u8]>,
    pub settings: Option<String>,
}

impl GuardrailSlot {
    pub async fn load(
        host: PolicyHost,
        limits: CallLimits,
        scaling: InputScaling,
        wasm: Arc<[u8]>,
        settings: Option<String>,
    ) -> Result<GuardrailSlot, PolicyError> {
        let loaded = load_version(&host, limits, scaling, wasm, settings).await?;
        Ok(GuardrailSlot {
            host,
            limits,
            scaling,
            active: arc_swap::ArcSwap::from_pointee(loaded),
            swaps: std::sync::Mutex::new(()),
        })
    }

    pub fn active(&self) -> Arc<Loaded> {
        self.active.load_full()
    }

    /// Loads a new version (missing parts taken from the active one), then makes it active.
    pub async fn swap(
        &self,
        wasm: Option<Vec<u8>>,
        settings: Option<String>,
    ) -> Result<Arc<Loaded>, PolicyError> {
        let current = self.active();
        let wasm = wasm.map_or_else(|| current.wasm.clone(), Arc::from);
        let settings = settings.or_else(|| current.settings.clone());
        let loaded =
            Arc::new(load_version(&self.host, self.limits, self.scaling, wasm, settings).await?);
        let _one_at_a_time = self
            .swaps
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        self.active.store(loaded.clone());
        Ok(loaded)
    }
}

async fn load_version(
    host: &PolicyHost,
    limits: CallLimits,
    scaling: InputScaling,
    wasm: Arc<[u8]>,
    settings: Option<String>,
) -> Result<Loaded, PolicyError> {
    let mut map = HashMap::new();
    if let Some(s) = &settings {
        map.insert("settings".to_string(), s.clone());
    }
    let policy = GuardrailPolicy::load(host, "guardrail", wasm.to_vec(), map, limits)
        .await?
        .with_scaling(scaling);
    Ok(Loaded {
        policy,
        wasm,
        settings,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_grow_with_the_text_per_mib() {
        let base = CallLimits::default();
        let s = InputScaling::default();
        assert_eq!(s.limits_for(base, 0), base);
        let l = s.limits_for(base, 3 << 19); // 1.5 MiB
        assert_eq!(l.deadline, base.deadline + Duration::from_millis(150));
        assert_eq!(l.memory_bytes, base.memory_bytes + (6 << 20));
        assert_eq!((l.pool, l.warm_max_calls), (base.pool, base.warm_max_calls));
        // One byte still adds (rounded up) memory, and nothing overflows.
        assert!(s.limits_for(base, 1).memory_bytes > base.memory_bytes);
        let huge = s.limits_for(base, usize::MAX);
        assert!(huge.deadline > base.deadline && huge.memory_bytes > base.memory_bytes);
    }

    #[test]
    fn redactions_apply_right_to_left_on_mixed_scripts() {
        let mut texts = vec!["راسلني على a@b.co أو 0501234567".to_string()];
        let t = &texts[0];
        let email = t.find("a@b.co").unwrap();
        let phone = t.find("0501234567").unwrap();
        let rs = vec![
            Redaction {
                message: 0,
                start: email,
                end: email + 6,
                replacement: "[EMAIL]".into(),
                entity: "email".into(),
            },
            Redaction {
                message: 0,
                start: phone,
                end: phone + 10,
                replacement: "[PHONE]".into(),
                entity: "phone".into(),
            },
        ];
        apply(&mut texts, &rs);
        assert_eq!(texts[0], "راسلني على [EMAIL] أو [PHONE]");
    }
}
