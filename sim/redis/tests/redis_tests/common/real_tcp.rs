//! What the real-TCP tests of the node share: serving simulated nodes on
//! ephemeral loopback ports, in real time.

use std::net::SocketAddr;

use simredis::{NodeConfig, NodeHandle};

/// Runs `test` on a current-thread tokio runtime (the node's server is not
/// `Send`).
pub fn run<F: Future<Output = ()>>(test: F) {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime")
        .block_on(test);
}

/// A node built from `config` (its clock set to real time), served on an
/// ephemeral loopback port: the address, and the server, a future to run
/// beside the test (it ends only on an error).
pub async fn serve(config: NodeConfig) -> (SocketAddr, impl Future<Output = std::io::Result<()>>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a loopback port");
    let addr = listener.local_addr().expect("a bound address");
    let node = NodeHandle::new(simredis::real_time(config));
    (addr, simredis::serve_tcp_listener(listener, node))
}
