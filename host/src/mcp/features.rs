//! Prompts and resources of the caller's servers, aggregated like tools (docs/MCP.md, "Prompts
//! and resources"): listed from every server the caller's team is granted (`Mcp::granted`) that
//! the key's allowlist lets through (`grants`, beside the tools' `permits`), each page of each
//! server read under the list deadline; and a `prompts/get` or `resources/read` routed back to
//! its server by the same rule.
//!
//! Names: a prompt is `<server>__<prompt>` like a tool; a resource's URI (and a template's) is
//! `<server>+<its own URI>` — a server name is a valid URI scheme start (a-z, 0-9, `-`) and holds
//! no `+`, so the result is still a URI (`records+file:///a.txt`) and the first `+` splits it.

use std::sync::Arc;

use serde_json::{Value, json};

use super::{Caller, Mcp, SEPARATOR, Server, Unresolved, UpstreamError, grants, listed_name};

/// Between a server's name and a resource's own URI.
pub const RESOURCE_SEPARATOR: char = '+';

/// What is listed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Feature {
    Prompts,
    Resources,
    ResourceTemplates,
}

impl Feature {
    fn method(self) -> &'static str {
        match self {
            Feature::Prompts => "prompts/list",
            Feature::Resources => "resources/list",
            Feature::ResourceTemplates => "resources/templates/list",
        }
    }

    /// The list's field in the result, and the field of an item that is renamed.
    pub fn fields(self) -> (&'static str, &'static str) {
        match self {
            Feature::Prompts => ("prompts", "name"),
            Feature::Resources => ("resources", "uri"),
            Feature::ResourceTemplates => ("resourceTemplates", "uriTemplate"),
        }
    }
}

/// `<server>+<uri>`.
pub fn listed_uri(server: &str, uri: &str) -> String {
    format!("{server}{RESOURCE_SEPARATOR}{uri}")
}

impl Server {
    /// One request to the server under the call deadline (`prompts/get`, `resources/read`).
    pub async fn request(
        &self,
        method: &str,
        params: Value,
        name: &str,
    ) -> Result<Value, UpstreamError> {
        self.upstream.call(method, params, Some(name)).await
    }
}

impl Mcp {
    /// The caller's prompts, resources or resource templates, renamed into the gateway's scheme.
    /// A server that cannot list is left out (and logged); one without the feature silently.
    pub async fn feature_list(&self, caller: Caller<'_>, feature: Feature) -> Vec<Value> {
        let key = self.key_tools(caller.key);
        let key = key.as_ref().map(|k| k.as_slice());
        let servers: Vec<Arc<Server>> = self
            .granted(caller)
            .into_iter()
            .filter(|s| grants(s, key, caller, None))
            .collect();
        let (list_field, renamed) = feature.fields();
        let lists = futures_util::future::join_all(
            servers
                .iter()
                .map(|s| s.upstream.list(feature.method(), list_field)),
        )
        .await;
        let mut out = Vec::new();
        for (server, listed) in servers.iter().zip(lists) {
            let items = match listed {
                Ok(items) => items,
                Err(UpstreamError::Rpc { code, .. }) if code == super::wire::METHOD_NOT_FOUND => {
                    continue;
                }
                Err(e) => {
                    tracing::warn!(server = %server.name, error = %e, method = feature.method(),
                        "MCP server left out of the list");
                    continue;
                }
            };
            for mut item in items {
                let Some(own) = item.get(renamed).and_then(Value::as_str) else {
                    continue;
                };
                let name = match feature {
                    Feature::Prompts => listed_name(&server.name, own),
                    Feature::Resources | Feature::ResourceTemplates => {
                        listed_uri(&server.name, own)
                    }
                };
                if feature == Feature::Prompts && !grants(server, key, caller, Some(name.as_str()))
                {
                    continue;
                }
                if let Some(obj) = item.as_object_mut() {
                    obj.insert(renamed.into(), json!(name));
                }
                out.push(item);
            }
        }
        out
    }

    /// The server and its own prompt name a listed prompt name stands for, if the caller may
    /// get it.
    pub fn resolve_prompt(
        &self,
        caller: Caller<'_>,
        listed: &str,
    ) -> Result<(Arc<Server>, String), Unresolved> {
        let (server, own) = listed
            .split_once(SEPARATOR)
            .ok_or(Unresolved::NotPermitted)?;
        self.routed(caller, server, Some(listed))
            .map(|s| (s, own.to_string()))
    }

    /// The server and its own URI a listed resource URI stands for, if the caller may read it.
    pub fn resolve_resource(
        &self,
        caller: Caller<'_>,
        listed: &str,
    ) -> Result<(Arc<Server>, String), Unresolved> {
        let (server, own) = listed
            .split_once(RESOURCE_SEPARATOR)
            .ok_or(Unresolved::NotPermitted)?;
        if own.is_empty() {
            return Err(Unresolved::NotPermitted);
        }
        self.routed(caller, server, None)
            .map(|s| (s, own.to_string()))
    }

    fn routed(
        &self,
        caller: Caller<'_>,
        server: &str,
        listed: Option<&str>,
    ) -> Result<Arc<Server>, Unresolved> {
        let key = self.key_tools(caller.key);
        self.granted(caller)
            .into_iter()
            .find(|s| s.name == server)
            .filter(|s| grants(s, key.as_ref().map(|k| k.as_slice()), caller, listed))
            .ok_or(Unresolved::NotPermitted)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]
    use super::*;

    #[test]
    fn a_listed_uri_is_a_uri_and_splits_back() {
        let listed = listed_uri("records", "file:///notes/a.txt");
        assert_eq!(listed, "records+file:///notes/a.txt");
        assert!(url::Url::parse(&listed).is_ok());
        let (server, own) = listed.split_once(RESOURCE_SEPARATOR).unwrap();
        assert_eq!((server, own), ("records", "file:///notes/a.txt"));
        // The upstream's own `+` stays its own.
        let listed = listed_uri("crm-2", "db+x://a+b");
        assert_eq!(
            listed.split_once(RESOURCE_SEPARATOR).unwrap(),
            ("crm-2", "db+x://a+b")
        );
    }
}
