//! Generated scenario files, across the whole range of every field the
//! format has (`scenarios/README.md`, `model/src/scenario/`,
//! `model/src/fault/`): every top-level field, client groups, resources,
//! deployments, every fault kind with every field, faults at times and at
//! fault points (`cycle`, `nth`), per-rung tables, old spellings, odd host
//! names, and values at and beyond every limit.
//!
//! Each file is a valid scenario, or a valid scenario with exactly one
//! defect: a value out of range or of the wrong type (0, max + 1,
//! `u64::MAX`, negative, a float where an integer goes, NaN and infinity,
//! strings, arrays), a field missing, unknown or of another fault kind, a
//! table of the wrong shape, or a value that contradicts another field. The
//! property: a file with a defect is refused with an error that names the
//! file, the line and the field; a valid file loads and runs to a verdict,
//! quickly, and never panics.
//!
//! Valid files keep their runs short (at most 1.5 simulated seconds and 8
//! clients) but use the largest accepted values of every other field:
//! hour-long critical sections, leases, pauses, clock jumps, drifts of
//! ±1,000,000 ppm, 2^32 − 1 cycles, a 10^12 stock, ten seconds of latency.
//! 256 clients are run by `bad_input.rs`.
//!
//! The cases come from a fixed seed: every run of the test command checks
//! the same files.

use model::scenario::{MAX_MS, MAX_PPM, MAX_STOCK, MAX_TRIP_MS, Scenario};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed, TestCaseError, TestRng, TestRunner};
use std::fmt::Write as _;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

/// The seed every case is drawn from.
const SEED: u64 = 20_261_124;
/// How many files (about half valid, each run once): about 10 s.
const CASES: u32 = 600;
/// The name errors must give the file.
const FILE: &str = "generated.toml";
/// The most history events a valid file's run may record: about ten
/// times the largest of the 600 runs (9,377 events). A run's cost is its
/// events (tens of microseconds each), so this bounds how long a run
/// takes without reading the machine's clock, which a loaded machine
/// slows.
const MOST_EVENTS: usize = 100_000;
/// The most events any run of this test recorded, for its summary line.
static MOST_EVENTS_RECORDED: AtomicUsize = AtomicUsize::new(0);
/// The longest simulated run a valid file asks for, ms.
const LONGEST_RUN_MS: u64 = 1_500;
/// The most clients a valid file has.
const MOST_CLIENTS: u64 = 8;

// ---------------------------------------------------------------------------
// Choices

/// Draws choices from the runner's seeded generator.
struct Draw<'r>(&'r mut TestRng);

impl Draw<'_> {
    /// A number below `n` (0 when `n` is 0).
    fn below(&mut self, n: u64) -> u64 {
        if n == 0 { 0 } else { self.0.next_u64() % n }
    }

    /// True `percent` times in a hundred.
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    /// One of `items`.
    fn pick<T: Clone>(&mut self, items: &[T]) -> T {
        items[self.below(items.len() as u64) as usize].clone()
    }

    /// A number from `lo` to `hi`, both included: mostly the edges and
    /// small values above `lo`.
    fn edgy(&mut self, lo: u64, hi: u64) -> u64 {
        match self.below(6) {
            0 => lo,
            1 => hi,
            2 => (lo + 1).min(hi),
            _ => lo + self.below(hi.saturating_sub(lo).min(60) + 1),
        }
    }
}

// ---------------------------------------------------------------------------
// The document

/// What a value is, so that a wrong one can be drawn for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ty {
    /// A time in ms, 0 to [`MAX_MS`].
    Ms,
    /// A time in ms, 1 to [`MAX_MS`].
    MsPositive,
    /// A one-way latency: with the other, at most [`MAX_TRIP_MS`].
    Trip,
    /// A `u32` count (`cycles`, `writes`).
    Count32,
    /// `on.cycle`: 1 to the client's cycles.
    Cycle,
    /// `on.nth`: from 1.
    Nth,
    /// A group's client count.
    Clients,
    /// `masters` or `replicas`.
    Nodes,
    /// `on.client`.
    ClientIndex,
    /// The stock: 0 to [`MAX_STOCK`].
    Stock,
    /// A clock jump: ±[`MAX_MS`].
    Jump,
    /// A drift: ±[`MAX_PPM`].
    Ppm,
    /// One of a set of names (kinds, persistence, points, verdicts).
    Word,
    /// The rung list.
    Rungs,
    /// The seed list.
    Seeds,
    /// A host of a role.
    Host(Role),
    /// A list of hosts.
    Hosts,
    /// `true` or `false`.
    Flag,
    /// The scenario's name.
    Name,
    /// Any string (`description`, `lock.key`).
    Text,
}

/// Which hosts a host field takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    /// `client-N` only (a pause).
    Client,
    /// Any host (a crash).
    Any,
    /// Anything but `store` (a clock).
    Clock,
}

/// One `key = value` of a table, or an inline table (`on = { ... }`).
#[derive(Debug, Clone)]
struct Entry {
    key: String,
    value: Value,
    ty: Option<Ty>,
    /// Other names an error may give this field (`rungs` for `variants`).
    aliases: Vec<String>,
    /// Whether the file is refused without it.
    required: bool,
}

#[derive(Debug, Clone)]
enum Value {
    Literal(String),
    Inline(Vec<Entry>),
}

impl Entry {
    fn new(key: &str, value: impl Into<String>, ty: Ty) -> Entry {
        Entry {
            key: key.into(),
            value: Value::Literal(value.into()),
            ty: Some(ty),
            aliases: Vec::new(),
            required: false,
        }
    }

    fn required(mut self) -> Entry {
        self.required = true;
        self
    }

    fn alias(mut self, name: &str) -> Entry {
        self.aliases.push(name.into());
        self
    }

    fn render(&self) -> String {
        match &self.value {
            Value::Literal(v) => format!("{} = {v}", self.key),
            Value::Inline(entries) => format!(
                "{} = {{ {} }}",
                self.key,
                entries
                    .iter()
                    .map(Entry::render)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }
}

/// What kind of table a section is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// The file's top level, before any header.
    Top,
    /// `[name]`.
    Table,
    /// `[[name]]`.
    ArrayItem,
}

/// A table of the file.
#[derive(Debug, Clone)]
struct Section {
    name: String,
    shape: Shape,
    entries: Vec<Entry>,
    /// The fault kind, for a fault's table.
    fault: Option<&'static str>,
}

impl Section {
    fn new(name: &str, shape: Shape) -> Section {
        Section {
            name: name.into(),
            shape,
            entries: Vec::new(),
            fault: None,
        }
    }

    fn push(&mut self, entry: Entry) {
        self.entries.push(entry);
    }
}

/// A change that makes one field contradict another, and what loading
/// the result must say.
type Contradiction = Box<dyn Fn(&mut Doc) -> Expect>;

/// A whole file.
#[derive(Debug, Clone, Default)]
struct Doc {
    sections: Vec<Section>,
}

impl Doc {
    fn render(&self) -> String {
        let mut out = String::new();
        for section in &self.sections {
            match section.shape {
                Shape::Top => {}
                Shape::Table => {
                    let _ = writeln!(out, "\n[{}]", section.name);
                }
                Shape::ArrayItem => {
                    let _ = writeln!(out, "\n[[{}]]", section.name);
                }
            }
            for entry in &section.entries {
                let _ = writeln!(out, "{}", entry.render());
            }
        }
        out
    }
}

/// What the loader must make of a file.
#[derive(Debug, Clone)]
enum Expect {
    /// It loads.
    Loads,
    /// It is refused with an error naming one of these fields.
    Refused(Vec<String>, &'static str),
}

// ---------------------------------------------------------------------------
// A valid scenario

/// What the parts of a scenario need to know about the rest of it.
#[derive(Debug, Clone, Default)]
struct Facts {
    rungs: Vec<&'static str>,
    duration_ms: u64,
    /// Each client's group's cycles, by client index.
    cycles: Vec<u32>,
    /// The largest deployment's node count.
    nodes: usize,
}

fn quote(text: &str) -> String {
    // JSON's escapes (\" \\ \n \uXXXX) are TOML's basic-string escapes.
    serde_json::to_string(text).unwrap_or_default()
}

const VERDICTS: [&str; 4] = ["safe", "violated", "deadlock", "unknown"];
const POINTS: [&str; 6] = [
    "acquire-reply",
    "acquire-mid",
    "after-acquire",
    "before-write",
    "release-start",
    "release-mid",
];
const FAULT_KINDS: [&str; 8] = [
    "pause",
    "crash",
    "partition",
    "delay",
    "slow-link",
    "clock-jump",
    "clock-drift",
    "failover",
];

/// A deployment's table; returns it and its node count.
fn topology(d: &mut Draw<'_>, name: &str) -> (Section, usize) {
    let mut s = Section::new(name, Shape::Table);
    let kind = d.pick(&["standalone", "replicated", "independent"]);
    s.push(Entry::new("kind", quote(kind), Ty::Word));
    let nodes = match kind {
        "standalone" => {
            if d.chance(30) {
                s.push(Entry::new("masters", "1", Ty::Nodes));
                s.push(Entry::new("replicas", "0", Ty::Nodes));
                s.push(Entry::new("replication_delay_ms", "0", Ty::Ms));
            }
            1
        }
        "replicated" => {
            let replicas = d.pick(&[0, 1, 2, 8]);
            s.push(Entry::new("replicas", replicas.to_string(), Ty::Nodes));
            if d.chance(50) {
                let delay = d.edgy(0, MAX_MS);
                s.push(Entry::new(
                    "replication_delay_ms",
                    delay.to_string(),
                    Ty::Ms,
                ));
            }
            if d.chance(20) {
                s.push(Entry::new("masters", "1", Ty::Nodes));
            }
            1 + replicas
        }
        _ => {
            let masters = d.pick(&[1, 2, 3, 5, 9]);
            s.push(Entry::new("masters", masters.to_string(), Ty::Nodes));
            masters
        }
    };
    if d.chance(50) {
        let mode = d.pick(&["none", "aof-always", "aof-everysec"]);
        s.push(Entry::new("persistence", quote(mode), Ty::Word));
    }
    (s, nodes)
}

/// A host of `role` that exists in the scenario.
fn host(d: &mut Draw<'_>, facts: &Facts, role: Role) -> String {
    let client = format!("client-{}", d.below(facts.cycles.len() as u64));
    let node = format!("redis-{}", d.below(facts.nodes as u64));
    match role {
        Role::Client => client,
        Role::Any => d.pick(&[client, node, "store".into(), "master".into()]),
        Role::Clock => d.pick(&[client, node, "master".into()]),
    }
}

fn hosts(d: &mut Draw<'_>, facts: &Facts) -> String {
    let n = 1 + d.below(2);
    let names: Vec<String> = (0..n).map(|_| quote(&host(d, facts, Role::Any))).collect();
    format!("[{}]", names.join(", "))
}

/// A valid fault of a random kind, in a table called `name`.
fn fault(d: &mut Draw<'_>, facts: &Facts, name: &str) -> Section {
    let kind = d.pick(&FAULT_KINDS);
    let mut s = Section::new(name, Shape::ArrayItem);
    s.fault = Some(kind);
    s.push(Entry::new("kind", quote(kind), Ty::Word).required());
    // A trigger: a time, or a point of a cycle some client runs.
    let aimable: Vec<usize> = (0..facts.cycles.len())
        .filter(|&c| facts.cycles[c] >= 1)
        .collect();
    let on_point = !aimable.is_empty() && d.chance(40);
    if on_point {
        let client = d.pick(&aimable);
        let cycles = facts.cycles[client];
        let cycle = 1 + d.below(u64::from(cycles.min(3)));
        let mut on = vec![
            Entry::new("client", client.to_string(), Ty::ClientIndex).required(),
            if d.chance(15) {
                Entry::new("op", cycle.to_string(), Ty::Cycle).alias("cycle")
            } else {
                Entry::new("cycle", cycle.to_string(), Ty::Cycle)
            },
            Entry::new("point", quote(d.pick(&POINTS)), Ty::Word).required(),
        ];
        if d.chance(40) {
            on.push(Entry::new("nth", (1 + d.below(3)).to_string(), Ty::Nth));
        }
        s.push(Entry {
            key: "on".into(),
            value: Value::Inline(on),
            ty: None,
            aliases: vec!["at_ms".into()],
            required: true,
        });
    } else {
        let at = d.edgy(0, facts.duration_ms - 1);
        s.push(
            Entry::new("at_ms", at.to_string(), Ty::Ms)
                .required()
                .alias("on"),
        );
    }
    let ms = |d: &mut Draw<'_>| d.edgy(0, MAX_MS).to_string();
    match kind {
        "pause" => {
            if !on_point || d.chance(50) {
                let target = quote(&host(d, facts, Role::Client));
                let entry = Entry::new("target", target, Ty::Host(Role::Client));
                // Aimed at a point, the target defaults to that client.
                s.push(if on_point { entry } else { entry.required() });
            }
            let duration = ms(d);
            s.push(Entry::new("duration_ms", duration, Ty::Ms).required());
        }
        "crash" => {
            if !on_point || d.chance(50) {
                let target = quote(&host(d, facts, Role::Any));
                let entry = Entry::new("target", target, Ty::Host(Role::Any));
                s.push(if on_point { entry } else { entry.required() });
            }
            if d.chance(50) {
                let how = quote(d.pick(&["kill", "power-loss"]));
                s.push(Entry::new("how", how, Ty::Word));
            }
            if d.chance(60) {
                let after = ms(d);
                s.push(Entry::new("restart_after_ms", after, Ty::Ms));
            }
        }
        "partition" | "delay" | "slow-link" => {
            let oneway_delay = kind == "delay" && d.chance(30);
            let (a, b) = if oneway_delay {
                // A one-way delay holds a client's requests or its replies.
                let clients = quote(&host(d, facts, Role::Client));
                let node = format!("redis-{}", d.below(facts.nodes as u64));
                let other = quote(&d.pick(&[node, "store".into(), "master".into()]));
                let clients = format!("[{clients}]");
                let other = format!("[{other}]");
                if d.chance(50) {
                    (clients, other)
                } else {
                    (other, clients)
                }
            } else {
                (hosts(d, facts), hosts(d, facts))
            };
            s.push(Entry::new("a", a, Ty::Hosts).required());
            s.push(Entry::new("b", b, Ty::Hosts).required());
            if oneway_delay {
                s.push(Entry::new("oneway", "true", Ty::Flag));
            } else if kind == "partition" && d.chance(40) {
                let oneway = d.pick(&["true", "false"]);
                s.push(Entry::new("oneway", oneway, Ty::Flag));
            }
            if kind == "slow-link" {
                let latency = ms(d);
                s.push(Entry::new("latency_ms", latency, Ty::Ms).required());
            }
            if kind == "delay" || d.chance(60) {
                let duration = ms(d);
                let entry = Entry::new("duration_ms", duration, Ty::Ms);
                s.push(if kind == "delay" {
                    entry.required()
                } else {
                    entry
                });
            }
        }
        "clock-jump" | "clock-drift" => {
            let target = quote(&host(d, facts, Role::Clock));
            s.push(Entry::new("target", target, Ty::Host(Role::Clock)).required());
            if kind == "clock-jump" {
                let jump = d.pick(&[-(MAX_MS as i64), -1, 0, 1, 250, MAX_MS as i64]);
                s.push(Entry::new("jump_ms", jump.to_string(), Ty::Jump).required());
            } else {
                let ppm = d.pick(&[-MAX_PPM, -1, 0, 1, 50_000, MAX_PPM]);
                s.push(Entry::new("ppm", ppm.to_string(), Ty::Ppm).required());
            }
        }
        _ => {
            if d.chance(60) {
                let after = ms(d);
                s.push(Entry::new("promote_after_ms", after, Ty::Ms));
            }
        }
    }
    s
}

/// A valid scenario.
fn valid(d: &mut Draw<'_>) -> (Doc, Facts) {
    let mut facts = Facts::default();
    let mut top = Section::new("", Shape::Top);
    let ids = locks::ids();
    let mut rungs: Vec<&'static str> = Vec::new();
    for _ in 0..1 + d.below(3) {
        let r = d.pick(&ids);
        if !rungs.contains(&r) {
            rungs.push(r);
        }
    }
    facts.rungs = rungs.clone();
    if d.chance(30) {
        let name = d.pick(&[
            "gen".to_string(),
            "a.b-c_d".into(),
            "x".repeat(100),
            String::new(),
        ]);
        top.push(Entry::new("name", quote(&name), Ty::Name));
    }
    if d.chance(30) {
        let text = d.pick(&["", "a \"quoted\" story\nover two lines", "ünïcödé ✓"]);
        top.push(Entry::new("description", quote(text), Ty::Text));
    }
    let list: Vec<String> = rungs.iter().map(|r| quote(r)).collect();
    let rung_entry = if d.chance(10) {
        Entry::new("variants", format!("[{}]", list.join(", ")), Ty::Rungs).alias("rungs")
    } else {
        Entry::new("rungs", format!("[{}]", list.join(", ")), Ty::Rungs)
    };
    top.push(rung_entry.required());
    if d.chance(70) {
        let seeds: Vec<String> = (0..1 + d.below(2))
            .map(|_| d.pick(&[0u64, 1, 2, 42, (1 << 53) - 1]).to_string())
            .collect();
        top.push(Entry::new(
            "seeds",
            format!("[{}]", seeds.join(", ")),
            Ty::Seeds,
        ));
    }
    facts.duration_ms = d.pick(&[1, 2, 10, 100, 300, 800, LONGEST_RUN_MS]);
    top.push(Entry::new("duration_ms", facts.duration_ms.to_string(), Ty::MsPositive).required());
    if d.chance(30) {
        let bound = d.edgy(0, MAX_MS);
        top.push(Entry::new("liveness_bound_ms", bound.to_string(), Ty::Ms));
    }
    let mut doc = Doc {
        sections: vec![top],
    };

    facts.nodes = 1;
    if d.chance(60) {
        let (t, nodes) = topology(d, "topology");
        facts.nodes = facts.nodes.max(nodes);
        doc.sections.push(t);
    }
    if d.chance(30) {
        let rung = d.pick(&rungs);
        let (t, nodes) = topology(d, &format!("topology_for.{rung}"));
        facts.nodes = facts.nodes.max(nodes);
        doc.sections.push(t);
    }
    if d.chance(40) {
        let mut n = Section::new("network", Shape::Table);
        // The longest trip: a few seconds of stepping to stock the store
        // and read it back, so only now and then.
        let (latency, jitter) = if d.chance(1) {
            (MAX_TRIP_MS - 1, 1)
        } else {
            (d.pick(&[0, 1, 2, 30, 1_000]), d.pick(&[0, 1, 5]))
        };
        n.push(Entry::new("latency_ms", latency.to_string(), Ty::Trip));
        n.push(Entry::new("jitter_ms", jitter.to_string(), Ty::Trip));
        doc.sections.push(n);
    }
    if d.chance(60) {
        let mut l = Section::new("lock", Shape::Table);
        if d.chance(40) {
            let key = d.pick(&[
                "lock:stock".to_string(),
                String::new(),
                "ключ".into(),
                "line\nbreak".into(),
                "k".repeat(300),
                "stock".into(),
            ]);
            l.push(Entry::new("key", quote(&key), Ty::Text));
        }
        for (key, ty, lo) in [
            ("ttl_ms", Ty::MsPositive, 1),
            ("max_wait_ms", Ty::Ms, 0),
            ("retry_ms", Ty::MsPositive, 1),
            ("node_timeout_ms", Ty::MsPositive, 1),
            ("response_timeout_ms", Ty::MsPositive, 1),
        ] {
            if d.chance(50) {
                let value = d.edgy(lo, MAX_MS);
                l.push(Entry::new(key, value.to_string(), ty));
            }
        }
        doc.sections.push(l);
    }
    let groups = 1 + d.below(3);
    for g in 0..groups {
        let room = MOST_CLIENTS - facts.cycles.len() as u64;
        let count = if g == 0 {
            1 + d.below(room.min(4))
        } else {
            d.below(room.min(4) + 1)
        };
        let mut c = Section::new("clients", Shape::ArrayItem);
        c.push(Entry::new("count", count.to_string(), Ty::Clients));
        let cycles = d.pick(&[0, 1, 1, 2, 3, u32::MAX]);
        if d.chance(10) {
            c.push(Entry::new("ops", cycles.to_string(), Ty::Count32).alias("cycles"));
        } else if cycles != 1 || d.chance(50) {
            c.push(Entry::new("cycles", cycles.to_string(), Ty::Count32));
        }
        for (key, values) in [
            ("critical_section_ms", [0, 1, 5, 50, MAX_MS - 1, MAX_MS]),
            ("think_ms", [0, 1, 20, 300, MAX_MS, MAX_MS]),
        ] {
            if d.chance(60) {
                c.push(Entry::new(key, d.pick(&values).to_string(), Ty::Ms));
            }
        }
        if d.chance(40) {
            let start = d.edgy(0, facts.duration_ms - 1);
            c.push(Entry::new("start_ms", start.to_string(), Ty::Ms));
        }
        if d.chance(30) {
            c.push(Entry::new("nested", d.pick(&["true", "false"]), Ty::Flag));
        }
        if d.chance(40) {
            let writes = d.pick(&[0, 1, 2, u32::MAX]);
            c.push(Entry::new("writes", writes.to_string(), Ty::Count32));
        }
        facts
            .cycles
            .extend(std::iter::repeat_n(cycles, count as usize));
        doc.sections.push(c);
    }
    for (name, chance) in [
        ("resource".to_string(), 50),
        (format!("resource_for.{}", d.pick(&rungs)), 20),
    ] {
        if d.chance(chance) {
            let mut r = Section::new(&name, Shape::Table);
            if d.chance(70) {
                r.push(Entry::new(
                    "kind",
                    quote(d.pick(&["inventory", "fenced"])),
                    Ty::Word,
                ));
            }
            if d.chance(70) {
                let stock = d.pick(&[0, 1, 200, MAX_STOCK]);
                r.push(Entry::new("stock", stock.to_string(), Ty::Stock));
            }
            doc.sections.push(r);
        }
    }
    for _ in 0..d.below(4) {
        let f = fault(d, &facts, "faults");
        doc.sections.push(f);
    }
    if d.chance(25) {
        let name = format!("faults_for.{}", d.pick(&rungs));
        for _ in 0..1 + d.below(2) {
            let f = fault(d, &facts, &name);
            doc.sections.push(f);
        }
    }
    if d.chance(40) {
        let mut e = Section::new("expect", Shape::Table);
        for r in &rungs {
            if d.chance(70) {
                e.push(Entry::new(r, quote(d.pick(&VERDICTS)), Ty::Word));
            }
        }
        doc.sections.push(e);
    }
    (doc, facts)
}

// ---------------------------------------------------------------------------
// Defects

/// Values of the wrong type or beyond every limit for a field of `ty`, in
/// a scenario with `facts`.
fn wrong_values(ty: Ty, facts: &Facts) -> Vec<String> {
    let clients = facts.cycles.len();
    let never = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let mut values = match ty {
        Ty::Ms | Ty::MsPositive => never(&[
            "3600001",
            "18446744073709551615",
            "18446744073709551616",
            "-1",
            "-9223372036854775808",
            "1.5",
            "nan",
            "inf",
            "-inf",
            "\"10\"",
            "true",
            "[1]",
        ]),
        Ty::Trip => never(&["10001", "3600001", "-1", "0.5", "nan", "\"1\""]),
        Ty::Count32 => never(&[
            "4294967296",
            "-1",
            "1.5",
            "\"1\"",
            "nan",
            "18446744073709551615",
        ]),
        Ty::Cycle => vec![
            "0".into(),
            (u64::from(facts.cycles.iter().copied().max().unwrap_or(0)) + 1).to_string(),
            "-1".into(),
            "1.5".into(),
        ],
        Ty::Nth => never(&["0", "-1", "4294967296", "2.5"]),
        Ty::Clients => never(&["257", "-1", "1.5", "18446744073709551615", "\"2\""]),
        Ty::Nodes => never(&["10", "-1", "2.0", "18446744073709551615", "\"3\""]),
        Ty::ClientIndex => vec![
            clients.to_string(),
            "-1".into(),
            "1.5".into(),
            "18446744073709551615".into(),
        ],
        Ty::Stock => never(&[
            "-1",
            "1000000000001",
            "9223372036854775807",
            "-9223372036854775808",
            "18446744073709551615",
            "1e3",
            "nan",
            "\"5\"",
        ]),
        Ty::Jump => never(&[
            "3600001",
            "-3600001",
            "-9223372036854775808",
            "9223372036854775807",
            "18446744073709551615",
            "1.5",
            "nan",
        ]),
        Ty::Ppm => never(&["1000001", "-1000001", "-9223372036854775808", "1.5", "inf"]),
        Ty::Word => never(&["\"bogus\"", "\"\"", "5", "true", "\"SAFE\""]),
        Ty::Rungs => never(&["[]", "[\"nope\"]", "\"set-nx-px\"", "[1]"]),
        Ty::Seeds => never(&[
            "[]",
            "[9007199254740992]",
            "[18446744073709551615]",
            "[-1]",
            "[1.5]",
            "1",
            "[\"1\"]",
        ]),
        Ty::Host(_) | Ty::Hosts => {
            let mut names = vec![
                "client-01".to_string(),
                "client-+0".into(),
                "redis-00".into(),
                "Store".into(),
                String::new(),
                "redis-".into(),
                format!("client-{clients}"),
                format!("redis-{}", facts.nodes),
                "client-18446744073709551616".into(),
            ];
            match ty {
                Ty::Host(Role::Client) => names.extend(["redis-0".into(), "store".into()]),
                Ty::Host(Role::Clock) => names.push("store".into()),
                _ => {}
            }
            let mut values: Vec<String> = names.iter().map(|n| quote(n)).collect();
            values.push("5".into());
            if ty == Ty::Hosts {
                values = names.iter().map(|n| format!("[{}]", quote(n))).collect();
                values.extend(["[]".into(), "\"client-0\"".into(), "[5]".into()]);
            }
            values
        }
        Ty::Flag => never(&["1", "\"true\"", "nan"]),
        Ty::Name => vec![
            quote("../x"),
            quote("a b"),
            quote("."),
            quote(&"n".repeat(101)),
            "5".into(),
        ],
        Ty::Text => never(&["5", "true", "[\"a\"]"]),
    };
    if ty == Ty::MsPositive {
        values.push("0".into());
    }
    values
}

/// The names an error about `entry` may use.
fn names_of(entry: &Entry) -> Vec<String> {
    std::iter::once(entry.key.clone())
        .chain(entry.aliases.iter().cloned())
        .collect()
}

/// Every (section, entry, inline entry) position of the document.
fn positions(doc: &Doc) -> Vec<(usize, usize, Option<usize>)> {
    let mut all = Vec::new();
    for (s, section) in doc.sections.iter().enumerate() {
        for (e, entry) in section.entries.iter().enumerate() {
            all.push((s, e, None));
            if let Value::Inline(inner) = &entry.value {
                all.extend((0..inner.len()).map(|i| (s, e, Some(i))));
            }
        }
    }
    all
}

fn entry_ref(doc: &Doc, (s, e, i): (usize, usize, Option<usize>)) -> &Entry {
    let entry = &doc.sections[s].entries[e];
    match (i, &entry.value) {
        (Some(i), Value::Inline(inner)) => &inner[i],
        _ => entry,
    }
}

fn entry_at(doc: &mut Doc, (s, e, i): (usize, usize, Option<usize>)) -> &mut Entry {
    let entry = &mut doc.sections[s].entries[e];
    match i {
        None => entry,
        Some(i) => match &mut entry.value {
            Value::Inline(inner) => &mut inner[i],
            Value::Literal(_) => unreachable!("an inline position is in an inline table"),
        },
    }
}

/// Fields of a fault kind other than `kind`, with a valid value each.
fn foreign_field(kind: &str, d: &mut Draw<'_>) -> Option<(&'static str, &'static str)> {
    let all = [
        ("target", "\"client-0\""),
        ("how", "\"kill\""),
        ("restart_after_ms", "5"),
        ("a", "[\"client-0\"]"),
        ("b", "[\"redis-0\"]"),
        ("oneway", "false"),
        ("latency_ms", "5"),
        ("duration_ms", "5"),
        ("jump_ms", "5"),
        ("ppm", "5"),
        ("promote_after_ms", "5"),
    ];
    let own: &[&str] = match kind {
        "pause" => &["target", "duration_ms"],
        "crash" => &["target", "how", "restart_after_ms"],
        "partition" | "delay" => &["a", "b", "oneway", "duration_ms"],
        "slow-link" => &["a", "b", "latency_ms", "duration_ms"],
        "clock-jump" => &["target", "jump_ms"],
        "clock-drift" => &["target", "ppm"],
        _ => &["promote_after_ms"],
    };
    let foreign: Vec<_> = all.into_iter().filter(|(k, _)| !own.contains(k)).collect();
    (!foreign.is_empty()).then(|| d.pick(&foreign))
}

/// Gives `doc` exactly one defect; returns what the error must name.
fn break_one(doc: &mut Doc, facts: &Facts, d: &mut Draw<'_>) -> Expect {
    loop {
        match d.below(9) {
            // A value of the wrong type, or beyond its limits.
            0..=3 => {
                let candidates: Vec<_> = positions(doc)
                    .into_iter()
                    .filter(|p| entry_ref(doc, *p).ty.is_some())
                    .collect();
                let at = d.pick(&candidates);
                let entry = entry_at(doc, at);
                let ty = entry.ty.unwrap_or(Ty::Text);
                let bad = d.pick(&wrong_values(ty, facts));
                entry.value = Value::Literal(bad);
                let mut names = names_of(entry);
                // Both latencies are named when their sum is too long.
                if ty == Ty::Trip {
                    names.extend(["latency_ms".into(), "jitter_ms".into()]);
                }
                return Expect::Refused(names, "a wrong value");
            }
            // A field no table has.
            4 => {
                let s = d.below(doc.sections.len() as u64) as usize;
                let inline: Vec<usize> = doc.sections[s]
                    .entries
                    .iter()
                    .enumerate()
                    .filter(|(_, e)| matches!(e.value, Value::Inline(_)))
                    .map(|(i, _)| i)
                    .collect();
                let field = Entry::new("bogus_field", "1", Ty::Ms);
                match inline.first() {
                    Some(&e) if d.chance(50) => {
                        if let Value::Inline(inner) = &mut doc.sections[s].entries[e].value {
                            inner.push(field);
                        }
                    }
                    _ => doc.sections[s].entries.push(field),
                }
                return Expect::Refused(vec!["bogus_field".into()], "an unknown field");
            }
            // A required field left out.
            5 => {
                let required: Vec<_> = positions(doc)
                    .into_iter()
                    .filter(|p| entry_ref(doc, *p).required)
                    .collect();
                let at = d.pick(&required);
                let names = names_of(entry_at(doc, at));
                let (s, e, i) = at;
                match i {
                    None => {
                        doc.sections[s].entries.remove(e);
                    }
                    Some(i) => {
                        if let Value::Inline(inner) = &mut doc.sections[s].entries[e].value {
                            inner.remove(i);
                        }
                    }
                }
                return Expect::Refused(names, "a missing field");
            }
            // A field of another kind of fault.
            6 => {
                let faults: Vec<usize> = (0..doc.sections.len())
                    .filter(|&s| doc.sections[s].fault.is_some())
                    .collect();
                if faults.is_empty() {
                    continue;
                }
                let s = d.pick(&faults);
                let kind = doc.sections[s].fault.unwrap_or("pause");
                let Some((key, value)) = foreign_field(kind, d) else {
                    continue;
                };
                doc.sections[s].entries.push(Entry::new(key, value, Ty::Ms));
                return Expect::Refused(vec![key.into()], "a field of another fault kind");
            }
            // A value that contradicts another field.
            7 => {
                let mut options: Vec<Contradiction> = Vec::new();
                let duration = facts.duration_ms;
                let clients: Vec<usize> = (0..doc.sections.len())
                    .filter(|&s| doc.sections[s].name == "clients")
                    .collect();
                let first_group = clients[0];
                options.push(Box::new(move |doc: &mut Doc| {
                    doc.sections[first_group]
                        .entries
                        .retain(|e| e.key != "start_ms");
                    doc.sections[first_group].push(Entry::new(
                        "start_ms",
                        duration.to_string(),
                        Ty::Ms,
                    ));
                    Expect::Refused(vec!["start_ms".into()], "clients that never start")
                }));
                for s in 0..doc.sections.len() {
                    if doc.sections[s].fault.is_none() {
                        continue;
                    }
                    options.push(Box::new(move |doc: &mut Doc| {
                        let timed = doc.sections[s].entries.iter().any(|e| e.key == "at_ms");
                        if timed {
                            for e in &mut doc.sections[s].entries {
                                if e.key == "at_ms" {
                                    e.value = Value::Literal(duration.to_string());
                                }
                            }
                            Expect::Refused(vec!["at_ms".into()], "a fault after the end")
                        } else {
                            doc.sections[s].push(Entry::new("at_ms", "0", Ty::Ms));
                            Expect::Refused(
                                vec!["at_ms".into(), "on".into()],
                                "a fault with two triggers",
                            )
                        }
                    }));
                }
                let missing = locks::ids()
                    .into_iter()
                    .find(|r| !facts.rungs.contains(r))
                    .unwrap_or("setnx");
                let table = d.pick(&["expect", "topology_for", "resource_for"]);
                options.push(Box::new(move |doc: &mut Doc| {
                    let named = vec![missing.to_string()];
                    if table == "expect" {
                        // Into `[expect]` if there is one, else a new one.
                        let entry = Entry::new(missing, "\"safe\"", Ty::Word);
                        match doc.sections.iter_mut().find(|s| s.name == "expect") {
                            Some(e) => e.push(entry),
                            None => {
                                let mut e = Section::new("expect", Shape::Table);
                                e.push(entry);
                                doc.sections.push(e);
                            }
                        }
                    } else {
                        let mut t = Section::new(&format!("{table}.{missing}"), Shape::Table);
                        t.push(if table == "topology_for" {
                            Entry::new("kind", "\"standalone\"", Ty::Word)
                        } else {
                            Entry::new("stock", "5", Ty::Stock)
                        });
                        doc.sections.push(t);
                    }
                    Expect::Refused(named, "a rung that is not run")
                }));
                options.push(Box::new(|doc: &mut Doc| {
                    doc.sections.retain(|s| s.name != "clients");
                    Expect::Refused(vec!["clients".into()], "no clients at all")
                }));
                let pick = d.below(options.len() as u64) as usize;
                return options[pick](doc);
            }
            // A table of the wrong shape.
            _ => {
                let s = 1 + d.below(doc.sections.len() as u64 - 1) as usize;
                let section = &mut doc.sections[s];
                if section.shape == Shape::Top {
                    continue;
                }
                let name = section.name.clone();
                section.shape = match section.shape {
                    Shape::Table => Shape::ArrayItem,
                    _ => Shape::Table,
                };
                // `[clients]` twice is a duplicate table, which names it too.
                let root = name.split('.').next().unwrap_or(&name).to_string();
                return Expect::Refused(vec![name, root], "a table of the wrong shape");
            }
        }
    }
}

// ---------------------------------------------------------------------------
// The property

/// Whether `message` names `field`: in backticks, or as one segment of a
/// backticked path (`faults[0].on.point`), or as a table's header.
fn names(message: &str, field: &str) -> bool {
    [
        format!("`{field}`"),
        format!(".{field}`"),
        format!("`{field}."),
        format!(".{field}."),
        format!("`{field}["),
        format!("].{field}`"),
    ]
    .iter()
    .any(|form| message.contains(form.as_str()))
}

fn check(doc: &Doc, expect: &Expect, facts: &Facts, rung: usize) -> Result<(), TestCaseError> {
    let text = doc.render();
    let loaded = std::panic::catch_unwind(|| Scenario::parse(&text, FILE, "generated"));
    let loaded = loaded.map_err(|_| TestCaseError::fail(format!("parse panicked:\n{text}")))?;
    match (expect, loaded) {
        (Expect::Refused(fields, what), Err(e)) => {
            let message = e.to_string();
            prop_assert!(
                message.starts_with(&format!("{FILE}: line ")),
                "{what}: no file and line in {message:?}\n{text}"
            );
            prop_assert!(
                fields.iter().any(|f| names(&message, f)),
                "{what}: {fields:?} not named in {message:?}\n{text}"
            );
            Ok(())
        }
        (Expect::Refused(fields, what), Ok(_)) => Err(TestCaseError::fail(format!(
            "{what} in {fields:?} was accepted:\n{text}"
        ))),
        (Expect::Loads, Err(e)) => Err(TestCaseError::fail(format!(
            "a valid file was refused: {e}\n{text}"
        ))),
        (Expect::Loads, Ok(scenario)) => {
            let rung = facts.rungs[rung % facts.rungs.len()];
            let seed = scenario.seeds[0];
            let run = std::panic::catch_unwind(|| sim::cell::run_cell(&scenario, rung, seed));
            let judged = run
                .map_err(|_| TestCaseError::fail(format!("{rung} panicked:\n{text}")))?
                .map_err(|e| TestCaseError::fail(format!("{rung}: {e}\n{text}")))?;
            prop_assert!(
                model::verdict::Verdict::ALL.contains(&judged.verdict),
                "{:?}",
                judged.verdict
            );
            let events = judged.history.events().len();
            MOST_EVENTS_RECORDED.fetch_max(events, Ordering::Relaxed);
            prop_assert!(
                events <= MOST_EVENTS,
                "{rung} recorded {events} events, over {MOST_EVENTS}:\n{text}"
            );
            Ok(())
        }
    }
}

/// A case: a valid file, or one with a defect, and the choices left for
/// the run. Drawn whole from the runner's seeded generator.
fn case() -> impl Strategy<Value = (Doc, Facts, Expect, usize)> {
    any::<()>().prop_perturb(|(), mut rng| {
        let mut d = Draw(&mut rng);
        let (mut doc, facts) = valid(&mut d);
        let expect = if d.chance(55) {
            break_one(&mut doc, &facts, &mut d)
        } else {
            Expect::Loads
        };
        let rung = d.below(facts.rungs.len() as u64) as usize;
        (doc, facts, expect, rung)
    })
}

#[test]
fn every_generated_scenario_is_refused_naming_file_line_and_field_or_runs_to_a_verdict() {
    let started = Instant::now();
    let mut runner = TestRunner::new(Config {
        cases: CASES,
        rng_seed: RngSeed::Fixed(SEED),
        // The cases are not shrunk: a failure prints the whole file.
        max_shrink_iters: 0,
        failure_persistence: None,
        ..Config::default()
    });
    let counts = std::sync::Mutex::new((0u32, 0u32));
    let result = runner.run(&case(), |(doc, facts, expect, rung)| {
        let mut c = counts.lock().unwrap_or_else(|p| p.into_inner());
        match expect {
            Expect::Loads => c.0 += 1,
            Expect::Refused(..) => c.1 += 1,
        }
        drop(c);
        check(&doc, &expect, &facts, rung)
    });
    let (valid, refused) = *counts.lock().unwrap_or_else(|p| p.into_inner());
    eprintln!(
        "{CASES} generated scenarios ({valid} run, {refused} refused; the largest run \
         recorded {} events) in {:.1} s",
        MOST_EVENTS_RECORDED.load(Ordering::Relaxed),
        started.elapsed().as_secs_f64()
    );
    if let Err(e) = result {
        panic!("{e}");
    }
    assert!(
        valid >= CASES / 4 && refused >= CASES / 4,
        "{valid} {refused}"
    );
}
