//! `[mcp]`: the MCP gateway (`docs/MCP.md`): how upstream MCP servers are called (deadline, SSRF
//! guard, outbound TLS), the per-team tool-call quota, and the servers the operator declares in
//! the file (`[[mcp.servers]]`; others are registered through `/v1/admin/mcp/servers`).

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub(super) struct RawMcp {
    /// Upstream servers on loopback addresses are refused unless this is set (tests, the demo).
    allow_loopback: bool,
    /// The deadline of one upstream tool call (connect, send, the whole answer).
    call_timeout_ms: u64,
    /// The deadline of the other upstream requests (negotiation, `tools/list`).
    list_timeout_ms: u64,
    /// How long an upstream's tool list is reused before it is asked again.
    list_ttl_ms: u64,
    /// Tool calls per minute per team, over all its keys; 0: no quota.
    tool_calls_per_minute: u32,
    max_servers: u32,
    /// Upstream servers' CA bundle (and a client certificate) for `https` URLs; absent: the
    /// system's trust store.
    tls: Option<super::tls::RawClientTls>,
    servers: Vec<RawMcpServer>,
}

impl Default for RawMcp {
    fn default() -> Self {
        RawMcp {
            allow_loopback: false,
            call_timeout_ms: 30_000,
            list_timeout_ms: 10_000,
            list_ttl_ms: 30_000,
            tool_calls_per_minute: 0,
            max_servers: 100,
            tls: None,
            servers: Vec::new(),
        }
    }
}

/// One `[[mcp.servers]]` entry, as the admin API's registration body. Its `Debug` hides the
/// credentials and the child's environment values.
#[derive(Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawMcpServer {
    pub name: String,
    /// A Streamable HTTP server's URL; empty for a stdio server (`command`).
    #[serde(default)]
    pub url: String,
    /// A stdio server: the program and its arguments, started as a child process (config file
    /// only: the admin API refuses it, as starting processes from an API is remote code
    /// execution).
    #[serde(default)]
    pub command: Vec<String>,
    /// A stdio server's whole environment (nothing of the gateway's is inherited).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// A stdio server's address-space cap (RLIMIT_AS), in MiB; default 2048.
    #[serde(default)]
    pub memory_mb: Option<u64>,
    /// A stdio server's CPU-time cap over one process's life (RLIMIT_CPU), in seconds; default
    /// 3600 (a process past it is killed and restarted).
    #[serde(default)]
    pub cpu_seconds: Option<u64>,
    /// Teams granted every tool of the server (unless `tools` narrows a team's grant).
    #[serde(default)]
    pub teams: Vec<String>,
    /// Per team: the only tools (the upstream's own names) that team may use.
    #[serde(default)]
    pub tools: BTreeMap<String, Vec<String>>,
    /// A bearer token the gateway sends upstream (`Authorization: Bearer …`).
    #[serde(default)]
    pub bearer: Option<String>,
    /// Headers the gateway sends upstream (an API key header, say).
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
}

impl std::fmt::Debug for RawMcpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RawMcpServer")
            .field("name", &self.name)
            .field("url", &self.url)
            .field("command", &self.command)
            .field("env", &self.env.keys().collect::<Vec<_>>())
            .field("memory_mb", &self.memory_mb)
            .field("cpu_seconds", &self.cpu_seconds)
            .field("teams", &self.teams)
            .field("tools", &self.tools)
            .field("bearer", &self.bearer.as_ref().map(|_| "…"))
            .field("headers", &self.headers.keys().collect::<Vec<_>>())
            .finish()
    }
}

/// `[mcp]`, validated (the servers are checked by `crate::mcp` when they are loaded).
#[derive(Debug, Clone)]
pub struct McpConfig {
    pub allow_loopback: bool,
    pub call_timeout: Duration,
    pub list_timeout: Duration,
    pub list_ttl: Duration,
    pub tool_calls_per_minute: u32,
    pub max_servers: usize,
    pub tls: Option<crate::tls::ClientSpec>,
    pub servers: Vec<RawMcpServer>,
}

impl Default for McpConfig {
    fn default() -> Self {
        validate(
            RawMcp::default(),
            std::path::Path::new("."),
            &mut |_: String, _: &str| {},
        )
    }
}

pub(super) fn validate(
    m: RawMcp,
    base: &std::path::Path,
    err: &mut impl FnMut(String, &str),
) -> McpConfig {
    let ms = Duration::from_millis;
    for (key, v) in [
        ("mcp.call_timeout_ms", m.call_timeout_ms),
        ("mcp.list_timeout_ms", m.list_timeout_ms),
    ] {
        if v == 0 || v > 600_000 {
            err(key.into(), "must be between 1 and 600000");
        }
    }
    if m.max_servers == 0 || m.max_servers > 1_000 {
        err("mcp.max_servers".into(), "must be between 1 and 1000");
    }
    if m.servers.len() > m.max_servers as usize {
        err("mcp.servers".into(), "more servers than mcp.max_servers");
    }
    let mut names = std::collections::BTreeSet::new();
    for (i, s) in m.servers.iter().enumerate() {
        if let Err(e) = check_server_name(&s.name) {
            err(format!("mcp.servers[{i}].name"), &e);
        } else if !names.insert(s.name.as_str()) {
            err(format!("mcp.servers[{i}].name"), "is declared twice");
        }
        if !s.command.is_empty() || (!s.url.is_empty() && !s.env.is_empty()) {
            if let Err((field, e)) = check_stdio(s) {
                err(format!("mcp.servers[{i}].{field}"), &e);
            }
        } else if let Err(e) = crate::egress::check_url(&s.url, m.allow_loopback) {
            err(format!("mcp.servers[{i}].url"), &e.to_string());
        }
    }
    McpConfig {
        allow_loopback: m.allow_loopback,
        call_timeout: ms(m.call_timeout_ms.clamp(1, 600_000)),
        list_timeout: ms(m.list_timeout_ms.clamp(1, 600_000)),
        list_ttl: ms(m.list_ttl_ms),
        tool_calls_per_minute: m.tool_calls_per_minute,
        max_servers: m.max_servers.clamp(1, 1_000) as usize,
        tls: m
            .tls
            .and_then(|t| super::tls::validate_client(t, "mcp.tls", base, err)),
        servers: m.servers,
    }
}

/// Most arguments (program included) and environment entries of a stdio server.
pub const MAX_STDIO_ITEMS: usize = 64;
/// Longest argument or environment value of a stdio server (bytes).
pub const MAX_STDIO_VALUE: usize = 4_096;
/// A stdio server's default caps.
pub const DEFAULT_STDIO_MEMORY_MB: u64 = 2_048;
pub const DEFAULT_STDIO_CPU_SECONDS: u64 = 3_600;

/// A stdio server's fields checked (`command` instead of `url`, `env`, the caps): the field at
/// fault and why.
pub fn check_stdio(s: &RawMcpServer) -> Result<(), (&'static str, String)> {
    if !s.url.is_empty() {
        return Err((
            "url",
            "a server has a `url` or a `command`, not both".into(),
        ));
    }
    if s.command.is_empty() {
        return Err((
            "env",
            "only a stdio server (`command`) has an environment".into(),
        ));
    }
    let value_ok = |v: &str| v.len() <= MAX_STDIO_VALUE && !v.contains('\0');
    if s.command.len() > MAX_STDIO_ITEMS
        || s.command[0].is_empty()
        || !s.command.iter().all(|a| value_ok(a))
    {
        return Err((
            "command",
            format!(
                "must be a program and at most {} arguments of at most {MAX_STDIO_VALUE} bytes, without NUL",
                MAX_STDIO_ITEMS - 1
            ),
        ));
    }
    let name_ok = |n: &str| {
        n.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    };
    if s.env.len() > MAX_STDIO_ITEMS
        || !s
            .env
            .iter()
            .all(|(n, v)| name_ok(n) && n.len() <= 128 && value_ok(v))
    {
        return Err((
            "env",
            format!(
                "at most {MAX_STDIO_ITEMS} variables named [A-Za-z_][A-Za-z0-9_]*, values of at most {MAX_STDIO_VALUE} bytes"
            ),
        ));
    }
    if s.memory_mb.is_some_and(|m| !(64..=65_536).contains(&m)) {
        return Err(("memory_mb", "must be between 64 and 65536".into()));
    }
    if s.cpu_seconds.is_some_and(|c| !(1..=2_592_000).contains(&c)) {
        return Err(("cpu_seconds", "must be between 1 and 2592000".into()));
    }
    Ok(())
}

/// Longest MCP server name.
pub const MAX_SERVER_NAME: usize = 32;

/// A server's name is the prefix of its tools' names (`<server>__<tool>`): lowercase ASCII
/// letters, digits and `-`, starting with a letter, at most [`MAX_SERVER_NAME`] characters; no
/// `_`, so the first `__` of a listed name always ends the server's part.
pub fn check_server_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= MAX_SERVER_NAME
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    if ok {
        Ok(())
    } else {
        Err(format!(
            "must be 1 to {MAX_SERVER_NAME} characters of a-z, 0-9 and -, starting with a letter"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_names_cannot_hold_the_separator() {
        for ok in ["records", "crm-2", "a"] {
            assert!(check_server_name(ok).is_ok(), "{ok}");
        }
        let long = "x".repeat(33);
        for bad in [
            "",
            "Records",
            "rec__ords",
            "rec_ords",
            "2fa",
            "a.b",
            long.as_str(),
        ] {
            assert!(check_server_name(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_defaults_are_valid() {
        let mut errors = Vec::new();
        validate(
            RawMcp::default(),
            std::path::Path::new("."),
            &mut |p: String, m: &str| errors.push(format!("{p}: {m}")),
        );
        assert!(errors.is_empty(), "{errors:?}");
    }
}
