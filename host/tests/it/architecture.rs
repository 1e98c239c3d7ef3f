//! ARCHITECTURE.md against the tree (issue 47): every repository path the code map names exists,
//! and every folder of `host/src` is named by it (the folder, or a file in it), so the map can
//! neither point at a room that moved nor miss a new one.
//!
//! How it reads the document: every backticked span that starts with one of the repository's
//! top-level folders (`host/`, `clients/`, …) or names a file at its root is a path. A span
//! with a placeholder (`…`, `*`, `<`, `{`) or a space is prose, not a path. A bare file name in
//! the same table cell as a path (`host/src/admin/teams.rs`, `keys.rs`) is that path's sibling.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The folders at the repository's root whose paths the map names.
const TOP: &[&str] = &[
    "host/",
    "clients/",
    "tests/",
    "scripts/",
    "bench/",
    "deploy/",
    "docs/",
    "wit/",
    "sdk/",
    "examples/",
    "policies/",
    ".ci/",
];

/// Files at the root the map may name.
const ROOT_FILES: &[&str] = &["Cargo.toml", "Cargo.lock", "README.md", "ARCHITECTURE.md"];

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("host/ has a parent")
        .to_path_buf()
}

/// The backticked spans of one piece of text, in order.
fn spans(text: &str) -> Vec<&str> {
    text.split('`').skip(1).step_by(2).collect()
}

fn is_path(span: &str) -> bool {
    let prose = ['…', '*', '<', '{', ' ', '|'];
    !span.contains(prose) && (TOP.iter().any(|t| span.starts_with(t)) || ROOT_FILES.contains(&span))
}

/// Every path the document names: per table cell (or line outside tables), the paths, and in a
/// table row's first cell the bare file names (`keys.rs`) that follow a path, resolved as its siblings.
fn named_paths(doc: &str) -> BTreeSet<String> {
    let mut paths = BTreeSet::new();
    for line in doc.lines() {
        for (column, cell) in line.split(" | ").enumerate() {
            let mut dir: Option<String> = None;
            for span in spans(cell) {
                if is_path(span) {
                    dir = Path::new(span.trim_end_matches('/'))
                        .parent()
                        .map(|p| p.display().to_string());
                    paths.insert(span.to_owned());
                } else if let Some(dir) = &dir
                    && column == 0
                    && line.starts_with('|')
                    && !span.contains('/')
                    && Path::new(span).extension().is_some_and(|e| e == "rs")
                {
                    paths.insert(format!("{dir}/{span}"));
                }
            }
        }
    }
    paths
}

/// Every folder under `host/src`, as a repository path with a trailing slash.
fn source_folders(root: &Path) -> Vec<String> {
    let mut found = Vec::new();
    let mut stack = vec![root.join("host/src")];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("readable folder") {
            let path = entry.expect("readable entry").path();
            if path.is_dir() {
                let rel = path.strip_prefix(root).expect("under the repository");
                found.push(format!("{}/", rel.display()));
                stack.push(path);
            }
        }
    }
    found.sort();
    found
}

#[test]
fn every_path_the_code_map_names_exists() {
    let root = repo();
    let doc = std::fs::read_to_string(root.join("ARCHITECTURE.md")).expect("ARCHITECTURE.md");
    let paths = named_paths(&doc);
    assert!(
        paths.len() > 100,
        "the reader found only {} paths",
        paths.len()
    );
    let missing: Vec<&String> = paths
        .iter()
        .filter(|p| !root.join(p.trim_end_matches('/')).exists())
        .collect();
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md names paths that do not exist (moved or deleted?): {missing:#?}"
    );
}

#[test]
fn every_source_folder_is_in_the_code_map() {
    let root = repo();
    let doc = std::fs::read_to_string(root.join("ARCHITECTURE.md")).expect("ARCHITECTURE.md");
    let paths = named_paths(&doc);
    let unnamed: Vec<String> = source_folders(&root)
        .into_iter()
        .filter(|folder| !paths.iter().any(|p| p.starts_with(folder.as_str())))
        .collect();
    assert!(
        unnamed.is_empty(),
        "folders of host/src that ARCHITECTURE.md does not name (add their rows): {unnamed:#?}"
    );
}

#[test]
fn the_reader_resolves_siblings_and_skips_prose() {
    let doc = "| `host/src/admin/teams.rs`, `keys.rs` | `docs/A.md`, `b.rs`, `…/x.rs` |\n\
               see `host/src/api/` and `clients/go/*.go`";
    let paths = named_paths(doc);
    let expected: BTreeSet<String> = [
        "host/src/admin/teams.rs",
        "host/src/admin/keys.rs",
        "docs/A.md",
        "host/src/api/",
    ]
    .into_iter()
    .map(String::from)
    .collect();
    assert_eq!(paths, expected);
}
