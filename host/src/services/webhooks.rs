//! [`Subscriptions`]: webhook subscriptions created, rotated and deleted. `crate::webhooks`
//! makes each change (the store, this replica's matcher and signing keys); the service then
//! announces it, so every other replica loads the subscriptions again and matches, signs and
//! delivers as this one does.

use std::time::Duration;

use super::ServiceError;
use crate::metrics::Metrics;
use crate::shared::{Change, Shared};
use crate::store::webhooks::Webhook;
use crate::webhooks::{Subscribe, Webhooks};

/// The webhook subscriptions' writes, borrowing the gateway's parts
/// (`AppState::subscriptions`).
pub struct Subscriptions<'a> {
    webhooks: &'a Webhooks,
    shared: &'a Shared,
    metrics: &'a Metrics,
}

impl<'a> Subscriptions<'a> {
    pub fn new(webhooks: &'a Webhooks, shared: &'a Shared, metrics: &'a Metrics) -> Self {
        Subscriptions {
            webhooks,
            shared,
            metrics,
        }
    }

    /// A new subscription, with its signing secret (shown once).
    pub async fn create(&self, s: Subscribe) -> Result<Webhook, ServiceError> {
        let w = self.webhooks.create(s).await?;
        self.announce().await;
        Ok(w)
    }

    /// The subscription and its pending deliveries.
    pub async fn delete(&self, id: &str) -> Result<(), ServiceError> {
        self.webhooks.delete(id).await?;
        self.announce().await;
        Ok(())
    }

    /// A new signing secret; the old one keeps signing alongside for `grace`.
    pub async fn rotate(&self, id: &str, grace: Duration) -> Result<Webhook, ServiceError> {
        let w = self.webhooks.rotate(id, grace).await?;
        self.announce().await;
        Ok(w)
    }

    async fn announce(&self) {
        self.shared.announce(Change::Webhooks, self.metrics).await;
    }
}
