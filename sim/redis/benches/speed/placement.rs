//! Where the benchmark and the server run: pinning them to one CPU with
//! `taskset`, and what /proc says of the CPUs and the load.

use std::process::Command;

/// Pins every thread of `pid` to `cpu` with `taskset`; what it did.
fn pin(pid: u32, cpu: usize) -> Result<(), String> {
    let out = Command::new("taskset")
        .args(["-a", "-p", "-c", &cpu.to_string(), &pid.to_string()])
        .output()
        .map_err(|e| format!("taskset not runnable: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).trim().to_string())
    }
}

/// The 1-minute load average (other work on the machine skews figures).
pub(crate) fn loadavg() -> String {
    harness::procfs::load_average().map_or_else(|| "unknown".into(), |l| l.to_string())
}

/// The CPU's model name, from /proc/cpuinfo.
pub(crate) fn cpu_model() -> String {
    harness::procfs::cpu_model().unwrap_or_else(|| "unknown".into())
}

/// Pins `pid` (all its threads) to `cpu`; when it cannot, says so in
/// `placement` (`who` names the process).
pub(crate) fn pinned_or_noted(
    pid: u32,
    cpu: usize,
    who: &str,
    placement: &mut Vec<String>,
) -> bool {
    match pin(pid, cpu) {
        Ok(()) => true,
        Err(e) => {
            placement.push(format!("could not pin {who}: {e}"));
            false
        }
    }
}

/// The CPUs the benchmark (`me`) and the server may run on and last ran
/// on.
pub(crate) fn where_they_ran(me: u32, server: Option<u32>) -> String {
    let (server_cpus, server_last) = match server {
        Some(pid) => (allowed_cpus(pid), last_cpu(pid)),
        None => ("-".into(), "-".into()),
    };
    format!(
        "benchmark allowed CPUs {}, last ran on CPU {}; \
         redis-server allowed CPUs {server_cpus}, last ran on CPU {server_last}",
        allowed_cpus(me),
        last_cpu(me)
    )
}

/// `Cpus_allowed_list` of a process, from /proc.
fn allowed_cpus(pid: u32) -> String {
    harness::procfs::allowed_cpus(pid).unwrap_or_else(|| "unknown".into())
}

/// The CPU a process last ran on, from /proc.
fn last_cpu(pid: u32) -> String {
    harness::procfs::last_cpu(pid).map_or_else(|| "unknown".into(), |c| c.to_string())
}
