//! A lock that panics on a client's thread (a user's own lock can) ends
//! the real run with an error naming the rung and the panic, not a
//! verdict judged on an empty history, and no process the run started
//! outlives it. Needs redis-server (scripts/test
//! installs it). About 3 s.

use locks::{Lock, Registration, Rung, RungParts};
use model::scenario::Scenario;
use real::cell::run_real_cell;
use std::collections::BTreeSet;
use std::time::{Duration, Instant};

/// A rung whose lock panics as it is built, on the client's thread.
static PANICKING: Rung = Rung {
    id: "panicking-lock",
    acquire: "panics",
    release: "panics",
    fixes: "",
    flaw: "",
    ..Rung::OFF_LADDER
};

fn panics(_: RungParts) -> Box<dyn Lock> {
    panic!("this lock panics as it is built")
}

/// The live (not zombie) processes descended from this test process.
fn descendants() -> BTreeSet<u32> {
    let mut parent_of = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // After "pid (comm) ": the state, then the parent's pid.
        let Some((_, rest)) = stat.rsplit_once(')') else {
            continue;
        };
        let mut fields = rest.split_whitespace();
        let state = fields.next().unwrap_or("Z");
        let ppid = fields.next().and_then(|p| p.parse::<u32>().ok());
        if let (Some(ppid), false) = (ppid, state == "Z") {
            parent_of.push((pid, ppid));
        }
    }
    let mut found = BTreeSet::from([std::process::id()]);
    loop {
        let before = found.len();
        for &(pid, ppid) in &parent_of {
            if found.contains(&ppid) {
                found.insert(pid);
            }
        }
        if found.len() == before {
            break;
        }
    }
    found.remove(&std::process::id());
    found
}

#[test]
fn a_lock_panicking_on_a_client_thread_ends_the_run_with_an_error_and_leaves_no_server_behind() {
    if !real::nodes::installed() {
        eprintln!("skipped: no redis-server (scripts/test installs it)");
        return;
    }
    locks::register(Registration::new(&PANICKING, panics)).expect("registers");
    let text = "rungs = [\"panicking-lock\"]\nduration_ms = 1000\n\
                [[clients]]\ncount = 2\ncycles = 1\n";
    let scenario =
        Scenario::parse(text, "panicking.toml", "panicking").unwrap_or_else(|e| panic!("{e}"));
    assert!(descendants().is_empty(), "no process before the run");
    let outcome = run_real_cell(&scenario, "panicking-lock", 1, 1, &mut |_, _| {});
    let error = match outcome {
        Err(e) => e.to_string(),
        Ok(outcome) => panic!("a run whose lock panicked was judged: {outcome:?}"),
    };
    assert!(
        error.contains("\"panicking-lock\" panicked") && error.contains("panics as it is built"),
        "{error}"
    );
    let deadline = Instant::now() + Duration::from_secs(5);
    while !descendants().is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(
        descendants(),
        BTreeSet::new(),
        "processes of the run left behind"
    );
}
