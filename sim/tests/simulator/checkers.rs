//! The checkers, verdicts and renderers against hand-written histories:
//! histories that are violations must be caught with their exact witness,
//! and histories that are not must pass. A deliberately mis-built checker
//! fails here.

use judge::check::{
    self, Check, CheckConfig, CheckResults, Damage, liveness, mutual_exclusion, resource,
};
use judge::matrix::Cell;
use judge::verdict::{VerdictDoc, verdict_json};
use model::fault::FaultKind;
use model::history::{EventKind, History, Op, Outcome, Phase};
use model::resource::{ResourceKind, ResourceSpec};
use model::verdict::Verdict;
use report::matrix;
use report::timeline;
use std::time::Duration;

const LOCK: &str = "lock";

/// A history under construction, times in ms.
#[derive(Default)]
struct Hist(History);

impl Hist {
    fn invoke(&mut self, ms: u64, client: usize, op: Op) -> usize {
        self.0.push(
            ms * 1000,
            EventKind::Invoke {
                client,
                op,
                lock: LOCK.into(),
                n: 1,
                value: None,
                shared: false,
            },
        )
    }

    /// A reader's acquire, asked and granted shared, from `from` to `to`;
    /// returns the complete's index.
    fn acquire_shared(&mut self, from: u64, to: u64, client: usize) -> usize {
        let asked = EventKind::Invoke {
            client,
            op: Op::Acquire,
            lock: LOCK.into(),
            n: 1,
            value: None,
            shared: true,
        };
        self.0.push(from * 1000, asked);
        let granted = EventKind::Complete {
            client,
            op: Op::Acquire,
            lock: LOCK.into(),
            n: 1,
            outcome: Outcome::Ok,
            token: None,
            fence: None,
            depth: None,
            valid_for_us: None,
            value: None,
            error: None,
            shared: true,
        };
        self.0.push(to * 1000, granted)
    }

    fn complete_with(
        &mut self,
        ms: u64,
        client: usize,
        op: Op,
        outcome: Outcome,
        value: Option<i64>,
        fence: Option<u64>,
    ) -> usize {
        self.0.push(
            ms * 1000,
            EventKind::Complete {
                client,
                op,
                lock: LOCK.into(),
                n: 1,
                outcome,
                token: None,
                fence,
                depth: None,
                valid_for_us: None,
                value,
                error: None,
                shared: false,
            },
        )
    }

    fn complete(&mut self, ms: u64, client: usize, op: Op, outcome: Outcome) -> usize {
        self.complete_with(ms, client, op, outcome, None, None)
    }

    /// An acquire from `from` to `to`; returns the complete's index.
    fn acquire(&mut self, from: u64, to: u64, client: usize, outcome: Outcome) -> usize {
        self.invoke(from, client, Op::Acquire);
        self.complete(to, client, Op::Acquire, outcome)
    }

    /// A release invoked at `ms` and completed at once; returns the invoke's index.
    fn release(&mut self, ms: u64, client: usize) -> usize {
        let i = self.invoke(ms, client, Op::Release);
        self.complete(ms, client, Op::Release, Outcome::Ok);
        i
    }

    /// A read that saw `value` (and sent `fence`); returns the complete's index.
    fn read(&mut self, ms: u64, client: usize, value: i64, fence: Option<u64>) -> usize {
        self.invoke(ms, client, Op::Read);
        self.complete_with(ms, client, Op::Read, Outcome::Ok, Some(value), fence)
    }

    /// A write of `value`; returns the complete's index.
    fn write(
        &mut self,
        ms: u64,
        client: usize,
        value: i64,
        fence: Option<u64>,
        outcome: Outcome,
    ) -> usize {
        self.invoke(ms, client, Op::Write);
        self.complete_with(ms, client, Op::Write, outcome, Some(value), fence)
    }

    /// The accepted completion of a write invoked earlier (with
    /// `invoke(.., Op::Write)`); returns its index.
    fn written(&mut self, ms: u64, client: usize, value: i64, fence: Option<u64>) -> usize {
        self.complete_with(ms, client, Op::Write, Outcome::Ok, Some(value), fence)
    }

    fn fault(&mut self, ms: u64, fault: FaultKind, target: &str, phase: Phase) -> usize {
        self.0.push(
            ms * 1000,
            EventKind::Fault {
                fault,
                target: target.parse().expect("a fault target"),
                phase,
                detail: String::new(),
            },
        )
    }

    fn final_value(&mut self, ms: u64, value: i64) -> usize {
        self.0.push(ms * 1000, EventKind::Final { value })
    }

    fn mutex(&self) -> (Check, check::MutexDamage) {
        mutual_exclusion::check(&self.0)
    }
}

fn witness(check: &Check) -> Vec<usize> {
    assert!(check.is_invalid(), "expected invalid, got {check:?}");
    check.witness().to_vec()
}

// ---------------------------------------------------------------------------
// Mutual exclusion

#[test]
fn two_clients_holding_at_once_violate_mutual_exclusion_with_both_acquires_and_releases_as_witness()
{
    let mut h = Hist::default();
    let a = h.acquire(0, 1, 0, Outcome::Ok);
    let b = h.acquire(2, 6, 1, Outcome::Ok);
    let a_end = h.release(10, 0);
    let b_end = h.release(20, 1);
    let (check, damage) = h.mutex();
    assert_eq!(witness(&check), vec![a, b, a_end, b_end]);
    assert_eq!(damage.overlap_pairs, 1);
    assert_eq!(
        damage.overlap_ms, 4.0,
        "from 6 ms (B acquired) to 10 ms (A released)"
    );
}

#[test]
fn sequential_holds_are_mutually_exclusive() {
    let mut h = Hist::default();
    h.acquire(0, 1, 0, Outcome::Ok);
    h.invoke(2, 1, Op::Acquire);
    h.release(10, 0);
    h.complete(11, 1, Op::Acquire, Outcome::Ok);
    h.release(20, 1);
    let (check, damage) = h.mutex();
    assert_eq!(check, Check::Valid);
    assert_eq!(damage.overlap_pairs, 0);
    assert_eq!(damage.overlap_ms, 0.0);
}

#[test]
fn a_nested_acquire_by_the_same_owner_is_not_a_second_holder() {
    let mut h = Hist::default();
    h.acquire(0, 1, 0, Outcome::Ok);
    h.acquire(2, 3, 0, Outcome::Ok);
    h.release(4, 0);
    h.release(5, 0);
    h.acquire(6, 7, 1, Outcome::Ok);
    h.release(8, 1);
    assert_eq!(h.mutex().0, Check::Valid);
}

#[test]
fn releasing_the_inner_of_two_nested_acquires_does_not_end_the_hold() {
    let mut h = Hist::default();
    let a = h.acquire(0, 1, 0, Outcome::Ok);
    h.acquire(2, 3, 0, Outcome::Ok);
    h.release(4, 0);
    let b = h.acquire(5, 6, 1, Outcome::Ok);
    let a_end = h.release(8, 0);
    let b_end = h.release(9, 1);
    assert_eq!(witness(&h.mutex().0), vec![a, b, a_end, b_end]);
}

#[test]
fn a_hold_ended_by_a_crash_lets_another_client_acquire_safely() {
    let mut h = Hist::default();
    h.acquire(0, 1, 0, Outcome::Ok);
    h.fault(5, FaultKind::Crash, "client-0", Phase::Instant);
    h.acquire(6, 7, 1, Outcome::Ok);
    h.release(9, 1);
    assert_eq!(h.mutex().0, Check::Valid);
}

#[test]
fn a_paused_holder_whose_check_failed_before_the_other_acquired_is_safe() {
    let mut h = Hist::default();
    h.acquire(0, 1, 0, Outcome::Ok);
    h.fault(2, FaultKind::Pause, "client-0", Phase::Start);
    h.fault(30, FaultKind::Pause, "client-0", Phase::End);
    h.invoke(30, 0, Op::Check);
    h.complete(30, 0, Op::Check, Outcome::Fail);
    h.acquire(31, 32, 1, Outcome::Ok);
    h.release(40, 1);
    assert_eq!(h.mutex().0, Check::Valid);
}

#[test]
fn a_paused_holder_still_holds_so_another_acquiring_during_the_pause_violates_exclusion() {
    let mut h = Hist::default();
    let a = h.acquire(0, 1, 0, Outcome::Ok);
    h.fault(2, FaultKind::Pause, "client-0", Phase::Start);
    let b = h.acquire(20, 21, 1, Outcome::Ok);
    h.fault(30, FaultKind::Pause, "client-0", Phase::End);
    let a_end = h.release(31, 0);
    let b_end = h.release(40, 1);
    let (check, damage) = h.mutex();
    assert_eq!(witness(&check), vec![a, b, a_end, b_end]);
    assert_eq!(damage.overlap_ms, 10.0);
}

/// Replaces the `valid_for_us` of the event at `i` (an acquire complete).
fn set_valid_for(h: &mut Hist, i: usize, ms: u64) {
    let mut events = h.0.events().to_vec();
    if let EventKind::Complete { valid_for_us, .. } = &mut events[i].kind {
        *valid_for_us = Some(ms * 1000);
    }
    h.0 = events.into_iter().collect();
}

#[test]
fn a_hold_ends_when_the_validity_the_client_computed_runs_out() {
    let mut h = Hist::default();
    let a = h.acquire(0, 1, 0, Outcome::Ok);
    set_valid_for(&mut h, a, 9);
    h.fault(2, FaultKind::Pause, "client-0", Phase::Start);
    h.acquire(12, 13, 1, Outcome::Ok);
    h.fault(30, FaultKind::Pause, "client-0", Phase::End);
    h.release(31, 0);
    h.release(40, 1);
    assert_eq!(h.mutex().0, Check::Valid);
}

#[test]
fn an_acquire_before_the_holders_validity_runs_out_overlaps_without_an_end_event() {
    let mut h = Hist::default();
    let a = h.acquire(0, 1, 0, Outcome::Ok);
    set_valid_for(&mut h, a, 9);
    let b = h.acquire(2, 4, 1, Outcome::Ok);
    h.release(20, 0);
    let b_end = h.release(21, 1);
    let (check, damage) = h.mutex();
    assert_eq!(witness(&check), vec![a, b, b_end]);
    assert_eq!(
        damage.overlap_ms, 6.0,
        "from 4 ms to 10 ms (1 ms + 9 ms of validity)"
    );
}

#[test]
fn an_unknown_or_failed_acquire_does_not_count_as_holding() {
    let mut h = Hist::default();
    h.acquire(0, 5, 0, Outcome::Unknown);
    h.acquire(0, 5, 2, Outcome::Fail);
    h.acquire(1, 2, 1, Outcome::Ok);
    h.release(10, 1);
    assert_eq!(h.mutex().0, Check::Valid);
}

#[test]
fn holds_that_meet_in_the_same_microsecond_overlap_when_the_second_began_first() {
    let mut h = Hist::default();
    let a = h.acquire(0, 1, 0, Outcome::Ok);
    let b = h.acquire(2, 10, 1, Outcome::Ok);
    let a_end = h.release(10, 0);
    let b_end = h.release(12, 1);
    let (check, damage) = h.mutex();
    assert_eq!(witness(&check), vec![a, b, a_end, b_end]);
    assert_eq!((damage.overlap_pairs, damage.overlap_ms), (1, 0.0));
}

#[test]
fn a_holder_until_the_end_of_the_history_has_no_end_event_in_the_witness() {
    let mut h = Hist::default();
    let a = h.acquire(0, 1, 0, Outcome::Ok);
    let b = h.acquire(2, 3, 1, Outcome::Ok);
    h.final_value(10, 0);
    let (check, damage) = h.mutex();
    assert_eq!(witness(&check), vec![a, b]);
    assert_eq!(damage.overlap_ms, 7.0);
}

// ---------------------------------------------------------------------------
// The guarded resource

const INVENTORY: ResourceSpec = ResourceSpec {
    kind: ResourceKind::Inventory,
    stock: 10,
};
const FENCED: ResourceSpec = ResourceSpec {
    kind: ResourceKind::Fenced,
    stock: 10,
};

#[test]
fn two_sales_from_the_same_stock_are_a_lost_update_witnessed_by_both_reads_and_writes() {
    let mut h = Hist::default();
    let ra = h.read(0, 0, 10, None);
    let rb = h.read(1, 1, 10, None);
    let wa = h.write(2, 0, 9, None, Outcome::Ok);
    let wb = h.write(3, 1, 9, None, Outcome::Ok);
    h.final_value(4, 9);
    let (check, damage) = resource::check(&h.0, &INVENTORY);
    assert_eq!(witness(&check), vec![ra, rb, wa, wb]);
    assert_eq!(damage.lost_updates, Some(1));
    assert_eq!(damage.oversold, Some(0));
    assert_eq!(damage.stale_writes_accepted, None);
}

#[test]
fn sequential_sales_that_match_the_final_stock_are_valid() {
    let mut h = Hist::default();
    h.read(0, 0, 10, None);
    h.write(1, 0, 9, None, Outcome::Ok);
    h.read(2, 1, 9, None);
    h.write(3, 1, 8, None, Outcome::Ok);
    h.read(4, 1, 8, None);
    h.write(5, 1, 7, None, Outcome::Fail);
    h.final_value(6, 8);
    let (check, damage) = resource::check(&h.0, &INVENTORY);
    assert_eq!(check, Check::Valid);
    assert_eq!(damage.lost_updates, Some(0));
}

#[test]
fn a_final_stock_higher_than_the_accepted_sales_allow_is_a_lost_update() {
    let mut h = Hist::default();
    h.read(0, 0, 10, None);
    h.write(1, 0, 9, None, Outcome::Ok);
    h.read(2, 1, 9, None);
    h.write(3, 1, 8, None, Outcome::Ok);
    let f = h.final_value(6, 9);
    let (check, damage) = resource::check(&h.0, &INVENTORY);
    assert_eq!(witness(&check), vec![f]);
    assert_eq!(damage.lost_updates, Some(1));
}

#[test]
fn accepting_more_sales_than_the_initial_stock_is_overselling() {
    let spec = ResourceSpec {
        kind: ResourceKind::Inventory,
        stock: 1,
    };
    let mut h = Hist::default();
    h.read(0, 0, 1, None);
    h.write(1, 0, 0, None, Outcome::Ok);
    h.read(2, 1, 0, None);
    let second = h.write(3, 1, -1, None, Outcome::Ok);
    let f = h.final_value(4, -1);
    let (check, damage) = resource::check(&h.0, &spec);
    assert_eq!(witness(&check), vec![second, f]);
    assert_eq!(damage.oversold, Some(1));
    assert_eq!(damage.lost_updates, Some(0));
}

#[test]
fn without_a_final_event_the_resource_is_unknown() {
    let mut h = Hist::default();
    h.read(0, 0, 10, None);
    h.write(1, 0, 9, None, Outcome::Ok);
    let (check, damage) = resource::check(&h.0, &INVENTORY);
    assert!(check.is_unknown(), "{check:?}");
    assert_eq!(damage.lost_updates, None);
}

#[test]
fn a_fenced_store_accepting_a_stale_token_is_a_violation() {
    let mut h = Hist::default();
    h.read(0, 0, 10, Some(1));
    let newer = h.read(5, 1, 10, Some(2));
    h.write(6, 1, 9, Some(2), Outcome::Ok);
    let stale = h.write(7, 0, 9, Some(1), Outcome::Ok);
    h.final_value(8, 9);
    let (check, damage) = resource::check(&h.0, &FENCED);
    assert_eq!(witness(&check), vec![newer, stale - 1, stale]);
    assert_eq!(damage.stale_writes_accepted, Some(1));
    assert_eq!(damage.repeated_tokens, Some(0));
    assert_eq!(damage.lost_updates, Some(1));
}

#[test]
fn a_fenced_store_rejecting_the_stale_write_is_safe() {
    let mut h = Hist::default();
    h.read(0, 0, 10, Some(1));
    h.read(5, 1, 10, Some(2));
    h.write(6, 1, 9, Some(2), Outcome::Ok);
    h.write(7, 0, 9, Some(1), Outcome::Fail);
    h.final_value(8, 9);
    let (check, damage) = resource::check(&h.0, &FENCED);
    assert_eq!(check, Check::Valid);
    assert_eq!(damage.stale_writes_accepted, Some(0));
    assert_eq!(damage.lost_updates, Some(0));
}

#[test]
fn two_clients_writing_with_the_same_token_is_a_repeated_token() {
    let mut h = Hist::default();
    h.read(0, 0, 10, Some(3));
    let first = h.write(1, 0, 9, Some(3), Outcome::Ok);
    h.read(2, 1, 9, Some(3));
    let second = h.write(3, 1, 8, Some(3), Outcome::Ok);
    h.final_value(4, 8);
    let (check, damage) = resource::check(&h.0, &FENCED);
    assert_eq!(witness(&check), vec![first, second]);
    assert_eq!(damage.repeated_tokens, Some(1));
    assert_eq!(damage.stale_writes_accepted, Some(0));
}

// ---------------------------------------------------------------------------
// Real-time order: an operation proves something about another only if it
// completed before the other was invoked.

#[test]
fn a_write_invoked_after_a_higher_token_completed_is_a_stale_write_even_in_the_same_millisecond() {
    let mut h = Hist::default();
    h.read(0, 0, 10, Some(1));
    let newer = h.read(5, 1, 10, Some(2));
    let invoked = h.invoke(5, 0, Op::Write);
    let stale = h.written(9, 0, 9, Some(1));
    h.write(10, 1, 9, Some(2), Outcome::Ok);
    h.final_value(11, 9);
    let (check, damage) = resource::check(&h.0, &FENCED);
    assert_eq!(witness(&check), vec![newer, invoked, stale]);
    assert_eq!(damage.stale_writes_accepted, Some(1));
}

#[test]
fn a_write_in_flight_while_a_newer_holder_reads_is_not_a_stale_write() {
    // Client 0's write leaves at 2 and is slow to return; the store runs it
    // before client 1's read, which sees its 9. Its completion comes after
    // the read with token 2, but the store was right to accept it.
    let mut h = Hist::default();
    h.read(0, 0, 10, Some(1));
    h.invoke(2, 0, Op::Write);
    h.read(5, 1, 9, Some(2));
    h.written(8, 0, 9, Some(1));
    h.write(9, 1, 8, Some(2), Outcome::Ok);
    h.final_value(10, 8);
    let (check, damage) = resource::check(&h.0, &FENCED);
    assert_eq!(check, Check::Valid);
    assert_eq!(damage.stale_writes_accepted, Some(0));
    assert_eq!(damage.repeated_tokens, Some(0));
    assert_eq!(damage.lost_updates, Some(0));
}

#[test]
fn a_write_in_flight_while_a_newer_holder_writes_is_not_a_stale_write() {
    let mut h = Hist::default();
    h.read(0, 0, 10, Some(1));
    h.invoke(1, 0, Op::Write);
    h.read(5, 1, 9, Some(2));
    h.write(6, 1, 8, Some(2), Outcome::Ok);
    h.written(20, 0, 9, Some(1));
    h.final_value(21, 8);
    let (check, damage) = resource::check(&h.0, &FENCED);
    assert_eq!(check, Check::Valid);
    assert_eq!(damage.stale_writes_accepted, Some(0));
}

#[test]
fn a_write_without_its_invoke_proves_no_stale_write() {
    let mut h = Hist::default();
    h.read(0, 0, 10, Some(1));
    h.read(5, 1, 10, Some(2));
    h.write(6, 1, 9, Some(2), Outcome::Ok);
    h.written(7, 0, 8, Some(1));
    let (check, damage) = resource::check(&h.0, &FENCED);
    assert!(!check.is_invalid(), "{check:?}");
    assert_eq!(damage.stale_writes_accepted, Some(0));
}

#[test]
fn overlapping_writes_of_two_clients_with_the_same_token_are_still_a_repeated_token() {
    let mut h = Hist::default();
    h.read(0, 0, 10, Some(3));
    h.read(0, 1, 10, Some(3));
    h.invoke(1, 0, Op::Write);
    h.invoke(2, 1, Op::Write);
    let first = h.written(4, 1, 9, Some(3));
    let second = h.written(5, 0, 9, Some(3));
    h.final_value(6, 9);
    let (check, damage) = resource::check(&h.0, &FENCED);
    assert_eq!(witness(&check), vec![first, second]);
    assert_eq!(damage.repeated_tokens, Some(1));
    assert_eq!(damage.stale_writes_accepted, Some(0));
}

#[test]
fn repeated_tokens_count_the_fewest_reuses_that_real_time_allows() {
    // Client 0 writes twice with token 3; client 1 once, while client 0's
    // first write is in flight. Client 1's write completes first, but the
    // store may have run client 0's first: then only client 1's write is a
    // reuse. Counting by completion would make it two (client 0's).
    let mut h = Hist::default();
    h.read(0, 0, 10, Some(3));
    h.read(0, 1, 10, Some(3));
    h.invoke(1, 0, Op::Write);
    h.invoke(2, 1, Op::Write);
    h.written(3, 1, 9, Some(3));
    h.written(10, 0, 9, Some(3));
    h.read(11, 0, 9, Some(3));
    h.write(12, 0, 8, Some(3), Outcome::Ok);
    h.final_value(14, 8);
    let (check, damage) = resource::check(&h.0, &FENCED);
    assert!(check.is_invalid(), "{check:?}");
    assert_eq!(damage.repeated_tokens, Some(1));
}

#[test]
fn a_token_reused_after_the_first_user_finished_counts_every_write_of_the_other_client() {
    let mut h = Hist::default();
    h.read(0, 0, 10, Some(3));
    h.write(1, 0, 9, Some(3), Outcome::Ok);
    h.read(2, 1, 9, Some(3));
    h.write(3, 1, 8, Some(3), Outcome::Ok);
    h.read(4, 1, 8, Some(3));
    h.write(5, 1, 7, Some(3), Outcome::Ok);
    h.final_value(6, 7);
    let (_, damage) = resource::check(&h.0, &FENCED);
    assert_eq!(damage.repeated_tokens, Some(2));
}

#[test]
fn two_sales_that_wrote_the_same_value_lost_an_update_whatever_their_order() {
    // The writes overlap, so their order is not proven, but both sales
    // read 10 (each wrote 9), which no serial order of whole sales gives.
    let mut h = Hist::default();
    let ra = h.read(0, 0, 10, None);
    let rb = h.read(0, 1, 10, None);
    h.invoke(1, 0, Op::Write);
    h.invoke(2, 1, Op::Write);
    let wb = h.written(8, 1, 9, None);
    let wa = h.written(9, 0, 9, None);
    h.final_value(10, 9);
    let (check, damage) = resource::check(&h.0, &INVENTORY);
    assert_eq!(witness(&check), vec![ra, rb, wb, wa]);
    assert_eq!(damage.lost_updates, Some(1));
}

#[test]
fn a_sale_that_read_a_write_still_in_flight_lost_nothing() {
    let mut h = Hist::default();
    h.read(0, 0, 10, None);
    h.invoke(1, 0, Op::Write);
    h.read(3, 1, 9, None);
    h.write(4, 1, 8, None, Outcome::Ok);
    h.written(9, 0, 9, None);
    h.final_value(10, 8);
    let (check, damage) = resource::check(&h.0, &INVENTORY);
    assert_eq!(check, Check::Valid);
    assert_eq!(damage.lost_updates, Some(0));
}

#[test]
fn overselling_is_witnessed_by_the_completion_that_took_the_accepted_sales_past_the_stock() {
    // Client 0's sale came first (client 1 read its 0), but its write
    // returned last: by its completion two sales had been accepted from a
    // stock of one, whichever order they ran in.
    let spec = ResourceSpec {
        kind: ResourceKind::Inventory,
        stock: 1,
    };
    let mut h = Hist::default();
    h.read(0, 0, 1, None);
    h.invoke(1, 0, Op::Write);
    h.read(3, 1, 0, None);
    h.write(4, 1, -1, None, Outcome::Ok);
    let second = h.written(10, 0, 0, None);
    let f = h.final_value(11, -1);
    let (check, damage) = resource::check(&h.0, &spec);
    assert_eq!(witness(&check), vec![second, f]);
    assert_eq!(damage.oversold, Some(1));
    assert_eq!(damage.lost_updates, Some(0));
}

#[test]
fn an_acquire_that_completes_while_the_holders_release_is_in_flight_does_not_overlap() {
    // Holding ends when the release is invoked, so the two holds are
    // ordered by a completion after an invoke: no overlap.
    let mut h = Hist::default();
    h.acquire(0, 1, 0, Outcome::Ok);
    h.invoke(2, 1, Op::Acquire);
    h.invoke(10, 0, Op::Release);
    h.complete(15, 1, Op::Acquire, Outcome::Ok);
    h.complete(20, 0, Op::Release, Outcome::Ok);
    h.release(30, 1);
    let (check, damage) = h.mutex();
    assert_eq!(check, Check::Valid);
    assert_eq!(damage.overlap_pairs, 0);
}

#[test]
fn an_acquire_that_completes_before_the_holder_invokes_its_release_overlaps() {
    let mut h = Hist::default();
    let a = h.acquire(0, 1, 0, Outcome::Ok);
    h.invoke(2, 1, Op::Acquire);
    let b = h.complete(9, 1, Op::Acquire, Outcome::Ok);
    let a_end = h.invoke(10, 0, Op::Release);
    h.complete(20, 0, Op::Release, Outcome::Ok);
    let b_end = h.release(30, 1);
    let (check, damage) = h.mutex();
    assert_eq!(witness(&check), vec![a, b, a_end, b_end]);
    assert_eq!(damage.overlap_ms, 1.0);
}

#[test]
fn two_readers_holding_shared_at_once_keep_mutual_exclusion() {
    let mut h = Hist::default();
    h.acquire_shared(0, 1, 0);
    h.acquire_shared(2, 3, 1);
    h.release(10, 0);
    h.release(11, 1);
    assert_eq!(h.mutex().0, Check::Valid);
}

#[test]
fn a_reader_holding_while_a_writer_holds_violates_mutual_exclusion_and_says_who_held_how() {
    let mut h = Hist::default();
    let reader = h.acquire_shared(0, 1, 0);
    let writer = h.acquire(2, 3, 1, Outcome::Ok);
    let writer_out = h.release(6, 1);
    let reader_out = h.release(10, 0);
    let (check, damage) = h.mutex();
    assert_eq!(
        witness(&check),
        vec![reader, writer, writer_out, reader_out]
    );
    let why = check.why().expect("a reason");
    assert!(why.contains("client 0 shared, client 1 exclusive"), "{why}");
    assert_eq!(damage.overlap_ms, 3.0);
}

// ---------------------------------------------------------------------------
// Liveness

const BOUND: Duration = Duration::from_millis(50);

#[test]
fn a_crashed_holder_that_nobody_can_replace_is_a_deadlock() {
    let mut h = Hist::default();
    let a = h.acquire(0, 1, 0, Outcome::Ok);
    let crash = h.fault(5, FaultKind::Crash, "client-0", Phase::Instant);
    let waiter = h.invoke(6, 1, Op::Acquire);
    h.complete(100, 1, Op::Acquire, Outcome::Fail);
    let (check, damage) = liveness::check(&h.0, BOUND);
    assert_eq!(witness(&check), vec![a, crash, waiter]);
    assert_eq!(damage.recovery_ms, None);
    assert_eq!(damage.healed_at_ms, Some(5.0));
}

#[test]
fn a_writer_that_readers_keep_out_past_the_bound_is_a_deadlock_though_readers_get_in() {
    let mut h = Hist::default();
    let dead_reader = h.acquire_shared(0, 1, 0);
    let crash = h.fault(5, FaultKind::Crash, "client-0", Phase::Instant);
    let writer = h.invoke(6, 2, Op::Acquire);
    for start in [10, 30, 50, 70, 90] {
        h.acquire_shared(start, start + 1, 1);
        h.release(start + 10, 1);
    }
    h.complete(100, 2, Op::Acquire, Outcome::Fail);
    let (check, _) = liveness::check(&h.0, BOUND);
    assert_eq!(witness(&check), vec![dead_reader, crash, writer]);
    let why = check.why().expect("a reason");
    assert!(why.contains("wanted exclusive"), "{why}");
}

#[test]
fn a_reader_waiting_after_a_crash_is_served_by_a_writers_grant() {
    let mut h = Hist::default();
    h.acquire(0, 1, 0, Outcome::Ok);
    h.fault(5, FaultKind::Crash, "client-0", Phase::Instant);
    let asked = EventKind::Invoke {
        client: 1,
        op: Op::Acquire,
        lock: LOCK.into(),
        n: 1,
        value: None,
        shared: true,
    };
    h.0.push(6_000, asked);
    h.acquire(7, 20, 2, Outcome::Ok);
    h.release(25, 2);
    h.complete(26, 1, Op::Acquire, Outcome::Fail);
    let (check, _) = liveness::check(&h.0, BOUND);
    assert_eq!(check, Check::Valid);
}

#[test]
fn a_lock_taken_again_within_the_bound_after_the_crash_is_live() {
    let mut h = Hist::default();
    h.acquire(0, 1, 0, Outcome::Ok);
    h.fault(5, FaultKind::Crash, "client-0", Phase::Instant);
    h.acquire(6, 40, 1, Outcome::Ok);
    h.release(45, 1);
    let (check, damage) = liveness::check(&h.0, BOUND);
    assert_eq!(check, Check::Valid);
    assert_eq!(damage.recovery_ms, Some(35.0));
}

#[test]
fn a_lock_taken_again_only_after_the_bound_is_a_deadlock() {
    let mut h = Hist::default();
    h.acquire(0, 1, 0, Outcome::Ok);
    h.fault(5, FaultKind::Crash, "client-0", Phase::Instant);
    h.acquire(10, 90, 1, Outcome::Ok);
    let (check, damage) = liveness::check(&h.0, BOUND);
    assert!(check.is_invalid(), "{check:?}");
    assert_eq!(damage.recovery_ms, Some(85.0));
}

#[test]
fn a_history_that_ends_before_the_bound_with_nobody_acquiring_is_unknown() {
    let mut h = Hist::default();
    h.acquire(0, 1, 0, Outcome::Ok);
    h.fault(5, FaultKind::Crash, "client-0", Phase::Instant);
    h.invoke(6, 1, Op::Acquire);
    h.final_value(20, 10);
    let (check, _) = liveness::check(&h.0, BOUND);
    assert!(check.is_unknown(), "{check:?}");
}

#[test]
fn a_holder_blocked_on_itself_is_a_deadlock() {
    let mut h = Hist::default();
    let held = h.acquire(0, 1, 0, Outcome::Ok);
    let nested = h.invoke(2, 0, Op::Acquire);
    let failed = h.complete(30, 0, Op::Acquire, Outcome::Fail);
    h.release(31, 0);
    let (check, _) = liveness::check(&h.0, BOUND);
    assert_eq!(witness(&check), vec![held, nested, failed]);
}

#[test]
fn an_acquire_in_flight_when_the_partition_heals_must_complete_within_the_bound() {
    let mut h = Hist::default();
    h.fault(0, FaultKind::Partition, "client-0|redis-0", Phase::Start);
    let waiter = h.invoke(1, 0, Op::Acquire);
    let heal = h.fault(10, FaultKind::Partition, "client-0|redis-0", Phase::End);
    h.final_value(100, 10);
    let (check, damage) = liveness::check(&h.0, BOUND);
    assert_eq!(witness(&check), vec![waiter, heal]);
    assert_eq!(damage.healed_at_ms, Some(10.0));
}

#[test]
fn the_acquire_of_a_client_that_crashed_no_longer_waits() {
    let mut h = Hist::default();
    h.invoke(0, 0, Op::Acquire);
    h.fault(5, FaultKind::Crash, "client-0", Phase::Instant);
    h.final_value(100, 10);
    let (check, damage) = liveness::check(&h.0, BOUND);
    assert_eq!(check, Check::Valid);
    assert_eq!(damage.recovery_ms, None);
}

#[test]
fn a_fault_that_never_heals_claims_nothing_about_liveness() {
    let mut h = Hist::default();
    h.fault(0, FaultKind::Partition, "client-0|redis-0", Phase::Start);
    h.invoke(1, 0, Op::Acquire);
    h.final_value(100, 10);
    let (check, damage) = liveness::check(&h.0, BOUND);
    assert_eq!(check, Check::Valid);
    assert_eq!(damage.healed_at_ms, None);
}

#[test]
fn a_failover_that_ends_on_the_promoted_replica_heals_at_the_promotion() {
    let mut h = Hist::default();
    let a = h.acquire(0, 1, 0, Outcome::Ok);
    h.fault(5, FaultKind::Failover, "redis-0", Phase::Start);
    let promoted = h.fault(20, FaultKind::Failover, "redis-1", Phase::End);
    let waiter = h.invoke(25, 1, Op::Acquire);
    h.final_value(200, 10);
    let (check, damage) = liveness::check(&h.0, BOUND);
    assert_eq!(damage.healed_at_ms, Some(20.0));
    assert_eq!(witness(&check), vec![a, promoted, waiter]);
}

// ---------------------------------------------------------------------------
// Verdicts

fn results(mutex: Check, resource: Option<Check>, liveness: Check, fenced: bool) -> CheckResults {
    CheckResults {
        mutual_exclusion: mutex,
        resource,
        liveness,
        resource_decides_safety: fenced,
        cut_short: None,
        damage: Damage::default(),
    }
}

fn bad() -> Check {
    Check::invalid(vec![3, 1], "bad")
}

fn unsure() -> Check {
    Check::unknown("unsure")
}

#[test]
fn a_safety_violation_outranks_deadlock_which_outranks_unknown() {
    use Check::Valid;
    let cases = [
        (results(Valid, Some(Valid), Valid, false), Verdict::Safe),
        (results(bad(), Some(Valid), bad(), false), Verdict::Violated),
        (
            results(Valid, Some(bad()), unsure(), false),
            Verdict::Violated,
        ),
        (
            results(Valid, Some(unsure()), bad(), false),
            Verdict::Deadlock,
        ),
        (
            results(Valid, Some(unsure()), Valid, false),
            Verdict::Unknown,
        ),
        (results(Valid, None, unsure(), false), Verdict::Unknown),
        (results(Valid, None, Valid, false), Verdict::Safe),
    ];
    for (results, expected) in cases {
        assert_eq!(
            judge::verdict::verdict_of(&results),
            expected,
            "{results:?}"
        );
    }
}

#[test]
fn a_run_cut_short_is_unknown_whatever_its_checkers_found_and_says_why_in_verdict_json() {
    use Check::Valid;
    let cut = model::cut_short::CutShort::ScriptAborted {
        node: model::host::Host::Node(2),
        instruction_limit: 100_000_000,
        at_us: 1_500,
    };
    for found in [
        results(Valid, Some(Valid), Valid, false),
        results(bad(), Some(bad()), bad(), false),
        results(Valid, Some(Valid), bad(), false),
    ] {
        let cut_results = CheckResults {
            cut_short: Some(cut.clone()),
            ..found
        };
        assert_eq!(judge::verdict::verdict_of(&cut_results), Verdict::Unknown);
    }
    let cut_results = CheckResults {
        cut_short: Some(cut.clone()),
        ..results(bad(), Some(Valid), Valid, false)
    };
    let text = verdict_json(&cut_results, "s", "set-nx-px", 7);
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["verdict"], "unknown");
    assert_eq!(v["cut_short"]["kind"], "script-aborted");
    assert_eq!(v["cut_short"]["node"], "redis-2");
    assert_eq!(v["cut_short"]["instruction_limit"], 100_000_000);
    let why = v["cut_short"]["why"].as_str().unwrap();
    assert!(
        why.starts_with("redis-2 aborted a Lua script that ran past 100000000 instructions"),
        "{why}"
    );
    // The checkers' own findings are still reported, for information.
    assert_eq!(v["checkers"]["mutual-exclusion"]["verdict"], "invalid");
    let doc: VerdictDoc = serde_json::from_str(&text).unwrap();
    assert_eq!(doc.cut_short.map(|c| c.cause), Some(cut));
    // A run that was not cut short has no such field at all.
    let whole = verdict_json(&results(Valid, None, Valid, false), "s", "set-nx-px", 7);
    assert!(!whole.contains("cut_short"), "{whole}");
}

#[test]
fn on_the_fenced_rung_only_the_resource_decides_safety() {
    use Check::Valid;
    assert_eq!(
        judge::verdict::verdict_of(&results(bad(), Some(Valid), Valid, true)),
        Verdict::Safe
    );
    assert_eq!(
        judge::verdict::verdict_of(&results(Valid, Some(bad()), Valid, true)),
        Verdict::Violated
    );
    let doc = VerdictDoc::new(&results(bad(), Some(Valid), Valid, true), "s", "fenced", 7);
    assert!(doc.checkers["mutual-exclusion"].informational);
    assert!(!doc.checkers["resource"].informational);
}

#[test]
fn verdicts_have_lowercase_names_and_distinct_exit_codes() {
    let names: Vec<String> = Verdict::ALL
        .iter()
        .map(|v| serde_json::to_string(v).unwrap())
        .collect();
    assert_eq!(
        names,
        ["\"safe\"", "\"violated\"", "\"deadlock\"", "\"unknown\""]
    );
    let codes: Vec<u8> = Verdict::ALL
        .iter()
        .map(|v| sim::exit::ExitCode::of_verdict(*v).code())
        .collect();
    assert_eq!(codes, [0, 1, 4, 2]);
    assert_eq!("deadlock".parse::<Verdict>(), Ok(Verdict::Deadlock));
    assert!("fine".parse::<Verdict>().is_err());
}

#[test]
fn verdict_json_carries_every_checker_with_its_witness_and_the_damage() {
    let mut h = Hist::default();
    let a = h.acquire(0, 1, 0, Outcome::Ok);
    let b = h.acquire(2, 3, 1, Outcome::Ok);
    let a_end = h.release(5, 0);
    let b_end = h.release(6, 1);
    h.final_value(7, 10);
    let config = CheckConfig {
        resource: Some(INVENTORY),
        liveness_bound: BOUND,
        resource_decides_safety: false,
        cut_short: None,
    };
    let results = check::check_all(&h.0, &config);
    let text = verdict_json(&results, "contention", "set-nx-px", 42);
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["schema"], model::history::SCHEMA_VERSION);
    assert_eq!(v["scenario"], "contention");
    assert_eq!(v["variant"], "set-nx-px");
    assert_eq!(v["seed"], 42);
    assert_eq!(v["verdict"], "violated");
    assert_eq!(
        v["checkers"]["mutual-exclusion"]["witness"],
        serde_json::json!([a, b, a_end, b_end])
    );
    assert_eq!(v["checkers"]["mutual-exclusion"]["verdict"], "invalid");
    assert_eq!(v["checkers"]["resource"]["verdict"], "valid");
    assert_eq!(v["checkers"]["liveness"]["witness"], serde_json::json!([]));
    assert_eq!(v["damage"]["overlap_ms"], 2.0);
    assert_eq!(v["damage"]["overlap_pairs"], 1);
    assert_eq!(v["damage"]["lost_updates"], 0);
    assert!(v["damage"]["recovery_ms"].is_number());
    // Client 0 then client 1: one hand-off; no wake-up count recorded.
    assert_eq!(v["damage"]["handoffs"], 1);
    assert!(v["damage"]["wakeups_per_handoff"].is_null());
    assert!(v["locklab"].is_string());
    let back: VerdictDoc = serde_json::from_str(&text).unwrap();
    assert_eq!(
        back,
        VerdictDoc::new(&results, "contention", "set-nx-px", 42)
    );
}

// ---------------------------------------------------------------------------
// Timelines

/// 0..100 ms: client 0 holds 0..50, client 1 holds 30..80 and is paused
/// 60..70, redis-0 crashes at 90.
fn overlap_story() -> History {
    let mut h = Hist::default();
    h.acquire(0, 0, 0, Outcome::Ok);
    h.acquire(10, 30, 1, Outcome::Ok);
    h.release(50, 0);
    h.fault(60, FaultKind::Pause, "client-1", Phase::Start);
    h.fault(70, FaultKind::Pause, "client-1", Phase::End);
    h.release(80, 1);
    h.fault(90, FaultKind::Crash, "redis-0", Phase::Instant);
    h.final_value(100, 10);
    h.0
}

#[test]
fn the_ascii_timeline_shows_holds_overlaps_and_faults_column_by_column() {
    let text = timeline::ascii(&overlap_story(), 10);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "timeline: 0 to 100 ms, 10 ms per column");
    assert_eq!(lines[1], "client 0  ███XX·····");
    assert_eq!(lines[2], "client 1  ···XX███··");
    assert_eq!(lines[3], "  faults        P");
    assert_eq!(lines[4], "redis-0            C");
    assert_eq!(lines[5], "          +--------+");
    assert_eq!(lines[6], "          0        100 ms");
    assert_eq!(
        lines[7],
        "legend: █ holding  · not holding  X two clients hold at once  P pause  C crash"
    );
    assert_eq!(lines.len(), 8);
}

#[test]
fn a_fault_that_ends_on_another_target_is_drawn_as_one_span_on_its_first_row() {
    let mut h = Hist::default();
    h.fault(20, FaultKind::Failover, "redis-0", Phase::Start);
    h.fault(50, FaultKind::Failover, "redis-1", Phase::End);
    h.fault(70, FaultKind::Partition, "client-0|redis-0", Phase::Start);
    h.final_value(100, 10);
    let text = timeline::ascii(&h.0, 10);
    let rows: Vec<&str> = text.lines().skip(1).take(2).collect();
    assert_eq!(
        rows,
        ["redis-0             FFF", "client-0|redis-0         |||"]
    );
}

#[test]
fn the_ascii_axis_is_labelled_in_round_milliseconds() {
    let text = timeline::ascii(&overlap_story(), 40);
    let axis = text.lines().nth(6).unwrap();
    assert_eq!(axis.trim(), "0       20      40      60      80     100 ms");
}

#[test]
fn the_svg_timeline_names_its_rows_and_axis_and_is_the_same_every_time() {
    let svg = timeline::svg(&overlap_story(), "set-nx-px / pause").unwrap();
    assert!(svg.starts_with("<svg"), "{}", &svg[..100.min(svg.len())]);
    for text in [
        "client 0",
        "client 1",
        "redis-0",
        "true time (ms)",
        "set-nx-px / pause",
    ] {
        assert!(svg.contains(text), "no {text:?} in the SVG");
    }
    assert!(svg.contains(">\n0\n<") || svg.contains(">0<") || svg.contains("0\n</text>"));
    assert!(svg.contains("P pause") && svg.contains("C crash"));
    assert_eq!(
        svg,
        timeline::svg(&overlap_story(), "set-nx-px / pause").unwrap()
    );
}

// ---------------------------------------------------------------------------
// The safety matrix

fn cell(rung: &str, scenario: &str, verdict: Verdict, expected: Verdict) -> Cell {
    Cell {
        rung: rung.into(),
        scenario: scenario.into(),
        verdict,
        expected: Some(expected),
        seed: 1,
        damage: Damage::default(),
        cut_short: None,
        findings: String::new(),
        server: None,
        wall_ms: 0,
    }
}

fn some_cells() -> Vec<Cell> {
    vec![
        cell(
            "lua-release",
            "long-section",
            Verdict::Violated,
            Verdict::Violated,
        ),
        cell(
            "setnx",
            "crash-holder",
            Verdict::Deadlock,
            Verdict::Deadlock,
        ),
        cell("setnx", "long-section", Verdict::Safe, Verdict::Violated),
        cell(
            "no-lock",
            "contention",
            Verdict::Violated,
            Verdict::Violated,
        ),
    ]
}

#[test]
fn the_markdown_matrix_has_rungs_in_ladder_order_and_marks_surprises() {
    let md = matrix::markdown(&some_cells());
    let table: Vec<&str> = md.lines().filter(|l| l.starts_with('|')).collect();
    assert_eq!(
        table,
        [
            "| rung | long-section | crash-holder | contention |",
            "|---|---|---|---|",
            "| `no-lock` | — | — | violated |",
            "| `setnx` | safe ✗ (expected violated) | deadlock | — |",
            "| `lua-release` | violated | — | — |",
        ]
    );
    assert!(
        md.ends_with("4 cells, 1 differing from expectation (✗).\n"),
        "{md}"
    );
    assert!(!judge::matrix::all_as_expected(&some_cells()));
}

#[test]
fn the_json_matrix_lists_every_cell_with_its_damage_and_reads_back() {
    let text = matrix::json(&some_cells());
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let first = &v["cells"][0];
    assert_eq!(first["variant"], "lua-release");
    assert_eq!(first["verdict"], "violated");
    assert_eq!(first["expected"], "violated");
    assert_eq!(first["seed"], 1);
    assert!(first["damage"]["overlap_ms"].is_number());
    assert_eq!(matrix::from_json(&text).unwrap(), some_cells());
}

#[test]
fn the_svg_matrix_names_rungs_scenarios_and_verdicts() {
    let svg = matrix::svg(&some_cells()).unwrap();
    for text in [
        "no-lock",
        "lua-release",
        "crash-holder",
        "deadlock",
        "safe ✗",
    ] {
        assert!(svg.contains(text), "no {text:?} in the SVG");
    }
    assert_eq!(svg, matrix::svg(&some_cells()).unwrap());
}
