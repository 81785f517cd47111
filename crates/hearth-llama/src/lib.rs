//! hearth-llama — the built-in model's worker: llama.cpp (through `llama-cpp-2`, which
//! vendors it and builds it with CMake) behind an OpenAI-compatible HTTP API on loopback.
//! It runs as its own process, `hearth-llama-worker`, which the engine starts, supervises
//! and ends: a `GGML_ASSERT` abort, a crash or an out-of-memory kill in llama.cpp ends
//! this process and the turn it served, never the app.
//!
//! **Never depends on** any other Hearth crate — least of all the store, memory or folders:
//! the process that runs hostile model files holds no key and opens no database; it sees
//! only the prompts the engine sends it, and forgets them with its cache. Kept by this
//! crate's `Cargo.toml` and `crates/hearth-core/tests/crate_graph.rs`; and nothing above
//! links it (the engine talks to the process, not the library), so llama.cpp's C++ is
//! compiled into this one binary.

pub mod engine;
pub mod server;
pub mod template;
pub mod toolcall;
