//! The import layers of `host/src` (issue 14, item 3): a module may name, through `crate::<top>`,
//! only modules on a lower layer than its own, so nothing lower imports anything higher and there
//! are no circles between top-level modules.
//!
//! How it reads the code: every `host/src/**/*.rs` file belongs to the top-level module of its
//! first path component (`access/keys.rs` → `access`, `lib.rs` → `lib`). Every `crate::<name>`
//! outside comments is an import of `<name>`, in `use` lines and inline paths alike, and so is each
//! first segment inside `crate::{…}` (several lines long or not). A module naming itself is always
//! allowed. `$crate::` (macros) and paths from other crates (`sovereign::` in `main.rs`) are not
//! imports of this crate's modules. Doc comments are skipped: a doc link is not a dependency.
//!
//! The rules: `A` may import `B` when `LAYERS` puts `B` on a lower layer than `A`; peers (the same
//! layer) may import each other only on the layers `PEERS_MAY_IMPORT` lists (the top, where the
//! library wires everything together). A module missing from the table fails the test: add its
//! line. `EXCEPTIONS` names the few imports tolerated for now, each with why and when it goes.
//!
//! Inside `api/`, a second rule: an endpoint file may not import a sibling endpoint (issue 47:
//! shared phases live in `pipeline/`, shared retrieval in `rag/`). A file under `api/` belongs to
//! the endpoint of its first path component there (`api/chat.rs` → `chat`, `api/responses/
//! items.rs` → `responses`); every `super::…` (resolved from the file's own module path; from a
//! file's first `#[cfg(test)]` on, its test module, where `super` is the file itself, it is not
//! read) and every `crate::api::…` naming
//! another endpoint is a violation, unless that module is one of `API_SHARED`, the HTTP edge's
//! helpers that are no endpoint. An endpoint's own sub-folder importing its `mod.rs` is its own.
//!
//! The layers, top to bottom: the binary and its wiring (`main`, `lib`, `demo`, `simulator`); the
//! route table (`routes`); the HTTP band (`api`, `admin`; `pipeline`; `state`; `server`); the domain services (`services`); the domain modules, in the order their imports give (each
//! line may use the lines below it, never its own); the lowest layer (`journal`, which knows no
//! other module; `domain`, the types config, store and the request path name; `config`, which builds
//! every section's typed config; `metrics`, `auth`, `store`).

use std::fmt;
use std::path::{Path, PathBuf};

/// One line per top-level module of `host/src`: its name and its layer (higher = nearer the top).
const LAYERS: &[(&str, u8)] = &[
    // The top: the command line, the library root that wires the gateway, the demo, the fleet.
    ("main", 90),
    ("cli", 90), // main's subcommands: bin-private, they reach the library as `sovereign::`
    ("lib", 90),
    ("demo", 90),
    ("simulator", 90),
    // The route table, then the HTTP band: endpoints, the request pipeline, the shared state,
    // transport.
    ("routes", 80),
    ("console", 70), // the console's embedded files; server (the error shape)
    ("api", 70),
    ("admin", 70),
    ("pipeline", 60),
    ("state", 55),
    ("server", 50),
    // The domain services: every write to keys, teams, certificate identities and policies
    // (commit, invalidate, tell the replicas); over access, budget, routing, policy, shared, store.
    ("services", 40),
    // The domain modules, knowing no HTTP.
    ("routing", 32),  // residency, policy, upstream
    ("budget", 32),   // access, events, journal, store
    ("webhooks", 32), // events, policy, journal, store, metrics, egress
    ("rag", 32),      // facts, store, config
    ("facts", 31),    // policy
    ("residency", 31),
    ("access", 31), // auth, store
    ("mcp", 31),    // config, egress, journal; the tool policy (policy) plugs in at merge
    ("policy", 30),
    ("events", 30), // journal
    ("upstream", 30),
    ("shared", 20), // config: Redis, knowing no gateway type
    ("traces", 20), // config: the OTLP exporter, knowing no gateway type
    // The lowest layer.
    ("store", 14), // auth, config
    ("auth", 13),
    ("metrics", 13),
    ("config", 13), // domain, journal (the journal's own open settings), tls
    ("domain", 12), // tls: the domain's own types (models, roles, plans), below config and store
    ("journal", 11),
    ("tls", 11),    // knows no other module: PEM files, rustls configs, certificate facts
    ("egress", 11), // knows no other module: the SSRF guard of outbound calls (webhooks, MCP)
];

/// Layers whose modules may import each other.
const PEERS_MAY_IMPORT: &[u8] = &[90];

/// Modules of `api/` that are shared HTTP-edge helpers, not endpoints: every endpoint may import
/// them. Each serves several endpoints and answers no route of its own.
const API_SHARED: &[&str] = &[
    "validate",  // chat, completion and embeddings bodies checked against the convention
    "list_page", // OpenAI's list parameters: the files and vector-store lists
    "multipart", // multipart forms read under the upload limit: documents and files
];

/// Imports tolerated for now: (importing file under `host/src`, imported module, why and until
/// when). Each entry must still be needed (the test fails on a stale one).
const EXCEPTIONS: &[(&str, &str, &str)] = &[];

/// One import of a higher (or peer) module.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Violation {
    file: String,
    line: usize,
    from: String,
    to: String,
    rule: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "host/src/{}:{}: `{}` imports `crate::{}`: {}",
            self.file, self.line, self.from, self.to, self.rule
        )
    }
}

fn layer(module: &str) -> Option<u8> {
    LAYERS.iter().find(|(m, _)| *m == module).map(|(_, l)| *l)
}

/// The top-level module a file under `host/src` belongs to (`access/keys.rs` → `access`).
fn module_of(rel: &str) -> &str {
    let first = rel.split('/').next().unwrap_or(rel);
    first.strip_suffix(".rs").unwrap_or(first)
}

/// `text` with its comments blanked (their bytes kept as spaces), so offsets still map to lines.
fn without_comments(text: &str) -> String {
    let mut code = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let end = line.find("//").unwrap_or(line.len());
        code.push_str(&line[..end]);
        code.extend(
            line[end..]
                .chars()
                .map(|c| if c == '\n' { '\n' } else { ' ' }),
        );
    }
    code
}

/// Every path starting with `prefix` (`crate::`, `super::`) in `code`, not preceded by an
/// identifier character, `$` or `:`: its start, and the first segment after the prefix with its
/// 1-based line — each item's first segment for a brace group (`prefix{a::X, b::{Y, Z}, c}`).
/// Consecutive `super::`s are one path: its start is the first, the segments follow the last.
fn paths_after(code: &str, prefix: &str) -> Vec<(usize, usize, String)> {
    let bytes = code.as_bytes();
    let line_at = |pos: usize| code[..pos].matches('\n').count() + 1;
    let ident_at = |mut pos: usize| {
        while pos < bytes.len() && bytes[pos].is_ascii_whitespace() {
            pos += 1;
        }
        let start = pos;
        while pos < bytes.len() && (bytes[pos].is_ascii_alphanumeric() || bytes[pos] == b'_') {
            pos += 1;
        }
        (start, &code[start..pos])
    };
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(i) = code[from..].find(prefix) {
        let at = from + i;
        from = at + prefix.len();
        let preceded = at > 0 && {
            let b = bytes[at - 1];
            b == b'$' || b == b':' || b.is_ascii_alphanumeric() || b == b'_'
        };
        if preceded {
            continue;
        }
        while code[from..].starts_with(prefix) {
            from += prefix.len();
        }
        if bytes.get(from) == Some(&b'{') {
            // `prefix{a::X, b::{Y, Z}, c}`: the first segment of each item at depth 1.
            let mut depth = 0usize;
            let mut pos = from;
            let mut item_start = true;
            while pos < bytes.len() {
                match bytes[pos] {
                    b'{' => {
                        depth += 1;
                        item_start = depth == 1;
                    }
                    b'}' => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    b',' if depth == 1 => item_start = true,
                    _ if item_start && !bytes[pos].is_ascii_whitespace() => {
                        let (start, name) = ident_at(pos);
                        if !name.is_empty() && name != "self" {
                            found.push((at, line_at(start), name.to_string()));
                        }
                        item_start = false;
                    }
                    _ => {}
                }
                pos += 1;
            }
        } else {
            let (start, name) = ident_at(from);
            if !name.is_empty() {
                found.push((at, line_at(start), name.to_string()));
            }
        }
    }
    found
}

/// Every `crate::<name>` in `text` outside comments, with its 1-based line.
fn imports(text: &str) -> Vec<(usize, String)> {
    paths_after(&without_comments(text), "crate::")
        .into_iter()
        .map(|(_, line, name)| (line, name))
        .collect()
}

/// The violations in one file (`rel`: its path under `host/src`).
fn check_file(rel: &str, text: &str) -> Vec<Violation> {
    let from = module_of(rel);
    let mut out = Vec::new();
    for (line, to) in imports(text) {
        if to == from {
            continue;
        }
        let v = |rule: String| Violation {
            file: rel.to_string(),
            line,
            from: from.to_string(),
            to: to.clone(),
            rule,
        };
        let rule = match (layer(from), layer(&to)) {
            (None, _) => Some(format!(
                "`{from}` is not in the layer table (tests/it/layers.rs)"
            )),
            (_, None) => Some(format!(
                "`{to}` is not in the layer table (tests/it/layers.rs)"
            )),
            (Some(a), Some(b)) if b > a => Some(format!(
                "layer {b} is above layer {a}: a lower layer may not import a higher one"
            )),
            (Some(a), Some(b)) if a == b && !PEERS_MAY_IMPORT.contains(&a) => Some(format!(
                "both on layer {a}, whose modules may not import each other"
            )),
            _ => None,
        };
        if let Some(rule) = rule {
            out.push(v(rule));
        }
    }
    out
}

/// The endpoint rule inside `api/` for one file (`rel`: its path under `host/src`): every
/// `super::…` and `crate::api::…` that names another endpoint than the file's own, and no
/// `API_SHARED` helper.
fn check_api_file(rel: &str, text: &str) -> Vec<Violation> {
    // The file's module path: `api/responses/items.rs` → [api, responses, items].
    let mut path: Vec<&str> = rel.trim_end_matches(".rs").split('/').collect();
    if path.last() == Some(&"mod") {
        path.pop();
    }
    if path.first() != Some(&"api") || path.len() < 2 {
        return Vec::new();
    }
    let own = path[1];
    let code = without_comments(text);
    // A test module is nested: there `super` is the file's own module; it is not read.
    let body = code
        .find("#[cfg(test)]")
        .map_or(&code[..], |end| &code[..end]);
    let mut named: Vec<(usize, String)> = Vec::new();
    for (at, line, first) in paths_after(body, "super::") {
        let mut ups = 0;
        while body[at + ups * "super::".len()..].starts_with("super::") {
            ups += 1;
        }
        let parent = &path[..path.len().saturating_sub(ups)];
        match parent {
            // `super::` of a top-level endpoint file: a sibling in `api/`.
            ["api"] => named.push((line, first)),
            // Inside an endpoint's folder: its own.
            ["api", endpoint, ..] => named.push((line, (*endpoint).to_string())),
            _ => {}
        }
    }
    for (_, line, first) in paths_after(&code, "crate::api::") {
        named.push((line, first));
    }
    named
        .into_iter()
        .filter(|(_, to)| to != own && !API_SHARED.contains(&to.as_str()))
        .map(|(line, to)| Violation {
            file: rel.to_string(),
            line,
            from: format!("api::{own}"),
            to: format!("api::{to}"),
            rule: "an endpoint may not import a sibling endpoint: move what they share into \
                   `pipeline/`, the domain, or an `API_SHARED` helper"
                .to_string(),
        })
        .collect()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn no_module_imports_a_higher_layer() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    assert!(files.len() > 50, "too few sources under {}", src.display());
    let mut violations = Vec::new();
    for path in &files {
        let rel = path
            .strip_prefix(&src)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        let text = std::fs::read_to_string(path).unwrap();
        violations.extend(check_file(&rel, &text));
        violations.extend(check_api_file(&rel, &text));
    }
    let mut used = vec![false; EXCEPTIONS.len()];
    violations.retain(|v| {
        let hit = EXCEPTIONS
            .iter()
            .position(|(file, to, _)| *file == v.file && *to == v.to);
        if let Some(i) = hit {
            used[i] = true;
        }
        hit.is_none()
    });
    let stale: Vec<_> = EXCEPTIONS
        .iter()
        .zip(&used)
        .filter(|(_, used)| !**used)
        .map(|((file, to, _), _)| format!("{file} → {to}"))
        .collect();
    let report: Vec<String> = violations.iter().map(ToString::to_string).collect();
    assert!(
        report.is_empty(),
        "{} import(s) break the layers (table and rules in host/tests/it/layers.rs):\n{}",
        report.len(),
        report.join("\n")
    );
    assert!(
        stale.is_empty(),
        "exceptions no longer needed; delete them from EXCEPTIONS: {stale:?}"
    );
}

#[test]
fn the_checker_reports_an_upward_import_with_its_line_and_rule() {
    let text = "//! store\n/// [`crate::budget::Budgets`] in a doc comment is not an import.\n\
                use crate::config::Role;\nuse crate::budget::Budgets;\n";
    let v = check_file("store/mod.rs", text);
    assert_eq!(v.len(), 1, "{v:?}");
    assert_eq!(v[0].line, 4);
    assert_eq!(v[0].to, "budget");
    let shown = v[0].to_string();
    assert!(
        shown.starts_with("host/src/store/mod.rs:4: `store` imports `crate::budget`"),
        "{shown}"
    );
    assert!(
        shown.contains("a lower layer may not import a higher one"),
        "{shown}"
    );
}

#[test]
fn the_checker_reads_brace_groups_inline_paths_and_peers() {
    let text = "use crate::{\n    config::Config,\n    events::{Event, Events},\n};\n\
                fn f() { let _ = crate::webhooks::Outbox::channel(); }\n\
                macro_rules! m { () => { $crate::http::x() } }\n";
    let v = check_file("budget/mod.rs", text);
    let got: Vec<(usize, &str)> = v.iter().map(|v| (v.line, v.to.as_str())).collect();
    // `config` and `events` are lower; `webhooks` is a peer; `$crate` is not an import.
    assert_eq!(got, vec![(5, "webhooks")], "{v:?}");
    assert!(
        v[0].rule.contains("may not import each other"),
        "{}",
        v[0].rule
    );
    assert_eq!(
        imports("use crate::{self as c, access::X};"),
        vec![(1, "access".to_string())]
    );
    assert!(
        check_file("nowhere.rs", "use crate::config::Config;")[0]
            .rule
            .contains("not in the layer table")
    );
}

#[test]
fn the_checker_refuses_an_endpoint_importing_a_sibling_endpoint() {
    // A top-level endpoint: `super::chat` and `crate::api::files` are siblings; `validate` and
    // `multipart` are shared helpers; the test module's `super::*` is the file itself.
    let text = "use super::chat::chat_completions;\nuse super::{multipart, validate::X};\n\
                fn f() { crate::api::files::create(); }\n\
                #[cfg(test)]\nmod tests { use super::*; use super::helper; }\n";
    let v = check_api_file("api/rag.rs", text);
    let got: Vec<(usize, &str)> = v.iter().map(|v| (v.line, v.to.as_str())).collect();
    assert_eq!(got, vec![(1, "api::chat"), (3, "api::files")], "{v:?}");
    assert!(
        v[0].to_string().starts_with(
            "host/src/api/rag.rs:1: `api::rag` imports `crate::api::chat`: an endpoint may not"
        ),
        "{}",
        v[0]
    );
    // An endpoint's own folder: `super::` is its own module; `super::super::` reaches `api/`.
    let text = "use super::Draft;\nuse super::items::{self, ItemIds};\n\
                use super::super::validate::ChatRequest;\nuse super::super::chat::serve;\n\
                use crate::api::responses::convert;\n";
    let v = check_api_file("api/responses/stream.rs", text);
    let got: Vec<(usize, &str)> = v.iter().map(|v| (v.line, v.to.as_str())).collect();
    assert_eq!(got, vec![(4, "api::chat")], "{v:?}");
    // A folder's `mod.rs` is the endpoint itself: its `super::` is `api/`.
    let v = check_api_file(
        "api/activity/mod.rs",
        "mod export;\nuse super::documents::x;\n",
    );
    assert_eq!(v.len(), 1, "{v:?}");
    assert_eq!(v[0].to, "api::documents");
    // Files outside `api/` are not this rule's.
    assert!(check_api_file("pipeline/answer/mod.rs", "use super::chat::x;").is_empty());
}
