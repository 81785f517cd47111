//! hearth-text — pure text measures: [`tokens`] (counting with the model's own encoding),
//! [`budget`] (how a context window is split between the prompt's zones), [`rank`]
//! (the one hybrid ranker memory search, the memory block and folder search share) and
//! [`calendar`] (month names).
//!
//! **Never depends on** another Hearth crate, I/O, the store or the network: these are
//! functions of their arguments, so the same text ranks and counts the same wherever it
//! is measured, and both `hearth-folders` and the engine can use them. Kept by this
//! crate's `Cargo.toml` (its dependencies are `tiktoken-rs` and `serde`).

pub mod budget;
pub mod calendar;
pub mod rank;
pub mod tokens;
