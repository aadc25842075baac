//! A gRPC channel to one etcd member over any [`Dialer`]'s streams.
//!
//! tonic dials for itself only over real TCP; inside turmoil the stream
//! must come from the simulated network (and, for a paused client, be
//! frozen with it). So the channel takes its connections from a
//! [`Dialer`], lazily: it dials on its first request and dials again after
//! the connection breaks.

use crate::clock::BoxFuture;
use crate::conn::Dialer;
use hyper_util::rt::TokioIo;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tonic::transport::{Channel, Endpoint, Uri};

/// How long dialing a member may take.
pub const CONNECT_TIMEOUT: Duration = Duration::from_millis(1_000);

/// A channel whose connections `dialer` makes.
pub fn channel<D: Dialer>(dialer: Arc<D>) -> Channel {
    let connector = tower::service_fn(move |_: Uri| {
        let dialer = dialer.clone();
        async move { dialer.dial().await.map(TokioIo::new) }
    });
    // The URI only names the authority gRPC sends; the dialer decides
    // where the bytes go.
    Endpoint::from_static("http://etcd")
        .connect_timeout(CONNECT_TIMEOUT)
        .connect_with_connector_lazy(connector)
}

/// Dials the members of a cluster one at a time, as clientv3 moves along
/// its endpoints: the member that answered last, or after a dial that
/// failed or was given up, the next one in the list.
///
/// A connection counts as made only once the member has answered on it:
/// gRPC's client marks an endpoint ready only after the HTTP/2 handshake.
/// A connection that ends before the member said anything (a proxy in
/// front of a member that is down accepts, then hangs up) sends the next
/// dial to the next member, as a refused dial does.
#[derive(Debug)]
pub struct FailoverDialer<D> {
    members: Vec<D>,
    next: Arc<AtomicUsize>,
}

impl<D: Dialer> FailoverDialer<D> {
    /// Dials `members`, the first one first.
    pub fn new(members: Vec<D>) -> Self {
        FailoverDialer {
            members,
            next: Arc::new(AtomicUsize::new(0)),
        }
    }
}

impl<D: Dialer> Dialer for FailoverDialer<D> {
    type Stream = Answered<D::Stream>;

    fn dial(&self) -> BoxFuture<'static, io::Result<Self::Stream>> {
        let Some(count) = std::num::NonZeroUsize::new(self.members.len()) else {
            return Box::pin(async {
                Err(io::Error::new(io::ErrorKind::NotFound, "no member to dial"))
            });
        };
        let count = count.get();
        let at = self.next.load(Ordering::SeqCst) % count;
        // Until this dial succeeds, the next one goes to the next member:
        // a dial that hangs (a member cut off) is dropped by the caller's
        // timeout, and must not pin the client to that member.
        let silent = MoveOn {
            next: self.next.clone(),
            from: at,
            to: (at + 1) % count,
        };
        silent.apply();
        let dialing = self.members[at].dial();
        Box::pin(async move {
            let stream = dialing.await?;
            silent.next.store(at, Ordering::SeqCst);
            Ok(Answered {
                inner: stream,
                silent: Some(silent),
            })
        })
    }
}

/// Where the next dial goes if a connection to member `from` ends before
/// it answered.
#[derive(Debug)]
struct MoveOn {
    next: Arc<AtomicUsize>,
    from: usize,
    to: usize,
}

impl MoveOn {
    fn apply(&self) {
        // Only if no later dial chose another member meanwhile.
        let _ =
            (self.next).compare_exchange(self.from, self.to, Ordering::SeqCst, Ordering::SeqCst);
    }
}

/// A connection to one member; if it ends before the member answered, the
/// next dial tries the next member.
#[derive(Debug)]
pub struct Answered<S> {
    inner: S,
    /// Set until the member's first bytes arrive.
    silent: Option<MoveOn>,
}

impl<S> Drop for Answered<S> {
    fn drop(&mut self) {
        if let Some(silent) = self.silent.take() {
            silent.apply();
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Answered<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if matches!(polled, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.silent = None;
        }
        polled
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Answered<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};

    /// A member as a dialer sees it: one that refuses, one that accepts
    /// and hangs up at once, or one that answers.
    #[derive(Debug, Clone, Copy)]
    enum Member {
        Refuses,
        HangsUp,
        Answers,
    }

    impl Dialer for Member {
        type Stream = DuplexStream;

        fn dial(&self) -> BoxFuture<'static, io::Result<DuplexStream>> {
            let member = *self;
            Box::pin(async move {
                let (mine, mut theirs) = tokio::io::duplex(64);
                match member {
                    Member::Refuses => Err(io::ErrorKind::ConnectionRefused.into()),
                    Member::HangsUp => Ok(mine),
                    Member::Answers => {
                        theirs.write_all(b"settings").await?;
                        // The member's end stays open as long as the test.
                        std::mem::forget(theirs);
                        Ok(mine)
                    }
                }
            })
        }
    }

    async fn answers(stream: &mut Answered<DuplexStream>) -> bool {
        let mut buf = [0u8; 8];
        matches!(stream.read(&mut buf).await, Ok(n) if n > 0)
    }

    #[tokio::test]
    async fn a_refused_dial_moves_on_to_the_next_member() {
        let dialer = FailoverDialer::new(vec![Member::Refuses, Member::Answers]);
        assert!(dialer.dial().await.is_err());
        let mut stream = dialer.dial().await.expect("the second member");
        assert!(answers(&mut stream).await);
    }

    #[tokio::test]
    async fn a_connection_that_ends_before_the_member_spoke_moves_on() {
        let dialer = FailoverDialer::new(vec![Member::HangsUp, Member::Answers]);
        let mut first = dialer.dial().await.expect("the proxy accepts");
        assert!(!answers(&mut first).await, "the first member hangs up");
        drop(first);
        let mut second = dialer.dial().await.expect("the next member");
        assert!(answers(&mut second).await);
    }

    #[tokio::test]
    async fn a_member_that_answered_is_dialed_again() {
        let dialer = FailoverDialer::new(vec![Member::Answers, Member::Refuses]);
        for _ in 0..3 {
            let mut stream = dialer.dial().await.expect("the first member");
            assert!(answers(&mut stream).await);
        }
    }
}
