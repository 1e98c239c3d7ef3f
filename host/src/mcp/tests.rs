//! The MCP registry's unit tests (`super`): the grant rule (team grants, per-team tool lists,
//! key allowlists), stored servers replacing the API's, registrations checked without showing
//! secrets, stdio servers from the config file only.

#![allow(clippy::unwrap_used, reason = "test code")]
use super::*;

fn server(mcp: &Mcp, name: &str, teams: &[&str], tools: &[(&str, &[&str])]) -> Arc<Server> {
    mcp.register(
        RawMcpServer {
            name: name.into(),
            url: "http://10.0.0.1/mcp".into(),
            command: vec![],
            env: BTreeMap::new(),
            memory_mb: None,
            cpu_seconds: None,
            teams: teams.iter().map(|t| t.to_string()).collect(),
            tools: tools
                .iter()
                .map(|(t, n)| (t.to_string(), n.iter().map(|s| s.to_string()).collect()))
                .collect(),
            bearer: Some("s3cret".into()),
            headers: BTreeMap::new(),
        },
        Source::Api,
    )
    .unwrap()
}

#[test]
fn the_rule_covers_team_grants_team_tool_lists_and_key_allowlists() {
    let mcp = Mcp::new(&McpConfig::default()).unwrap();
    let records = server(&mcp, "records", &["a", "b"], &[("b", &["echo"])]);
    let a = Caller {
        team: "a",
        key: "k1",
    };
    let b = Caller {
        team: "b",
        key: "k2",
    };
    let c = Caller {
        team: "c",
        key: "k3",
    };
    assert!(permits(&records, None, a, "echo"));
    assert!(permits(&records, None, a, "delete"));
    assert!(permits(&records, None, b, "echo"));
    assert!(
        !permits(&records, None, b, "delete"),
        "b's list names echo only"
    );
    assert!(!permits(&records, None, c, "echo"), "c is not granted");
    let only_echo = ["records__echo".to_string()];
    assert!(permits(&records, Some(&only_echo[..]), a, "echo"));
    assert!(!permits(&records, Some(&only_echo[..]), a, "delete"));
    let all = ["records__*".to_string()];
    assert!(permits(&records, Some(&all[..]), a, "delete"));
    let other = ["files__*".to_string()];
    assert!(!permits(&records, Some(&other[..]), a, "echo"));
    // Prompts and resources: the team's grant, and the key's `__*` (or the prompt's name).
    assert!(
        grants(&records, None, b, None),
        "b's tool list narrows tools only"
    );
    assert!(!grants(&records, None, c, None));
    assert!(!grants(&records, Some(&only_echo[..]), a, None));
    assert!(grants(&records, Some(&all[..]), a, None));
    let prompt = ["records__greet".to_string()];
    assert!(grants(
        &records,
        Some(&prompt[..]),
        a,
        Some("records__greet")
    ));
    assert!(!grants(
        &records,
        Some(&prompt[..]),
        a,
        Some("records__other")
    ));
}

fn raw(name: &str, url: &str) -> RawMcpServer {
    RawMcpServer {
        name: name.into(),
        url: url.into(),
        command: Vec::new(),
        env: BTreeMap::new(),
        memory_mb: None,
        cpu_seconds: None,
        teams: vec!["a".into()],
        tools: BTreeMap::new(),
        bearer: None,
        headers: BTreeMap::new(),
    }
}

#[test]
fn the_stored_servers_replace_the_api_ones_and_keep_what_did_not_change() {
    let mcp = Mcp::new(&McpConfig::default()).unwrap();
    mcp.register(raw("records", "http://10.0.0.1/mcp"), Source::Config)
        .unwrap();
    let stored = |id: &str, name: &str| (id.to_string(), raw(name, "http://10.0.0.2/mcp"));
    mcp.replace_stored(
        vec![stored("mcp_1", "files"), stored("mcp_2", "records")],
        HashMap::from([("k1".to_string(), vec!["files__read".to_string()])]),
    );
    let files = mcp.server("files").unwrap();
    assert_eq!(files.source, Source::Api);
    // The config file's server wins over a stored one of its name.
    assert_eq!(mcp.server("records").unwrap().source, Source::Config);
    assert_eq!(
        mcp.key_tools("k1").unwrap().as_slice(),
        ["files__read".to_string()]
    );
    assert!(matches!(
        mcp.check(&raw("files", "http://10.0.0.3/mcp")),
        Err(McpError::Exists(_))
    ));

    // The same registration: the same server (its session and tool list kept).
    mcp.replace_stored(vec![stored("mcp_1", "files")], HashMap::new());
    assert!(Arc::ptr_eq(&files, &mcp.server("files").unwrap()));
    assert!(mcp.key_tools("k1").is_none(), "allowlists follow the store");
    // Registered again under the name: a new server.
    mcp.replace_stored(vec![stored("mcp_3", "files")], HashMap::new());
    assert!(!Arc::ptr_eq(&files, &mcp.server("files").unwrap()));
    // Removed from the store: gone; a stored one that fails its checks is left out.
    mcp.replace_stored(
        vec![("mcp_4".into(), raw("local", "http://127.0.0.1/mcp"))],
        HashMap::new(),
    );
    let names: Vec<String> = mcp.servers().iter().map(|s| s.name.clone()).collect();
    assert_eq!(names, ["records"]);
}

#[test]
fn registrations_are_checked_and_never_show_secrets() {
    let mcp = Mcp::new(&McpConfig::default()).unwrap();
    let s = server(&mcp, "records", &["a"], &[]);
    let view = s.view().to_string();
    assert!(!view.contains("s3cret"), "{view}");
    assert!(view.contains("bearer"));
    assert!(matches!(
        mcp.register(
            RawMcpServer {
                name: "records".into(),
                url: "http://10.0.0.1/mcp".into(),
                command: vec![],
                env: BTreeMap::new(),
                memory_mb: None,
                cpu_seconds: None,
                teams: vec![],
                tools: BTreeMap::new(),
                bearer: None,
                headers: BTreeMap::new(),
            },
            Source::Api
        ),
        Err(McpError::Exists(_))
    ));
    for (name, url) in [
        ("Bad_Name", "http://10.0.0.1/mcp"),
        ("meta", "http://169.254.169.254/mcp"),
        ("local", "http://127.0.0.1/mcp"),
        ("ftp", "ftp://10.0.0.1/mcp"),
    ] {
        let r = mcp.register(
            RawMcpServer {
                name: name.into(),
                url: url.into(),
                command: vec![],
                env: BTreeMap::new(),
                memory_mb: None,
                cpu_seconds: None,
                teams: vec![],
                tools: BTreeMap::new(),
                bearer: None,
                headers: BTreeMap::new(),
            },
            Source::Api,
        );
        assert!(matches!(r, Err(McpError::Invalid { .. })), "{name} {url}");
    }
    assert!(mcp.remove("records").is_ok());
    assert!(matches!(mcp.remove("records"), Err(McpError::NotFound(_))));
}

fn stdio(name: &str, command: &[&str]) -> RawMcpServer {
    RawMcpServer {
        command: command.iter().map(|s| s.to_string()).collect(),
        env: BTreeMap::from([("TOKEN".to_string(), "s3cret".to_string())]),
        ..raw(name, "")
    }
}

#[test]
fn stdio_servers_come_from_the_config_file_only() {
    let mcp = Mcp::new(&McpConfig::default()).unwrap();
    let r = mcp.register(stdio("shell", &["/bin/sh", "-c", "id"]), Source::Api);
    assert!(
        matches!(&r, Err(McpError::Invalid { field, .. }) if field == "command"),
        "{:?}",
        r.err()
    );
    assert!(mcp.server("shell").is_none());
    // Declared in the file: registered (not started until its first request), the
    // environment named, never shown.
    let s = mcp
        .register(
            stdio("notes", &["/usr/bin/python3", "s.py"]),
            Source::Config,
        )
        .unwrap();
    let view = s.view();
    assert_eq!(view["transport"], "stdio");
    assert_eq!(view["url"], Value::Null);
    assert_eq!(view["credentials"], json!(["env:TOKEN"]));
    assert!(!view.to_string().contains("s3cret"));
    // A URL and a command, a bearer on a stdio server, a bad variable name: refused.
    let mut both = stdio("both", &["/bin/true"]);
    both.url = "http://10.0.0.1/mcp".into();
    let mut bearer = stdio("bearer", &["/bin/true"]);
    bearer.bearer = Some("t".into());
    let mut env = stdio("env", &["/bin/true"]);
    env.env.insert("BAD-NAME".into(), "x".into());
    let mut memory = stdio("memory", &["/bin/true"]);
    memory.memory_mb = Some(1);
    for (raw, field) in [
        (both, "url"),
        (bearer, "bearer"),
        (env, "env"),
        (memory, "memory_mb"),
        (stdio("empty", &[""]), "command"),
    ] {
        let r = mcp.register(raw, Source::Config);
        assert!(
            matches!(&r, Err(McpError::Invalid { field: f, .. }) if f == field),
            "{field}: {:?}",
            r.err()
        );
    }
}

/// The SSRF guard is the upstream client's resolver: a name that resolves to loopback is refused
/// when the connection is made (the URL itself passed), and a closed port is "unreachable".
#[tokio::test]
async fn the_guard_refuses_at_connection_time() {
    let mcp = Mcp::new(&McpConfig::default()).unwrap();
    mcp.register(raw("local", "http://localhost:9/mcp"), Source::Api)
        .unwrap();
    let local = mcp.servers.read().unwrap()["local"].clone();
    let refused = local.call_tool("echo", json!({})).await.unwrap_err();
    assert!(
        matches!(&refused, UpstreamError::Refused(why) if why.contains("loopback")),
        "{refused:?}"
    );

    let open = Mcp::new(&McpConfig {
        allow_loopback: true,
        ..McpConfig::default()
    })
    .unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    open.register(
        raw("gone", &format!("http://127.0.0.1:{port}/mcp")),
        Source::Api,
    )
    .unwrap();
    let gone = open.servers.read().unwrap()["gone"].clone();
    let e = gone.call_tool("echo", json!({})).await.unwrap_err();
    assert!(matches!(e, UpstreamError::Unreachable), "{e:?}");
}
