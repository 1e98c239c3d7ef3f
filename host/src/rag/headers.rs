//! A document's header for the entity rule (issue 50; `docs/DOCUMENTS.md`, "the entity rule"):
//! the names the index treats every chunk of the document as being about — its title (the
//! metadata `title`, else the filename's stem) and the names given at upload (the metadata
//! `organization` and `aliases`: names in another script or translations, e.g. `"aliases": "Al
//! Wefaq Bank; Dawn Bank"`) — and the contextual chunk header: each chunk is embedded twice, alone
//! and after its document's title, and both vectors are stored (`stored_vector`). The index ranks
//! on the second when a query's names identify a document (a paragraph deep in a document about
//! one bank is about that bank for the vectors too, and a paragraph that names the bank is not
//! favoured over the others), on the first otherwise (the title cost other queries hits).

use serde_json::{Map, Value};

/// Metadata keys whose string values are names of the document's subject.
pub const NAME_KEYS: [&str; 2] = ["organization", "aliases"];

/// Characters of the title put before each chunk when it is embedded.
const MAX_TITLE_CHARS: usize = 120;

/// How chunks are embedded (a change re-embeds every stored document at start: the suffix is part
/// of the stored vectors' model key, `Embedder::key`). `ctx1` (before): the document's title, a
/// line break, the chunk. `ctx2`: the chunk alone, then `ctx1`'s text, both vectors stored one
/// after the other (`stored_vector`; `sovereign_retrieval::ChunkInput::vector`).
pub const EMBEDDING_CONTEXT: &str = "ctx2";

/// The document's title: the metadata `title` if it is a string, else the filename's stem.
pub fn title(filename: &str, metadata: &Map<String, Value>) -> String {
    let title = match metadata.get("title") {
        Some(Value::String(t)) if !t.trim().is_empty() => t.trim(),
        _ => filename.rsplit_once('.').map_or(filename, |(stem, _)| stem),
    };
    title.chars().take(MAX_TITLE_CHARS).collect()
}

/// The names given at upload (`NAME_KEYS`), space-separated.
pub fn names(metadata: &Map<String, Value>) -> String {
    NAME_KEYS
        .iter()
        .filter_map(|k| match metadata.get(*k) {
            Some(Value::String(v)) => Some(v.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// What is embedded for a chunk of a document with this title (the second vector).
pub fn embedded_text(title: &str, chunk: &str) -> String {
    format!("{title}\n{chunk}")
}

/// The texts to embed for a document's chunks: every chunk alone, then every chunk after the
/// title (`embedded_text`); `stored_vectors` pairs their vectors back up.
pub fn texts_to_embed(title: &str, chunks: &[String]) -> Vec<String> {
    chunks
        .iter()
        .cloned()
        .chain(chunks.iter().map(|c| embedded_text(title, c)))
        .collect()
}

/// The vectors to store for `texts_to_embed`'s embeddings: each chunk's alone, then after the
/// title, as one vector of twice the model's dimensions.
pub fn stored_vectors(mut vectors: Vec<Vec<f32>>) -> Vec<Vec<f32>> {
    let contextual = vectors.split_off(vectors.len() / 2);
    vectors
        .into_iter()
        .zip(contextual)
        .map(|(mut alone, after_title)| {
            alone.extend(after_title);
            alone
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_title_is_the_metadata_title_else_the_stem_and_names_are_organization_and_aliases() {
        let meta: Map<String, Value> = serde_json::from_str(
            r#"{"title": "بنك الوفاق", "aliases": "Al Wefaq Bank", "year": 2024, "owner": "ops"}"#,
        )
        .unwrap_or_default();
        assert_eq!(title("wefaq-terms.pdf", &meta), "بنك الوفاق");
        assert_eq!(names(&meta), "Al Wefaq Bank");
        assert_eq!(title("notes", &Map::new()), "notes");
        assert_eq!(title("a.b.pdf", &Map::new()), "a.b");
        assert_eq!(names(&Map::new()), "");
        assert_eq!(embedded_text("T", "chunk"), "T\nchunk");
        let chunks = ["a".to_owned(), "b".to_owned()];
        assert_eq!(texts_to_embed("T", &chunks), ["a", "b", "T\na", "T\nb"]);
        let stored = stored_vectors(vec![vec![1.0], vec![2.0], vec![3.0], vec![4.0]]);
        assert_eq!(stored, [vec![1.0, 3.0], vec![2.0, 4.0]]);
    }
}
