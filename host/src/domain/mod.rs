//! The domain's own vocabulary: the concepts the config file declares, the store keeps and the
//! request path reads, defined once here below all three (issue 47: `config/` keeps the raw file
//! format and its validation, not the types the rest of the gateway names). One file per concept:
//! the models served (`models.rs`), a key's role (`roles.rs`), a team's plan (`plans.rs`). A type
//! belongs here when modules that are not config name it for what it is, not as a section's
//! settings; it knows no module but `tls` (a model's upstream certificate).

mod models;
mod plans;
mod roles;

pub use models::{
    AUTO_ROUTER, MessagesApi, ModelConfig, ModelId, ModelKind, Tokenize, UpstreamTimeouts,
};
pub use plans::Plan;
pub use roles::Role;
