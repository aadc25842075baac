//! What the etcd member's tests share.

#![allow(dead_code)] // each test file uses its own part of the helpers

use std::net::SocketAddr;

/// Starts the simulated member on a free loopback port, on a thread of
/// its own (real time), with 3.4's Lock service; returns its address.
pub fn start_simulated() -> SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    let addr = listener.local_addr().expect("its address");
    listener.set_nonblocking(true).expect("non-blocking");
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).expect("tokio listener");
            let _ = simetcd::serve_tcp(
                simetcd::Node::alone(simetcd::Member::default()),
                listener,
                simetcd::Recheck::No,
            )
            .await;
        });
    });
    addr
}
