//! End-to-end tests of the real app live in `app.rs`; this crate has no library code.
