//! The machine, what the kernel says about a process's CPUs, and the
//! versions a benchmark ran with.
//!
//! Pinning goes through `taskset` (util-linux) by pid: the workspace forbids
//! `unsafe`, and `taskset -a` also pins every thread of a process (Redis has
//! background threads). Where it is missing, nothing is pinned and the
//! report says so.

use crate::client::{Node, info_field, raw_connection};
use serde::Serialize;
use std::collections::BTreeMap;
use std::process::{Command, Stdio};

/// The machine a run came from.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Machine {
    /// CPU model name from `/proc/cpuinfo`.
    pub cpu_model: String,
    /// Logical CPUs online.
    pub cpus: usize,
    /// Kernel release.
    pub kernel: String,
    /// Total memory in MiB.
    pub memory_mib: u64,
}

impl Machine {
    /// Reads `/proc`.
    pub fn detect() -> Machine {
        let cpu_model = harness::procfs::cpu_model().unwrap_or_else(|| "unknown".to_string());
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
        let memory_mib = meminfo
            .lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))
            .and_then(|l| l.split_whitespace().next())
            .and_then(|kb| kb.parse::<u64>().ok())
            .map(|kb| kb / 1024)
            .unwrap_or(0);
        Machine {
            cpu_model,
            cpus: online_cpus(),
            kernel: std::fs::read_to_string("/proc/sys/kernel/osrelease")
                .map(|s| s.trim().to_string())
                .unwrap_or_else(|_| "unknown".to_string()),
            memory_mib,
        }
    }
}

/// How many CPUs are online (not just the ones this process may use).
pub fn online_cpus() -> usize {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let n = cpuinfo
        .lines()
        .filter(|l| l.starts_with("processor"))
        .count();
    if n > 0 {
        n
    } else {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    }
}

/// Whether `taskset` can be run.
pub fn taskset_available() -> bool {
    taskset(&["--version"])
}

/// Pins every thread of process `pid` to `cpus` (a list such as `0` or
/// `1-3`). False when it could not.
pub fn pin(pid: u32, cpus: &str) -> bool {
    taskset(&["-a", "-p", "-c", cpus, &pid.to_string()])
}

/// Pins one thread, `tid`, to `cpus` (without `-a`: on a thread id that
/// would pin every thread of its process). False when it could not.
pub fn pin_thread(tid: u32, cpus: &str) -> bool {
    taskset(&["-p", "-c", cpus, &tid.to_string()])
}

/// Runs `taskset` with `args`, silently; whether it succeeded.
fn taskset(args: &[&str]) -> bool {
    Command::new("taskset")
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The CPUs process `pid` may run on, as the kernel reports them.
pub fn affinity(pid: u32) -> String {
    harness::procfs::allowed_cpus(pid).unwrap_or_else(|| "unknown".to_string())
}

/// The crate versions recorded at build time, as `(name, version)`.
pub fn crate_versions() -> Vec<(String, String)> {
    env!("LOCKLAB_CRATE_VERSIONS")
        .split(',')
        .filter_map(|nv| nv.split_once('='))
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect()
}

/// `rustc --version` at build time.
pub fn rustc_version() -> &'static str {
    env!("LOCKLAB_RUSTC_VERSION")
}

/// The versions of redis-server (asked of `node`), rustc, locklab and the
/// crates whose speed the report is about; a crate locked in two versions
/// lists both.
pub async fn versions(node: &Node) -> BTreeMap<String, String> {
    let mut v = BTreeMap::new();
    if let Some(server) = server_version(node).await {
        v.insert("redis-server".to_string(), server);
    }
    v.insert("rustc".to_string(), rustc_version().to_string());
    v.insert("locklab".to_string(), env!("CARGO_PKG_VERSION").to_string());
    for (name, version) in crate_versions() {
        v.entry(name)
            .and_modify(|e: &mut String| {
                e.push_str(" + ");
                e.push_str(&version);
            })
            .or_insert(version);
    }
    v
}

/// `redis_version` from `INFO server` of `node`.
async fn server_version(node: &Node) -> Option<String> {
    let conn = raw_connection(&node.addr).await.ok()?;
    let version = info_field(&conn, "server", "redis_version:").await?;
    Some(version.trim().to_string())
}
