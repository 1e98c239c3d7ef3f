//! What the library accepts as a collection name and as metadata (a document's metadata, a
//! vector store's and its files' attributes): [`check_collection`], [`check_metadata`]; a refusal
//! is [`RagError::Invalid`] naming the parameter.

use serde_json::{Map, Value};

use super::RagError;

const MAX_COLLECTION_CHARS: usize = 64;
const MAX_METADATA_KEYS: usize = 16;
const MAX_METADATA_KEY_CHARS: usize = 64;
const MAX_METADATA_VALUE_CHARS: usize = 512;

/// A collection name: 1–64 of `[A-Za-z0-9._-]`.
pub fn check_collection(name: &str) -> Result<String, RagError> {
    let ok = !name.is_empty()
        && name.chars().count() <= MAX_COLLECTION_CHARS
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if ok {
        Ok(name.to_string())
    } else {
        Err(RagError::Invalid {
            param: "collection",
            message: format!(
                "`collection` must be 1 to {MAX_COLLECTION_CHARS} characters of letters, digits, `.`, `_` and `-`."
            ),
        })
    }
}

/// Metadata (vector-store attributes too): at most 16 keys of 1–64 characters, each value a
/// string of at most 512 characters, a number or a boolean.
pub fn check_metadata(map: &Map<String, Value>) -> Result<(), RagError> {
    let invalid = |message: String| RagError::Invalid {
        param: "metadata",
        message,
    };
    if map.len() > MAX_METADATA_KEYS {
        return Err(invalid(format!(
            "`metadata` may have at most {MAX_METADATA_KEYS} keys."
        )));
    }
    for (k, v) in map {
        if k.is_empty() || k.chars().count() > MAX_METADATA_KEY_CHARS {
            return Err(invalid(format!(
                "`metadata` keys must be 1 to {MAX_METADATA_KEY_CHARS} characters."
            )));
        }
        let ok = match v {
            Value::String(s) => s.chars().count() <= MAX_METADATA_VALUE_CHARS,
            Value::Number(_) | Value::Bool(_) => true,
            _ => false,
        };
        if !ok {
            return Err(invalid(format!(
                "`metadata.{k}` must be a string (at most {MAX_METADATA_VALUE_CHARS} characters), a number or a boolean."
            )));
        }
    }
    Ok(())
}
