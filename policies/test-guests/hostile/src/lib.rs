//! A router that misbehaves on request: the label `mode` picks what it does (`loop`, `grow`,
//! `panic`, `snoop`, `bad-model`). Without the label it answers well, as a real hostile guest
//! would during the host's smoke call. One crate for all the modes keeps the test build short.
//!
//! Through the gateway, where clients send no labels, the mode comes from the policy's document
//! instead (a line `mode: loop`), and applies to every request but the host's documented smoke
//! call (request id `smoke-call`) — the guest passes validation and turns hostile afterwards.

#[cfg(target_arch = "wasm32")]
mod component {
    use sovereign_policy_sdk::host::{self, Level};
    use sovereign_policy_sdk::router::{ModelInfo, Rejection, RequestFacts, RouteDecision, Router};

    struct Hostile;

    /// The `mode: X` line of the document, if any.
    fn document_mode() -> Option<String> {
        let doc = host::document()?;
        doc.lines()
            .find_map(|l| l.trim().strip_prefix("mode:"))
            .map(|m| m.trim().to_string())
    }

    impl Router for Hostile {
        fn route(
            facts: RequestFacts,
            candidates: Vec<ModelInfo>,
        ) -> Result<RouteDecision, Rejection> {
            let mode = match facts.label("mode") {
                Some(m) => m.to_string(),
                None if facts.request_id != "smoke-call" => document_mode().unwrap_or_default(),
                None => String::new(),
            };
            let first = candidates.first().map(|c| c.id.clone()).unwrap_or_default();
            host::log(Level::Info, &format!("hostile guest, mode `{mode}`"));
            match mode.as_str() {
                "loop" => {
                    let mut n: u64 = 0;
                    loop {
                        n = std::hint::black_box(n.wrapping_add(1));
                    }
                }
                "grow" => {
                    let mut hoard: Vec<Vec<u8>> = Vec::new();
                    loop {
                        hoard.push(vec![1u8; 1 << 20]);
                        std::hint::black_box(&hoard);
                    }
                }
                "panic" => {
                    #[expect(clippy::panic, reason = "this guest exists to trap")]
                    {
                        panic!("hostile guest panics on purpose");
                    }
                }
                "snoop" => {
                    // Everything a guest could try to learn about its host through WASI.
                    let env = std::env::vars().count();
                    let args = std::env::args().count();
                    let file = std::fs::read_to_string("/etc/passwd").map(|s| s.len());
                    let dir = std::fs::read_dir("/").map(|d| d.count());
                    let cwd = std::env::current_dir().map(|p| p.display().to_string());
                    let report = format!(
                        "env={env};args={args};file={};dir={};cwd={}",
                        file.map_or("denied".into(), |n| format!("{n} bytes")),
                        dir.map_or("denied".into(), |n| format!("{n} entries")),
                        cwd.unwrap_or_else(|_| "denied".into()),
                    );
                    // The report is also the policy name, so it shows in `X-Route-Policy`.
                    Ok(RouteDecision::new(&first, &report, &report))
                }
                "bad-model" => Ok(RouteDecision::new("not-a-candidate", "lies", "hostile")),
                _ => Ok(RouteDecision::new(&first, "first-candidate", "hostile")),
            }
        }
    }

    sovereign_policy_sdk::export_router!(Hostile);
}
