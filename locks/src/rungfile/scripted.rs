//! The generic lock that runs a rung file: each operation is the file's
//! script or command, filled with the call's values, and its reply is read
//! through the file's outcomes. What it adds is what every rung of the
//! ladder shares: the retry loop and wait strategy, the fault points, the
//! concurrent round of a multi-node lock with its quorum and validity, and
//! a watchdog's renewals.
//!
//! Fault points: a one-call acquire has no `acquire-mid` (a fault aimed
//! there lands at `after-acquire`); a multi-node acquire passes
//! `acquire-reply` as each node's reply comes in; a release is one step,
//! so `release-mid` lands just after it, whatever it answered.

use super::{Call, Nodes, Operation, Outcome, OwnerMark, RungFile, Values};
use crate::clock::BoxFuture;
use crate::error::LockError;
use crate::fault::FaultPoint;
use crate::ladder::Rung;
use crate::lease::{Lease, Owner};
use crate::lock::{Lock, LockConfig, LockContext, Unsettled, retry_acquire};
use crate::registry::{NodeConnection, RungParts};
use crate::renewal::{self, Renewals};
use crate::rungs::common::{self, between_release_points, pass_before_write};
use crate::rungs::masters::{on_every_node, redlock_timed_out};
use redis::Value;
use std::sync::Arc;
use std::time::Duration;

use super::reply::Captured;

/// What a call to the nodes needs, shared with the renewal task.
struct Core {
    file: Arc<RungFile>,
    rung: &'static Rung,
    nodes: Vec<NodeConnection>,
    ctx: LockContext,
    config: LockConfig,
}

/// A rung file's lock.
pub struct ScriptedLock {
    core: Arc<Core>,
    renewals: Renewals,
}

impl ScriptedLock {
    /// The lock `file` describes, with metadata `rung`, over `parts`; the
    /// file's wait strategy, if it gives one, replaces the configured one.
    pub fn new(file: Arc<RungFile>, rung: &'static Rung, parts: RungParts) -> Self {
        let RungParts {
            nodes,
            ctx,
            mut config,
        } = parts;
        if let Some(wait) = file.wait {
            config.wait = wait;
        }
        ScriptedLock {
            core: Arc::new(Core {
                file,
                rung,
                nodes,
                ctx,
                config,
            }),
            renewals: Renewals::default(),
        }
    }
}

/// The label of an operation in an error about its reply.
fn label(op: &Operation) -> &'static str {
    match op.kind {
        super::OperationKind::Acquire => "a rung file's acquire",
        super::OperationKind::Release => "a rung file's release",
        super::OperationKind::Extend => "a rung file's extend",
        super::OperationKind::Reclaim => "a rung file's reclaim",
    }
}

impl Core {
    /// Sends `op` to one node and reads what its reply means.
    async fn call(
        &self,
        mut conn: NodeConnection,
        op: &Operation,
        values: &Values<'_>,
    ) -> Result<(Outcome, Captured), LockError> {
        let reply: Value = match &op.call {
            Call::Script { script, keys, argv } => {
                let mut invocation = script.prepare_invoke();
                for key in keys {
                    invocation.key(key.fill(values));
                }
                for arg in argv {
                    invocation.arg(arg.fill(values));
                }
                invocation.invoke_async(&mut conn).await?
            }
            Call::Command(words) => {
                let mut cmd = redis::cmd(&words[0].fill(values));
                for word in &words[1..] {
                    cmd.arg(word.fill(values));
                }
                cmd.query_async(&mut conn).await?
            }
        };
        op.outcome_of(&reply).ok_or_else(|| LockError::Protocol {
            command: label(op),
            reply: format!(
                "{reply:?}, which none of {}'s outcomes matches ({})",
                self.file.file,
                op.expected()
            ),
        })
    }

    /// The values of a call about `lease`.
    fn values<'a>(&self, lease: &'a Lease, owner: &'a str) -> Values<'a> {
        self.values_of(&lease.resource, &lease.token, owner)
    }

    /// The values of a call on `key` with owner mark `token`.
    fn values_of<'a>(&self, key: &'a str, token: &'a str, owner: &'a str) -> Values<'a> {
        Values {
            key,
            token,
            owner,
            ttl: self.config.ttl,
        }
    }

    /// The votes a multi-node round needs, or why it cannot be had.
    fn quorum(&self) -> Result<usize, LockError> {
        let Nodes::Independent { quorum, .. } = self.file.nodes else {
            return Ok(1);
        };
        let needed = quorum.of(self.nodes.len());
        if needed > self.nodes.len() {
            return Err(LockError::Unsupported {
                rung: self.rung.id,
                operation: "a quorum larger than the number of nodes it was given",
            });
        }
        Ok(needed)
    }

    /// What is left of the TTL after `elapsed` and the drift allowance.
    fn validity(&self, elapsed: Duration) -> Duration {
        let ttl = self.config.ttl;
        let drift = match self.file.nodes {
            Nodes::Independent { drift, .. } => drift.of(ttl),
            Nodes::Single => Duration::ZERO,
        };
        ttl.saturating_sub(elapsed).saturating_sub(drift)
    }

    /// The validity a round that began at `started` leaves, now: `None`
    /// unless at least `quorum` nodes replied `want` and some of the TTL
    /// is left after the round and the drift allowance.
    fn quorum_validity(
        &self,
        replies: &[Result<(Outcome, Captured), LockError>],
        want: Outcome,
        quorum: usize,
        started: Duration,
    ) -> Option<Duration> {
        let agreed = replies
            .iter()
            .filter(|r| matches!(r, Ok((outcome, _)) if *outcome == want))
            .count();
        let valid_for = self.validity(self.ctx.clock.monotonic().saturating_sub(started));
        (agreed >= quorum && !valid_for.is_zero()).then_some(valid_for)
    }

    /// One try on a single node; with a `reclaim` operation, an attempt
    /// after one whose outcome is unknown sends the same token and, if the
    /// lock is taken, asks whether it is its own lost grant.
    async fn attempt_single(
        &self,
        resource: &str,
        owner: &Owner,
        unsettled: &Unsettled,
    ) -> Result<Option<Lease>, LockError> {
        let field = owner.field();
        let reclaim = self.file.reclaim.as_ref();
        let (token, resent) = match (self.file.token, reclaim) {
            (OwnerMark::Owner, _) => (field.clone(), false),
            (OwnerMark::Random, Some(_)) => unsettled.token(&self.ctx),
            (OwnerMark::Random, None) => (self.ctx.tokens.token(), false),
        };
        let started = self.ctx.clock.monotonic();
        let values = self.values_of(resource, &token, &field);
        let conn = self.nodes[0].clone();
        let granted = async {
            let (outcome, kept) = self.call(conn.clone(), &self.file.acquire, &values).await?;
            if outcome == Outcome::Granted {
                return Ok(Some(kept));
            }
            match reclaim {
                Some(reclaim) if resent => {
                    let (outcome, kept) = self.call(conn, reclaim, &values).await?;
                    Ok((outcome == Outcome::Granted).then_some(kept))
                }
                _ => Ok(None),
            }
        }
        .await;
        if reclaim.is_some() {
            unsettled.note(&token, &granted);
        }
        Ok(granted?.map(|kept| Lease {
            depth: kept.depth.unwrap_or(1),
            fence: kept.fence,
            ..Lease::new(resource, token, owner, started)
        }))
    }

    /// One concurrent round over every node: held with a quorum of grants
    /// and a positive validity; else undone on every node (answered or
    /// not: a grant may land after its timeout).
    async fn attempt_round(
        &self,
        resource: &str,
        owner: &Owner,
    ) -> Result<Option<Lease>, LockError> {
        let quorum = self.quorum()?;
        let field = owner.field();
        let token = match self.file.token {
            OwnerMark::Random => self.ctx.tokens.token(),
            OwnerMark::Owner => field.clone(),
        };
        let started = self.ctx.clock.monotonic();
        let values = self.values_of(resource, &token, &field);
        let replies = self
            .round(Some(resource), &self.file.acquire, &values)
            .await;
        if let Some(valid_for) = self.quorum_validity(&replies, Outcome::Granted, quorum, started) {
            return Ok(Some(Lease {
                validity: Some(valid_for),
                ..Lease::new(resource, token, owner, started)
            }));
        }
        self.round(None, &self.file.release, &values).await;
        Ok(None)
    }

    /// `op` on every node at once, each bounded by the node timeout.
    async fn round(
        &self,
        reporting: Option<&str>,
        op: &Operation,
        values: &Values<'_>,
    ) -> Vec<Result<(Outcome, Captured), LockError>> {
        let deadline = Some((
            self.config.node_timeout,
            redlock_timed_out as fn() -> LockError,
        ));
        on_every_node(&self.ctx, &self.nodes, deadline, reporting, |conn| {
            self.call(conn, op, values)
        })
        .await
    }

    /// Extends on one node: `extended`, or not held.
    async fn extend_single(&self, lease: &Lease, extend: &Operation) -> Result<(), LockError> {
        let field = lease.owner.field();
        let values = self.values(lease, &field);
        match self.call(self.nodes[0].clone(), extend, &values).await? {
            (Outcome::Extended, _) => Ok(()),
            _ => Err(common::not_held(&lease.resource)),
        }
    }
}

impl ScriptedLock {
    /// Starts the renewal of a fresh hold, if the file renews.
    fn start_holding(&self, lease: &mut Lease) {
        let (Some(interval), Some(_)) = (self.core.file.renewal, &self.core.file.extend) else {
            return;
        };
        let core = self.core.clone();
        let held = lease.clone();
        self.renewals.watch(lease, move |flag| {
            let period = interval.period(core.config.ttl);
            let clock = core.ctx.clock.clone();
            tokio::spawn(renewal::renew_loop(clock, period, flag, move || {
                let (core, held) = (core.clone(), held.clone());
                async move {
                    match &core.file.extend {
                        Some(extend) => core.extend_single(&held, extend).await,
                        None => Ok(()),
                    }
                }
            }));
        });
    }
}

impl Lock for ScriptedLock {
    fn rung(&self) -> &'static Rung {
        self.core.rung
    }

    fn acquire<'a>(
        &'a self,
        resource: &'a str,
        owner: &'a Owner,
    ) -> BoxFuture<'a, Result<Lease, LockError>> {
        Box::pin(async move {
            let core = &self.core;
            let unsettled = Unsettled::default();
            let mut lease = retry_acquire(&core.ctx, &core.config, core.rung, resource, || async {
                match core.file.nodes {
                    Nodes::Single => core.attempt_single(resource, owner, &unsettled).await,
                    Nodes::Independent { .. } => core.attempt_round(resource, owner).await,
                }
            })
            .await?;
            self.start_holding(&mut lease);
            core.ctx.point(FaultPoint::AfterAcquire, resource).await;
            Ok(lease)
        })
    }

    fn release<'a>(&'a self, lease: &'a Lease) -> BoxFuture<'a, Result<(), LockError>> {
        Box::pin(async move {
            let core = &self.core;
            let field = lease.owner.field();
            let values = core.values(lease, &field);
            let release = &core.file.release;
            if let Nodes::Independent { .. } = core.file.nodes {
                let round = async { Ok(core.round(None, release, &values).await) };
                let replies = between_release_points(&core.ctx, lease, round).await?;
                let gave_back = |r: &Result<(Outcome, Captured), LockError>| {
                    matches!(r, Ok((Outcome::Released | Outcome::StillHeld, _)))
                };
                if replies.iter().any(gave_back) {
                    return Ok(());
                }
                // Nobody gave it back. If every node answered, it was not
                // held; if one did not, that one may still have it.
                return match replies.into_iter().find_map(Result::err) {
                    Some(err) => Err(err),
                    None => Err(common::not_held(&lease.resource)),
                };
            }
            let step = async {
                let outcome = core
                    .call(core.nodes[0].clone(), release, &values)
                    .await
                    .map(|(o, _)| o);
                let gone = matches!(outcome, Ok(Outcome::Released | Outcome::NotMine));
                self.renewals.unwatch(lease, gone);
                Ok(outcome)
            };
            match between_release_points(&core.ctx, lease, step).await?? {
                Outcome::Released | Outcome::StillHeld => Ok(()),
                _ => Err(common::not_held(&lease.resource)),
            }
        })
    }

    fn extend<'a>(&'a self, lease: &'a mut Lease) -> BoxFuture<'a, Result<(), LockError>> {
        Box::pin(async move {
            let core = &self.core;
            let Some(extend) = &core.file.extend else {
                return Err(common::unsupported(core.rung.id, "extend"));
            };
            if let Nodes::Single = core.file.nodes {
                return core.extend_single(lease, extend).await;
            }
            // Re-armed on every node; held again only with a quorum and a
            // fresh positive validity.
            let quorum = core.quorum()?;
            let started = core.ctx.clock.monotonic();
            let field = lease.owner.field();
            let replies = core.round(None, extend, &core.values(lease, &field)).await;
            match core.quorum_validity(&replies, Outcome::Extended, quorum, started) {
                Some(valid_for) => {
                    lease.acquired_at = started;
                    lease.validity = Some(valid_for);
                    Ok(())
                }
                None => Err(common::not_held(&lease.resource)),
            }
        })
    }

    fn before_write<'a>(&'a self, lease: &'a Lease) -> BoxFuture<'a, Result<(), LockError>> {
        Box::pin(async move {
            let core = &self.core;
            lease.check_not_lost("the watchdog could not renew the lease")?;
            if let Some(valid_for) = lease.validity {
                let held_for = core.ctx.clock.monotonic().saturating_sub(lease.acquired_at);
                if held_for >= valid_for {
                    return Err(LockError::LeaseLost {
                        resource: lease.resource.clone(),
                        why: format!(
                            "validity {valid_for:?} spent ({held_for:?} since acquire began)"
                        ),
                    });
                }
            }
            pass_before_write(&core.ctx, lease).await
        })
    }
}

impl Drop for ScriptedLock {
    fn drop(&mut self) {
        self.renewals.stop_all();
    }
}
