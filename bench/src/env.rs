//! The machine, CPU placement and versions a benchmark ran with.
//!
//! Pinning goes through `taskset` (util-linux) by pid: the workspace forbids
//! `unsafe`, and `taskset -a` also pins every thread of a process (Redis has
//! background threads). Where it is missing, nothing is pinned and the
//! report says so.

use serde::Serialize;
use std::process::{Command, Stdio};

/// The machine a run came from.
#[derive(Debug, Clone, Serialize)]
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
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cpu_model = cpuinfo
            .lines()
            .find_map(|l| l.strip_prefix("model name"))
            .and_then(|l| l.split(':').nth(1))
            .map(|m| m.trim().to_string())
            .unwrap_or_else(|| "unknown".to_string());
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
    Command::new("taskset")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Pins every thread of process `pid` to `cpus` (a list such as `0` or
/// `1-3`). False when it could not.
pub fn pin(pid: u32, cpus: &str) -> bool {
    Command::new("taskset")
        .args(["-a", "-p", "-c", cpus, &pid.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The CPUs process `pid` may run on, as the kernel reports them.
pub fn affinity(pid: u32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
                .map(|l| l.trim().to_string())
        })
        .unwrap_or_else(|| "unknown".to_string())
}

/// The CPU process `pid` last ran on (field 39 of `/proc/<pid>/stat`).
pub fn last_cpu(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may contain spaces; fields are counted after ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(36)?.parse().ok()
}

/// The placement plan for a run: which CPU the client and each server use.
#[derive(Debug, Clone, Serialize)]
pub struct Placement {
    /// The policy in one sentence.
    pub policy: String,
    /// The tokio runtime the client runs on.
    pub runtime: String,
    /// Whether pinning was applied.
    pub pinned: bool,
    /// The client process.
    pub client: Proc,
    /// The servers (empty when `--redis` URLs were given: not ours to pin).
    pub servers: Vec<Proc>,
    /// Which processes share a CPU, in words.
    pub sharing: String,
}

/// One process and where it runs.
#[derive(Debug, Clone, Serialize)]
pub struct Proc {
    /// What it is (`client`, `node 0`, ...).
    pub role: String,
    /// Its pid.
    pub pid: u32,
    /// The CPUs it may run on (read back from the kernel).
    pub cpus_allowed: String,
    /// The CPU it last ran on, read at the end of the run.
    pub last_cpu: Option<u32>,
}

/// The CPU the client is pinned to.
pub const CLIENT_CPU: usize = 0;

/// The CPU list for server `i` under the policy: the client keeps CPU 0;
/// servers go round-robin over the other CPUs; with one CPU, all share it.
pub fn server_cpu(i: usize, cpus: usize) -> usize {
    if cpus <= 1 { 0 } else { 1 + i % (cpus - 1) }
}

/// The policy sentence for `servers` servers on `cpus` CPUs.
pub fn describe(servers: usize, cpus: usize, pinned: bool) -> (String, String) {
    if !pinned {
        return (
            "not pinned (taskset unavailable, --no-pin, or servers not ours): the kernel places every process".to_string(),
            "unknown".to_string(),
        );
    }
    let policy = "client (one tokio current-thread runtime, all its tasks) on CPU 0; redis-server i on CPU 1 + i mod (cpus-1), or CPU 0 on a single-CPU machine; the `same-cpu` rows move node 0 onto CPU 0 beside the client".to_string();
    let sharing = if servers == 0 {
        "no servers of ours".to_string()
    } else if cpus <= 1 {
        "one CPU: the client and every server share CPU 0".to_string()
    } else if servers > cpus - 1 {
        format!(
            "{servers} servers on {} CPU(s) beside the client's: CPU 1{} hosts {}",
            cpus - 1,
            if cpus > 2 { " and up" } else { "" },
            if cpus == 2 {
                "all servers (Redlock's masters share one CPU)".to_string()
            } else {
                "several servers each".to_string()
            }
        )
    } else {
        "every process has a CPU of its own".to_string()
    };
    (policy, sharing)
}

/// `redis-server --version` of the installed binary, if any.
pub fn redis_server_version() -> Option<String> {
    harness::version()
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
