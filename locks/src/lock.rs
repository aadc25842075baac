//! The `Lock` trait every rung implements, and what a rung is built from.

use crate::clock::{BoxFuture, Clock};
use crate::error::LockError;
use crate::fault::{FaultHook, FaultPoint, NoFaults};
use crate::ladder::Rung;
use crate::lease::{Lease, Owner};
use crate::notify::{Queued, ReleaseNotifier, acquire_notified};
use crate::token::TokenSource;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// One lock design. The methods return boxed futures so that rungs can be
/// chosen at run time (`Box<dyn Lock>`) and their futures spawned.
pub trait Lock: Send + Sync {
    /// The rung's ladder metadata.
    fn rung(&self) -> &'static Rung;

    /// Acquires `resource` for `owner`, waiting (by the configured
    /// [`WaitStrategy`], within [`LockConfig::max_wait`]) while others hold
    /// it, and trying again while Redis is down or does not answer (see
    /// [`retry_acquire`]).
    fn acquire<'a>(
        &'a self,
        resource: &'a str,
        owner: &'a Owner,
    ) -> BoxFuture<'a, Result<Lease, LockError>>;

    /// Acquires `resource` shared, beside other shared holders, as a reader
    /// of a read-write lock does. A rung with no read mode grants its one
    /// exclusive lock instead (the lease's `shared` is then false), as a
    /// user without a read-write lock would take it for reading too.
    fn acquire_shared<'a>(
        &'a self,
        resource: &'a str,
        owner: &'a Owner,
    ) -> BoxFuture<'a, Result<Lease, LockError>> {
        self.acquire(resource, owner)
    }

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
    /// How long an acquire keeps trying before it gives up, whether the
    /// lock was taken or Redis did not answer.
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
    /// Counts this client's wake-ups while it waits for a taken lock;
    /// shared by every client that should be counted together.
    pub wakeups: Arc<Wakeups>,
}

/// How many times waiting clients were woken to look at a taken lock
/// again: each retry of a polling wait, each release message of a
/// notified one, each watch response an etcd waiter receives. A
/// hand-off that wakes one waiter costs one; a herd of N polling waiters
/// pays about N per hand-off, each poll a request the server answers.
#[derive(Debug, Default)]
pub struct Wakeups(AtomicU64);

impl Wakeups {
    /// Counts one wake-up.
    pub fn add(&self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }

    /// The wake-ups counted so far.
    pub fn total(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

impl LockContext {
    /// A context with the given clock and seed and no fault injection.
    pub fn new(clock: Arc<dyn Clock>, seed: u64) -> Self {
        LockContext {
            clock,
            hook: Arc::new(NoFaults),
            tokens: Arc::new(TokenSource::seeded(seed)),
            notifier: None,
            wakeups: Arc::new(Wakeups::default()),
        }
    }

    /// The same context counting its wake-ups in `wakeups`.
    pub fn with_wakeups(mut self, wakeups: Arc<Wakeups>) -> Self {
        self.wakeups = wakeups;
        self
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
        if !self.hook.passes_everything() {
            self.hook.reached(point, resource).await;
        }
    }
}

impl std::fmt::Debug for LockContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LockContext").finish_non_exhaustive()
    }
}

/// The retry loop shared by every rung: calls `attempt` until it yields a
/// lease, an error that ends the acquire, or the wait budget (time and
/// attempts) is spent.
///
/// `attempt` returns `Ok(Some(lease))` when acquired, `Ok(None)` when the
/// lock is taken by someone else (try again), `Err` when it could not tell.
/// A [transient](LockError::transient) error (Redis down, a connection
/// refused, broken or timed out) is tried through like a taken lock, so a
/// client that starts during an outage gets the lock once the server is
/// back; any other error ends the acquire at once. When the budget runs
/// out after such an error, the acquire ends with the last one, not with
/// [`LockError::NotAcquired`]: an attempt that got no answer may have set
/// the key, so whether this client holds it is unknown.
///
/// `rung` is the lock's ladder entry: with the `notify` strategy, a
/// [reentrant](Rung::reentrant) lock's queued tasks also try while they
/// wait their turn (see [`crate::notify`]).
pub async fn retry_acquire<F, Fut>(
    ctx: &LockContext,
    config: &LockConfig,
    rung: &Rung,
    resource: &str,
    mut attempt: F,
) -> Result<Lease, LockError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<Option<Lease>, LockError>>,
{
    let mut budget = WaitBudget::start(ctx, config, resource);
    if let (WaitStrategy::Notify { fallback }, Some(notifier)) = (config.wait, &ctx.notifier) {
        // Boxed apart: the notified wait's state is large, and every
        // acquire's future would otherwise carry it (see `Lock::acquire`).
        let queued = if rung.reentrant {
            Queued::TriesEveryFallback
        } else {
            Queued::WaitsItsTurn
        };
        return Box::pin(acquire_notified(
            budget, notifier, fallback, queued, attempt,
        ))
        .await;
    }
    loop {
        let outcome = attempt().await;
        if let Some(lease) = budget.count(outcome)? {
            return Ok(lease);
        }
        let left = budget.left()?;
        let pause = config.wait.pause(budget.attempts, &ctx.tokens).min(left);
        ctx.clock.sleep(pause).await;
        ctx.wakeups.add();
    }
}

/// An acquire's wait budget: [`LockConfig::max_wait`] by the client's
/// monotonic clock, and [`LockConfig::max_attempts`]; and what its
/// attempts so far have shown.
pub(crate) struct WaitBudget<'a> {
    /// The acquiring client's context.
    pub(crate) ctx: &'a LockContext,
    config: &'a LockConfig,
    /// The lock's key.
    pub(crate) resource: &'a str,
    started: Duration,
    max_attempts: u32,
    /// Attempts made so far.
    pub(crate) attempts: u32,
    /// The last transient error an attempt met, if any did.
    last_error: Option<LockError>,
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
            attempts: 0,
            last_error: None,
        }
    }

    /// Makes one attempt and counts it: the lease when granted, `None`
    /// to try again (the lock is taken, or the attempt met a
    /// [transient](LockError::transient) error, which is kept), `Err` when
    /// the error ends the acquire.
    pub(crate) async fn attempt(
        &mut self,
        attempt: impl Future<Output = Result<Option<Lease>, LockError>>,
    ) -> Result<Option<Lease>, LockError> {
        let outcome = attempt.await;
        self.count(outcome)
    }

    /// Counts an attempt that ended with `outcome`: what
    /// [`attempt`](Self::attempt) answers for it. The retry loop awaits
    /// its attempt itself and calls this, so that its future does not hold
    /// the attempt's state twice (it is allocated on every acquire).
    pub(crate) fn count(
        &mut self,
        outcome: Result<Option<Lease>, LockError>,
    ) -> Result<Option<Lease>, LockError> {
        self.attempts += 1;
        match outcome {
            Err(e) if e.transient() => {
                self.last_error = Some(e);
                Ok(None)
            }
            other => other,
        }
    }

    /// The time left, or the error that ends the acquire once time or
    /// attempts are spent: the last transient error if an attempt met one
    /// (its outcome is unknown), else [`LockError::NotAcquired`].
    pub(crate) fn left(&mut self) -> Result<Duration, LockError> {
        let waited = self.ctx.clock.monotonic().saturating_sub(self.started);
        if waited >= self.config.max_wait || self.attempts >= self.max_attempts {
            return Err(self.last_error.take().unwrap_or(LockError::NotAcquired {
                resource: self.resource.to_string(),
                waited,
                attempts: self.attempts,
            }));
        }
        Ok(self.config.max_wait - waited)
    }
}

/// What one acquire carries from attempt to attempt: the token of an
/// attempt whose outcome is unknown (its `SET` may have landed although no
/// answer came).
///
/// The rungs whose token is random (`set-nx-px`, `get-check-del`,
/// `lua-release`, `fenced`) send that same token again in every later
/// attempt of the acquire, and when the key is taken, ask (with one
/// owner-checked script) whether it holds their token, re-arming its TTL if
/// so: the lost `SET` is then recognised as their own grant instead of a
/// stranger's lock to wait out. The other rungs cannot tell their own key
/// from another's and ignore it (see their docs).
#[derive(Debug, Default)]
pub struct Unsettled {
    token: std::sync::Mutex<Option<String>>,
}

impl Unsettled {
    /// The token the next attempt sends, and whether it is one an earlier
    /// attempt already sent without an answer (then a taken key may be its
    /// own). A fresh token is drawn only when no attempt is unsettled, so
    /// an acquire that meets no error draws exactly as before.
    pub fn token(&self, ctx: &LockContext) -> (String, bool) {
        match self.lock().clone() {
            Some(token) => (token, true),
            None => (ctx.tokens.token(), false),
        }
    }

    /// Keeps `token` for the later attempts when its attempt ended in an
    /// error whose outcome is unknown. Once kept it stays for the rest of
    /// the acquire: a `SET` still in flight may land at any later time.
    pub fn note<T>(&self, token: &str, result: &Result<T, LockError>) {
        if let Err(e) = result
            && e.outcome_unknown()
        {
            *self.lock() = Some(token.to_string());
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<String>> {
        self.token.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::SystemClock;
    use std::cell::Cell;

    fn ctx() -> LockContext {
        LockContext::new(Arc::new(SystemClock::new()), 1)
    }

    fn config(max_wait_ms: u64) -> LockConfig {
        LockConfig {
            max_wait: Duration::from_millis(max_wait_ms),
            wait: WaitStrategy::Fixed {
                interval: Duration::from_millis(1),
            },
            ..LockConfig::default()
        }
    }

    fn refused() -> LockError {
        LockError::Redis(redis::RedisError::from(std::io::Error::new(
            std::io::ErrorKind::ConnectionRefused,
            "redis is down",
        )))
    }

    fn lease() -> Lease {
        Lease::new("k", "t".into(), &Owner::new("c", 1), Duration::ZERO)
    }

    #[tokio::test]
    async fn an_acquire_tries_through_transient_errors_until_it_is_granted() {
        let tries = Cell::new(0);
        let got = retry_acquire(&ctx(), &config(1_000), &Rung::PLAIN, "k", || {
            tries.set(tries.get() + 1);
            let n = tries.get();
            async move {
                if n < 4 {
                    Err(refused())
                } else {
                    Ok(Some(lease()))
                }
            }
        })
        .await;
        assert!(got.is_ok(), "{got:?}");
        assert_eq!(tries.get(), 4);
    }

    #[tokio::test]
    async fn a_polling_waiter_counts_one_wakeup_per_retry() {
        let wakeups = Arc::new(Wakeups::default());
        let ctx = ctx().with_wakeups(wakeups.clone());
        let tries = Cell::new(0);
        let got = retry_acquire(&ctx, &config(1_000), &Rung::PLAIN, "k", || {
            tries.set(tries.get() + 1);
            let n = tries.get();
            async move { Ok((n == 5).then(lease)) }
        })
        .await;
        assert!(got.is_ok(), "{got:?}");
        assert_eq!(wakeups.total(), 4, "five tries are four wake-ups");
    }

    #[tokio::test]
    async fn an_acquire_that_meets_only_errors_ends_after_max_wait_with_the_last_one() {
        let started = std::time::Instant::now();
        let tries = Cell::new(0);
        let got = retry_acquire(&ctx(), &config(30), &Rung::PLAIN, "k", || {
            tries.set(tries.get() + 1);
            async { Err(refused()) }
        })
        .await;
        assert!(started.elapsed() >= Duration::from_millis(30));
        assert!(tries.get() > 1);
        let err = got.expect_err("never granted");
        assert!(err.outcome_unknown() && err.transient(), "{err:?}");
    }

    #[tokio::test]
    async fn an_error_before_a_wait_that_runs_out_leaves_the_outcome_unknown() {
        // The first attempt got no answer (its SET may have landed), the
        // others found the lock taken: the acquire cannot say "not
        // acquired" for sure.
        let tries = Cell::new(0);
        let got = retry_acquire(&ctx(), &config(20), &Rung::PLAIN, "k", || {
            tries.set(tries.get() + 1);
            let first = tries.get() == 1;
            async move { if first { Err(refused()) } else { Ok(None) } }
        })
        .await;
        assert!(got.expect_err("taken").outcome_unknown());
    }

    #[tokio::test]
    async fn an_error_that_cannot_change_ends_the_acquire_at_once() {
        let tries = Cell::new(0);
        let got = retry_acquire(&ctx(), &config(1_000), &Rung::PLAIN, "k", || {
            tries.set(tries.get() + 1);
            async {
                Err(LockError::Protocol {
                    command: "script",
                    reply: "?".into(),
                })
            }
        })
        .await;
        assert!(matches!(got, Err(LockError::Protocol { .. })), "{got:?}");
        assert_eq!(tries.get(), 1);
    }

    #[tokio::test]
    async fn a_lock_that_stays_taken_without_errors_is_not_acquired() {
        let got = retry_acquire(&ctx(), &config(10), &Rung::PLAIN, "k", || async {
            Ok(None)
        })
        .await;
        assert!(matches!(got, Err(LockError::NotAcquired { .. })), "{got:?}");
    }

    #[test]
    fn an_unanswered_token_is_sent_again_and_a_fresh_one_drawn_otherwise() {
        let ctx = ctx();
        let unsettled = Unsettled::default();
        let (first, resent) = unsettled.token(&ctx);
        assert!(!resent);
        unsettled.note(&first, &Ok::<_, LockError>(false));
        let (second, resent) = unsettled.token(&ctx);
        assert!(!resent);
        assert_ne!(first, second, "a definite answer settles the attempt");
        unsettled.note(&second, &Err::<bool, _>(refused()));
        assert_eq!(unsettled.token(&ctx), (second.clone(), true));
        // Kept for the rest of the acquire, whatever later attempts hear.
        unsettled.note(&second, &Ok::<_, LockError>(false));
        assert_eq!(unsettled.token(&ctx), (second, true));
    }
}
