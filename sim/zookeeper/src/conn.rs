//! One client connection: frames in, frames out. The reader hands each
//! frame to the server ([`crate::core`]), which queues whatever this
//! connection is to be sent (replies, watch notifications, a close) on
//! one channel, so a notification a write fires leaves before the write's
//! reply, as in ZooKeeper. A frame whose length is negative or past
//! `jute.maxbuffer` ends the connection, as ZooKeeper ends it.

use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use zkproto::frame::read_frame;

use crate::core::{Outbound, Server};

/// Serves one connection from `peer_ip` until either side closes it.
pub async fn serve_conn<S>(server: Server, stream: S, peer_ip: String)
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let (conn, mut outbound) = server.open_conn(peer_ip);
    let (mut reader, mut writer) = tokio::io::split(stream);
    let read = async {
        loop {
            match read_frame(&mut reader).await {
                Ok(Some(frame)) => {
                    if !server.handle_frame(conn, &frame) {
                        // Closing: let the writer send what is queued.
                        std::future::pending::<()>().await;
                    }
                }
                Ok(None) | Err(_) => return,
            }
        }
    };
    let write = async {
        let mut batch = Vec::new();
        let mut closing = false;
        while let Some(first) = outbound.recv().await {
            // Whatever is queued leaves in one write, as ZooKeeper writes
            // its queue: a notification and the reply after it arrive
            // together.
            let mut next = Some(first);
            while let Some(out) = next {
                match out {
                    Outbound::Frame(body) => {
                        batch.extend_from_slice(&(body.len() as i32).to_be_bytes());
                        batch.extend_from_slice(&body);
                    }
                    Outbound::Close => {
                        closing = true;
                        break;
                    }
                }
                next = outbound.try_recv().ok();
            }
            if !batch.is_empty() && writer.write_all(&batch).await.is_err() {
                return;
            }
            batch.clear();
            if closing {
                break;
            }
        }
        let _ = writer.shutdown().await;
    };
    tokio::select! {
        () = read => {}
        () = write => {}
    }
    server.close_conn(conn);
}
