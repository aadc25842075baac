//! locklab's own histories as Jepsen operations, and back: so Knossos,
//! elle-cli or a person used to Jepsen can read what locklab found, and
//! so locklab reads its own exports exactly.
//!
//! The mapping keeps every field of every event:
//!
//! | locklab event | Jepsen operation |
//! |---|---|
//! | (the run) | first: `{:process :locklab, :type :info, :f :check-config, :value {...}}`, the [`Header`], no `:index` |
//! | `invoke` | `{:process P, :type :invoke, :f <op>, :value v-or-nil, :lock, :n, :shared true (only when true)}` |
//! | `complete` | the same with `:type` `:ok`/`:fail`/`:info` by outcome, and `:token :fence :depth :valid-for-us :error :shared` when present |
//! | `fault` | `{:process :nemesis, :type :info, :f <fault kind>, :value "<target>", :phase :start/:end/:instant, :detail "..." (when not empty)}` |
//! | `server` | `{:process :locklab, :type :info, :f :server, :node, :what, :key, :value}` |
//! | `final` | `{:process :locklab, :type :info, :f :final, :value v}` |
//! | `wakeups` | `{:process :locklab, :type :info, :f :wakeups, :value count}` |
//!
//! Every event carries `:time` (its `at_us` × 1000, ns) and `:index` (its
//! `i`). Jepsen never reuses a process after an `info` completion, so the
//! process of client `c` is `P = c + k × clients`, where `k` counts that
//! client's earlier `info` completions; reading back, `c = P mod clients`.

use crate::edn;
use crate::error::BadHistory;
use crate::op::{Op, OpType, Process};
use crate::record::CLOCK_BOUND_KEY;
use judge::check::CheckConfig;
use model::cut_short::CutShort;
use model::fault::FaultKind;
use model::history::{self, Event, EventKind, History, Outcome};
use model::resource::ResourceSpec;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

/// The process name of locklab's own records (the header, the servers'
/// key records, the final state, the wake-ups).
pub const LOCKLAB_PROCESS: &str = "locklab";
/// The process name of faults, as Jepsen names its fault injector.
pub const NEMESIS_PROCESS: &str = "nemesis";
/// The function of the header operation.
pub const HEADER_F: &str = "check-config";

/// What a judge needs beyond the events, and where the run came from:
/// the value of the header operation that starts an exported history.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Header {
    /// How many clients the run had; every client index is below it.
    pub clients: usize,
    /// The model that judges the history (`mutex`, `owner-mutex`,
    /// `fenced-writes`, `lock-set`).
    pub model: String,
    /// How soon after the last fault heals some client must acquire, ms.
    pub liveness_bound_ms: u64,
    /// The guarded resource, if the run had one.
    #[serde(default)]
    pub resource: Option<ResourceSpec>,
    /// Only the resource decides safety (a fencing rung).
    pub resource_decides_safety: bool,
    /// Why the run ended before its scenario did, if it did.
    #[serde(default)]
    pub cut_short: Option<CutShort>,
    /// The scenario's name.
    pub scenario: String,
    /// The rung's name.
    pub rung: String,
    /// The run's seed.
    pub seed: u64,
}

impl Header {
    /// The header of one cell's history: the scenario's clients, how the
    /// cell was judged (`config`), and which run it was.
    pub fn of_cell(
        scenario: &model::scenario::Scenario,
        rung: &str,
        seed: u64,
        config: &CheckConfig,
        history: &History,
    ) -> Header {
        Header {
            // Every client of the history is below it, whatever the
            // scenario's own count says of pooled callers.
            clients: scenario
                .client_count()
                .max(crate::locklab_format::client_count(history))
                .max(1),
            model: crate::judging::model_of(config).name().to_string(),
            liveness_bound_ms: u64::try_from(config.liveness_bound.as_millis()).unwrap_or(u64::MAX),
            resource: config.resource,
            resource_decides_safety: config.resource_decides_safety,
            cut_short: config.cut_short.clone(),
            scenario: scenario.name.clone(),
            rung: rung.to_string(),
            seed,
        }
    }

    /// The checkers' configuration it carries.
    pub fn check_config(&self) -> CheckConfig {
        CheckConfig {
            resource: self.resource,
            liveness_bound: Duration::from_millis(self.liveness_bound_ms),
            resource_decides_safety: self.resource_decides_safety,
            cut_short: self.cut_short.clone(),
        }
    }
}

/// Whether `op` is the header operation.
pub fn is_header(op: &Op) -> bool {
    op.process == Process::Named(LOCKLAB_PROCESS.into()) && op.f == HEADER_F
}

/// The header of `ops`, if one is there (the first header operation);
/// an error, at the header's line, if its value is not a [`Header`]. The
/// error names no file: add it with [`BadHistory::in_file`].
pub fn header_of(ops: &[Op]) -> Option<Result<Header, BadHistory>> {
    let op = ops.iter().find(|op| is_header(op))?;
    Some(serde_json::from_value(op.value.clone()).map_err(|e| {
        BadHistory::at(
            "",
            op.line,
            "a check-config header {:clients, :model, :liveness-bound-ms, ...}",
            e.to_string(),
        )
    }))
}

/// The history's events as Jepsen operations, after a header operation
/// carrying `header`. Each operation's `line` is the line
/// [`write_edn`] and [`write_json`] put it on.
pub fn to_ops(history: &History, header: &Header) -> Vec<Op> {
    let header_value = serde_json::to_value(header).unwrap_or(Value::Null);
    let mut ops = vec![named_op(LOCKLAB_PROCESS, HEADER_F, header_value, None, 0)];
    ops[0].time_ns = None;
    ops.extend(events_to_ops(history.events(), header.clients));
    for (n, op) in ops.iter_mut().enumerate() {
        op.line = n + 1;
    }
    ops
}

/// The events as Jepsen operations (no header), client `c`'s process
/// numbered `c + k × clients`; each operation's line is its position + 1.
pub(crate) fn events_to_ops(events: &[Event], clients: usize) -> Vec<Op> {
    let stride = clients.max(1) as u64;
    let mut infos: HashMap<usize, u64> = HashMap::new();
    let mut ops = Vec::with_capacity(events.len());
    for (n, event) in events.iter().enumerate() {
        let time_ns = event.at_us.checked_mul(1000);
        let mut op = match &event.kind {
            EventKind::Invoke {
                client,
                op,
                lock,
                n,
                value,
                shared,
            } => {
                let k = infos.get(client).copied().unwrap_or(0);
                let mut fields = BTreeMap::new();
                fields.insert("lock".into(), json!(lock));
                fields.insert("n".into(), json!(n));
                if *shared {
                    fields.insert("shared".into(), json!(true));
                }
                client_op(
                    (*client as u64).saturating_add(k.saturating_mul(stride)),
                    OpType::Invoke,
                    *op,
                    json!(value),
                    fields,
                )
            }
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
            } => {
                let k = infos.get(client).copied().unwrap_or(0);
                let kind = match outcome {
                    Outcome::Ok => OpType::Ok,
                    Outcome::Fail => OpType::Fail,
                    Outcome::Unknown => OpType::Info,
                };
                if kind == OpType::Info {
                    *infos.entry(*client).or_default() += 1;
                }
                let mut fields = BTreeMap::new();
                fields.insert("lock".into(), json!(lock));
                fields.insert("n".into(), json!(n));
                let optional = [
                    ("token", token.as_ref().map(|t| json!(t))),
                    ("fence", fence.map(|f| json!(f))),
                    ("depth", depth.map(|d| json!(d))),
                    ("valid-for-us", valid_for_us.map(|v| json!(v))),
                    ("error", error.as_ref().map(|e| json!(e))),
                    ("shared", shared.then_some(json!(true))),
                ];
                for (name, field) in optional {
                    if let Some(field) = field {
                        fields.insert(name.into(), field);
                    }
                }
                client_op(
                    (*client as u64).saturating_add(k.saturating_mul(stride)),
                    kind,
                    *op,
                    json!(value),
                    fields,
                )
            }
            EventKind::Fault {
                fault,
                target,
                phase,
                detail,
            } => {
                let mut op = named_op(
                    NEMESIS_PROCESS,
                    fault.name(),
                    json!(target.to_string()),
                    None,
                    0,
                );
                op.fields.insert("phase".into(), json!(phase));
                if !detail.is_empty() {
                    op.fields.insert("detail".into(), json!(detail));
                }
                op
            }
            EventKind::Server {
                node,
                what,
                key,
                value,
            } => {
                let mut op = named_op(LOCKLAB_PROCESS, "server", json!(value), None, 0);
                op.fields.insert("node".into(), json!(node.to_string()));
                op.fields.insert("what".into(), json!(what));
                op.fields.insert("key".into(), json!(key));
                op
            }
            EventKind::Final { value } => named_op(LOCKLAB_PROCESS, "final", json!(value), None, 0),
            EventKind::Wakeups { count } => {
                named_op(LOCKLAB_PROCESS, "wakeups", json!(count), None, 0)
            }
        };
        op.time_ns = time_ns;
        op.index = event.i as u64;
        op.line = n + 1;
        ops.push(op);
    }
    ops
}

fn client_op(
    process: u64,
    kind: OpType,
    f: history::Op,
    value: Value,
    fields: BTreeMap<String, Value>,
) -> Op {
    Op {
        process: Process::Client(process),
        kind,
        f: op_name(f),
        value,
        time_ns: None,
        clock_bound_ns: 0,
        index: 0,
        fields,
        line: 0,
    }
}

fn named_op(process: &str, f: &str, value: Value, time_ns: Option<u64>, index: u64) -> Op {
    Op {
        process: Process::Named(process.into()),
        kind: OpType::Info,
        f: f.into(),
        value,
        time_ns,
        clock_bound_ns: 0,
        index,
        fields: BTreeMap::new(),
        line: 0,
    }
}

/// locklab's name for an operation (`acquire`, `release`, ...).
fn op_name(op: history::Op) -> String {
    match serde_json::to_value(op) {
        Ok(Value::String(name)) => name,
        _ => format!("{op:?}").to_lowercase(),
    }
}

/// The fields of an operation that are written as EDN keywords.
const KEYWORD_FIELDS: [&str; 2] = ["phase", "what"];

/// The operations as EDN, one map a line (as Jepsen's `history.edn`).
pub fn write_edn(ops: &[Op]) -> String {
    let mut out = String::new();
    for op in ops {
        out.push_str("{:process ");
        match &op.process {
            Process::Client(n) => out.push_str(&n.to_string()),
            Process::Named(name) => edn::write_keyword_or_string(&mut out, name),
        }
        out.push_str(", :type :");
        out.push_str(op.kind.name());
        out.push_str(", :f ");
        edn::write_keyword_or_string(&mut out, &op.f);
        out.push_str(", :value ");
        edn::write_value(&mut out, &op.value);
        if let Some(time_ns) = op.time_ns {
            out.push_str(&format!(", :time {time_ns}"));
        }
        if op.clock_bound_ns != 0 {
            out.push_str(&format!(", :{CLOCK_BOUND_KEY} {}", op.clock_bound_ns));
        }
        if !is_header(op) {
            out.push_str(&format!(", :index {}", op.index));
        }
        for (name, value) in &op.fields {
            out.push_str(", ");
            edn::write_key(&mut out, name);
            out.push(' ');
            match value {
                Value::String(text) if KEYWORD_FIELDS.contains(&name.as_str()) => {
                    edn::write_keyword_or_string(&mut out, text)
                }
                _ => edn::write_value(&mut out, value),
            }
        }
        out.push_str("}\n");
    }
    out
}

/// The operations as JSON Lines, one object a line, keys as in EDN.
pub fn write_json(ops: &[Op]) -> String {
    let mut out = String::new();
    for op in ops {
        let mut object = serde_json::Map::new();
        let process = match &op.process {
            Process::Client(n) => json!(n),
            Process::Named(name) => json!(name),
        };
        object.insert("process".into(), process);
        object.insert("type".into(), json!(op.kind.name()));
        object.insert("f".into(), json!(op.f));
        object.insert("value".into(), op.value.clone());
        if let Some(time_ns) = op.time_ns {
            object.insert("time".into(), json!(time_ns));
        }
        if op.clock_bound_ns != 0 {
            object.insert(CLOCK_BOUND_KEY.into(), json!(op.clock_bound_ns));
        }
        if !is_header(op) {
            object.insert("index".into(), json!(op.index));
        }
        for (name, value) in &op.fields {
            object.insert(name.clone(), value.clone());
        }
        out.push_str(&Value::Object(object).to_string());
        out.push('\n');
    }
    out
}

/// Reads operations written by [`to_ops`] back into locklab's history,
/// exactly: `i` from `index`, `at_us` from `time` ÷ 1000. Client `c` of
/// process `P` is `P mod clients`, where `clients` is the argument if
/// given, else the header's; with neither, `c = P`. Refuses, at its line,
/// any operation locklab does not write, a field it does not know, and a
/// process that does not follow the numbering above. Errors name no
/// file: add it with [`BadHistory::in_file`].
pub fn to_history(ops: &[Op], clients: Option<usize>) -> Result<History, BadHistory> {
    let clients = match clients {
        Some(n) => Some(n),
        None => header_of(ops).transpose()?.map(|h| h.clients),
    };
    let mut infos: HashMap<usize, u64> = HashMap::new();
    let mut events = Vec::with_capacity(ops.len());
    for op in ops.iter().filter(|op| !is_header(op)) {
        let mut fields = Fields::new(op);
        let i = usize::try_from(op.index)
            .map_err(|_| fields.bad("an index that fits", op.index.to_string()))?;
        let at_us = match op.time_ns {
            Some(ns) if ns % 1000 == 0 => ns / 1000,
            Some(ns) => {
                return Err(
                    fields.bad("a time in whole µs (a multiple of 1000 ns)", ns.to_string())
                );
            }
            None => return Err(fields.bad("a time", "none".into())),
        };
        let kind = match &op.process {
            Process::Client(p) => {
                let client = match clients {
                    Some(n) if n > 0 => (*p % n as u64) as usize,
                    Some(_) => {
                        return Err(
                            fields.bad("a header with at least one client", "0 clients".into())
                        );
                    }
                    None => usize::try_from(*p)
                        .map_err(|_| fields.bad("a client number that fits", p.to_string()))?,
                };
                if let Some(n) = clients {
                    let k = infos.get(&client).copied().unwrap_or(0);
                    let expected = k
                        .checked_mul(n as u64)
                        .and_then(|offset| offset.checked_add(client as u64));
                    if expected != Some(*p) {
                        let expected = expected.map_or("beyond 64 bits".into(), |e| e.to_string());
                        return Err(fields.bad(
                            &format!(
                                "process {expected} for client {client} after {k} unknown outcomes"
                            ),
                            format!("process {p}"),
                        ));
                    }
                }
                if op.kind == OpType::Info {
                    *infos.entry(client).or_default() += 1;
                }
                client_event(op, client, &mut fields)?
            }
            Process::Named(name) if name == NEMESIS_PROCESS => {
                let fault = FaultKind::from_name(&op.f).ok_or_else(|| {
                    fields.bad(
                        "a fault kind (pause, crash, partition, ...)",
                        format!("{:?}", op.f),
                    )
                })?;
                let target = match &op.value {
                    Value::String(text) => text.parse().map_err(|e: model::host::BadHost| {
                        fields.bad("a fault target", e.to_string())
                    })?,
                    other => return Err(fields.bad("a fault target as text", other.to_string())),
                };
                EventKind::Fault {
                    fault,
                    target,
                    phase: fields.required("phase")?,
                    detail: fields.optional("detail")?.unwrap_or_default(),
                }
            }
            Process::Named(name) if name == LOCKLAB_PROCESS => match op.f.as_str() {
                "server" => EventKind::Server {
                    node: {
                        let node: String = fields.required("node")?;
                        node.parse().map_err(|e: model::host::BadHost| {
                            fields.bad("a node", e.to_string())
                        })?
                    },
                    what: fields.required("what")?,
                    key: fields.required("key")?,
                    value: fields.value()?,
                },
                "final" => EventKind::Final {
                    value: fields.value()?,
                },
                "wakeups" => EventKind::Wakeups {
                    count: fields.value()?,
                },
                other => {
                    return Err(fields.bad(
                        "a locklab record (check-config, server, final, wakeups)",
                        format!("{other:?}"),
                    ));
                }
            },
            Process::Named(other) => {
                return Err(fields.bad(
                    "a process locklab writes (a client number, nemesis, locklab)",
                    format!("{other:?}"),
                ));
            }
        };
        fields.done()?;
        events.push(Event { i, at_us, kind });
    }
    Ok(events.into_iter().collect())
}

fn client_event(op: &Op, client: usize, fields: &mut Fields) -> Result<EventKind, BadHistory> {
    let f: history::Op = serde_json::from_value(json!(op.f)).map_err(|_| {
        fields.bad(
            "a locklab operation (acquire, release, extend, check, read, write)",
            format!("{:?}", op.f),
        )
    })?;
    let lock = fields.required("lock")?;
    let n = fields.required("n")?;
    let value = fields.value()?;
    let shared = fields.optional("shared")?.unwrap_or(false);
    let outcome = match op.kind {
        OpType::Invoke => {
            return Ok(EventKind::Invoke {
                client,
                op: f,
                lock,
                n,
                value,
                shared,
            });
        }
        OpType::Ok => Outcome::Ok,
        OpType::Fail => Outcome::Fail,
        OpType::Info => Outcome::Unknown,
    };
    Ok(EventKind::Complete {
        client,
        op: f,
        lock,
        n,
        outcome,
        token: fields.optional("token")?,
        fence: fields.optional("fence")?,
        depth: fields.optional("depth")?,
        valid_for_us: fields.optional("valid-for-us")?,
        value,
        error: fields.optional("error")?,
        shared,
    })
}

/// An operation's further fields, taken one by one; any left over are
/// refused.
struct Fields<'a> {
    op: &'a Op,
    left: BTreeMap<String, Value>,
}

impl<'a> Fields<'a> {
    fn new(op: &'a Op) -> Fields<'a> {
        Fields {
            op,
            left: op.fields.clone(),
        }
    }

    fn bad(&self, expected: &str, found: String) -> BadHistory {
        BadHistory::at("", self.op.line, expected, found)
    }

    fn parse<T: DeserializeOwned>(&self, name: &str, value: Value) -> Result<T, BadHistory> {
        serde_json::from_value(value.clone()).map_err(|e| {
            self.bad(
                &format!("a {name} as locklab writes it"),
                format!("{value} ({e})"),
            )
        })
    }

    fn required<T: DeserializeOwned>(&mut self, name: &str) -> Result<T, BadHistory> {
        match self.left.remove(name) {
            Some(value) => self.parse(name, value),
            None => Err(self.bad(&format!("a field {name}"), "none".into())),
        }
    }

    fn optional<T: DeserializeOwned>(&mut self, name: &str) -> Result<Option<T>, BadHistory> {
        match self.left.remove(name) {
            None | Some(Value::Null) => Ok(None),
            Some(value) => self.parse(name, value).map(Some),
        }
    }

    fn value<T: DeserializeOwned>(&self) -> Result<T, BadHistory> {
        self.parse("value", self.op.value.clone())
    }

    fn done(self) -> Result<(), BadHistory> {
        match self.left.keys().next() {
            None => Ok(()),
            Some(name) => Err(self.bad(
                "only the fields locklab writes",
                format!("a field {name:?}"),
            )),
        }
    }
}
