//! End-to-end tests of the gateway library: the real `run` and the simulated fleet on port 0,
//! driven over HTTP. (The Python suite in tests/python drives the binary with the openai SDK.)

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test code: a failed unwrap is a failed test"
)]

mod architecture;
mod audit;
mod cli;
mod fallback;
mod gateway;
mod hot_swap;
mod house;
mod journal;
mod layers;
mod policy;
mod redis_scripts;
mod services;
mod shaper;
mod store;
mod tls;
mod worlds;
mod writers;

use std::net::SocketAddr;
use std::time::Duration;

use sovereign::config::Config;
use sovereign::demo::{DemoKeys, demo_config, write_files};
use sovereign::simulator::Behaviour;
use tokio::net::TcpListener;
use tokio::sync::oneshot;

/// A simulated fleet and a gateway in front of it, each on its own port, stopped on drop.
pub struct Stack {
    pub gateway: String,
    pub fleet: String,
    pub member_key: String,
    /// The gateway's internal events, subscribed before it served anything.
    pub events: tokio::sync::broadcast::Receiver<std::sync::Arc<sovereign::events::Event>>,
    /// The gateway's journal (a handle on the same writer).
    pub journal: Option<sovereign::journal::Journal>,
    /// The journal's directory.
    pub journal_dir: std::path::PathBuf,
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
        let dir = scratch_dir();
        // Compiled policies are cached across tests (a debug build compiles the router slowly).
        let cache = concat!(env!("CARGO_TARGET_TMPDIR"), "/policy-cache");
        let text = demo_config(addr, &fleet_url, &keys, &dir, None).replace(
            &format!("{:?}", dir.join("policy-cache").display().to_string()),
            &format!("{cache:?}"),
        );
        let text = tweak(text);
        let path = write_files(&dir, &text).unwrap();
        let config = Config::load(&path).unwrap_or_else(|e| panic!("{e}"));
        let gateway = sovereign::Gateway::new(config)
            .await
            .unwrap_or_else(|e| panic!("{e:#}"));
        let events = gateway.state().events().subscribe();
        let journal = gateway.state().journal().cloned();
        let journal_dir = dir.join("journal");
        let (stop_gw, gw_stopped) = oneshot::channel::<()>();
        let gateway_task = tokio::spawn(gateway.serve(listener, async {
            let _ = gw_stopped.await;
        }));
        Stack {
            gateway: format!("http://{addr}"),
            fleet: fleet_url,
            member_key: keys.keys[1].2.clone(),
            events,
            journal,
            journal_dir,
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

/// A fresh directory for one test's files.
pub fn scratch_dir() -> std::path::PathBuf {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("sovereign-it-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

impl Drop for Stack {
    fn drop(&mut self) {
        for s in self.stop.drain(..) {
            let _ = s.send(());
        }
    }
}
