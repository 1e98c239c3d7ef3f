//! The store's MCP upstream servers and per-key tool allowlists (issue 46, docs/MCP.md): the
//! servers registered through the admin API (the config file's are not stored: they come from the
//! file at every start) with the credentials the gateway sends them, and each key's allowlist;
//! [`sql`] keeps them in both back ends (implemented once for both by [`impl_mcp_store!`]).

pub(crate) mod schema;
pub(crate) mod sql;

use std::collections::BTreeMap;

use futures_util::future::BoxFuture;

use super::{KeyId, StoreResult, UnixMillis};

/// MCP servers and key allowlists in the store (part of [`super::Store`]).
pub trait McpStore: Send + Sync {
    /// `Invalid` (field `name`) when a server of that name is stored.
    fn create_mcp_server(&self, server: NewMcpServer) -> BoxFuture<'_, StoreResult<McpServer>>;
    /// Every stored server, by name.
    fn mcp_servers(&self) -> BoxFuture<'_, StoreResult<Vec<McpServer>>>;
    /// Replaces the stored server of `server.name` under a new registration id (so every replica
    /// rebuilds it, with its new credentials); `None` when there is no such server.
    fn update_mcp_server(
        &self,
        server: NewMcpServer,
    ) -> BoxFuture<'_, StoreResult<Option<McpServer>>>;
    /// `false` when there was no such server.
    fn delete_mcp_server(&self, name: String) -> BoxFuture<'_, StoreResult<bool>>;
    /// The key's allowlist, replacing any before; `KeyNotFound` for a key that is not stored.
    fn set_mcp_key_tools(
        &self,
        key: KeyId,
        tools: Vec<String>,
    ) -> BoxFuture<'_, StoreResult<McpKeyTools>>;
    /// Every key's allowlist.
    fn mcp_key_tools(&self) -> BoxFuture<'_, StoreResult<Vec<McpKeyTools>>>;
    /// `false` when the key had none.
    fn delete_mcp_key_tools(&self, key: KeyId) -> BoxFuture<'_, StoreResult<bool>>;
}

/// [`McpStore`] for a back end, written once over its "run a step" macro (`store::sql`,
/// "Running a step").
macro_rules! impl_mcp_store {
    ($store:ty, $run:ident) => {
        const _: () = {
            use ::futures_util::future::BoxFuture;
            use $crate::store::mcp_servers::{
                McpKeyTools, McpServer, McpStore, NewMcpServer, sql as steps,
            };
            use $crate::store::{KeyId, StoreResult};

            impl McpStore for $store {
                fn create_mcp_server(
                    &self,
                    server: NewMcpServer,
                ) -> BoxFuture<'_, StoreResult<McpServer>> {
                    $run!(self, |c, now| steps::create(&c, now, server))
                }

                fn mcp_servers(&self) -> BoxFuture<'_, StoreResult<Vec<McpServer>>> {
                    $run!(self, |c, _| steps::list(&c))
                }

                fn update_mcp_server(
                    &self,
                    server: NewMcpServer,
                ) -> BoxFuture<'_, StoreResult<Option<McpServer>>> {
                    $run!(self, |c, _| steps::update(&c, server))
                }

                fn delete_mcp_server(&self, name: String) -> BoxFuture<'_, StoreResult<bool>> {
                    $run!(self, |c, _| steps::delete(&c, &name))
                }

                fn set_mcp_key_tools(
                    &self,
                    key: KeyId,
                    tools: Vec<String>,
                ) -> BoxFuture<'_, StoreResult<McpKeyTools>> {
                    $run!(self, |c, now| steps::set_key_tools(&c, now, key, tools))
                }

                fn mcp_key_tools(&self) -> BoxFuture<'_, StoreResult<Vec<McpKeyTools>>> {
                    $run!(self, |c, _| steps::key_tools(&c))
                }

                fn delete_mcp_key_tools(&self, key: KeyId) -> BoxFuture<'_, StoreResult<bool>> {
                    $run!(self, |c, _| steps::delete_key_tools(&c, &key))
                }
            }
        };
    };
}
pub(crate) use impl_mcp_store;

/// A stored MCP server: what the admin API registered, credentials included.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpServer {
    /// `mcp_` + UUIDv7: this registration (a name removed and registered again gets a new one).
    pub id: String,
    pub name: String,
    pub url: String,
    pub teams: Vec<String>,
    pub tools: BTreeMap<String, Vec<String>>,
    pub bearer: Option<String>,
    pub headers: BTreeMap<String, String>,
    pub created_at: UnixMillis,
}

/// A server to store, already checked by `crate::mcp` (name, URL, credentials, limits).
#[derive(Debug, Clone)]
pub struct NewMcpServer {
    pub name: String,
    pub url: String,
    pub teams: Vec<String>,
    pub tools: BTreeMap<String, Vec<String>>,
    pub bearer: Option<String>,
    pub headers: BTreeMap<String, String>,
}

/// A key's tool allowlist: listed names (`<server>__<tool>`) or `<server>__*`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpKeyTools {
    pub key_id: KeyId,
    pub tools: Vec<String>,
    pub updated_at: UnixMillis,
}
