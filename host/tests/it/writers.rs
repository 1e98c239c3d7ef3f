//! Who writes keys, teams, certificate identities, policies, webhook subscriptions and MCP servers
//! (issue 47, "Domain services own their writes"): their admin handlers go through
//! `crate::services`, which commits, invalidates the caches and tells the other replicas in one
//! place. This test reads those handlers and fails on any reach past a service into the parts it
//! owns (the store, the key cache and certificate table, budget limits, the policy registry and
//! guardrail slot, the replica notices, the subscription writes, the MCP registry's writes). A
//! second test reads every file under `api/` and `admin/`: none names the state's store accessor
//! (`AppState::store`, private to the crate); endpoints read stored records through the state's
//! narrow handles (`state/stored.rs`) and the library's (`rag/files.rs`).

use std::path::Path;

/// The admin handler files whose resources have a service.
const HANDLERS: &[&str] = &[
    "admin/keys.rs",
    "admin/teams.rs",
    "admin/cert_identities.rs",
    "admin/policies.rs",
    "admin/webhooks.rs",
    "admin/mcp.rs",
];

/// What a handler may not name: each is a part a service owns.
const OWNED: &[&str] = &[
    "app.store()",
    "app.access()",
    "app.shared()",
    "app.router()",
    "app.guardrail()",
    ".budgets().set_limit",
    ".budgets().forget",
    ".budgets().charger",
    ".webhooks().create",
    ".webhooks().delete",
    ".webhooks().rotate",
    ".mcp().register",
    ".mcp().remove",
    ".mcp().set_key_tools",
    ".mcp().clear_key_tools",
    ".mcp().replace_stored",
    "share_router",
    "share_guardrail",
    "new_policy_id",
];

/// `text` without its `//` comments.
fn code(text: &str) -> String {
    text.lines()
        .map(|l| l.find("//").map_or(l, |i| &l[..i]))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn admin_handlers_write_only_through_the_services() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut found = Vec::new();
    for file in HANDLERS {
        let text = std::fs::read_to_string(src.join(file)).unwrap();
        // Whitespace out, so a chain split over lines (`app\n.0\n.store`) reads as one.
        let flat = code(&text).replace(char::is_whitespace, "");
        for owned in OWNED {
            if flat.contains(owned) {
                found.push(format!("host/src/{file}: `{owned}`"));
            }
        }
    }
    assert!(
        found.is_empty(),
        "admin handlers reach past their service (use `app.keys()`, `app.teams()`, \
         `app.cert_identities()`, `app.policies()`, `app.subscriptions()`):\n{}",
        found.join("\n")
    );
}

/// What no endpoint may name: the store accessor of `AppState` (and of nothing else an endpoint
/// holds: the library's document store has no accessor).
const STORE_ACCESSOR: &str = ".store()";

/// Every `.rs` file under `dir`, recursively, as a path relative to `root`.
fn rust_files(root: &Path, dir: &Path, out: &mut Vec<String>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(root, &path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let rel = path.strip_prefix(root).unwrap();
            out.push(rel.to_string_lossy().replace('\\', "/"));
        }
    }
}

#[test]
fn no_endpoint_reaches_the_store() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    for dir in ["api", "admin"] {
        rust_files(&src, &src.join(dir), &mut files);
    }
    assert!(files.len() > 10, "the endpoints were not found: {files:?}");
    let mut found = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(src.join(file)).unwrap();
        if code(&text)
            .replace(char::is_whitespace, "")
            .contains(STORE_ACCESSOR)
        {
            found.push(format!("host/src/{file}"));
        }
    }
    assert!(
        found.is_empty(),
        "endpoints name the store (read through `app.usage()`, `app.stored_responses()`, \
         `app.journal_index()` or the library, or add a narrow handle in state/stored.rs):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_reader_sees_a_reach_split_over_lines_and_skips_comments() {
    let text = "let k = app\n    .0\n    .store\n    .key(id);\n// app.0.store in a comment\n";
    let joined: String = code(text).replace(char::is_whitespace, "");
    assert!(joined.contains(".0.store"));
    assert_eq!(code("// app.0.store").trim(), "");
}
