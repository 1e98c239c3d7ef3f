//! A guardrail component offered where a router is expected: the host must refuse to load it.

#[cfg(target_arch = "wasm32")]
mod component {
    #![allow(
        unsafe_code,
        reason = "wit-bindgen's generated glue is unsafe by nature"
    )]

    wit_bindgen::generate!({ world: "guardrail-policy", path: "../../../wit" });

    use exports::sovereign::policy::guardrail::{Guest, Message, Stage, Verdict};
    use sovereign::policy::types::{Rejection, RequestFacts};

    struct AllowAll;

    impl Guest for AllowAll {
        fn check(
            _stage: Stage,
            _facts: RequestFacts,
            _messages: Vec<Message>,
        ) -> Result<Verdict, Rejection> {
            Ok(Verdict {
                block: None,
                redactions: Vec::new(),
                flagged: Vec::new(),
            })
        }
    }

    export!(AllowAll);
}
