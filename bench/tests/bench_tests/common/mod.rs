//! What the tests of the rows beside Redis share: skipping when a server
//! is missing, and finding a hand-off row by its label.

#![allow(dead_code)] // each test file uses its own part of the helpers

use bench::report::{BesideRedis, HandoffRow};

/// Whether redis-server and the service named `service` (`installed`:
/// whether it is here) can run; says why the test is skipped if not.
pub fn servers_installed(service: &str, installed: bool) -> bool {
    if !installed {
        eprintln!("{service} not installed; skipped: scripts/setup installs it");
        return false;
    }
    if !harness::installed() {
        eprintln!("redis-server not installed; skipped: scripts/setup installs it");
        return false;
    }
    true
}

/// The hand-off row of `label` (`impl` or `impl+wait`).
pub fn handoff<'a>(rows: &'a BesideRedis, label: &str) -> &'a HandoffRow {
    rows.handoff
        .iter()
        .find(|r| {
            let wait = &r.subject.wait;
            r.subject.impl_ == label || format!("{}+{wait}", r.subject.impl_) == label
        })
        .unwrap_or_else(|| panic!("no hand-off row of {label}: {:#?}", rows.handoff))
}
