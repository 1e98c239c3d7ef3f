//! Policy versions replicas share: `policy_versions` (each upload, whole) and `policy_active`
//! (the active version of each kind); [`PolicyStore`] for [`PgStore`].

use deadpool_postgres::GenericClient;
use futures_util::future::BoxFuture;

use super::PolicyStore;
use crate::store::postgres::PgStore;
use crate::store::postgres::statements::{execute, query, query_opt};
use crate::store::{PolicyKind, StoreError, StoreResult, StoredPolicy};

impl PolicyStore for PgStore {
    fn save_policy(&self, policy: StoredPolicy, activate: bool) -> BoxFuture<'_, StoreResult<()>> {
        self.run(move |mut c, _| async move {
            let tx = c.transaction().await?;
            save(&tx, &policy, activate).await?;
            tx.commit().await?;
            Ok(())
        })
    }

    fn activate_policy(&self, kind: PolicyKind, id: String) -> BoxFuture<'_, StoreResult<bool>> {
        self.run(move |c, _| async move { activate(&c, kind, &id).await })
    }

    fn policies(
        &self,
        kind: PolicyKind,
    ) -> BoxFuture<'_, StoreResult<(Vec<StoredPolicy>, Option<String>)>> {
        self.run(move |c, _| async move { list(&c, kind).await })
    }
}

/// Inside the caller's transaction: the version, and with `activate` it becomes the active one.
pub(crate) async fn save<C: GenericClient>(
    tx: &C,
    p: &StoredPolicy,
    activate: bool,
) -> StoreResult<()> {
    execute(
        tx,
        "INSERT INTO policy_versions (id, kind, component, document, pool, settings, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (id) DO NOTHING",
        &[
            &p.id,
            &p.kind.as_str(),
            &p.component,
            &p.document,
            &p.pool,
            &p.settings,
            &p.created_at,
        ],
    )
    .await?;
    if activate {
        set_active(tx, p.kind, &p.id).await?;
    }
    Ok(())
}

/// `false` when no stored version of that kind has this id.
pub(crate) async fn activate<C: GenericClient>(
    c: &C,
    kind: PolicyKind,
    id: &str,
) -> StoreResult<bool> {
    let exists = query_opt(
        c,
        "SELECT 1 FROM policy_versions WHERE id = $1 AND kind = $2",
        &[&id, &kind.as_str()],
    )
    .await?
    .is_some();
    if exists {
        set_active(c, kind, id).await?;
    }
    Ok(exists)
}

async fn set_active<C: GenericClient>(c: &C, kind: PolicyKind, id: &str) -> StoreResult<()> {
    execute(
        c,
        "INSERT INTO policy_active (kind, id) VALUES ($1, $2)
         ON CONFLICT (kind) DO UPDATE SET id = EXCLUDED.id",
        &[&kind.as_str(), &id],
    )
    .await?;
    Ok(())
}

/// Every version of `kind`, oldest first, and the active one's id.
pub(crate) async fn list<C: GenericClient>(
    c: &C,
    kind: PolicyKind,
) -> StoreResult<(Vec<StoredPolicy>, Option<String>)> {
    let rows = query(
        c,
        "SELECT id, component, document, pool, settings, created_at FROM policy_versions
         WHERE kind = $1 ORDER BY created_at, id",
        &[&kind.as_str()],
    )
    .await?;
    let versions = rows
        .iter()
        .map(|r| {
            Ok(StoredPolicy {
                id: r.try_get(0)?,
                kind,
                component: r.try_get(1)?,
                document: r.try_get(2)?,
                pool: r.try_get(3)?,
                settings: r.try_get(4)?,
                created_at: r.try_get(5)?,
            })
        })
        .collect::<Result<Vec<_>, tokio_postgres::Error>>()
        .map_err(StoreError::from)?;
    let active = query_opt(
        c,
        "SELECT id FROM policy_active WHERE kind = $1",
        &[&kind.as_str()],
    )
    .await?
    .map(|r| r.try_get(0))
    .transpose()?;
    Ok((versions, active))
}
