//! Serves a simulated Redis node on a real TCP port, for `redis-cli` or
//! Redis's own test suite, without building the whole of locklab:
//! `cargo run -p simredis --example redis_node -- 6390`.

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let port: u16 = std::env::args()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(6390);
    let mut config = simredis::NodeConfig::new("serve");
    config.port = port;
    let listener = std::net::TcpListener::bind(("127.0.0.1", port))?;
    eprintln!("serving on {}", listener.local_addr()?);
    simredis::serve_bound_until(listener, config, std::future::pending()).await
}
