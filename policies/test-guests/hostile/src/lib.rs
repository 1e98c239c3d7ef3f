//! A router that misbehaves on request: the label `mode` picks what it does (`loop`, `grow`,
//! `panic`, `snoop`, `bad-model`). Without the label it answers well, as a real hostile guest
//! would during the host's smoke call. One crate for all the modes keeps the test build short.

#[cfg(target_arch = "wasm32")]
mod component {
    #![allow(
        unsafe_code,
        reason = "wit-bindgen's generated glue is unsafe by nature"
    )]

    wit_bindgen::generate!({ world: "router-policy", path: "../../../wit" });

    use exports::sovereign::policy::router::{Guest, RouteDecision as Route};
    use sovereign::policy::host::{self, Level};
    use sovereign::policy::types::{ModelInfo, Rejection, RequestFacts};

    struct Hostile;

    fn route(model: String, rule: String) -> Result<Route, Rejection> {
        Ok(Route {
            model,
            fallbacks: Vec::new(),
            rule,
            policy: "hostile".into(),
        })
    }

    impl Guest for Hostile {
        fn route(facts: RequestFacts, candidates: Vec<ModelInfo>) -> Result<Route, Rejection> {
            let mode = facts
                .labels
                .iter()
                .find(|(k, _)| k == "mode")
                .map(|(_, v)| v.as_str())
                .unwrap_or("");
            let first = candidates.first().map(|c| c.id.clone()).unwrap_or_default();
            host::log(Level::Info, &format!("hostile guest, mode `{mode}`"));
            match mode {
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
                    route(first, report)
                }
                "bad-model" => route("not-a-candidate".into(), "lies".into()),
                _ => route(first, "first-candidate".into()),
            }
        }
    }

    export!(Hostile);
}
