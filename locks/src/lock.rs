//! The `Lock` trait every rung implements, and what a rung is built from.

use crate::clock::{BoxFuture, Clock};
use crate::error::LockError;
use crate::fault::{FaultHook, FaultPoint, NoFaults};
use crate::ladder::Rung;
use crate::lease::{Lease, Owner};
use crate::notify::{ReleaseNotifier, acquire_notified};
use crate::token::TokenSource;
use std::sync::Arc;
use std::time::Duration;

/// One lock design. The methods return boxed futures so that rungs can be
/// chosen at run time (`Box<dyn Lock>`) and their futures spawned.
pub trait Lock: Send + Sync {
    /// The rung's ladder metadata.
    fn rung(&self) -> &'static Rung;

    /// Acquires `resource` for `owner`, waiting (by the configured
    /// [`WaitStrategy`], within [`LockConfig::max_wait`]) while others hold it.
    fn acquire<'a>(
        &'a self,
        resource: &'a str,
        owner: &'a Owner,
    ) -> BoxFuture<'a, Result<Lease, LockError>>;

    /// Releases a lease. From `get-check-del` up, releasing a lock the
    /// caller no longer holds is [`LockError::NotHeld`].
    fn release<'a>(&'a self, lease: &'a Lease) -> BoxFuture<'a, Result<(), LockError>>;

    /// Extends a lease by another TTL. Rungs with no expiry, or no way to
    /// extend, answer [`LockError::Unsupported`].
    fn extend<'a>(&'a self, lease: &'a mut Lease) -> BoxFuture<'a, Result<(), LockError>>;

    /// The check a holder makes before each write to the guarded resource:
    /// the rung's own validity check (Redlock's clock, the watchdog's lost
    /// flag), then the `before-write` fault point. Rungs that track no
    /// validity only pass the fault point.
    fn before_write<'a>(&'a self, lease: &'a Lease) -> BoxFuture<'a, Result<(), LockError>>;
}

/// How a waiting client tries again.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum WaitStrategy {
    /// Retry every `interval`: the plain spin loop of the simplest locks.
    Fixed {
        /// Pause between attempts.
        interval: Duration,
    },
    /// Exponential backoff from `initial` up to `max`, each pause drawn
    /// uniformly from `[pause/2, pause]` so that waiters spread out.
    Backoff {
        /// First pause.
        initial: Duration,
        /// Largest pause.
        max: Duration,
    },
    /// Wake-up by pub/sub notification on release, as Redisson does: the
    /// release publishes on the lock's channel, a waiter waits for that
    /// message or `fallback`, whichever comes first, and the tasks of one
    /// client take turns (see [`crate::notify`]). Without a
    /// [`ReleaseNotifier`] in the [`LockContext`] (the simulator), it polls
    /// every `fallback`.
    Notify {
        /// Longest wait for a message before trying anyway; the polling
        /// interval when no notification can come.
        fallback: Duration,
    },
}

impl WaitStrategy {
    /// The pause before attempt number `attempt` (1-based: the pause after
    /// the first failed attempt is `pause(1)`).
    pub fn pause(&self, attempt: u32, tokens: &TokenSource) -> Duration {
        match *self {
            WaitStrategy::Fixed { interval } => interval,
            WaitStrategy::Backoff { initial, max } => {
                let shift = attempt.saturating_sub(1).min(20);
                let full = initial.saturating_mul(1 << shift).min(max);
                full / 2 + tokens.jitter(full / 2)
            }
            WaitStrategy::Notify { fallback } => fallback,
        }
    }

    /// Whether a release should publish on the lock's release channel.
    pub fn notifies(&self) -> bool {
        matches!(self, WaitStrategy::Notify { .. })
    }
}

/// How a rung is configured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LockConfig {
    /// The lease's time to live on the server.
    pub ttl: Duration,
    /// How long an acquire keeps trying before it gives up.
    pub max_wait: Duration,
    /// How it waits between attempts.
    pub wait: WaitStrategy,
    /// Redlock: how long to wait for each master's reply.
    pub node_timeout: Duration,
}

impl Default for LockConfig {
    fn default() -> Self {
        LockConfig {
            ttl: Duration::from_millis(10_000),
            max_wait: Duration::from_millis(10_000),
            wait: WaitStrategy::Fixed {
                interval: Duration::from_millis(50),
            },
            node_timeout: Duration::from_millis(50),
        }
    }
}

impl LockConfig {
    /// The most attempts an acquire makes: a bound on every retry loop,
    /// even if the clock stands still.
    pub fn max_attempts(&self) -> u32 {
        let smallest_pause = match self.wait {
            WaitStrategy::Fixed { interval } => interval,
            WaitStrategy::Backoff { initial, .. } => initial / 2,
            // A release message can end a wait at any moment; the floor
            // below bounds the attempts.
            WaitStrategy::Notify { .. } => Duration::ZERO,
        }
        .max(Duration::from_micros(100));
        let n = self.max_wait.as_micros() / smallest_pause.as_micros();
        (n as u32).saturating_add(1).min(1_000_000)
    }
}

/// What every rung needs besides its connections: clocks, fault hook,
/// random source.
#[derive(Clone)]
pub struct LockContext {
    /// The client's clocks.
    pub clock: Arc<dyn Clock>,
    /// Where fault points are reported.
    pub hook: Arc<dyn FaultHook>,
    /// Tokens and jitter.
    pub tokens: Arc<TokenSource>,
    /// Where [`WaitStrategy::Notify`] hears of releases; `None` (the
    /// default, and the simulator's choice) makes it poll.
    pub notifier: Option<Arc<ReleaseNotifier>>,
}

impl LockContext {
    /// A context with the given clock and seed and no fault injection.
    pub fn new(clock: Arc<dyn Clock>, seed: u64) -> Self {
        LockContext {
            clock,
            hook: Arc::new(NoFaults),
            tokens: Arc::new(TokenSource::seeded(seed)),
            notifier: None,
        }
    }

    /// The same context with a release notifier (one subscriber connection
    /// shared by every lock built with this context).
    pub fn with_notifier(mut self, notifier: Arc<ReleaseNotifier>) -> Self {
        self.notifier = Some(notifier);
        self
    }

    /// The same context with a fault hook.
    pub fn with_hook(mut self, hook: Arc<dyn FaultHook>) -> Self {
        self.hook = hook;
        self
    }

    /// Reports a fault point and waits for the hook to let the code go on.
    pub async fn point(&self, point: FaultPoint, resource: &str) {
        self.hook.reached(point, resource).await;
    }
}

impl std::fmt::Debug for LockContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LockContext").finish_non_exhaustive()
    }
}

/// The retry loop shared by every rung: calls `attempt` until it yields a
/// lease, an error, or the wait budget (time and attempts) is spent.
///
/// `attempt` returns `Ok(Some(lease))` when acquired, `Ok(None)` when the
/// lock is taken by someone else (try again), `Err` to stop.
pub async fn retry_acquire<F, Fut>(
    ctx: &LockContext,
    config: &LockConfig,
    resource: &str,
    mut attempt: F,
) -> Result<Lease, LockError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<Option<Lease>, LockError>>,
{
    if let (WaitStrategy::Notify { fallback }, Some(notifier)) = (config.wait, &ctx.notifier) {
        return acquire_notified(ctx, config, notifier, fallback, resource, attempt).await;
    }
    let budget = WaitBudget::start(ctx, config, resource);
    let mut attempts = 0u32;
    loop {
        attempts += 1;
        if let Some(lease) = attempt().await? {
            return Ok(lease);
        }
        let left = budget.left(attempts)?;
        let pause = config.wait.pause(attempts, &ctx.tokens).min(left);
        ctx.clock.sleep(pause).await;
    }
}

/// An acquire's wait budget: [`LockConfig::max_wait`] by the client's
/// monotonic clock, and [`LockConfig::max_attempts`].
pub(crate) struct WaitBudget<'a> {
    ctx: &'a LockContext,
    config: &'a LockConfig,
    resource: &'a str,
    started: Duration,
    max_attempts: u32,
}

impl<'a> WaitBudget<'a> {
    /// The budget of an acquire of `resource` that starts now.
    pub(crate) fn start(ctx: &'a LockContext, config: &'a LockConfig, resource: &'a str) -> Self {
        WaitBudget {
            ctx,
            config,
            resource,
            started: ctx.clock.monotonic(),
            max_attempts: config.max_attempts(),
        }
    }

    /// The time left after `attempts` attempts, or the
    /// [`LockError::NotAcquired`] that ends the acquire once time or
    /// attempts are spent.
    pub(crate) fn left(&self, attempts: u32) -> Result<Duration, LockError> {
        let waited = self.ctx.clock.monotonic().saturating_sub(self.started);
        if waited >= self.config.max_wait || attempts >= self.max_attempts {
            return Err(LockError::NotAcquired {
                resource: self.resource.to_string(),
                waited,
                attempts,
            });
        }
        Ok(self.config.max_wait - waited)
    }
}
