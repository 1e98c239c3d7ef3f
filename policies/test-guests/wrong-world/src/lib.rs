//! A guardrail component offered where a router is expected: the host must refuse to load it.

#[cfg(target_arch = "wasm32")]
mod component {
    use sovereign_policy_sdk::guardrail::{
        Guardrail, Message, Rejection, RequestFacts, Stage, Verdict,
    };

    struct AllowAll;

    impl Guardrail for AllowAll {
        fn check(
            _stage: Stage,
            _facts: RequestFacts,
            _messages: Vec<Message>,
        ) -> Result<Verdict, Rejection> {
            Ok(Verdict::allow())
        }
    }

    sovereign_policy_sdk::export_guardrail!(AllowAll);
}
