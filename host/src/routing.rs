//! The routing step: which configured model serves a request. An explicit model id names the
//! model; `auto-router` goes to the configured default for now — the Wasm router policy takes
//! this step over (issue 3). The decision records the policy that made it (`X-Route-Policy`).

use std::sync::Arc;

use crate::config::{AUTO_ROUTER, Config, ModelConfig, ModelKind};

/// Name of the routing policy that applies when no policy component is installed.
pub const DEFAULT_POLICY: &str = "default";

#[derive(Debug, Clone)]
pub struct Route {
    pub model: Arc<ModelConfig>,
    /// The routing policy applied.
    pub policy: &'static str,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum RoutingError {
    #[error("The model `{0}` does not exist or you do not have access to it.")]
    UnknownModel(String),
    #[error("The model `{model}` is {actual} model; this endpoint needs {expected} model.")]
    WrongKind {
        model: String,
        actual: &'static str,
        expected: &'static str,
    },
    #[error("`auto-router` routes chat completions only; name an embedding model.")]
    AutoNotSupported,
}

/// Chooses the model for a request to an endpoint serving models of `kind`.
pub fn route(config: &Config, requested: &str, kind: ModelKind) -> Result<Route, RoutingError> {
    let id = if requested == AUTO_ROUTER {
        if kind != ModelKind::Chat {
            return Err(RoutingError::AutoNotSupported);
        }
        config.default_model.0.as_str()
    } else {
        requested
    };
    let model = config
        .model(id)
        .ok_or_else(|| RoutingError::UnknownModel(requested.to_string()))?;
    if model.kind != kind {
        let article = |k: ModelKind| match k {
            ModelKind::Chat => "a chat",
            ModelKind::Embedding => "an embedding",
        };
        return Err(RoutingError::WrongKind {
            model: requested.to_string(),
            actual: article(model.kind),
            expected: article(kind),
        });
    }
    Ok(Route {
        model: model.clone(),
        policy: DEFAULT_POLICY,
    })
}
