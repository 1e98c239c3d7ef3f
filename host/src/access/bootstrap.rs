//! Start-up: the teams and keys declared in the config file are brought into the store (once;
//! a config key revoked through the API stays revoked), config keys the file no longer declares
//! are revoked (deleting a leaked key's entry stops it), and a gateway whose store has no usable
//! admin key gets one — from `SOVEREIGN_ADMIN_KEY` if set, else generated and printed once.

use std::collections::HashSet;

use anyhow::Context as _;

use crate::auth::{KEY_PREFIX, generate_secret, hash_secret, is_gateway_key};
use crate::config::Config;
use crate::domain::Role;
use crate::store::{
    CertSource, KeyId, KeyInfo, NewCertIdentity, NewKey, NewTeam, Store, TeamId, TeamPatch,
};

/// The environment variable an operator may set to choose the first admin key.
pub const ADMIN_KEY_ENV: &str = "SOVEREIGN_ADMIN_KEY";

/// The team the bootstrap admin key belongs to when it has to be created.
const ADMIN_TEAM: &str = "admin";

/// The shown prefix of keys imported from the config file: how the store tells them apart
/// (`source: config` in the admin API) from keys made through the API.
pub const CONFIG_KEY_PREFIX: &str = "sk-sov-(config)";

/// What start-up did; `new_admin_secret` must be shown to the operator exactly once.
#[derive(Debug, Default)]
pub struct Bootstrap {
    pub new_admin_secret: Option<String>,
    pub admin_from_env: bool,
    /// Config keys revoked because the file no longer declares them (to journal and to drop
    /// from every replica's cache).
    pub revoked_config_keys: Vec<KeyInfo>,
}

pub async fn run(store: &dyn Store, config: &Config) -> anyhow::Result<Bootstrap> {
    for t in &config.teams {
        let id = TeamId(t.id.clone());
        match store.team(id.clone()).await? {
            Some(existing) if existing.name == t.name && existing.plan == t.plan => {}
            Some(_) => {
                store
                    .update_team(
                        id,
                        TeamPatch {
                            name: Some(t.name.clone()),
                            plan: Some(t.plan),
                            ..TeamPatch::default()
                        },
                    )
                    .await?;
            }
            None => {
                let team = NewTeam {
                    id: Some(id),
                    name: t.name.clone(),
                    plan: t.plan,
                    ..NewTeam::default()
                };
                ensure_team(store, team)
                    .await
                    .with_context(|| format!("importing team {} from the config", t.id))?;
            }
        }
    }
    let mut declared = HashSet::new();
    for k in &config.keys {
        let mut new = NewKey::new(TeamId(k.team.clone()), k.role);
        new.name = Some(k.name.clone());
        let key = store
            .import_key(new, k.hash, CONFIG_KEY_PREFIX.to_string())
            .await
            .with_context(|| format!("importing key {} from the config", k.name))?;
        declared.insert(key.id);
    }
    let revoked_config_keys = revoke_undeclared(store, &declared).await?;
    sync_cert_identities(store, config).await?;

    let has_admin = store
        .keys(None)
        .await?
        .iter()
        .any(|k| k.role == Role::Admin && k.state.is_usable());
    if has_admin {
        return Ok(Bootstrap {
            revoked_config_keys,
            ..Bootstrap::default()
        });
    }
    let (secret, from_env) = match std::env::var(ADMIN_KEY_ENV) {
        Ok(s) if !s.trim().is_empty() => {
            let s = s.trim().to_string();
            anyhow::ensure!(
                is_gateway_key(&s),
                "{ADMIN_KEY_ENV} is not a gateway key (`sovereign keygen` makes one)"
            );
            (s, true)
        }
        _ => (generate_secret(), false),
    };
    let team = TeamId(ADMIN_TEAM.into());
    if store.team(team.clone()).await?.is_none() {
        ensure_team(
            store,
            NewTeam {
                id: Some(team.clone()),
                name: "Administrators".into(),
                ..NewTeam::default()
            },
        )
        .await?;
    }
    let mut new = NewKey::new(team, Role::Admin);
    new.name = Some("bootstrap-admin".into());
    let prefix = secret
        .get(..KEY_PREFIX.len() + 6)
        .unwrap_or(KEY_PREFIX)
        .to_string();
    store.import_key(new, hash_secret(&secret), prefix).await?;
    Ok(Bootstrap {
        new_admin_secret: (!from_env).then_some(secret),
        admin_from_env: from_env,
        revoked_config_keys,
    })
}

/// Config keys still usable whose entry the file no longer has: revoked, each said in the log.
/// An operator who deletes a leaked key from the file expects it to stop (issue 49). Replicas
/// share a store, so every replica must start from the same `[[keys]]` (docs/LIMITS.md).
async fn revoke_undeclared(
    store: &dyn Store,
    declared: &HashSet<KeyId>,
) -> anyhow::Result<Vec<KeyInfo>> {
    let mut revoked = Vec::new();
    for key in store.keys(None).await? {
        if key.prefix != CONFIG_KEY_PREFIX || declared.contains(&key.id) || !key.state.is_usable() {
            continue;
        }
        let key = store
            .revoke_key(key.id.clone())
            .await
            .with_context(|| format!("revoking config key {}", key.id.0))?;
        tracing::warn!(
            key_id = %key.id.0,
            name = key.name.as_deref().unwrap_or(""),
            team_id = %key.team_id.0,
            "revoked key {} ({}): the config file no longer declares it",
            key.id.0,
            key.name.as_deref().unwrap_or("unnamed"),
        );
        revoked.push(key);
    }
    Ok(revoked)
}

/// The file's `[[cert_identities]]` made true in the store: each one present (same team and
/// role; recreated when they changed), and config-declared ones the file no longer has removed.
/// Identities made through the API are left alone; one holding a matcher the file declares is
/// an error to resolve by hand.
async fn sync_cert_identities(store: &dyn Store, config: &Config) -> anyhow::Result<()> {
    let existing = store.cert_identities().await?;
    for stored in &existing {
        let wanted = config
            .cert_identities
            .iter()
            .find(|c| c.matcher == stored.matcher);
        let keep = wanted.is_some_and(|c| {
            stored.source == CertSource::Config
                && c.name == stored.name
                && c.team == stored.team_id.0
                && c.role == stored.role
        });
        match (stored.source, wanted, keep) {
            (_, _, true) => {}
            (CertSource::Config, _, false) => {
                store.delete_cert_identity(stored.id.clone()).await?;
            }
            (CertSource::Api, Some(c), false) => anyhow::bail!(
                "cert_identities `{}`: {} is already mapped by certificate identity {} (made through the API); delete one of them",
                c.name,
                c.matcher,
                stored.id
            ),
            (CertSource::Api, None, false) => {}
        }
    }
    let existing = store.cert_identities().await?;
    for c in &config.cert_identities {
        if existing.iter().any(|e| e.matcher == c.matcher) {
            continue;
        }
        let created = store
            .create_cert_identity(NewCertIdentity {
                name: c.name.clone(),
                team_id: TeamId(c.team.clone()),
                role: c.role,
                matcher: c.matcher.clone(),
                source: CertSource::Config,
            })
            .await;
        // Another replica starting from the same file at the same moment made it first.
        let made_meanwhile = || async {
            store
                .cert_identities()
                .await
                .is_ok_and(|all| all.iter().any(|e| e.matcher == c.matcher))
        };
        if let Err(e) = created
            && !made_meanwhile().await
        {
            return Err(anyhow::Error::from(e).context(format!(
                "importing cert_identities `{}` from the config",
                c.name
            )));
        }
    }
    Ok(())
}

/// Creates the team unless it exists: replicas starting from the same config file at the same
/// moment both find it missing, and one of the two creations fails; the team is there either way.
async fn ensure_team(store: &dyn Store, team: NewTeam) -> anyhow::Result<()> {
    let id = team.id.clone().context("a config team has an id")?;
    match store.create_team(team).await {
        Ok(_) => Ok(()),
        Err(_) if store.team(id).await?.is_some() => Ok(()),
        Err(e) => Err(e.into()),
    }
}
