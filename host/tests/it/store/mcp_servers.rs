//! The `McpStore` trait's contract on both back ends (issue 46): an MCP server registered through
//! one handle is read, credentials included, by another (another replica) and after a reopen (a
//! restart); one server per name, also when two replicas register it at once; a key's allowlist
//! is replaced, cleared, refused for a key that is not stored, and goes with its key.

use std::collections::BTreeMap;

use sovereign::domain::Role;
use sovereign::store::*;

use super::{Backend, T0, clock, on_both_back_ends, team_with_budget};

on_both_back_ends!(
    mcp_servers_are_one_per_name_and_keep_their_credentials,
    key_allowlists_are_replaced_cleared_and_go_with_their_key,
);

fn server(name: &str, team: &TeamId) -> NewMcpServer {
    NewMcpServer {
        name: name.into(),
        url: format!("http://10.0.0.1/{name}/mcp"),
        teams: vec![team.0.clone()],
        tools: BTreeMap::from([(team.0.clone(), vec!["echo".into(), "lookup".into()])]),
        bearer: Some("s3cret".into()),
        headers: BTreeMap::from([("X-Api-Key".into(), "k-1".into())]),
    }
}

async fn mcp_servers_are_one_per_name_and_keep_their_credentials(backend: Backend) {
    let c = clock();
    let (a, b) = (backend.open(c.clone()).await, backend.open(c.clone()).await);
    let team = team_with_budget(&*a, None).await;
    let made = a
        .create_mcp_server(server("records", &team.id))
        .await
        .unwrap();
    assert!(made.id.starts_with("mcp_"), "{made:?}");
    assert_eq!(made.created_at, T0);
    assert_eq!(made.bearer.as_deref(), Some("s3cret"));
    assert_eq!(b.mcp_servers().await.unwrap(), vec![made.clone()]);
    let err = b
        .create_mcp_server(server("records", &team.id))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, StoreError::Invalid { field: "name", .. }),
        "{err:?}"
    );

    // Two replicas registering one name at once: one server, the other told why.
    let (x, y) = tokio::join!(
        a.create_mcp_server(server("files", &team.id)),
        b.create_mcp_server(server("files", &team.id))
    );
    assert!(x.is_ok() != y.is_ok(), "{x:?} {y:?}");
    let names: Vec<String> = a
        .mcp_servers()
        .await
        .unwrap()
        .into_iter()
        .map(|s| s.name)
        .collect();
    assert_eq!(names, ["files", "records"]);

    // A restart reads them back as they were.
    drop((a, b));
    let a = backend.open(c).await;
    let stored = a.mcp_servers().await.unwrap();
    assert_eq!(stored.last(), Some(&made));

    // Edited in place: the new fields under a new registration id, created when it was.
    let mut edit = server("records", &team.id);
    edit.url = "http://10.0.0.9/mcp".into();
    edit.bearer = None;
    let edited = a.update_mcp_server(edit).await.unwrap().unwrap();
    assert_ne!(edited.id, made.id);
    assert_eq!(
        (
            edited.url.as_str(),
            edited.bearer.as_deref(),
            edited.created_at
        ),
        ("http://10.0.0.9/mcp", None, made.created_at)
    );
    assert_eq!(a.mcp_servers().await.unwrap().last(), Some(&edited));
    assert_eq!(
        a.update_mcp_server(server("ghost", &team.id))
            .await
            .unwrap(),
        None
    );

    assert!(a.delete_mcp_server("records".into()).await.unwrap());
    assert!(!a.delete_mcp_server("records".into()).await.unwrap());
    // Registered again under the same name, it is a new registration.
    let again = a
        .create_mcp_server(server("records", &team.id))
        .await
        .unwrap();
    assert_ne!(again.id, made.id);
    assert_ne!(again.id, edited.id);
}

async fn key_allowlists_are_replaced_cleared_and_go_with_their_key(backend: Backend) {
    let c = clock();
    let (a, b) = (backend.open(c.clone()).await, backend.open(c).await);
    let team = team_with_budget(&*a, None).await;
    let key = a
        .create_key(NewKey::new(team.id.clone(), Role::Member))
        .await
        .unwrap()
        .info
        .id;
    let set = a
        .set_mcp_key_tools(key.clone(), vec!["records__echo".into()])
        .await
        .unwrap();
    assert_eq!(set.updated_at, T0);
    let set = b
        .set_mcp_key_tools(
            key.clone(),
            vec!["files__*".into(), "records__lookup".into()],
        )
        .await
        .unwrap();
    assert_eq!(a.mcp_key_tools().await.unwrap(), vec![set]);
    assert!(matches!(
        a.set_mcp_key_tools(KeyId("key_nope".into()), vec!["records__echo".into()])
            .await,
        Err(StoreError::KeyNotFound(_))
    ));
    assert!(b.delete_mcp_key_tools(key.clone()).await.unwrap());
    assert!(!b.delete_mcp_key_tools(key.clone()).await.unwrap());
    assert!(a.mcp_key_tools().await.unwrap().is_empty());

    // The team's deletion takes its keys, and their allowlists with them.
    a.set_mcp_key_tools(key, vec!["records__echo".into()])
        .await
        .unwrap();
    a.delete_team(team.id).await.unwrap();
    assert!(a.mcp_key_tools().await.unwrap().is_empty());
}
