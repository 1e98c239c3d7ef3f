//! Where the library's vectors come from: the built-in multilingual e5 model, in process (the
//! default), or an embedding model served upstream (vLLM, TEI, Ollama…) named by `[documents]
//! embedding_model`. Ingestion and queries always use the same one; stored vectors are tagged with
//! [`Embedder::key`], so vectors of two models never mix. The built-in model runs behind the
//! engine's scheduler (`engine`): queries before ingestion, teams in turn, abandoned work dropped.

use std::sync::Arc;

use bytes::Bytes;
use serde_json::{Value, json};
use sovereign_retrieval::confidence::{self, Calibration};

use super::engine::{Class, Engine};
use super::{BUILTIN_MODEL, RagError};
use crate::domain::ModelConfig;
use crate::upstream::{Endpoint, Outbound, Upstreams};

/// Inputs per upstream embeddings request.
const UPSTREAM_BATCH: usize = 64;

pub enum Embedder {
    Builtin(Arc<Engine>),
    Upstream(UpstreamEmbedder),
}

/// An OpenAI-compatible embeddings endpoint, with the prefixes its model expects (e5 served by
/// TEI wants `query: ` and `passage: `).
pub struct UpstreamEmbedder {
    pub model: Arc<ModelConfig>,
    pub client: Upstreams,
    pub query_prefix: String,
    pub passage_prefix: String,
    /// Learnt from the probe at start.
    pub dims: usize,
}

impl Embedder {
    /// The model's id as clients see it.
    pub fn id(&self) -> &str {
        match self {
            Embedder::Builtin(_) => BUILTIN_MODEL,
            Embedder::Upstream(u) => &u.model.id.0,
        }
    }

    /// What stored vectors are tagged with: the model and, for the built-in one, its weights file;
    /// then how chunks were embedded (`headers::EMBEDDING_CONTEXT`). Documents stored under
    /// another key are re-embedded at start.
    pub fn key(&self) -> String {
        let context = super::headers::EMBEDDING_CONTEXT;
        match self {
            Embedder::Builtin(e) => {
                let m = e.model();
                let sha = m.sha256();
                format!("{}@{}+{context}", m.model_id(), &sha[..sha.len().min(12)])
            }
            Embedder::Upstream(u) => format!("{}@upstream-{}d+{context}", u.model.id, u.dims),
        }
    }

    pub fn dims(&self) -> usize {
        match self {
            Embedder::Builtin(e) => e.model().dims(),
            Embedder::Upstream(u) => u.dims,
        }
    }

    /// The committed confidence calibration for this model, if any (only the built-in model's
    /// file has one: another model's similarities are on another scale).
    pub fn calibration(&self) -> Option<&'static Calibration> {
        match self {
            Embedder::Builtin(e) => {
                confidence::calibration_for(e.model().model_id(), e.model().sha256())
            }
            Embedder::Upstream(_) => None,
        }
    }

    /// Query vectors for `team` (interactive work) and the tokens the model read.
    pub async fn queries_for(
        &self,
        team: &str,
        texts: Vec<String>,
    ) -> Result<(Vec<Vec<f32>>, u64), RagError> {
        match self {
            Embedder::Builtin(e) => {
                let job = e.prepare(texts, true).await?;
                let tokens = job.tokens();
                Ok((e.run(job, team, Class::Interactive).await?, tokens))
            }
            Embedder::Upstream(u) => u.embed(&u.query_prefix, &texts).await,
        }
    }

    /// Passage vectors (document chunks), as the system's bulk work (no team).
    pub async fn passages(&self, texts: Vec<String>) -> Result<Vec<Vec<f32>>, RagError> {
        self.passages_for("", texts).await
    }

    /// Passage vectors for `team`'s document (bulk work: after every waiting query).
    pub async fn passages_for(
        &self,
        team: &str,
        texts: Vec<String>,
    ) -> Result<Vec<Vec<f32>>, RagError> {
        match self {
            Embedder::Builtin(e) => {
                let job = e.prepare(texts, false).await?;
                e.run(job, team, Class::Bulk).await
            }
            Embedder::Upstream(u) => Ok(u.embed(&u.passage_prefix, &texts).await?.0),
        }
    }
}

impl UpstreamEmbedder {
    /// Embeds `texts` (each prefixed) in batches; the vectors in order and the upstream's token
    /// count (0 when it reports none).
    pub async fn embed(
        &self,
        prefix: &str,
        texts: &[String],
    ) -> Result<(Vec<Vec<f32>>, u64), RagError> {
        let mut vectors = Vec::with_capacity(texts.len());
        let mut tokens = 0;
        for batch in texts.chunks(UPSTREAM_BATCH) {
            let input: Vec<String> = batch.iter().map(|t| format!("{prefix}{t}")).collect();
            let body = json!({"model": self.model.upstream_model, "input": input});
            let exchange = self
                .client
                .post(
                    &self.model,
                    Outbound::new(Endpoint::Embeddings, Bytes::from(body.to_string())),
                    None,
                )
                .await?;
            let answer = self.client.read_json(&self.model, exchange).await?;
            tokens += answer
                .pointer("/usage/prompt_tokens")
                .and_then(Value::as_u64)
                .unwrap_or(0);
            let mut data: Vec<(u64, Vec<f32>)> = answer
                .get("data")
                .and_then(Value::as_array)
                .map(|items| {
                    items
                        .iter()
                        .filter_map(|d| {
                            let index = d.get("index").and_then(Value::as_u64)?;
                            let vector = d
                                .get("embedding")?
                                .as_array()?
                                .iter()
                                .map(|x| x.as_f64().map(|x| x as f32))
                                .collect::<Option<Vec<f32>>>()?;
                            Some((index, vector))
                        })
                        .collect()
                })
                .unwrap_or_default();
            data.sort_by_key(|(i, _)| *i);
            if data.len() != batch.len()
                || (self.dims > 0 && data.iter().any(|(_, v)| v.len() != self.dims))
            {
                return Err(RagError::Worker(format!(
                    "the embedding model `{}` answered {} vectors for {} inputs (or of the wrong size)",
                    self.model.id,
                    data.len(),
                    batch.len()
                )));
            }
            vectors.extend(data.into_iter().map(|(_, v)| v));
        }
        Ok((vectors, tokens))
    }
}
