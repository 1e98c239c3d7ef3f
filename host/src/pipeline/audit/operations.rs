//! Which journal action a request is: [`operation`], the route table's routes by name
//! (`chat.completions`, `admin.policies.activate`, …), and [`action`], what an entry records
//! (the operation, or `<METHOD> <path>` for anything else).

use http::Method;

/// The action an entry records: the request's `operation` (the route table's routes; anything
/// else, e.g. a wrong method, is `<METHOD> <path>` cut to 128 bytes).
pub(super) fn action(operation: Option<&'static str>, method: &Method, path: &str) -> String {
    let Some(name) = operation else {
        let mut other = format!("{method} {path}");
        let mut cut = other.len().min(128);
        while !other.is_char_boundary(cut) {
            cut -= 1;
        }
        other.truncate(cut);
        return other;
    };
    name.to_string()
}

/// The operation a route-table request is (`chat.completions`, `admin.policies.activate`, ...).
pub fn operation(method: &Method, path: &str) -> Option<&'static str> {
    let segments: Vec<&str> = path.trim_end_matches('/').split('/').collect();
    let name = match (method.as_str(), segments.as_slice()) {
        ("POST", ["", "v1", "chat", "completions"]) => "chat.completions",
        ("POST", ["", "v1", "embeddings"]) => "embeddings",
        ("POST", ["", "v1", "completions"]) => "completions.create",
        ("POST", ["", "v1", "responses"]) => "responses.create",
        ("POST", ["", "v1", "messages"]) => "messages.create",
        ("POST", ["", "v1", "messages", "count_tokens"]) => "messages.count_tokens",
        // The MCP door; its handler names the method (`mcp.tools/call`, ...).
        (_, ["", "mcp"]) => "mcp",
        ("GET", ["", "v1", "admin", "mcp", "servers"]) => "admin.mcp.servers.list",
        ("POST", ["", "v1", "admin", "mcp", "servers"]) => "admin.mcp.servers.create",
        ("PATCH", ["", "v1", "admin", "mcp", "servers", _]) => "admin.mcp.servers.update",
        ("DELETE", ["", "v1", "admin", "mcp", "servers", _]) => "admin.mcp.servers.delete",
        ("PUT", ["", "v1", "admin", "mcp", "keys", _]) => "admin.mcp.keys.update",
        ("GET", ["", "v1", "responses", _]) => "responses.retrieve",
        ("DELETE", ["", "v1", "responses", _]) => "responses.delete",
        ("GET", ["", "v1", "responses", _, "input_items"]) => "responses.input_items.list",
        ("GET", ["", "v1", "models"]) => "models.list",
        ("GET", ["", "v1", "models", _]) => "models.retrieve",
        ("GET", ["", "v1", "admin", "policies"]) => "admin.policies.list",
        ("POST", ["", "v1", "admin", "policies"]) => "admin.policies.upload",
        ("POST", ["", "v1", "admin", "policies", _, "activate"]) => "admin.policies.activate",
        ("GET", ["", "v1", "admin", "journal", "verify"]) => "admin.journal.verify",
        ("POST", ["", "v1", "activity", "logs"]) => "activity.logs",
        ("GET", ["", "v1", "activity", "checkpoint"]) => "activity.checkpoint",
        ("GET", ["", "v1", "activity", "checkpoint", "key"]) => "activity.checkpoint.key",
        ("GET", ["", "v1", "activity", "proof"]) => "activity.proof",
        ("GET", ["", "v1", "activity", "consistency"]) => "activity.consistency",
        ("POST", ["", "v1", "documents", "upload"]) => "documents.upload",
        ("GET", ["", "v1", "documents"]) => "documents.list",
        ("GET", ["", "v1", "documents", _]) => "documents.retrieve",
        ("DELETE", ["", "v1", "documents", _]) => "documents.delete",
        ("POST", ["", "v1", "documents", _, "cancel"]) => "documents.cancel",
        ("POST", ["", "v1", "rag", "query"]) => "rag.query",
        ("POST", ["", "v1", "files"]) => "files.create",
        ("POST", ["", "v1", "vector_stores"]) => "vector_stores.create",
        ("DELETE", ["", "v1", "vector_stores", _]) => "vector_stores.delete",
        ("POST", ["", "v1", "vector_stores", _, "files"]) => "vector_stores.files.create",
        ("DELETE", ["", "v1", "vector_stores", _, "files", _]) => "vector_stores.files.delete",
        ("POST", ["", "v1", "vector_stores", _, "search"]) => "vector_stores.search",
        ("POST", ["", "v1", "vector_stores", _, "file_batches"]) => {
            "vector_stores.file_batches.create"
        }
        ("POST", ["", "v1", "vector_stores", _, "file_batches", _, "cancel"]) => {
            "vector_stores.file_batches.cancel"
        }
        // Outside authentication: never journaled, but counted in the metrics.
        ("GET", ["", "metrics"]) => "metrics",
        ("GET", ["", "healthz"]) => "healthz",
        _ => return None,
    };
    Some(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn actions_are_named_by_route() {
        let cases = [
            (Method::POST, "/v1/chat/completions", "chat.completions"),
            (Method::POST, "/v1/embeddings", "embeddings"),
            (Method::GET, "/v1/models", "models.list"),
            (Method::GET, "/v1/models/jais-30b-chat", "models.retrieve"),
            (
                Method::POST,
                "/v1/admin/policies/pol_2/activate",
                "admin.policies.activate",
            ),
            (
                Method::GET,
                "/v1/admin/journal/verify",
                "admin.journal.verify",
            ),
            (Method::POST, "/v1/activity/logs", "activity.logs"),
            (
                Method::GET,
                "/v1/chat/completions",
                "GET /v1/chat/completions",
            ),
        ];
        for (method, path, want) in cases {
            let op = operation(&method, path);
            assert_eq!(action(op, &method, path), want, "{method} {path}");
        }
        let long = format!("/v1/{}", "é".repeat(200));
        assert!(action(None, &Method::GET, &long).len() <= 128);
    }
}
