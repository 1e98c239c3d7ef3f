//! [`Teams`]: teams created, read, changed and deleted. A change reaches every replica's cached
//! keys of the team (plan, caps, regions) and the team's budget limit; a deletion takes the team's
//! keys, certificate identities and budget counters with it, here and on every replica.

use std::sync::Arc;

use super::ServiceError;
use crate::access::Access;
use crate::budget::Budgets;
use crate::config::TeamConfig;
use crate::store::{BudgetScope, NewTeam, Store, Team, TeamId, TeamPatch};

/// The teams' service, borrowing the gateway's parts (`AppState::teams`).
pub struct Teams<'a> {
    store: &'a Arc<dyn Store>,
    access: &'a Access,
    budgets: &'a Arc<Budgets>,
    /// The config file's `[[teams]]`: deleted in the file, not through the service.
    declared: &'a [TeamConfig],
}

impl<'a> Teams<'a> {
    pub fn new(
        store: &'a Arc<dyn Store>,
        access: &'a Access,
        budgets: &'a Arc<Budgets>,
        declared: &'a [TeamConfig],
    ) -> Teams<'a> {
        Teams {
            store,
            access,
            budgets,
            declared,
        }
    }

    pub async fn create(&self, new: NewTeam) -> Result<Team, ServiceError> {
        Ok(self.store.create_team(new).await?)
    }

    pub async fn list(&self) -> Result<Vec<Team>, ServiceError> {
        Ok(self.store.teams().await?)
    }

    pub async fn get(&self, id: &str) -> Result<Team, ServiceError> {
        self.store
            .team(TeamId(id.to_owned()))
            .await?
            .ok_or_else(|| ServiceError::TeamNotFound(id.to_owned()))
    }

    /// Changes the fields `patch` names; a changed budget limit applies at once.
    pub async fn update(&self, id: String, patch: TeamPatch) -> Result<Team, ServiceError> {
        let budget_changed = patch.budget;
        let team = self.store.update_team(TeamId(id), patch).await?;
        self.access.invalidate_team(&team.id.0).await;
        if let Some(limit) = budget_changed {
            self.budgets
                .set_limit(&BudgetScope::Team(team.id.clone()), limit)
                .await;
        }
        Ok(team)
    }

    /// Deletes the team with its keys and certificate identities; a team the config file
    /// declares is refused.
    pub async fn delete(&self, id: &str) -> Result<TeamId, ServiceError> {
        let team = self.get(id).await?;
        // A team the config file declares comes back at the next start, without the keys and
        // certificate identities the deletion took: it is removed in the file, like they are.
        if self.declared.iter().any(|t| t.id == team.id.0) {
            return Err(ServiceError::TeamDeclaredInConfig(team.id.0));
        }
        let keys = self.store.keys(Some(team.id.clone())).await?;
        if !self.store.delete_team(team.id.clone()).await? {
            return Err(ServiceError::TeamNotFound(id.to_owned()));
        }
        self.access.remove_team(&team.id.0).await;
        self.budgets
            .forget(&BudgetScope::Team(team.id.clone()))
            .await;
        for k in keys {
            self.budgets.forget(&BudgetScope::Key(k.id)).await;
        }
        Ok(team.id)
    }
}
