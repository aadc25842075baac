//! Serving: the accept loop on turmoil's simulated network or on a real
//! TCP listener, beside the session expirer that runs on the server's
//! tick (`tokio::time`: turmoil's clock inside turmoil).

use std::future::Future;
use std::io;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::task::JoinSet;

use crate::conn::serve_conn;
use crate::core::Server;

/// The port ZooKeeper serves clients on.
pub const CLIENT_PORT: u16 = 2181;

/// Serves on turmoil's network on `port` until the host crashes; called
/// again at each restart, with the same `server`: the tree and sessions
/// survive, connections do not, and every session's timer starts over.
/// A member of an ensemble ([`Server::member`]) also runs its ZAB here,
/// with its peers on [`crate::member::PEER_PORT`].
pub async fn serve_sim(server: Server, port: u16) -> turmoil::Result {
    let listener = turmoil::net::TcpListener::bind(("0.0.0.0", port)).await?;
    let accept = || async {
        let (stream, peer) = listener.accept().await?;
        Ok((stream, peer.ip().to_string()))
    };
    let ensemble = server
        .is_member()
        .then(|| crate::member::drive(server.clone()));
    let stop = async move {
        match ensemble {
            // The driver ends only when its socket cannot be bound.
            Some(driver) => {
                let _ = driver.await;
            }
            None => std::future::pending().await,
        }
    };
    serve(server, accept, stop).await?;
    Ok(())
}

/// Serves on a real TCP listener (for `locklab sim-server` and tests)
/// until `stop` resolves. A standalone server only: an ensemble member's
/// peers talk over turmoil, so here it would never serve.
pub async fn serve_tcp(
    server: Server,
    listener: tokio::net::TcpListener,
    stop: impl Future<Output = ()>,
) -> io::Result<()> {
    let accept = || async {
        let (stream, peer) = listener.accept().await?;
        // Small frames both ways: waiting to fill a segment only adds
        // latency.
        let _ = stream.set_nodelay(true);
        Ok((stream, peer.ip().to_string()))
    };
    serve(server, accept, stop).await
}

/// The accept loop, the expirer (and container sweep), and the connections, all ended when
/// `stop` resolves or this future is dropped.
async fn serve<S, F, A>(
    server: Server,
    mut accept: F,
    stop: impl Future<Output = ()>,
) -> io::Result<()>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    F: FnMut() -> A,
    A: Future<Output = io::Result<(S, String)>>,
{
    let tick = server.start_serving();
    let mut ticker = tokio::time::interval_at(tokio::time::Instant::now() + tick, tick);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let mut conns = JoinSet::new();
    tokio::pin!(stop);
    loop {
        tokio::select! {
            () = &mut stop => return Ok(()),
            _ = ticker.tick() => server.tick(),
            accepted = accept() => match accepted {
                Ok((stream, peer_ip)) => {
                    conns.spawn(serve_conn(server.clone(), stream, peer_ip));
                }
                // A failed accept (out of descriptors, a connection reset
                // before it was taken) costs that connection only, as in
                // ZooKeeper; a pause keeps a lasting failure from spinning.
                Err(_) => tokio::time::sleep(std::time::Duration::from_millis(10)).await,
            },
            Some(_) = conns.join_next() => {}
        }
    }
}
