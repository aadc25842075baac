//! A lock defined outside the `locks` crate, and how locklab tests it
//! through the public API: registered as a rung by name with a factory,
//! run through the suite (every scenario that names the rung it plays)
//! and searched by `explore`. Shared by the example's `main.rs` and the
//! test that runs it (`tests/cli_tests/own_lock.rs`).

use locks::{
    BoxFuture, FaultPoint, Lease, Lock, LockConfig, LockContext, LockError, NodeConnection, Owner,
    Registration, Rung, RungParts,
};
use model::scenario::Scenario;
use sim::explore::{FaultMode, Limit, SearchConfig};
use sim::suite::{Grid, SuiteRun};
use std::sync::{LazyLock, OnceLock};

/// The lock's metadata: an id of its own, off the ladder.
pub static RUNG: Rung = Rung {
    id: "example-lease-lock",
    acquire: "SET key token NX PX ttl",
    release: "compare-and-delete Lua script",
    fixes: "an owner-checked release in one atomic step",
    flaw: "the lease can expire while the holder works",
    ..Rung::OFF_LADDER
};

/// Deletes the key only if it still holds my token: 1 or 0.
static RELEASE: LazyLock<redis::Script> = LazyLock::new(|| {
    redis::Script::new(
        "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0",
    )
});

/// Re-arms the TTL only if the key still holds my token: 1 or 0.
static EXTEND: LazyLock<redis::Script> = LazyLock::new(|| {
    redis::Script::new(
        "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) end return 0",
    )
});

/// A lease lock on one node: everything it knows of the world comes in
/// its [`RungParts`], so it runs the same on simulated and real Redis.
pub struct LeaseLock {
    conn: NodeConnection,
    ctx: LockContext,
    config: LockConfig,
}

impl LeaseLock {
    /// The factory the registry calls for every client it builds.
    pub fn new(parts: RungParts) -> Self {
        LeaseLock {
            conn: parts.first(),
            ctx: parts.ctx,
            config: parts.config,
        }
    }

    fn ttl_ms(&self) -> u64 {
        (self.config.ttl.as_millis() as u64).max(1)
    }

    /// One try: the lease if the key was free.
    async fn attempt(&self, resource: &str, owner: &Owner) -> Result<Option<Lease>, LockError> {
        let token = self.ctx.tokens.token();
        let started = self.ctx.clock.monotonic();
        let set: Option<String> = redis::cmd("SET")
            .arg(resource)
            .arg(&token)
            .arg("NX")
            .arg("PX")
            .arg(self.ttl_ms())
            .query_async(&mut self.conn.clone())
            .await?;
        Ok(set.map(|_| Lease::new(resource, token, owner, started)))
    }

    /// Runs an owner-checked script on a lease: whether it acted.
    async fn checked(&self, script: &redis::Script, lease: &Lease) -> Result<bool, LockError> {
        let mut invocation = script.key(&lease.resource);
        invocation.arg(&lease.token).arg(self.ttl_ms());
        let done: i64 = invocation.invoke_async(&mut self.conn.clone()).await?;
        Ok(done == 1)
    }
}

fn not_held(lease: &Lease) -> LockError {
    LockError::NotHeld {
        resource: lease.resource.clone(),
    }
}

impl Lock for LeaseLock {
    fn rung(&self) -> &'static Rung {
        &RUNG
    }

    fn acquire<'a>(
        &'a self,
        resource: &'a str,
        owner: &'a Owner,
    ) -> BoxFuture<'a, Result<Lease, LockError>> {
        Box::pin(async move {
            // The wait strategy and budget the scenario configures.
            let lease = locks::retry_acquire(&self.ctx, &self.config, &RUNG, resource, || {
                self.attempt(resource, owner)
            })
            .await?;
            // Fault points let the simulator pause or crash the client here.
            self.ctx.point(FaultPoint::AfterAcquire, resource).await;
            Ok(lease)
        })
    }

    fn release<'a>(&'a self, lease: &'a Lease) -> BoxFuture<'a, Result<(), LockError>> {
        Box::pin(async move {
            self.ctx
                .point(FaultPoint::ReleaseStart, &lease.resource)
                .await;
            let released = self.checked(&RELEASE, lease).await?;
            self.ctx
                .point(FaultPoint::ReleaseMid, &lease.resource)
                .await;
            if released {
                Ok(())
            } else {
                Err(not_held(lease))
            }
        })
    }

    fn extend<'a>(&'a self, lease: &'a mut Lease) -> BoxFuture<'a, Result<(), LockError>> {
        Box::pin(async move {
            if self.checked(&EXTEND, lease).await? {
                Ok(())
            } else {
                Err(not_held(lease))
            }
        })
    }

    fn before_write<'a>(&'a self, lease: &'a Lease) -> BoxFuture<'a, Result<(), LockError>> {
        Box::pin(async move {
            self.ctx
                .point(FaultPoint::BeforeWrite, &lease.resource)
                .await;
            Ok(())
        })
    }
}

/// Registers the lock as a rung (once per process), taking the part of
/// `lua-release` in scenarios; its id.
pub fn register() -> &'static str {
    static REGISTERED: OnceLock<()> = OnceLock::new();
    REGISTERED.get_or_init(|| {
        let registration = Registration::new(&RUNG, |parts| {
            Box::new(LeaseLock::new(parts)) as Box<dyn Lock>
        })
        .playing("lua-release");
        locks::register(registration).expect("the example's id is free");
    });
    RUNG.id
}

/// The suite for the registered lock: every scenario that names the rung
/// it plays, with that rung's expectations, on `workers` threads.
pub fn suite(scenarios: &[Scenario], workers: usize) -> Result<SuiteRun, String> {
    let id = register();
    let adopted = scenarios
        .iter()
        .filter(|s| sim::rung_file::has_part(s, id))
        .map(|s| {
            let mut s = sim::rung_file::adopt(s, id)?;
            // Only this lock's cells.
            s.rungs.retain(|r| r == id);
            Ok(s)
        })
        .collect::<Result<Vec<_>, String>>()?;
    sim::suite::run_suite(&adopted, Grid::Named, workers, &|_, _, _| {})
}

/// A search of `cases` generated fault schedules for the lock, from seed 0.
pub fn explore(cases: u64, workers: usize) -> sim::explore::Outcome {
    let config = SearchConfig {
        rung: register().to_string(),
        mode: FaultMode::All,
        limit: Limit::Cases(cases),
        seed: 0,
        shard: (0, 1),
        workers,
        shrink: true,
        shrink_runs: 200,
    };
    sim::explore::search(&config, &|_| {})
}
