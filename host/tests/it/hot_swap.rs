//! Router hot swap (issue 3, item 5; docs/POLICIES.md "Hot swap"): versions validated before
//! activation, in-flight holders keep their version, rollback, bounded history, file reload.

use std::sync::Arc;
use std::time::Duration;

use sovereign::policy::CallLimits;
use sovereign::routing::registry::{
    self, MAX_KEPT_VERSIONS, Origin, PolicyRegistry, RegistryError, Status, WatchedFiles,
};

use crate::policy::{facts, fleet, host};

fn doc(name: &str, small_model: &str) -> String {
    format!(
        "name: {name}\nroutes:\n  - name: small\n    condition: \"prompt_tokens < 500\"\n    model: {small_model}\ndefault: llama-3.1-70b\n"
    )
}

async fn registry(document: &str) -> PolicyRegistry {
    PolicyRegistry::new(
        host().clone(),
        CallLimits::default(),
        fleet(),
        Arc::from(policy_artifacts::RULES_ROUTER_COMPONENT),
        Some(Arc::from(document)),
    )
    .await
    .unwrap()
}

async fn routes_to(r: &registry::Loaded) -> (String, String) {
    let d = r.policy.route(&facts("en", 10), &fleet()).await.unwrap();
    (d.model.id.0.clone(), d.policy)
}

#[tokio::test]
async fn a_held_version_keeps_routing_after_a_swap() {
    let reg = registry(&doc("a", "llama-3.2-3b")).await;
    let held = reg.active();
    let b = reg
        .add(
            None,
            Some(doc("b", "mistral-7b")),
            None,
            true,
            Origin::Upload,
        )
        .await
        .unwrap();
    assert_eq!(b.name.as_deref(), Some("b"));
    assert_eq!(b.status, Status::Active);
    assert_eq!(routes_to(&held).await, ("llama-3.2-3b".into(), "a".into()));
    assert_eq!(
        routes_to(&reg.active()).await,
        ("mistral-7b".into(), "b".into())
    );
    // Rollback.
    reg.activate("pol_1").unwrap();
    assert_eq!(
        routes_to(&reg.active()).await,
        ("llama-3.2-3b".into(), "a".into())
    );
    let list = reg.list();
    assert_eq!(list.len(), 2);
    assert!(list[0].active && list[0].status == Status::Active);
    assert!(!list[1].active && list[1].status == Status::Inactive);
    assert_eq!(list[0].component_sha256, list[1].component_sha256);
    assert_ne!(list[0].document_sha256, list[1].document_sha256);
}

#[tokio::test]
async fn a_bad_version_is_listed_as_failed_and_never_active() {
    let reg = registry(&doc("a", "llama-3.2-3b")).await;
    let err = reg
        .add(
            None,
            Some("name: x\nroutes: [\n".into()),
            None,
            true,
            Origin::Upload,
        )
        .await
        .unwrap_err();
    let RegistryError::Invalid { id, .. } = &err else {
        panic!("{err}")
    };
    assert!(err.to_string().contains("line"), "{err}");
    assert_eq!(&*reg.active().id, "pol_1");
    assert!(matches!(
        reg.activate(id),
        Err(RegistryError::NotActivatable { .. })
    ));
    assert!(matches!(
        reg.activate("pol_404"),
        Err(RegistryError::UnknownVersion(_))
    ));
    let failed = &reg.list()[1];
    assert_eq!(failed.status, Status::Failed);
    assert!(failed.error.is_some());
    // A component of the wrong world.
    let wrong = std::fs::read(policy_artifacts::WRONG_WORLD).unwrap();
    let err = reg
        .add(Some(wrong), None, None, true, Origin::Upload)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("router-policy"), "{err}");
    assert_eq!(&*reg.active().id, "pol_1");
}

#[tokio::test]
async fn history_is_bounded_and_keeps_the_active_version() {
    let reg = registry(&doc("a", "llama-3.2-3b")).await;
    for i in 0..MAX_KEPT_VERSIONS + 5 {
        reg.add(
            None,
            Some(doc(&format!("v{i}"), "mistral-7b")),
            None,
            false,
            Origin::Upload,
        )
        .await
        .unwrap();
    }
    let list = reg.list();
    assert_eq!(list.len(), MAX_KEPT_VERSIONS + 1);
    assert_eq!(list[0].id, "pol_1");
    assert!(list[0].active);
    assert_eq!(
        list.last().unwrap().name.as_deref(),
        Some(format!("v{}", MAX_KEPT_VERSIONS + 4).as_str())
    );
}

#[tokio::test]
async fn a_changed_document_file_is_reloaded() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("routing.yaml");
    std::fs::write(&path, doc("a", "llama-3.2-3b")).unwrap();
    let reg = Arc::new(registry(&doc("a", "llama-3.2-3b")).await);
    let files = WatchedFiles {
        document: Some(path.clone()),
        component: None,
    };
    registry::watch(&reg, files, Duration::from_millis(20));
    std::fs::write(&path, doc("b", "mistral-7b")).unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while reg.active().policy.name() != Some("b") {
        assert!(tokio::time::Instant::now() < deadline, "not reloaded");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let list = reg.list();
    assert_eq!(list.last().unwrap().origin, Origin::FileReload);
}
