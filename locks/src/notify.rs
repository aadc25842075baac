//! Contention-aware waiting: wake-up by pub/sub notification on release.
//!
//! With [`WaitStrategy::Notify`](crate::WaitStrategy::Notify) a rung's release script also `PUBLISH`es on
//! the lock's release channel ([`channel`]), in the same atomic script, as
//! Redisson's unlock does. A waiting client subscribes to that channel on a
//! connection of its own (RESP2 `SUBSCRIBE` takes a connection over), held by
//! a [`ReleaseNotifier`] that the client shares between all its locks through
//! [`LockContext::with_notifier`](crate::LockContext::with_notifier).
//!
//! How a task of that client waits (see `acquire_notified`):
//!
//! 1. Tasks of one client that want the same lock queue in FIFO order on a
//!    local gate. A task barges straight to Redis only when nobody of its
//!    client is queued. So a holder that releases and at once asks again
//!    goes behind its client's waiters instead of taking the lock back
//!    before they hear of the release: waits stay short and turns stay fair.
//! 2. The task at the head of the queue subscribes (once; the subscription
//!    stays while anyone of the client waits for that lock), tries, and on
//!    failure waits for a release message or `fallback`, whichever is first.
//!    A message that arrives while nobody waits is kept as one permit, so a
//!    release between a failed try and the wait is not missed.
//! 3. Everything degrades to polling every `fallback`: no notifier in the
//!    context (the simulator), a rung whose release does not publish, a lost
//!    message, a broken subscriber connection, a holder that died (its key
//!    expires by its TTL and nobody publishes), Redis down (an attempt that
//!    meets a connection error or a timeout is tried again after
//!    `fallback`, within the wait budget, as in
//!    [`retry_acquire`](crate::retry_acquire)).
//! 4. Only the head of the queue tries, so a client's tasks take the lock
//!    strictly in turn, however slow a turn is. The one exception is a
//!    reentrant lock: there its queued tasks also try every `fallback`, so
//!    a holder re-entering its own lock is not stuck behind a waiter who
//!    waits for that very holder (such a try may then also take a turn
//!    out of order, when the lock is free at that moment).
//!
//! The gate orders tasks of one client only; across clients it is the
//! server's `SET NX` that decides, exactly as without notification. Safety
//! never depends on any of this: it only chooses *when* to try.

use crate::clock::BoxFuture;
use crate::conn::{ConnConfig, Dialer};
use crate::error::LockError;
use crate::lease::Lease;
use crate::lock::WaitBudget;
use futures::StreamExt;
use redis::aio::{PubSub, PubSubSink};
use redis::{RedisConnectionInfo, RedisError};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;
use tokio::sync::{Mutex as AsyncMutex, Notify};

/// Prefix of every release channel.
pub const CHANNEL_PREFIX: &str = "locks:released:";

/// The channel a release of `resource` is published on.
pub fn channel(resource: &str) -> String {
    format!("{CHANNEL_PREFIX}{resource}")
}

type Connect = Box<dyn Fn() -> BoxFuture<'static, Result<PubSub, RedisError>> + Send + Sync>;

/// One subscriber connection per client, shared by all its locks: it keeps
/// the release channels its waiting tasks need subscribed and wakes the task
/// at the head of a lock's queue when a release message arrives.
pub struct ReleaseNotifier {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for ReleaseNotifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReleaseNotifier").finish_non_exhaustive()
    }
}

struct Inner {
    connect: Connect,
    /// Waiting tasks by resource. Ordered so that nothing depends on hash
    /// order; only looked up, never iterated on a hot path.
    waiters: Mutex<BTreeMap<String, Entry>>,
    /// The subscriber link; the async mutex serialises (un)subscribe
    /// commands so that the set of subscribed channels stays exact.
    link: AsyncMutex<Link>,
}

struct Entry {
    waiters: Arc<Waiters>,
    /// Tasks between [`ReleaseNotifier::interest`] and the drop of their
    /// [`Interest`].
    users: usize,
}

#[derive(Default)]
struct Link {
    sink: Option<PubSubSink>,
    /// Resources whose channel is subscribed on the current connection.
    subscribed: BTreeSet<String>,
    /// The task reading messages; aborted when the notifier goes.
    reader: Option<tokio::task::JoinHandle<()>>,
}

/// The tasks of one client waiting for one lock.
struct Waiters {
    /// FIFO queue of this client's tasks for the lock (tokio's mutex is fair).
    gate: Arc<AsyncMutex<()>>,
    /// Woken (one permit) by each release message.
    wake: Notify,
}

impl ReleaseNotifier {
    /// A notifier that subscribes through its own connection made by
    /// `dialer` (dialed lazily, on the first wait; redialed after a failure).
    pub fn new<D: Dialer>(dialer: D, config: ConnConfig) -> Self {
        let dialer = Arc::new(dialer);
        let connect: Connect = Box::new(move || {
            let dialer = dialer.clone();
            Box::pin(async move {
                let open = async {
                    let stream = dialer.dial().await?;
                    PubSub::new(&RedisConnectionInfo::default(), stream).await
                };
                tokio::time::timeout(config.connect_timeout, open)
                    .await
                    .map_err(|_| {
                        RedisError::from(std::io::Error::new(
                            std::io::ErrorKind::TimedOut,
                            "subscriber connect timed out",
                        ))
                    })?
            })
        });
        ReleaseNotifier {
            inner: Arc::new(Inner {
                connect,
                waiters: Mutex::new(BTreeMap::new()),
                link: AsyncMutex::new(Link::default()),
            }),
        }
    }

    /// Registers a task's interest in `resource` until the returned value
    /// is dropped.
    fn interest(&self, resource: &str) -> Interest {
        let mut map = self.inner.lock_waiters();
        let entry = map.entry(resource.to_string()).or_insert_with(|| Entry {
            waiters: Arc::new(Waiters {
                gate: Arc::new(AsyncMutex::new(())),
                wake: Notify::new(),
            }),
            users: 0,
        });
        entry.users += 1;
        Interest {
            inner: self.inner.clone(),
            resource: resource.to_string(),
            waiters: entry.waiters.clone(),
        }
    }

    /// How many channels are subscribed now (for tests and reports).
    pub async fn subscribed_channels(&self) -> usize {
        self.inner.link.lock().await.subscribed.len()
    }
}

impl Inner {
    fn lock_waiters(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Entry>> {
        self.waiters.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Makes the subscription of `resource` match whether anyone still
    /// waits for it: subscribes when someone does and it is not, or
    /// unsubscribes when nobody does.
    async fn sync(self: &Arc<Self>, resource: &str) -> Result<Subscription, RedisError> {
        let mut link = self.link.lock().await;
        let wanted = self.lock_waiters().contains_key(resource);
        let subscribed = link.subscribed.contains(resource);
        if wanted == subscribed {
            return Ok(if subscribed {
                Subscription::Was
            } else {
                Subscription::Not
            });
        }
        if !wanted {
            if let Some(sink) = link.sink.as_mut() {
                // A failure leaves a stray subscription whose messages
                // find no waiter; harmless, and gone with the connection.
                let _ = sink.unsubscribe(channel(resource)).await;
            }
            link.subscribed.remove(resource);
            return Ok(Subscription::Not);
        }
        if link.sink.is_none() {
            let pubsub = (self.connect)().await?;
            let (sink, stream) = pubsub.split();
            link.sink = Some(sink);
            link.subscribed.clear();
            if let Some(old) = link.reader.take() {
                old.abort();
            }
            link.reader = Some(tokio::spawn(read_messages(Arc::downgrade(self), stream)));
        }
        let sink = link.sink.as_mut().expect("dialed above");
        match sink.subscribe(channel(resource)).await {
            Ok(()) => {
                link.subscribed.insert(resource.to_string());
                Ok(Subscription::Now)
            }
            Err(e) => {
                // Redial next time; waiters poll meanwhile.
                link.sink = None;
                link.subscribed.clear();
                Err(e)
            }
        }
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        // The reader owns the message stream; aborting it drops the stream,
        // which stops the connection's driver: no task outlives the notifier.
        if let Some(reader) = self.link.get_mut().reader.take() {
            reader.abort();
        }
    }
}

/// The state of a release channel's subscription after [`Inner::sync`].
enum Subscription {
    /// It was already subscribed.
    Was,
    /// It was subscribed just now.
    Now,
    /// It is not subscribed.
    Not,
}

/// Wakes the head waiter of each lock whose release message arrives. Ends
/// when the connection ends (then the link is cleared so the next wait
/// redials) or when the notifier is dropped.
async fn read_messages(inner: Weak<Inner>, mut stream: redis::aio::PubSubStream) {
    while let Some(msg) = stream.next().await {
        let Some(inner) = inner.upgrade() else {
            return;
        };
        let Some(resource) = msg.get_channel_name().strip_prefix(CHANNEL_PREFIX) else {
            continue;
        };
        if let Some(entry) = inner.lock_waiters().get(resource) {
            entry.waiters.wake.notify_one();
        }
    }
    if let Some(inner) = inner.upgrade() {
        let mut link = inner.link.lock().await;
        link.sink = None;
        link.subscribed.clear();
    }
}

/// A task's registration as a (possible) waiter for one lock.
struct Interest {
    inner: Arc<Inner>,
    resource: String,
    waiters: Arc<Waiters>,
}

impl Drop for Interest {
    fn drop(&mut self) {
        let last = {
            let mut map = self.inner.lock_waiters();
            match map.get_mut(&self.resource) {
                Some(entry) => {
                    entry.users -= 1;
                    if entry.users == 0 {
                        map.remove(&self.resource);
                        true
                    } else {
                        false
                    }
                }
                None => false,
            }
        };
        // Unsubscribe in the background (a drop cannot wait); `sync`
        // re-checks, so a newer waiter that subscribed again is kept.
        if last && let Ok(handle) = tokio::runtime::Handle::try_current() {
            let inner = self.inner.clone();
            let resource = std::mem::take(&mut self.resource);
            handle.spawn(async move {
                let subscribed = inner.link.lock().await.subscribed.contains(&resource);
                if subscribed {
                    let _ = inner.sync(&resource).await;
                }
            });
        }
    }
}

/// What a task queued behind its client's other waiters does until its
/// turn comes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Queued {
    /// Nothing: only the head of the queue tries (turns in order).
    WaitsItsTurn,
    /// Tries every `fallback` too (a reentrant lock: the holder's nested
    /// acquire must not wait behind the holder's own waiters).
    TriesEveryFallback,
}

/// The acquire loop of [`WaitStrategy::Notify`](crate::WaitStrategy::Notify)
/// with a notifier: queue locally, try, wait for a release message or
/// `fallback`. Same contract as [`retry_acquire`](crate::retry_acquire),
/// which starts the `budget` (one place for both ways of waiting).
pub(crate) async fn acquire_notified<F, Fut>(
    mut budget: WaitBudget<'_>,
    notifier: &ReleaseNotifier,
    fallback: Duration,
    queued: Queued,
    mut attempt: F,
) -> Result<Lease, LockError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<Option<Lease>, LockError>>,
{
    let (ctx, resource) = (budget.ctx, budget.resource);
    let fallback = fallback.max(Duration::from_micros(100));
    let interest = notifier.interest(resource);

    // 1. Queue behind this client's other waiters, if there are any. The
    // wait for the turn still ends with the budget.
    let gate = interest.waiters.gate.clone();
    let _turn = match gate.clone().try_lock_owned() {
        Ok(turn) => turn,
        Err(_) => {
            let mut waiting = std::pin::pin!(gate.lock_owned());
            loop {
                let pause = fallback.min(budget.left()?);
                tokio::select! {
                    turn = &mut waiting => break turn,
                    () = ctx.clock.sleep(pause) => {
                        if queued == Queued::TriesEveryFallback
                            && let Some(lease) = budget.attempt(attempt()).await?
                        {
                            return Ok(lease);
                        }
                    }
                }
            }
        }
    };

    // 2. At the head of the queue: try; subscribe; wait for a release.
    // `subscribed`: whether this task has made sure of the subscription.
    // An attempt that meets a transient error is tried again after
    // `fallback` like a taken lock (no release message will say when Redis
    // is back).
    let mut subscribed = false;
    loop {
        if let Some(lease) = budget.attempt(attempt()).await? {
            return Ok(lease);
        }
        let pause = fallback.min(budget.left()?);
        if !subscribed {
            subscribed = true;
            match interest.inner.sync(resource).await {
                // Subscribed only now: a release between the failed try and
                // the subscription sent no message we could hear, so try
                // again at once.
                Ok(Subscription::Now) => continue,
                Ok(Subscription::Was) => {}
                // No subscription: plain polling every `fallback`.
                Ok(Subscription::Not) | Err(_) => {}
            }
        }
        tokio::select! {
            () = interest.waiters.wake.notified() => {}
            () = ctx.clock.sleep(pause) => {}
        }
        ctx.wakeups.add();
    }
}
