//! Properties of the readers, the validator and the export, over
//! generated histories (proptest, fixed seed): well-formed histories are
//! accepted and read back the same; each kind of malformed one is refused
//! at the line that breaks it; no input makes a reader panic.

use interchange::export::{Header, header_of, to_history, to_ops, write_edn, write_json};
use interchange::format::{Format, read};
use interchange::op::{Op, OpType, Process};
use interchange::porcupine::read_porcupine;
use interchange::wellformed::check_well_formed;
use model::cut_short::CutShort;
use model::fault::FaultKind;
use model::history::{self, EventKind, FaultTarget, History, KeyChange, Outcome, Phase};
use model::host::Host;
use model::resource::{ResourceKind, ResourceSpec};
use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use serde_json::json;
use std::collections::BTreeMap;

/// A runner with a fixed seed: the same cases on every run.
fn runner(cases: u32) -> TestRunner {
    TestRunner::new_with_rng(
        Config {
            cases,
            failure_persistence: None,
            ..Config::default()
        },
        TestRng::from_seed(RngAlgorithm::ChaCha, &[7; 32]),
    )
}

// ---- locklab histories ----

fn host() -> impl Strategy<Value = Host> {
    prop_oneof![
        (0usize..5).prop_map(Host::Client),
        (0usize..5).prop_map(Host::Node),
        Just(Host::Store),
        Just(Host::Master),
    ]
}

fn target() -> impl Strategy<Value = FaultTarget> {
    prop_oneof![
        host().prop_map(FaultTarget::Host),
        (
            prop::collection::vec(host(), 1..3),
            prop::collection::vec(host(), 1..3)
        )
            .prop_map(|(a, b)| FaultTarget::Sides { a, b }),
    ]
}

fn text() -> impl Strategy<Value = String> {
    // Any text: quotes, backslashes, new lines and control characters
    // must survive both writers.
    prop_oneof!["[a-z:-]{0,8}", any::<String>()]
}

fn lock_op() -> impl Strategy<Value = history::Op> {
    prop::sample::select(vec![
        history::Op::Acquire,
        history::Op::Release,
        history::Op::Extend,
        history::Op::Check,
        history::Op::Read,
        history::Op::Write,
    ])
}

fn event(clients: usize) -> impl Strategy<Value = EventKind> {
    let faults: Vec<FaultKind> = FaultKind::ALL
        .into_iter()
        .filter(|k| *k != FaultKind::Restart)
        .collect();
    prop_oneof![
        (
            0..clients,
            lock_op(),
            text(),
            any::<u32>(),
            any::<Option<i64>>(),
            any::<bool>()
        )
            .prop_map(|(client, op, lock, n, value, shared)| EventKind::Invoke {
                client,
                op,
                lock,
                n,
                value,
                shared
            }),
        (
            (0..clients, lock_op(), text(), any::<u32>()),
            prop::sample::select(vec![Outcome::Ok, Outcome::Fail, Outcome::Unknown]),
            (
                prop::option::of(text()),
                any::<Option<u64>>(),
                any::<Option<u32>>(),
                any::<Option<u64>>(),
                any::<Option<i64>>(),
                prop::option::of(text()),
                any::<bool>()
            ),
        )
            .prop_map(
                |(
                    (client, op, lock, n),
                    outcome,
                    (token, fence, depth, valid_for_us, value, error, shared),
                )| {
                    EventKind::Complete {
                        client,
                        op,
                        lock,
                        n,
                        outcome,
                        token,
                        fence,
                        depth,
                        valid_for_us,
                        value,
                        error,
                        shared,
                    }
                }
            ),
        (
            prop::sample::select(faults),
            target(),
            prop::sample::select(vec![Phase::Start, Phase::End, Phase::Instant]),
            text()
        )
            .prop_map(|(fault, target, phase, detail)| EventKind::Fault {
                fault,
                target,
                phase,
                detail
            }),
        (
            host(),
            prop::sample::select(vec![KeyChange::Set, KeyChange::Expired, KeyChange::Deleted]),
            text(),
            prop::option::of(text())
        )
            .prop_map(|(node, what, key, value)| EventKind::Server {
                node,
                what,
                key,
                value
            }),
        any::<i64>().prop_map(|value| EventKind::Final { value }),
        any::<u64>().prop_map(|count| EventKind::Wakeups { count }),
    ]
}

fn locklab_history() -> impl Strategy<Value = (Header, History)> {
    (1usize..4).prop_flat_map(|clients| {
        (
            prop::collection::vec((0u64..u64::MAX / 1000, event(clients)), 0..40),
            any::<Option<(bool, i64)>>(),
            any::<Option<u64>>(),
            any::<u64>(),
            text(),
        )
            .prop_map(move |(events, resource, cut_at_us, seed, scenario)| {
                let history: History = events
                    .into_iter()
                    .enumerate()
                    .map(|(i, (at_us, kind))| history::Event { i, at_us, kind })
                    .collect();
                let header = Header {
                    clients,
                    model: "owner-mutex".into(),
                    liveness_bound_ms: seed % 10_000,
                    resource: resource.map(|(fenced, stock)| ResourceSpec {
                        kind: if fenced {
                            ResourceKind::Fenced
                        } else {
                            ResourceKind::Inventory
                        },
                        stock,
                    }),
                    resource_decides_safety: seed % 2 == 0,
                    cut_short: cut_at_us.map(|at_us| CutShort::ScriptAborted {
                        node: Host::Node(0),
                        instruction_limit: seed,
                        at_us,
                    }),
                    scenario,
                    rung: "fenced".into(),
                    seed,
                };
                (header, history)
            })
    })
}

#[test]
fn any_locklab_history_reads_back_exactly_through_edn_and_json() {
    runner(300)
        .run(&locklab_history(), |(header, history)| {
            let ops = to_ops(&history, &header);
            for (name, text, format) in [
                ("edn", write_edn(&ops), Format::JepsenEdn),
                ("json", write_json(&ops), Format::JepsenJson),
            ] {
                let read_back = match format {
                    Format::JepsenEdn => interchange::jepsen_edn::read_edn(name, &text),
                    _ => interchange::jepsen_json::read_json(name, &text),
                }
                .map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
                prop_assert_eq!(&read_back, &ops, "{}", name);
                prop_assert_eq!(header_of(&read_back), Some(Ok(header.clone())));
                prop_assert_eq!(
                    to_history(&read_back, None),
                    Ok(history.clone()),
                    "{}",
                    name
                );
            }
            Ok(())
        })
        .unwrap();
}

// ---- Jepsen histories, well formed and not ----

/// A well-formed history of client operations: up to four client slots,
/// each invoking then completing one operation at a time, moving to a
/// fresh process after an `info`; times strictly increasing.
fn well_formed() -> impl Strategy<Value = Vec<Op>> {
    prop::collection::vec(
        (
            0u64..4,
            prop::sample::select(vec!["acquire", "release", "write"]),
            0u8..3,
            1u64..10,
        ),
        1..60,
    )
    .prop_map(|steps| {
        let mut slots: BTreeMap<u64, (u64, Option<String>)> = BTreeMap::new();
        let mut next_fresh = 4;
        let mut time_ns = 0;
        let mut ops = Vec::new();
        for (slot, f, outcome, dt) in steps {
            time_ns += dt;
            let (process, pending) = slots.entry(slot).or_insert((slot, None));
            let (kind, f) = match pending.take() {
                None => {
                    *pending = Some(f.to_string());
                    (OpType::Invoke, f.to_string())
                }
                Some(f) => (
                    [OpType::Ok, OpType::Fail, OpType::Info][outcome as usize],
                    f,
                ),
            };
            let index = ops.len() as u64;
            ops.push(Op {
                process: Process::Client(*process),
                kind,
                f,
                value: json!(index),
                time_ns: Some(time_ns),
                clock_bound_ns: dt,
                index,
                fields: BTreeMap::from([("lock".to_string(), json!("l"))]),
                line: index as usize + 1,
            });
            if kind == OpType::Info {
                *process = next_fresh;
                next_fresh += 1;
            }
        }
        ops
    })
}

#[test]
fn well_formed_histories_are_accepted_and_read_back_the_same() {
    runner(300)
        .run(&well_formed(), |ops| {
            prop_assert_eq!(check_well_formed("h", &ops), Ok(()));
            prop_assert_eq!(
                read("h", &write_edn(&ops), Format::JepsenEdn),
                Ok(ops.clone())
            );
            prop_assert_eq!(
                read("h", &write_json(&ops), Format::JepsenJson),
                Ok(ops.clone())
            );
            // Not locklab's operations (no `n`): refused, at the first.
            prop_assert_eq!(to_history(&ops, Some(4)).map_err(|e| e.line), Err(1));
            Ok(())
        })
        .unwrap();
}

/// The kinds of malformation of `wellformed`'s rules.
#[derive(Debug, Clone, Copy)]
enum Break {
    CompletionWithoutInvoke,
    SecondInvoke,
    UsedAfterInfo,
    TimeBackwards,
    OtherF,
}

/// Breaks `ops` the way `how` says, near `at`; returns the broken
/// history and the line that must be refused, or `None` when `ops` has
/// no place for that break.
fn break_history(mut ops: Vec<Op>, how: Break, at: Index) -> Option<(Vec<Op>, usize)> {
    let renumber = |ops: &mut Vec<Op>| {
        for (n, op) in ops.iter_mut().enumerate() {
            op.line = n + 1;
        }
    };
    let pick = |candidates: Vec<usize>| {
        (!candidates.is_empty()).then(|| candidates[at.index(candidates.len())])
    };
    let process_of = |op: &Op| match op.process {
        Process::Client(p) => p,
        Process::Named(_) => unreachable!("generated histories have clients only"),
    };
    match how {
        Break::CompletionWithoutInvoke => {
            let j = at.index(ops.len() + 1);
            let time_ns = if j == 0 { Some(0) } else { ops[j - 1].time_ns };
            let stray = Op {
                process: Process::Client(999),
                kind: OpType::Ok,
                time_ns,
                ..ops[0].clone()
            };
            ops.insert(j, stray);
            renumber(&mut ops);
            Some((ops, j + 1))
        }
        Break::SecondInvoke => {
            let j = pick(
                (0..ops.len())
                    .filter(|&j| ops[j].kind == OpType::Invoke)
                    .collect(),
            )?;
            let again = ops[j].clone();
            ops.insert(j + 1, again);
            renumber(&mut ops);
            Some((ops, j + 2))
        }
        Break::UsedAfterInfo => {
            let j = pick(
                (0..ops.len())
                    .filter(|&j| ops[j].kind == OpType::Info)
                    .collect(),
            )?;
            let last_time = ops.last().and_then(|op| op.time_ns);
            let reuse = Op {
                kind: OpType::Invoke,
                time_ns: last_time,
                ..ops[j].clone()
            };
            ops.push(reuse);
            renumber(&mut ops);
            let line = ops.len();
            Some((ops, line))
        }
        Break::TimeBackwards => {
            let m = pick(
                (1..ops.len())
                    .filter(|&m| {
                        ops[..m]
                            .iter()
                            .any(|op| process_of(op) == process_of(&ops[m]))
                    })
                    .collect(),
            )?;
            let previous = ops[..m]
                .iter()
                .rev()
                .find(|op| process_of(op) == process_of(&ops[m]))?;
            ops[m].time_ns = previous.time_ns.map(|t| t - 1);
            Some((ops, m + 1))
        }
        Break::OtherF => {
            let m = pick(
                (0..ops.len())
                    .filter(|&m| ops[m].kind.is_completion())
                    .collect(),
            )?;
            ops[m].f = "something-else".into();
            Some((ops, m + 1))
        }
    }
}

#[test]
fn each_kind_of_malformed_history_is_refused_at_the_line_that_breaks_it() {
    let how = prop::sample::select(vec![
        Break::CompletionWithoutInvoke,
        Break::SecondInvoke,
        Break::UsedAfterInfo,
        Break::TimeBackwards,
        Break::OtherF,
    ]);
    runner(500)
        .run(&(well_formed(), how, any::<Index>()), |(ops, how, at)| {
            let Some((broken, line)) = break_history(ops, how, at) else {
                return Ok(());
            };
            let err = check_well_formed("h", &broken).expect_err("a broken history is refused");
            prop_assert_eq!(err.line, line, "{:?}: {}", how, err);
            for format in [Format::JepsenEdn, Format::JepsenJson] {
                let text = match format {
                    Format::JepsenEdn => write_edn(&broken),
                    _ => write_json(&broken),
                };
                let err = read("h", &text, format).expect_err("a broken history is refused");
                prop_assert_eq!(err.line, line, "{:?} in {}: {}", how, format, err);
            }
            Ok(())
        })
        .unwrap();
}

// ---- no panics, truncations ----

#[test]
fn a_history_cut_anywhere_is_read_or_refused_within_what_is_left() {
    runner(300)
        .run(
            &(well_formed(), any::<Index>(), any::<bool>()),
            |(ops, at, edn)| {
                let text = if edn {
                    write_edn(&ops)
                } else {
                    write_json(&ops)
                };
                let mut cut = at.index(text.len() + 1);
                while !text.is_char_boundary(cut) {
                    cut -= 1;
                }
                let kept = &text[..cut];
                let format = if edn {
                    Format::JepsenEdn
                } else {
                    Format::JepsenJson
                };
                if let Err(err) = read("h", kept, format) {
                    let lines = kept.lines().count().max(1);
                    prop_assert!(
                        err.line >= 1 && err.line <= lines,
                        "line {} of {}: {}",
                        err.line,
                        lines,
                        err
                    );
                    prop_assert!(
                        !kept.ends_with('\n'),
                        "whole lines are a well-formed prefix: {}",
                        err
                    );
                }
                Ok(())
            },
        )
        .unwrap();
}

#[test]
fn no_input_makes_a_reader_panic() {
    let inputs = prop_oneof![
        any::<Vec<u8>>().prop_map(|bytes| String::from_utf8_lossy(&bytes).into_owned()),
        "[\\[\\]{}()#:\"\\\\ ,;a-zA-Z0-9._+N\n-]{0,200}",
        "[\\[\\]{}\":, 0-9a-zA-Z\n-]{0,200}",
    ];
    runner(2000)
        .run(&inputs, |text| {
            for format in Format::ALL {
                match read("h", &text, format) {
                    Err(err) => {
                        prop_assert!(err.line <= text.lines().count().max(1) + 1, "{}", err)
                    }
                    // What reads must also convert or be refused, never panic.
                    Ok(ops) => {
                        let _ = to_history(&ops, None);
                        let _ = to_history(&ops, Some(3));
                    }
                }
            }
            Ok(())
        })
        .unwrap();
}

// ---- Porcupine ----

#[test]
fn an_unknown_porcupine_field_is_refused_at_its_line() {
    let field = "[A-Za-z]{1,10}".prop_filter("not one of Porcupine's fields", |name| {
        !["ClientId", "Input", "Call", "Output", "Return"].contains(&name.as_str())
    });
    runner(200)
        .run(&(1usize..20, any::<Index>(), field), |(count, at, field)| {
            let k = at.index(count);
            let text: String = (0..count)
                .map(|n| {
                    let extra = if n == k { format!(", \"{field}\": 1") } else { String::new() };
                    format!(
                        "{{\"ClientId\": {n}, \"Input\": {{\"f\": \"acquire\"}}, \"Call\": {n}, \"Output\": {{\"ok\": true}}, \"Return\": {}{extra}}}\n",
                        n + 5
                    )
                })
                .collect();
            let err = read_porcupine("p.json", &text).expect_err("an unknown field is refused");
            prop_assert_eq!(err.line, k + 1);
            prop_assert!(err.found.contains(&field), "{}", err);
            Ok(())
        })
        .unwrap();
}

#[test]
fn porcupine_histories_of_sequential_clients_are_well_formed() {
    // Per client, operations one after another, some of unknown outcome.
    let client_ops = prop::collection::vec((1u64..20, 0u64..20, 0u8..3), 1..8);
    runner(300)
        .run(&prop::collection::vec(client_ops, 1..5), |clients| {
            let mut lines = Vec::new();
            for (client, ops) in clients.iter().enumerate() {
                let mut t = 0u64;
                for &(gap, length, outcome) in ops {
                    let call = t + gap;
                    let ret = call + length;
                    let output = ["{\"ok\": true}", "{\"ok\": false}", "null"][outcome as usize];
                    lines.push(format!(
                        "{{\"ClientId\": {client}, \"Input\": {{\"f\": \"acquire\", \"lock\": \"l\"}}, \"Call\": {call}, \"Output\": {output}, \"Return\": {ret}}}"
                    ));
                    t = ret;
                }
            }
            let text = lines.join("\n");
            let ops = read("p.json", &text, Format::Porcupine).map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
            prop_assert_eq!(ops.len(), 2 * lines.len());
            Ok(())
        })
        .unwrap();
}

// ---- size ----

#[test]
fn a_history_of_two_hundred_thousand_lines_reads_in_every_jepsen_format() {
    // Lines are counted once, not from the file's start for each
    // operation: a quadratic reader would not finish this.
    let ops: Vec<Op> = (0..200_000u64)
        .map(|n| Op {
            process: Process::Client(n / 2),
            kind: if n % 2 == 0 {
                OpType::Invoke
            } else {
                OpType::Ok
            },
            f: "acquire".into(),
            value: json!(null),
            time_ns: Some(n),
            clock_bound_ns: 0,
            index: n,
            fields: BTreeMap::new(),
            line: n as usize + 1,
        })
        .collect();
    let json_lines = write_json(&ops);
    let json_array = format!("[{}]", json_lines.trim_end().replace('\n', ",\n"));
    for (text, format) in [
        (write_edn(&ops), Format::JepsenEdn),
        (json_lines, Format::JepsenJson),
        (json_array, Format::JepsenJson),
    ] {
        let read_back = read("big", &text, format).unwrap();
        assert_eq!(read_back.len(), ops.len());
        assert_eq!(read_back.last().map(|op| op.line), Some(200_000));
    }
}
