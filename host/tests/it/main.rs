//! End-to-end tests of the gateway library: the real `run` and the simulated fleet on port 0,
//! driven over HTTP. (The Python suite in tests/python drives the binary with the openai SDK.)

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test code: a failed unwrap is a failed test"
)]

mod cli;
mod gateway;
mod journal;
mod policy;

use std::net::SocketAddr;
use std::time::Duration;

use sovereign::config::Config;
use sovereign::demo::{DemoKeys, demo_config};
use sovereign::simulator::Behaviour;
use tokio::net::TcpListener;
use tokio::sync::oneshot;

/// A simulated fleet and a gateway in front of it, each on its own port, stopped on drop.
pub struct Stack {
    pub gateway: String,
    pub fleet: String,
    pub member_key: String,
    stop: Vec<oneshot::Sender<()>>,
    pub gateway_task: tokio::task::JoinHandle<anyhow::Result<()>>,
}

impl Stack {
    /// `tweak` edits the generated config text before the gateway parses it.
    pub async fn start(tweak: impl FnOnce(String) -> String) -> Stack {
        let (stop_fleet, fleet_stopped) = oneshot::channel::<()>();
        let fleet = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let fleet_url = format!("http://{}", fleet.local_addr().unwrap());
        tokio::spawn(sovereign::run_simulator(
            fleet,
            Behaviour::default(),
            async {
                let _ = fleet_stopped.await;
            },
        ));
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr: SocketAddr = listener.local_addr().unwrap();
        let keys = DemoKeys::generate();
        let text = tweak(demo_config(addr, &fleet_url, &keys));
        let config = Config::parse(&text).unwrap_or_else(|e| panic!("{e}"));
        let (stop_gw, gw_stopped) = oneshot::channel::<()>();
        let gateway_task = tokio::spawn(sovereign::run(listener, config, async {
            let _ = gw_stopped.await;
        }));
        Stack {
            gateway: format!("http://{addr}"),
            fleet: fleet_url,
            member_key: keys.keys[1].2.clone(),
            stop: vec![stop_gw, stop_fleet],
            gateway_task,
        }
    }

    pub fn client() -> reqwest::Client {
        reqwest::Client::builder()
            .timeout(Duration::from_secs(20))
            .build()
            .unwrap()
    }

    pub fn post(&self, path: &str) -> reqwest::RequestBuilder {
        Self::client()
            .post(format!("{}{path}", self.gateway))
            .bearer_auth(&self.member_key)
    }

    /// Sets a simulated model's behaviour (`*` for all).
    pub async fn sim(&self, model: &str, b: serde_json::Value) {
        let r = Self::client()
            .put(format!("{}/_sim/models/{model}", self.fleet))
            .json(&b)
            .send()
            .await
            .unwrap();
        assert!(r.status().is_success());
    }

    /// Begins graceful shutdown of the gateway.
    pub fn shutdown_gateway(&mut self) {
        if !self.stop.is_empty() {
            let _ = self.stop.remove(0).send(());
        }
    }
}

impl Drop for Stack {
    fn drop(&mut self) {
        for s in self.stop.drain(..) {
            let _ = s.send(());
        }
    }
}
