//! hearth-base — the floor every Hearth crate stands on: the engine's one [`Error`] (each
//! variant says what the user can do), the provider-neutral conversation [`types`],
//! [`time`], atomic file writes ([`fsio`]), the data folder's [`paths`] and the test
//! [`failpoint`]s.
//!
//! **Never depends on** another Hearth crate, SQL, the network or a model: everything above
//! builds on it, so it stays small and quick to compile, and a service's failure reaches
//! [`Error`] only as an opaque [`ServiceError`]. Kept by this crate's `Cargo.toml`.

pub mod error;
pub mod failpoint;
pub mod fsio;
pub mod paths;
pub mod time;
pub mod types;

pub use error::{Error, Result, ServiceError};
