//! A webhook shaper that misbehaves: its settings (a single word) pick how. It answers the
//! host's smoke call (event id `smoke-call`) well whatever the mode, so it loads and turns
//! broken on the first real event — the case the dead-letter queue exists for.
//!
//! Modes: `trap` (the default, also without settings: panics, i.e. traps), `loop` (runs past its
//! deadline), `headers` (sets `Authorization`, `Connection`, `Host`, `Transfer-Encoding`,
//! `Cookie` and `webhook-signature`, which the host drops, and `X-Team`, which it keeps),
//! `bad-header` (a header name the host refuses), `huge` (a body over the host's cap),
//! `skip` (answers none: do not deliver).

#[cfg(target_arch = "wasm32")]
mod component {
    use sovereign_policy_sdk::host;
    use sovereign_policy_sdk::webhook::{Delivery, Event, WebhookShaper};

    struct Broken;

    impl WebhookShaper for Broken {
        fn shape(e: Event, target: String) -> Option<Delivery> {
            let plain = Delivery::json(format!(r#"{{"id":"{}","target":"{target}"}}"#, e.id));
            if e.id == "smoke-call" {
                return Some(plain);
            }
            let mode = host::config_get("settings").unwrap_or_default();
            match mode.trim() {
                "loop" => {
                    let mut n: u64 = 0;
                    loop {
                        n = std::hint::black_box(n.wrapping_add(1));
                    }
                }
                "headers" => Some(
                    plain
                        .with_header("Authorization", "Bearer stolen")
                        .with_header("Connection", "close")
                        .with_header("Host", "evil.example")
                        .with_header("Transfer-Encoding", "chunked")
                        .with_header("Cookie", "session=1")
                        .with_header("webhook-signature", "v1,forged")
                        .with_header("X-Team", e.team_id.as_str()),
                ),
                "bad-header" => Some(plain.with_header("Bad Header", "x")),
                "huge" => Some(Delivery::json("x".repeat(2 << 20))),
                "skip" => None,
                _ => {
                    #[expect(clippy::panic, reason = "this guest exists to trap")]
                    {
                        panic!("broken shaper traps on event {}", e.id);
                    }
                }
            }
        }
    }

    sovereign_policy_sdk::export_webhook_shaper!(Broken);
}
