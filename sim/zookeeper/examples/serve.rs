//! Serves a simulated ZooKeeper on a real TCP port, for `zkCli.sh`:
//! `cargo run -p simzk --example serve -- 2191`.

use std::sync::Arc;

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let port: u16 = std::env::args()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(2191);
    let wall_clock_ms = Arc::new(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64)
    });
    let server = simzk::Server::new(simzk::Config::new(wall_clock_ms));
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    eprintln!("serving on {}", listener.local_addr()?);
    simzk::serve_tcp(server, listener, std::future::pending()).await
}
