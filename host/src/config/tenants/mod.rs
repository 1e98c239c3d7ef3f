//! The sections about who calls the gateway and what they may spend: `[[teams]]` and `[[keys]]`
//! (`teams.rs`), `[access]` and `[plans]` (`access.rs`), `[budgets]` (`budgets.rs`).

pub(super) mod access;
pub(super) mod budgets;
pub(super) mod teams;
