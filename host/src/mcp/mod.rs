//! The MCP gateway's domain (issue 46, `docs/MCP.md`): the upstream MCP servers the operator
//! declared (the config file's `[[mcp.servers]]` and the admin API's), each with the
//! credentials the gateway holds for it and a pooled, era-negotiated client (`upstream.rs`);
//! per-key tool allowlists; **the one access rule** that both builds a caller's catalogue and
//! admits a `tools/call` (`permits`: a denied tool is neither listed nor callable); the
//! per-team tool-call quota; downstream sessions; and the tool policy's decision point
//! (`decide.rs`). It knows no HTTP route: the door is `api/mcp/`.
//!
//! Names: a listed tool is `<server>__<tool>` (`SEPARATOR`): server names hold no `_`, so the
//! first `__` splits it, and the upstream's own name follows unchanged.

mod decide;
mod failure;
mod features;
mod quota;
pub mod sandbox;
mod sessions;
mod stdio;
mod streamable;
mod upstream;
pub mod wire;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, PoisonError, RwLock};

use http::{HeaderMap, HeaderName, HeaderValue};
use serde_json::{Value, json};

use crate::config::{
    DEFAULT_STDIO_CPU_SECONDS, DEFAULT_STDIO_MEMORY_MB, McpConfig, RawMcpServer, check_server_name,
    check_stdio,
};
use crate::upstream::client;
pub use decide::{CallVerdict, DecideError, ResultVerdict, ToolCall, decide_call, decide_result};
pub use failure::UpstreamError;
pub use features::{Feature, RESOURCE_SEPARATOR, listed_uri};
pub use sessions::{Session, Sessions};
use upstream::{Deadlines, Link, Upstream};

/// Between a server's name and its tool's in a listed name.
pub const SEPARATOR: &str = "__";
const MAX_TEAMS: usize = 1_000;
const MAX_TOOLS: usize = 1_000;
const MAX_HEADERS: usize = 16;
const MAX_SECRET_BYTES: usize = 4_096;
const MAX_TOOL_NAME: usize = 128;

/// A registration or allowlist refused, or a server that is not there.
#[derive(Debug, thiserror::Error)]
pub enum McpError {
    #[error("{field}: {message}")]
    Invalid { field: String, message: String },
    #[error("an MCP server named `{0}` is already registered")]
    Exists(String),
    #[error("no MCP server named `{0}`")]
    NotFound(String),
    #[error("the MCP server `{0}` is declared in the config file; remove it there")]
    Declared(String),
    #[error("at most {0} MCP servers may be registered")]
    TooMany(usize),
}

fn invalid(field: &str, message: impl Into<String>) -> McpError {
    McpError::Invalid {
        field: field.into(),
        message: message.into(),
    }
}

/// Where a server was declared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    Config,
    Api,
}

/// One upstream MCP server.
pub struct Server {
    pub name: String,
    pub url: String,
    /// Teams granted its tools.
    pub teams: Vec<String>,
    /// Per team, the only tools that team may use (absent: all).
    pub tools: BTreeMap<String, Vec<String>>,
    pub source: Source,
    /// The stored registration (`mcp_…`) an API server was built from: a reload keeps the
    /// server (its pooled session, its cached tool list) while that registration stands.
    registration: Option<String>,
    /// Names of the credentials the gateway sends (never their values).
    credentials: Vec<String>,
    upstream: Upstream,
}

impl Server {
    /// The server as the admin API shows it: no secret, only which credentials are held.
    pub fn view(&self) -> Value {
        let command = match self.upstream.link() {
            Link::Stdio(s) => Some(&s.spec().command),
            Link::Http(_) => None,
        };
        json!({
            "object": "mcp.server",
            "name": self.name,
            "transport": if command.is_some() { "stdio" } else { "http" },
            "url": command.is_none().then_some(&self.url),
            "command": command,
            "teams": self.teams,
            "tools": self.tools,
            "credentials": self.credentials,
            "source": match self.source { Source::Config => "config", Source::Api => "api" },
        })
    }

    /// `tools/call` of its own tool `tool`.
    pub async fn call_tool(&self, tool: &str, arguments: Value) -> Result<Value, UpstreamError> {
        self.upstream.call_tool(tool, arguments).await
    }
}

/// Who asks: the key's team and the key.
#[derive(Debug, Clone, Copy)]
pub struct Caller<'a> {
    pub team: &'a str,
    pub key: &'a str,
}

/// Why a listed name resolves to no callable tool.
#[derive(Debug)]
pub enum Unresolved {
    /// No such tool, or not for this caller: one answer for both, so a caller learns nothing
    /// of tools it may not use.
    NotPermitted,
    /// A server the caller may use could not say which tools it has.
    Upstream(String, UpstreamError),
}

pub struct Mcp {
    deadlines: Deadlines,
    allow_loopback: bool,
    max_servers: usize,
    client: client::HttpClient<crate::egress::GuardedResolver>,
    servers: RwLock<BTreeMap<String, Arc<Server>>>,
    /// Held while the stored servers and allowlists are read and put in place, so an older
    /// read never replaces a newer one.
    reloading: tokio::sync::Mutex<()>,
    /// Per key id: the listed names (or `<server>__*` prefixes) the key may use.
    keys: RwLock<HashMap<String, Arc<Vec<String>>>>,
    pub sessions: Sessions,
    quota: quota::Quota,
}

/// How long an idle keep-alive connection to an upstream is kept for reuse.
const POOL_IDLE: std::time::Duration = std::time::Duration::from_secs(4);

impl Mcp {
    /// The client every upstream shares (SSRF guard, outbound TLS, keep-alive; hyper's, which
    /// follows no redirect)
    /// and the servers the config file declares.
    pub fn new(config: &McpConfig) -> anyhow::Result<Mcp> {
        let tls = match &config.tls {
            Some(tls) => tls.load().map_err(|e| anyhow::anyhow!("mcp: tls: {e}"))?,
            // A host without a trust store still starts; its `https` servers fail to connect.
            None => client::system_trust().or_else(|e| {
                tracing::warn!(error = %e, "no system trust store: MCP servers over https need [mcp] tls");
                client::no_trust()
            })?,
        };
        let client = client::pooled(
            crate::egress::GuardedResolver {
                allow_loopback: config.allow_loopback,
            },
            tls,
            config.list_timeout.min(std::time::Duration::from_secs(10)),
            // Below the 5 s keep-alive of uvicorn (FastMCP) and Node: a connection the server is
            // about to close is not reused, so a call does not race the close and fail as
            // "unreachable" (seen as a rare test flake; docs/MCP.md).
            POOL_IDLE,
        );
        let mcp = Mcp {
            deadlines: Deadlines {
                call: config.call_timeout,
                list: config.list_timeout,
                list_ttl: config.list_ttl,
            },
            allow_loopback: config.allow_loopback,
            max_servers: config.max_servers,
            client,
            servers: RwLock::new(BTreeMap::new()),
            reloading: tokio::sync::Mutex::new(()),
            keys: RwLock::new(HashMap::new()),
            sessions: Sessions::default(),
            quota: quota::Quota::new(config.tool_calls_per_minute),
        };
        for raw in &config.servers {
            mcp.register(raw.clone(), Source::Config)
                .map_err(|e| anyhow::anyhow!("mcp.servers: {e}"))?;
        }
        Ok(mcp)
    }

    /// A new server, checked (name, URL through the SSRF guard, credentials, limits).
    pub fn register(&self, raw: RawMcpServer, source: Source) -> Result<Arc<Server>, McpError> {
        let server = self.build(raw, source, None)?;
        let mut servers = self.servers.write().unwrap_or_else(PoisonError::into_inner);
        if servers.contains_key(&server.name) {
            return Err(McpError::Exists(server.name.clone()));
        }
        if servers.len() >= self.max_servers {
            return Err(McpError::TooMany(self.max_servers));
        }
        servers.insert(server.name.clone(), server.clone());
        Ok(server)
    }

    /// What [`Mcp::register`] would refuse for an API registration, without registering it: the
    /// admin service checks before it stores.
    pub fn check(&self, raw: &RawMcpServer) -> Result<(), McpError> {
        self.build(raw.clone(), Source::Api, None)?;
        let servers = self.servers.read().unwrap_or_else(PoisonError::into_inner);
        if servers.contains_key(&raw.name) {
            return Err(McpError::Exists(raw.name.clone()));
        }
        if servers.len() >= self.max_servers {
            return Err(McpError::TooMany(self.max_servers));
        }
        Ok(())
    }

    /// What [`Mcp::check`] refuses of an edit to the API server of `raw.name` (its name and the
    /// number of servers do not change): the registration itself.
    pub fn check_edit(&self, raw: &RawMcpServer) -> Result<(), McpError> {
        self.build(raw.clone(), Source::Api, None).map(|_| ())
    }

    /// The serialising guard of a reload from the store ([`Mcp::replace_stored`]).
    pub async fn reload_guard(&self) -> tokio::sync::MutexGuard<'_, ()> {
        self.reloading.lock().await
    }

    /// The stored registrations (`(registration id, server)`) and allowlists become the API's
    /// servers and the keys' allowlists; the config file's servers stay. A server whose
    /// registration is unchanged is kept as it is; one the config file also names, or that no
    /// longer passes the checks (the config's `allow_loopback` turned off), is left out and logged.
    pub fn replace_stored(
        &self,
        stored: Vec<(String, RawMcpServer)>,
        keys: HashMap<String, Vec<String>>,
    ) {
        let current = self.servers();
        let mut next: BTreeMap<String, Arc<Server>> = current
            .iter()
            .filter(|s| s.source == Source::Config)
            .map(|s| (s.name.clone(), s.clone()))
            .collect();
        for (id, raw) in stored {
            if next.contains_key(&raw.name) {
                tracing::warn!(server = %raw.name, "a stored MCP server has the name of one in the config file; the config file's is used");
                continue;
            }
            let kept = current
                .iter()
                .find(|s| s.name == raw.name && s.registration.as_deref() == Some(id.as_str()));
            let server = match kept {
                Some(s) => s.clone(),
                None => match self.build(raw, Source::Api, Some(id)) {
                    Ok(s) => s,
                    Err(e) => {
                        tracing::warn!(error = %e, "a stored MCP server is left out");
                        continue;
                    }
                },
            };
            next.insert(server.name.clone(), server);
        }
        *self.servers.write().unwrap_or_else(PoisonError::into_inner) = next;
        *self.keys.write().unwrap_or_else(PoisonError::into_inner) = keys
            .into_iter()
            .map(|(k, tools)| (k, Arc::new(tools)))
            .collect();
    }

    /// A server checked and built, not yet in the registry.
    fn build(
        &self,
        raw: RawMcpServer,
        source: Source,
        registration: Option<String>,
    ) -> Result<Arc<Server>, McpError> {
        check_server_name(&raw.name).map_err(|e| invalid("name", e))?;
        let stdio = !raw.command.is_empty() || (!raw.url.is_empty() && !raw.env.is_empty());
        if stdio && source == Source::Api {
            // Starting a process from an API is remote code execution (docs/DECISIONS.md).
            return Err(invalid(
                "command",
                "stdio servers are declared only in the config file",
            ));
        }
        if raw.teams.len() > MAX_TEAMS || raw.tools.len() > MAX_TEAMS {
            return Err(invalid("teams", format!("at most {MAX_TEAMS} teams")));
        }
        for (team, tools) in &raw.tools {
            if tools.len() > MAX_TOOLS
                || tools
                    .iter()
                    .any(|t| t.is_empty() || t.len() > MAX_TOOL_NAME)
            {
                return Err(invalid(
                    &format!("tools.{team}"),
                    format!("at most {MAX_TOOLS} tool names of 1 to {MAX_TOOL_NAME} bytes"),
                ));
            }
        }
        let (auth, mut credentials) = credentials(&raw)?;
        let link = if stdio {
            check_stdio(&raw).map_err(|(field, e)| invalid(field, e))?;
            if !auth.is_empty() {
                return Err(invalid(
                    "bearer",
                    "a stdio server takes its credentials from `env`",
                ));
            }
            credentials.extend(raw.env.keys().map(|k| format!("env:{k}")));
            Link::Stdio(stdio::StdioLink::new(
                raw.name.clone(),
                sandbox::Spec {
                    command: raw.command.clone(),
                    env: raw.env.clone(),
                    memory_bytes: raw.memory_mb.unwrap_or(DEFAULT_STDIO_MEMORY_MB) << 20,
                    cpu_seconds: raw.cpu_seconds.unwrap_or(DEFAULT_STDIO_CPU_SECONDS),
                },
            ))
        } else {
            let url = crate::egress::check_url(&raw.url, self.allow_loopback)
                .map_err(|e| invalid("url", e.to_string()))?;
            Link::Http(Box::new(
                streamable::HttpLink::new(&url, auth, self.client.clone())
                    .map_err(|e| invalid("url", e.to_string()))?,
            ))
        };
        let server = Arc::new(Server {
            name: raw.name.clone(),
            url: raw.url,
            teams: raw.teams,
            tools: raw.tools,
            source,
            registration,
            credentials,
            upstream: Upstream::new(link, self.deadlines),
        });
        Ok(server)
    }

    /// Removes a server registered through the API.
    pub fn remove(&self, name: &str) -> Result<(), McpError> {
        let mut servers = self.servers.write().unwrap_or_else(PoisonError::into_inner);
        match servers.get(name) {
            None => Err(McpError::NotFound(name.into())),
            Some(s) if s.source == Source::Config => Err(McpError::Declared(name.into())),
            Some(_) => {
                servers.remove(name);
                Ok(())
            }
        }
    }

    /// Shutdown: every stdio server's process killed.
    pub async fn shut_down(&self) {
        for server in self.servers() {
            if let Link::Stdio(s) = server.upstream.link() {
                s.stop().await;
            }
        }
    }

    pub fn servers(&self) -> Vec<Arc<Server>> {
        let servers = self.servers.read().unwrap_or_else(PoisonError::into_inner);
        servers.values().cloned().collect()
    }

    pub fn server(&self, name: &str) -> Option<Arc<Server>> {
        let servers = self.servers.read().unwrap_or_else(PoisonError::into_inner);
        servers.get(name).cloned()
    }

    /// The key's allowlist: listed names, or `<server>__*` for all of a server's tools.
    pub fn set_key_tools(&self, key: &str, tools: Vec<String>) -> Result<(), McpError> {
        check_key_tools(&tools)?;
        let mut keys = self.keys.write().unwrap_or_else(PoisonError::into_inner);
        keys.insert(key.to_string(), Arc::new(tools));
        Ok(())
    }

    pub fn key_tools(&self, key: &str) -> Option<Arc<Vec<String>>> {
        let keys = self.keys.read().unwrap_or_else(PoisonError::into_inner);
        keys.get(key).cloned()
    }

    /// Removes a key's allowlist (the key may then use all its team's tools); whether it had one.
    pub fn clear_key_tools(&self, key: &str) -> bool {
        let mut keys = self.keys.write().unwrap_or_else(PoisonError::into_inner);
        keys.remove(key).is_some()
    }

    /// One tool call from `team`'s quota; `Err(seconds to wait)` when it is spent.
    pub fn take_tool_call(&self, team: &str) -> Result<(), u64> {
        self.quota.take(team)
    }

    /// The servers `caller`'s team is granted.
    fn granted(&self, caller: Caller<'_>) -> Vec<Arc<Server>> {
        let servers = self.servers.read().unwrap_or_else(PoisonError::into_inner);
        servers
            .values()
            .filter(|s| s.teams.iter().any(|t| t == caller.team))
            .cloned()
            .collect()
    }

    /// The caller's catalogue: every tool of every server its team is granted, as `permits`
    /// allows, named `<server>__<tool>`. A server that cannot list is left out (and logged).
    pub async fn catalogue(&self, caller: Caller<'_>) -> Vec<Value> {
        let key = self.key_tools(caller.key);
        let servers = self.granted(caller);
        let lists =
            futures_util::future::join_all(servers.iter().map(|s| s.upstream.tools())).await;
        let mut out = Vec::new();
        for (server, listed) in servers.iter().zip(lists) {
            let tools = match listed {
                Ok(t) => t,
                Err(e) => {
                    tracing::warn!(server = %server.name, error = %e, "MCP server left out of the catalogue");
                    continue;
                }
            };
            for tool in tools.iter() {
                let Some(name) = tool.get("name").and_then(Value::as_str) else {
                    continue;
                };
                if permits(server, key.as_ref().map(|k| k.as_slice()), caller, name) {
                    let mut t = tool.clone();
                    if let Some(obj) = t.as_object_mut() {
                        obj.insert("name".into(), json!(listed_name(&server.name, name)));
                    }
                    out.push(t);
                }
            }
        }
        out
    }

    /// The server and upstream tool name `listed` stands for, if the caller may call it: the
    /// catalogue's own rule, on the same tool list.
    pub async fn resolve(
        &self,
        caller: Caller<'_>,
        listed: &str,
    ) -> Result<(Arc<Server>, String), Unresolved> {
        let (server, tool) = listed
            .split_once(SEPARATOR)
            .ok_or(Unresolved::NotPermitted)?;
        let server = self
            .granted(caller)
            .into_iter()
            .find(|s| s.name == server)
            .ok_or(Unresolved::NotPermitted)?;
        let key = self.key_tools(caller.key);
        if !permits(&server, key.as_ref().map(|k| k.as_slice()), caller, tool) {
            return Err(Unresolved::NotPermitted);
        }
        let tools = server
            .upstream
            .tools()
            .await
            .map_err(|e| Unresolved::Upstream(server.name.clone(), e))?;
        if !tools
            .iter()
            .any(|t| t.get("name").and_then(Value::as_str) == Some(tool))
        {
            return Err(Unresolved::NotPermitted);
        }
        Ok((server, tool.to_string()))
    }
}

/// A key's allowlist is well formed: at most 1,000 names `<server>__<tool>` or `<server>__*`.
pub fn check_key_tools(tools: &[String]) -> Result<(), McpError> {
    if tools.len() > MAX_TOOLS
        || tools
            .iter()
            .any(|t| t.is_empty() || t.len() > MAX_TOOL_NAME + 40 || !t.contains(SEPARATOR))
    {
        return Err(invalid(
            "tools",
            format!("at most {MAX_TOOLS} names `<server>__<tool>` or `<server>__*`"),
        ));
    }
    Ok(())
}

/// `<server>__<tool>`.
pub fn listed_name(server: &str, tool: &str) -> String {
    format!("{server}{SEPARATOR}{tool}")
}

/// **The access rule**, for the list and the call alike: the team is granted the server, the
/// team's tool list for it (if any) names the tool, and the key's allowlist (if any) names the
/// listed name or its server's `__*`.
fn permits(server: &Server, key: Option<&[String]>, caller: Caller<'_>, tool: &str) -> bool {
    let team = server.teams.iter().any(|t| t == caller.team)
        && server
            .tools
            .get(caller.team)
            .is_none_or(|names| names.iter().any(|n| n == tool));
    team && key.is_none_or(|allowed| {
        allowed.iter().any(|a| match a.strip_suffix('*') {
            Some(prefix) => listed_name(&server.name, tool).starts_with(prefix),
            None => *a == listed_name(&server.name, tool),
        })
    })
}

/// **The rule for prompts and resources**, the same grant as tools': the team is granted the
/// server, and the key's allowlist (if any) names `<server>__*` — or, for a prompt (`listed`:
/// `<server>__<prompt>`), that name. A team's tool list narrows tools only.
fn grants(
    server: &Server,
    key: Option<&[String]>,
    caller: Caller<'_>,
    listed: Option<&str>,
) -> bool {
    let all = format!("{}{SEPARATOR}*", server.name);
    server.teams.iter().any(|t| t == caller.team)
        && key.is_none_or(|allowed| {
            allowed
                .iter()
                .any(|a| *a == all || listed.is_some_and(|l| a == l))
        })
}

/// The headers the gateway sends a server, and their names for the admin view.
fn credentials(raw: &RawMcpServer) -> Result<(HeaderMap, Vec<String>), McpError> {
    const RESERVED: &[&str] = &[
        "host",
        "content-length",
        "content-type",
        "accept",
        "connection",
        "transfer-encoding",
        "mcp-protocol-version",
        "mcp-session-id",
        "mcp-method",
        "mcp-name",
    ];
    if raw.headers.len() > MAX_HEADERS {
        return Err(invalid("headers", format!("at most {MAX_HEADERS}")));
    }
    let mut map = HeaderMap::new();
    let mut names = Vec::new();
    if let Some(token) = &raw.bearer {
        if token.is_empty() || token.len() > MAX_SECRET_BYTES {
            return Err(invalid("bearer", "must be 1 to 4096 bytes"));
        }
        let mut v = HeaderValue::from_str(&format!("Bearer {token}"))
            .map_err(|_| invalid("bearer", "must be printable ASCII"))?;
        v.set_sensitive(true);
        map.insert(http::header::AUTHORIZATION, v);
        names.push("bearer".to_string());
    }
    for (name, value) in &raw.headers {
        let n = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| invalid(&format!("headers.{name}"), "is not a header name"))?;
        if RESERVED.contains(&n.as_str()) || map.contains_key(&n) {
            return Err(invalid(&format!("headers.{name}"), "may not be set"));
        }
        if value.len() > MAX_SECRET_BYTES {
            return Err(invalid(
                &format!("headers.{name}"),
                "longer than 4096 bytes",
            ));
        }
        let mut v = HeaderValue::from_str(value)
            .map_err(|_| invalid(&format!("headers.{name}"), "must be printable ASCII"))?;
        v.set_sensitive(true);
        names.push(format!("header:{}", n.as_str()));
        map.insert(n, v);
    }
    Ok((map, names))
}

#[cfg(test)]
mod tests;
