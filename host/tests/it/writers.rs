//! Who writes keys, teams, certificate identities, policies and webhook subscriptions (issue 47,
//! "Domain services own their writes"): their admin handlers go through `crate::services`, which
//! commits, invalidates the caches and tells the other replicas in one place. This test reads
//! those handlers and fails on any reach past a service into the parts it owns (the store, the
//! key cache and certificate table, budget limits, the policy registry and guardrail slot, the
//! replica notices, the subscription writes).

use std::path::Path;

/// The admin handler files whose resources have a service.
const HANDLERS: &[&str] = &[
    "admin/keys.rs",
    "admin/teams.rs",
    "admin/cert_identities.rs",
    "admin/policies.rs",
    "admin/webhooks.rs",
];

/// What a handler may not name: each is a part a service owns.
const OWNED: &[&str] = &[
    ".0.store",
    ".0.access",
    ".0.shared",
    ".0.router",
    ".0.guardrail",
    ".budgets.set_limit",
    ".budgets.forget",
    ".budgets.charger",
    ".webhooks.create",
    ".webhooks.delete",
    ".webhooks.rotate",
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

#[test]
fn the_reader_sees_a_reach_split_over_lines_and_skips_comments() {
    let text = "let k = app\n    .0\n    .store\n    .key(id);\n// app.0.store in a comment\n";
    let joined: String = code(text).replace(char::is_whitespace, "");
    assert!(joined.contains(".0.store"));
    assert_eq!(code("// app.0.store").trim(), "");
}
