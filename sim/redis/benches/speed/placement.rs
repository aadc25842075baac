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

/// `Cpus_allowed_list` of a process, from /proc.
fn allowed_cpus(pid: u32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
                .map(|v| v.trim().to_string())
        })
        .unwrap_or_else(|| "unknown".into())
}

/// The CPU a process last ran on (field 39 of /proc/pid/stat).
fn last_cpu(pid: u32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            let rest = s.rsplit_once(')')?.1.to_string();
            rest.split_whitespace().nth(36).map(str::to_string)
        })
        .unwrap_or_else(|| "unknown".into())
}

/// The 1-minute load average (other work on the machine skews figures).
pub(crate) fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().map(str::to_string))
        .unwrap_or_else(|| "unknown".into())
}

/// The CPU's model name, from /proc/cpuinfo.
pub(crate) fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| "unknown".into())
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
