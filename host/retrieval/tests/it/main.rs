//! Integration tests of sovereign-retrieval (one binary, modules per subject). `model` needs the
//! real e5 weights (`scripts/setup-models`) and fails, not skips, without them.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test code: a failed unwrap is a failed test"
)]

mod entities;
mod model;
mod retrieval;
mod small_collections;
