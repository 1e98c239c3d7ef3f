//! [`McpServers`]: upstream MCP servers registered, edited and removed, and per-key tool allowlists set
//! and cleared, through the admin API (issue 46, docs/MCP.md). A registration names only teams
//! that exist and is checked by `crate::mcp` (name, URL through the SSRF guard, credentials,
//! limits) before it is stored. Each write commits to the store, then this replica's registry
//! is reloaded from the store (`reload`), then the other replicas are told (`Change::Mcp`), and
//! they reload too — so a removed server or a revoked allowlist entry stops being callable on
//! every replica without a restart. The config file's servers are not stored: they are read-only
//! here (removed in the file).

use std::collections::HashMap;
use std::sync::Arc;

use super::ServiceError;
use crate::config::RawMcpServer;
use crate::mcp::{Mcp, McpError, Server, Source, check_key_tools};
use crate::metrics::Metrics;
use crate::shared::{Change, Shared};
use crate::store::{KeyId, McpServer, NewMcpServer, Store, StoreError, TeamId};

/// The stored server with `patch`'s fields over its own, as a registration. Renaming is removing
/// and registering again: a `name` other than the server's is refused.
fn patched(
    stored: McpServer,
    patch: serde_json::Map<String, serde_json::Value>,
) -> Result<RawMcpServer, McpError> {
    let invalid = |field: &str, message: String| McpError::Invalid {
        field: field.into(),
        message,
    };
    if let Some(n) = patch.get("name")
        && n.as_str() != Some(stored.name.as_str())
    {
        return Err(invalid(
            "name",
            "a server is renamed by removing it and registering it again".into(),
        ));
    }
    let mut merged = serde_json::json!({
        "name": stored.name,
        "url": stored.url,
        "teams": stored.teams,
        "tools": stored.tools,
        "bearer": stored.bearer,
        "headers": stored.headers,
    });
    if let Some(object) = merged.as_object_mut() {
        object.extend(patch);
    }
    serde_json::from_value(merged).map_err(|e| invalid("body", e.to_string()))
}

/// A checked registration as the store keeps it (an API server is always Streamable HTTP).
fn to_store(raw: RawMcpServer) -> NewMcpServer {
    NewMcpServer {
        name: raw.name,
        url: raw.url,
        teams: raw.teams,
        tools: raw.tools,
        bearer: raw.bearer,
        headers: raw.headers,
    }
}

/// The MCP servers' service, borrowing the gateway's parts (`AppState::mcp_servers`).
pub struct McpServers<'a> {
    store: &'a Arc<dyn Store>,
    mcp: &'a Mcp,
    shared: &'a Shared,
    metrics: &'a Metrics,
}

impl<'a> McpServers<'a> {
    pub fn new(
        store: &'a Arc<dyn Store>,
        mcp: &'a Mcp,
        shared: &'a Shared,
        metrics: &'a Metrics,
    ) -> McpServers<'a> {
        McpServers {
            store,
            mcp,
            shared,
            metrics,
        }
    }

    /// Registers a server for existing teams: stored, then live here and on every replica.
    pub async fn register(&self, raw: RawMcpServer) -> Result<Arc<Server>, ServiceError> {
        self.teams_exist(&raw).await?;
        self.mcp.check(&raw)?;
        let name = raw.name.clone();
        self.store
            .create_mcp_server(to_store(raw))
            .await
            .map_err(|e| match e {
                StoreError::Invalid { field: "name", .. } => McpError::Exists(name.clone()).into(),
                e => ServiceError::from(e),
            })?;
        self.changed().await;
        self.mcp
            .server(&name)
            .ok_or_else(|| McpError::NotFound(name).into())
    }

    /// Edits a server registered through the API in place: the fields of `patch` replace the
    /// stored ones (credentials not named are kept; the name is the server's), checked as a
    /// registration is, then stored under a new registration id, so this replica and every other
    /// rebuild it (its pooled upstream sessions end with it).
    pub async fn edit(
        &self,
        name: &str,
        patch: serde_json::Map<String, serde_json::Value>,
    ) -> Result<Arc<Server>, ServiceError> {
        self.not_declared(name)?;
        let stored = self
            .store
            .mcp_servers()
            .await?
            .into_iter()
            .find(|s| s.name == name)
            .ok_or_else(|| McpError::NotFound(name.into()))?;
        let raw = patched(stored, patch)?;
        self.teams_exist(&raw).await?;
        self.mcp.check_edit(&raw)?;
        self.store
            .update_mcp_server(to_store(raw))
            .await?
            .ok_or_else(|| McpError::NotFound(name.into()))?;
        self.changed().await;
        self.mcp
            .server(name)
            .ok_or_else(|| McpError::NotFound(name.into()).into())
    }

    /// Every team a registration names (granted, or with a tool list) exists.
    async fn teams_exist(&self, raw: &RawMcpServer) -> Result<(), ServiceError> {
        for team in raw.teams.iter().chain(raw.tools.keys()) {
            if self.store.team(TeamId(team.clone())).await?.is_none() {
                return Err(ServiceError::UnknownTeam(TeamId(team.clone())));
            }
        }
        Ok(())
    }

    /// A server the config file declares is changed there, not through the API.
    fn not_declared(&self, name: &str) -> Result<(), McpError> {
        match self.mcp.server(name) {
            Some(s) if s.source == Source::Config => Err(McpError::Declared(name.into())),
            _ => Ok(()),
        }
    }

    pub fn list(&self) -> Vec<Arc<Server>> {
        self.mcp.servers()
    }

    /// Removes a server registered through the API, here and on every replica.
    pub async fn remove(&self, name: &str) -> Result<(), ServiceError> {
        self.not_declared(name)?;
        if !self.store.delete_mcp_server(name.to_owned()).await? {
            return Err(McpError::NotFound(name.into()).into());
        }
        self.changed().await;
        Ok(())
    }

    /// The key's tool allowlist (`<server>__<tool>` or `<server>__*`), replacing any before.
    pub async fn set_key_tools(&self, key: &str, tools: Vec<String>) -> Result<(), ServiceError> {
        check_key_tools(&tools)?;
        self.store
            .set_mcp_key_tools(KeyId(key.to_owned()), tools)
            .await
            .map_err(|e| match e {
                StoreError::KeyNotFound(_) => ServiceError::KeyNotFound(key.to_owned()),
                e => e.into(),
            })?;
        self.changed().await;
        Ok(())
    }

    pub fn key_tools(&self, key: &str) -> Option<Arc<Vec<String>>> {
        self.mcp.key_tools(key)
    }

    /// Removes the key's allowlist (it may use all its team's tools again); whether it had one.
    pub async fn clear_key_tools(&self, key: &str) -> Result<bool, ServiceError> {
        let deleted = self
            .store
            .delete_mcp_key_tools(KeyId(key.to_owned()))
            .await?;
        if deleted {
            self.changed().await;
        }
        Ok(deleted)
    }

    /// The stored servers and allowlists become this replica's (at start, after a write, and
    /// when another replica announces one).
    pub async fn reload(&self) -> Result<(), ServiceError> {
        let _one_at_a_time = self.mcp.reload_guard().await;
        let servers = self.store.mcp_servers().await?;
        let keys = self.store.mcp_key_tools().await?;
        self.mcp.replace_stored(
            servers
                .into_iter()
                .map(|s| {
                    (
                        s.id,
                        RawMcpServer {
                            name: s.name,
                            url: s.url,
                            teams: s.teams,
                            tools: s.tools,
                            bearer: s.bearer,
                            headers: s.headers,
                            // A stored server is always Streamable HTTP: the admin API refuses
                            // `command` (a stdio server is declared in the config file only).
                            command: Vec::new(),
                            env: Default::default(),
                            memory_mb: None,
                            cpu_seconds: None,
                        },
                    )
                })
                .collect(),
            keys.into_iter()
                .map(|k| (k.key_id.0, k.tools))
                .collect::<HashMap<_, _>>(),
        );
        Ok(())
    }

    /// After a committed write: this replica follows the store, then the others are told.
    async fn changed(&self) {
        if let Err(e) = self.reload().await {
            tracing::warn!(error = %e, "reloading the MCP servers after a change failed");
        }
        self.shared.announce(Change::Mcp, self.metrics).await;
    }
}
