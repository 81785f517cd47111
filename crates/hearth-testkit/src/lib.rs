//! Fixtures for Hearth's tests. Real parts, not mocks: the LLM server is a real HTTP server
//! on 127.0.0.1 that each test scripts.

pub mod hub;
pub mod llm_server;

/// Serves `app` on a free port of 127.0.0.1 until the returned task is aborted.
pub async fn serve(app: axum::Router) -> (std::net::SocketAddr, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind 127.0.0.1");
    let addr = listener.local_addr().expect("local address");
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (addr, task)
}
