//! The demo fleet: the models `sovereign simulate` serves and `sovereign demo` configures. Two
//! Arabic-native chat families, an English/code family (a large and a small model), a
//! French/reasoning family and a multilingual embedding model, each with a region, languages and
//! prices.

use crate::domain::ModelKind;

#[derive(Debug, Clone)]
pub struct SimModel {
    pub id: &'static str,
    pub family: &'static str,
    pub kind: ModelKind,
    pub languages: &'static [&'static str],
    pub region: &'static str,
    pub local: bool,
    pub input_cost_per_mtok: f64,
    pub output_cost_per_mtok: f64,
    pub context_window: u32,
    /// The language the model answers in (`ar`, `en`, `fr`).
    pub speaks: &'static str,
}

pub const EMBEDDING_DIMENSIONS: usize = 384;

pub fn demo_fleet() -> Vec<SimModel> {
    vec![
        SimModel {
            id: "jais-30b-chat",
            family: "jais",
            kind: ModelKind::Chat,
            languages: &["ar", "en"],
            region: "sa-riyadh-1",
            local: true,
            input_cost_per_mtok: 0.60,
            output_cost_per_mtok: 1.80,
            context_window: 8192,
            speaks: "ar",
        },
        SimModel {
            id: "allam-7b-instruct",
            family: "allam",
            kind: ModelKind::Chat,
            languages: &["ar", "en"],
            region: "sa-riyadh-1",
            local: true,
            input_cost_per_mtok: 0.20,
            output_cost_per_mtok: 0.60,
            context_window: 4096,
            speaks: "ar",
        },
        SimModel {
            id: "qwen2.5-coder-32b",
            family: "qwen",
            kind: ModelKind::Chat,
            languages: &["en"],
            region: "eu-frankfurt-1",
            local: false,
            input_cost_per_mtok: 0.90,
            output_cost_per_mtok: 0.90,
            context_window: 32768,
            speaks: "en",
        },
        SimModel {
            id: "llama-3.2-3b-instruct",
            family: "llama",
            kind: ModelKind::Chat,
            languages: &["en"],
            region: "sa-riyadh-1",
            local: true,
            input_cost_per_mtok: 0.05,
            output_cost_per_mtok: 0.10,
            context_window: 8192,
            speaks: "en",
        },
        SimModel {
            id: "magistral-small",
            family: "mistral",
            kind: ModelKind::Chat,
            languages: &["fr", "en"],
            region: "eu-paris-1",
            local: false,
            input_cost_per_mtok: 0.50,
            output_cost_per_mtok: 1.50,
            context_window: 40960,
            speaks: "fr",
        },
        SimModel {
            id: "multilingual-e5-small",
            family: "e5",
            kind: ModelKind::Embedding,
            languages: &["ar", "en", "fr", "fa", "ur"],
            region: "sa-riyadh-1",
            local: true,
            input_cost_per_mtok: 0.02,
            output_cost_per_mtok: 0.0,
            context_window: 512,
            speaks: "en",
        },
    ]
}
