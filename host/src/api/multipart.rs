//! Multipart forms at the HTTP edge (`/v1/documents/upload`, `/v1/files`): [`read_multipart`]
//! reads the body under the library's upload limit into a [`Form`] (`file` with its cleaned
//! name, `collection`, `metadata`, `purpose`; a part sent twice or unknown refused by name).

use axum::body::Body;
use bytes::Bytes;
use http::StatusCode;
use serde_json::{Map, Value};

use crate::pipeline::call::Call;
use crate::pipeline::library::library;
use crate::rag::{check_collection, check_metadata};
use crate::server::body::read_bytes_within;
use crate::server::error::ApiError;

/// Multipart framing and the small fields, on top of the file's own limit.
const FORM_OVERHEAD_BYTES: u64 = 64 << 10;
const MAX_FILENAME_CHARS: usize = 255;

/// A multipart upload's parts (`/v1/documents/upload`, `/v1/files`).
pub struct Form {
    pub file: Option<(String, Option<String>, Bytes)>,
    pub collection: Option<String>,
    pub metadata: Option<Map<String, Value>>,
    pub purpose: Option<String>,
}

/// A form part no endpoint takes, refused by name (shown at most 64 characters).
pub fn unknown_field(name: &str) -> ApiError {
    let shown: String = name.chars().take(64).collect();
    ApiError::invalid("form", format!("Unknown form field `{shown}`."))
}

/// Reads a multipart form under the upload limit: `file`, `collection`, `metadata`, `purpose`.
pub async fn read_multipart(call: &Call, body: Body) -> Result<Form, ApiError> {
    let library = library(call)?;
    let content_type = call
        .headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let boundary = multer::parse_boundary(content_type).map_err(|_| {
        ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "invalid_request_error",
            "Upload documents as `multipart/form-data` with a `file` part.",
        )
        .with_code("unsupported_media_type")
    })?;
    let limit = library
        .max_upload_bytes()
        .saturating_add(FORM_OVERHEAD_BYTES);
    let bytes = read_bytes_within(
        &call.headers,
        body,
        usize::try_from(limit).unwrap_or(usize::MAX),
        &call.app.config().server,
    )
    .await?;
    let stream = futures_util::stream::once(async move { Ok::<Bytes, std::io::Error>(bytes) });
    let mut form = multer::Multipart::new(stream, boundary);
    let bad_form =
        |e: multer::Error| ApiError::bad_request(format!("The multipart form is malformed: {e}."));
    let (mut file, mut collection, mut metadata, mut purpose) = (None, None, None, None);
    let mut seen: Vec<String> = Vec::new();
    while let Some(field) = form.next_field().await.map_err(bad_form)? {
        let name = field.name().unwrap_or("").to_string();
        // A part sent twice: which one was meant is a guess (the last one used to win).
        if seen.contains(&name) {
            let shown: String = name.chars().take(64).collect();
            return Err(ApiError::invalid(
                &shown,
                format!("The form has more than one `{shown}` part: send one."),
            ));
        }
        seen.push(name.clone());
        match name.as_str() {
            "file" => {
                let filename = field
                    .file_name()
                    .map(clean_filename)
                    .filter(|f| !f.is_empty())
                    .ok_or_else(|| {
                        ApiError::invalid("file", "The `file` part needs a file name.")
                    })?;
                let content_type = field.content_type().map(ToString::to_string);
                let data = field.bytes().await.map_err(bad_form)?;
                file = Some((filename, content_type, data));
            }
            "collection" => {
                collection = Some(check_collection(
                    field.text().await.map_err(bad_form)?.trim(),
                )?)
            }
            "metadata" => metadata = Some(parse_metadata(&field.text().await.map_err(bad_form)?)?),
            "purpose" => {
                let text = field.text().await.map_err(bad_form)?;
                purpose = Some(text.trim().chars().take(64).collect());
            }
            other => return Err(unknown_field(other)),
        }
    }
    Ok(Form {
        file,
        collection,
        metadata,
        purpose,
    })
}

/// The file name without any directory part, control characters or excess length.
fn clean_filename(name: &str) -> String {
    let base = name.rsplit(['/', '\\']).next().unwrap_or(name);
    base.chars()
        .filter(|c| !c.is_control())
        .take(MAX_FILENAME_CHARS)
        .collect::<String>()
        .trim()
        .to_string()
}

/// `metadata`: a JSON object of at most 16 keys, each value a string, number or boolean.
fn parse_metadata(text: &str) -> Result<Map<String, Value>, ApiError> {
    let Ok(Value::Object(map)) = serde_json::from_str::<Value>(text) else {
        return Err(ApiError::invalid(
            "metadata",
            "`metadata` must be a JSON object, e.g. {\"department\": \"risk\"}.",
        ));
    };
    check_metadata(&map)?;
    Ok(map)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]
    use serde_json::json;

    use super::*;

    #[test]
    fn file_names_lose_their_directories_and_control_characters() {
        assert_eq!(clean_filename("../../etc/passwd"), "passwd");
        assert_eq!(clean_filename("C:\\docs\\report.pdf"), "report.pdf");
        assert_eq!(clean_filename("a\u{0}b\nc.txt"), "abc.txt");
        assert_eq!(clean_filename(&"x".repeat(300)).len(), MAX_FILENAME_CHARS);
    }

    #[test]
    fn collections_and_metadata_are_checked() {
        assert!(check_collection("risk-2026.q1_a").is_ok());
        assert!(check_collection("").is_err());
        assert!(check_collection("a b").is_err());
        assert!(check_collection(&"a".repeat(65)).is_err());
        assert!(parse_metadata(r#"{"dept": "risk", "year": 2026, "public": false}"#).is_ok());
        assert!(parse_metadata("[1]").is_err());
        assert!(parse_metadata(r#"{"nested": {"a": 1}}"#).is_err());
        let many: Map<String, Value> = (0..17).map(|i| (format!("k{i}"), json!(i))).collect();
        assert!(parse_metadata(&Value::Object(many).to_string()).is_err());
    }
}
