//! Fixtures for Hearth's tests. Real parts, not mocks: the LLM server is a real HTTP server
//! on 127.0.0.1 that each test scripts.

pub mod hub;
pub mod llm_server;
