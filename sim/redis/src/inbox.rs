//! The way one client's requests go from the real-TCP server's front to
//! the node ([`crate::tcp`]): a shared buffer the front fills and the
//! node's connection reads, in place of a byte pipe, so that the front can
//! take back what the node has not read yet.
//!
//! Why: the node runs one script at a time on its thread, and Redis reads
//! other clients while a script runs (answering `BUSY` past the busy
//! threshold). A request the front handed over just before another
//! client's script started sits unread at the node until the script ends,
//! which, for a script that loops, is never. With an inbox the front sees
//! that the node has read nothing of it, takes it back and answers it
//! itself, as Redis would ([`Inbox::take_back_unread`]).
//!
//! The node's end, [`NodeStream`], reads from the inbox and writes its
//! replies into an in-memory stream the front reads, so the node's
//! connection loop is the very one the simulator runs.

use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use tokio::io::{AsyncRead, AsyncWrite, DuplexStream, ReadBuf};
use tokio::sync::Notify;

use crate::handle::lock;

/// How many bytes the inbox holds before the front waits for the node to
/// read (back-pressure, as a socket's buffer gives Redis).
const INBOX_BYTES: usize = 64 * 1024;

/// One connection's requests on their way to the node (see the module
/// docs).
#[derive(Default)]
pub(crate) struct Inbox {
    state: Mutex<InboxState>,
    /// The node read some bytes: a full inbox has room again.
    drained: Notify,
}

#[derive(Default)]
struct InboxState {
    /// Bytes the front handed over that the node has not read.
    bytes: Vec<u8>,
    /// Bytes the node has read so far, in all.
    taken: u64,
    /// The front will hand over nothing more (the client sent EOF).
    closed: bool,
    /// The node's end was dropped: nothing handed over will be read.
    reader_gone: bool,
    /// The node's read waiting for bytes.
    reader: Option<Waker>,
}

/// What became of bytes handed to the node.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Handed {
    /// This many were taken (0: the inbox is full, wait for
    /// [`Inbox::drained`]).
    Bytes(usize),
    /// The node's end is gone.
    ReaderGone,
}

impl Inbox {
    /// Hands as much of `bytes` to the node as the inbox has room for,
    /// removing it from `bytes`.
    pub(crate) fn hand_over(&self, bytes: &mut Vec<u8>) -> Handed {
        let mut st = lock(&self.state);
        if st.reader_gone {
            return Handed::ReaderGone;
        }
        let n = bytes.len().min(INBOX_BYTES.saturating_sub(st.bytes.len()));
        st.bytes.extend(bytes.drain(..n));
        if n > 0
            && let Some(w) = st.reader.take()
        {
            w.wake();
        }
        Handed::Bytes(n)
    }

    /// Completes when the node has read some bytes since the last call
    /// (or at once if it read some before the first): a full inbox may
    /// have room.
    pub(crate) async fn drained(&self) {
        self.drained.notified().await;
    }

    /// The client sent EOF: once the node has read what is left, its reads
    /// end.
    pub(crate) fn close(&self) {
        let mut st = lock(&self.state);
        st.closed = true;
        if let Some(w) = st.reader.take() {
            w.wake();
        }
    }

    /// Whether bytes handed over wait unread at the node.
    pub(crate) fn has_unread(&self) -> bool {
        !lock(&self.state).bytes.is_empty()
    }

    /// Takes back every unread byte, provided the node has finished with
    /// everything it read: `executed` (read under the same lock as the
    /// node's reads) says how many bytes it has executed, and equals what
    /// it has read only when no request of this client is in flight at
    /// the node. Nothing is taken back once the inbox is closed.
    pub(crate) fn take_back_unread(&self, executed: impl FnOnce() -> u64) -> Option<Vec<u8>> {
        let mut st = lock(&self.state);
        if st.bytes.is_empty() || st.closed || st.reader_gone || executed() != st.taken {
            return None;
        }
        Some(std::mem::take(&mut st.bytes))
    }

    fn poll_take(&self, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let mut st = lock(&self.state);
        if st.bytes.is_empty() {
            if !st.closed {
                st.reader = Some(cx.waker().clone());
                return Poll::Pending;
            }
            // EOF: a read of nothing.
            return Poll::Ready(Ok(()));
        }
        let n = st.bytes.len().min(buf.remaining());
        buf.put_slice(&st.bytes[..n]);
        st.bytes.drain(..n);
        st.taken += n as u64;
        drop(st);
        self.drained.notify_one();
        Poll::Ready(Ok(()))
    }
}

/// The node's end of one client connection: reads the client's requests
/// from its [`Inbox`], writes replies into the stream the front reads.
pub(crate) struct NodeStream {
    inbox: Arc<Inbox>,
    replies: DuplexStream,
}

impl NodeStream {
    /// The node's end over `inbox`, replying into `replies`.
    pub(crate) fn new(inbox: Arc<Inbox>, replies: DuplexStream) -> NodeStream {
        NodeStream { inbox, replies }
    }
}

impl Drop for NodeStream {
    fn drop(&mut self) {
        lock(&self.inbox.state).reader_gone = true;
    }
}

impl AsyncRead for NodeStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        self.inbox.poll_take(cx, buf)
    }
}

impl AsyncWrite for NodeStream {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.replies).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.replies).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.replies).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::FutureExt;
    use tokio::io::AsyncReadExt;

    fn node_end(inbox: &Arc<Inbox>) -> NodeStream {
        NodeStream::new(inbox.clone(), tokio::io::duplex(64).0)
    }

    #[test]
    fn the_front_takes_back_what_the_node_has_not_read_when_nothing_is_in_flight() {
        let inbox = Arc::new(Inbox::default());
        let mut node = node_end(&inbox);
        let mut req = b"PING\r\n".to_vec();
        assert_eq!(inbox.hand_over(&mut req), Handed::Bytes(6));
        // The node has executed all it read (nothing): take it back.
        assert_eq!(inbox.take_back_unread(|| 0), Some(b"PING\r\n".to_vec()));
        assert!(!inbox.has_unread());
        // Handed again and read: now in flight until executed.
        let mut req = b"PING\r\n".to_vec();
        inbox.hand_over(&mut req);
        let mut got = Vec::new();
        assert_eq!(node.read_buf(&mut got).now_or_never().unwrap().unwrap(), 6);
        let mut more = b"GET k\r\n".to_vec();
        inbox.hand_over(&mut more);
        assert_eq!(inbox.take_back_unread(|| 0), None);
        assert_eq!(inbox.take_back_unread(|| 6), Some(b"GET k\r\n".to_vec()));
    }

    #[test]
    fn a_full_inbox_takes_no_more_until_the_node_reads_and_a_closed_one_ends_the_reads() {
        let inbox = Arc::new(Inbox::default());
        let mut node = node_end(&inbox);
        let mut big = vec![b'x'; INBOX_BYTES + 10];
        assert_eq!(inbox.hand_over(&mut big), Handed::Bytes(INBOX_BYTES));
        assert_eq!(inbox.hand_over(&mut big), Handed::Bytes(0));
        let mut got = Vec::with_capacity(INBOX_BYTES);
        node.read_buf(&mut got).now_or_never().unwrap().unwrap();
        assert!(inbox.drained().now_or_never().is_some());
        assert_eq!(inbox.hand_over(&mut big), Handed::Bytes(10));
        inbox.close();
        assert_eq!(inbox.take_back_unread(|| u64::MAX), None);
        let mut rest = Vec::new();
        while node.read_buf(&mut rest).now_or_never().unwrap().unwrap() > 0 {}
        assert!(!inbox.has_unread());
        drop(node);
        assert_eq!(inbox.hand_over(&mut b"x".to_vec()), Handed::ReaderGone);
    }
}
