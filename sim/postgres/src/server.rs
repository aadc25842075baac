//! Serving: the accept loop on turmoil's simulated network or on a real
//! TCP listener, each connection a task of the loop's own (ended with it:
//! nothing outlives the host).

use std::future::Future;
use std::io;
use std::net::SocketAddr;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::task::JoinSet;

use crate::conn::serve_conn;
use crate::core::Server;

/// The port PostgreSQL serves on.
pub const PG_PORT: u16 = 5432;

/// Serves on turmoil's network on `port` until the host crashes; called
/// again at each restart, with the same `server`: committed rows survive,
/// sessions and their locks do not.
pub async fn serve_sim(server: Server, port: u16) -> turmoil::Result {
    let listener = turmoil::net::TcpListener::bind(("0.0.0.0", port)).await?;
    let accept = || listener.accept();
    serve(server, accept, std::future::pending()).await?;
    Ok(())
}

/// Serves on a real TCP listener (for tests and psql) until `stop`
/// resolves.
pub async fn serve_tcp(
    server: Server,
    listener: tokio::net::TcpListener,
    stop: impl Future<Output = ()>,
) -> io::Result<()> {
    let accept = || async {
        let (stream, peer) = listener.accept().await?;
        // Small messages both ways: waiting to fill a segment only adds
        // latency.
        let _ = stream.set_nodelay(true);
        Ok((stream, peer))
    };
    serve(server, accept, stop).await
}

/// Marks its server stopped when serving ends, however it ends.
struct Serving(Server);

impl Drop for Serving {
    fn drop(&mut self) {
        self.0.stopped();
    }
}

/// The accept loop and the connections, all ended when `stop` resolves or
/// this future is dropped.
async fn serve<S, F, A>(
    server: Server,
    mut accept: F,
    stop: impl Future<Output = ()>,
) -> io::Result<()>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + Sync + 'static,
    F: FnMut() -> A,
    A: Future<Output = io::Result<(S, SocketAddr)>>,
{
    // Sessions a crash left behind end now, as PostgreSQL's restart ends
    // them.
    server.restart();
    // Dropped with this future when the host goes down.
    let _serving = Serving(server.clone());
    let mut conns = JoinSet::new();
    tokio::pin!(stop);
    loop {
        tokio::select! {
            () = &mut stop => return Ok(()),
            accepted = accept() => match accepted {
                Ok((stream, peer)) => {
                    conns.spawn(serve_conn(server.clone(), stream, peer));
                }
                // A failed accept costs that connection only; a pause
                // keeps a lasting failure from spinning.
                Err(_) => tokio::time::sleep(std::time::Duration::from_millis(10)).await,
            },
            Some(_) = conns.join_next() => {}
        }
    }
}
