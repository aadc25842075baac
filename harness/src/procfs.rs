//! What Linux's `/proc` says about a process and the machine, for the
//! benchmarks' record of where they ran. Each reader gives `None` where
//! the file or the field cannot be read (another kernel, a process gone).

/// The CPUs process `pid` may run on (`Cpus_allowed_list` of
/// `/proc/<pid>/status`, such as `0-1`).
pub fn allowed_cpus(pid: u32) -> Option<String> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .map(|l| l.trim().to_string())
}

/// The CPU process `pid` last ran on (field 39 of `/proc/<pid>/stat`).
pub fn last_cpu(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces and parentheses: fields are
    // counted after its last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(36)?.parse().ok()
}

/// The CPU's model name (`model name` of `/proc/cpuinfo`).
pub fn cpu_model() -> Option<String> {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, model)| model.trim().to_string())
}

/// The 1-minute load average (the first field of `/proc/loadavg`).
pub fn load_average() -> Option<f64> {
    let loadavg = std::fs::read_to_string("/proc/loadavg").ok()?;
    loadavg.split_whitespace().next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_may_run_on_some_cpu_and_last_ran_on_one_of_them() {
        let me = std::process::id();
        let allowed = allowed_cpus(me).expect("Cpus_allowed_list");
        assert!(!allowed.is_empty());
        let cpu = last_cpu(me).expect("field 39 of stat");
        // The list is ranges and single CPUs: `0-1`, `0,2-3`.
        let within = allowed.split(',').any(|part| {
            let (lo, hi) = part.split_once('-').unwrap_or((part, part));
            (lo.parse().unwrap()..=hi.parse().unwrap()).contains(&cpu)
        });
        assert!(within, "cpu {cpu} not in {allowed}");
    }

    #[test]
    fn a_process_that_does_not_exist_has_no_cpus() {
        // Above the kernel's largest pid (2^22).
        assert_eq!(allowed_cpus(u32::MAX), None);
        assert_eq!(last_cpu(u32::MAX), None);
    }

    #[test]
    fn the_machine_has_a_cpu_model_and_a_load_average() {
        assert!(cpu_model().is_some_and(|m| !m.is_empty()));
        assert!(load_average().is_some_and(|l| l >= 0.0));
    }
}
