//! Where the client and the servers run: pinning them to CPUs at the
//! start, moving node 0 beside the client for the same-CPU rows, and
//! reading back where each process ran for the report.

use crate::client::Service;
use crate::env;
use serde::Serialize;

/// The placement plan for a run: which CPU the client and each server use.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
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
    /// The threads of locklab's simulated node, served by this process for
    /// the rows redis-server cannot run (their ids in `pid`).
    pub simulated_node: Vec<Proc>,
    /// The etcd member of the etcd rows (null when none was started).
    pub etcd: Option<Proc>,
    /// The ZooKeeper server of the ZooKeeper rows (null when none was
    /// started).
    pub zookeeper: Option<Proc>,
    /// The PostgreSQL postmaster of the PostgreSQL rows (null when none was
    /// started); its backends are forked from it, on its CPUs.
    pub postgres: Option<Proc>,
    /// The MariaDB server of the MariaDB rows (null when none was started).
    pub mysql: Option<Proc>,
    /// Which processes share a CPU, in words.
    pub sharing: String,
}

/// One process and where it runs.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
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
    let policy = "client (one tokio current-thread runtime, all its tasks) on CPU 0; redis-server i on CPU 1 + i mod (cpus-1), or CPU 0 on a single-CPU machine; the `same-cpu` rows move node 0 onto CPU 0 beside the client; the simulated node's threads, the etcd member, the ZooKeeper server, the PostgreSQL server and the MariaDB server on node 0's CPU".to_string();
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

/// What the report says about the client's runtime.
const RUNTIME: &str =
    "tokio current_thread (one thread: every client task, connection driver and timer)";

/// The pinning a run applied (or could not apply).
#[derive(Debug, Clone)]
pub struct Pinning {
    /// Whether the client and every server were pinned.
    pub pinned: bool,
    /// CPUs online.
    pub cpus: usize,
    /// This process.
    client_pid: u32,
    /// Our own servers, node 0 first (empty when they are not ours).
    server_pids: Vec<u32>,
    /// The simulated node's threads (see [`crate::sim_node`]).
    simulated_threads: Vec<u32>,
    /// The etcd member's pid, once started.
    etcd_pid: Option<u32>,
    /// The ZooKeeper server's pid (its JVM's), once started.
    zookeeper_pid: Option<u32>,
    /// The PostgreSQL postmaster's pid, once started.
    postgres_pid: Option<u32>,
    /// The MariaDB server's pid, once started.
    mysql_pid: Option<u32>,
}

impl Pinning {
    /// Pins this process to [`CLIENT_CPU`] and server `i` to
    /// [`server_cpu`] when `wanted` and `taskset` is there.
    pub fn apply(wanted: bool, server_pids: Vec<u32>, cpus: usize) -> Pinning {
        let client_pid = std::process::id();
        let pinned = wanted
            && env::taskset_available()
            && env::pin(client_pid, &CLIENT_CPU.to_string())
            && server_pids
                .iter()
                .enumerate()
                .all(|(i, pid)| env::pin(*pid, &server_cpu(i, cpus).to_string()));
        Pinning {
            pinned,
            cpus,
            client_pid,
            server_pids,
            simulated_threads: Vec::new(),
            etcd_pid: None,
            zookeeper_pid: None,
            postgres_pid: None,
            mysql_pid: None,
        }
    }

    /// The pinning of a batch's client process, started by the run's own
    /// process with `pinned`, `cpus` and `server_pids` as that one has
    /// them: this process goes on [`CLIENT_CPU`] (where it was born, but
    /// said again), and may move node 0 beside itself; nothing else is
    /// pinned anew.
    pub fn for_batch(pinned: bool, cpus: usize, server_pids: Vec<u32>) -> Pinning {
        let client_pid = std::process::id();
        Pinning {
            pinned: pinned && env::pin(client_pid, &CLIENT_CPU.to_string()),
            cpus,
            client_pid,
            server_pids,
            simulated_threads: Vec::new(),
            etcd_pid: None,
            zookeeper_pid: None,
            postgres_pid: None,
            mysql_pid: None,
        }
    }

    /// The same placement for another set of our own servers (a batch's
    /// fresh ones), node 0 first: each pinned where the policy puts it,
    /// when this pinning pinned.
    pub fn with_servers(&self, server_pids: Vec<u32>) -> Pinning {
        let pinned = self.pinned
            && server_pids
                .iter()
                .enumerate()
                .all(|(i, pid)| env::pin(*pid, &server_cpu(i, self.cpus).to_string()));
        Pinning {
            pinned,
            cpus: self.cpus,
            client_pid: self.client_pid,
            server_pids,
            simulated_threads: Vec::new(),
            etcd_pid: None,
            zookeeper_pid: None,
            postgres_pid: None,
            mysql_pid: None,
        }
    }

    /// The server pids this pinning may move (node 0 first; empty when the
    /// servers are not ours).
    pub fn server_pids(&self) -> &[u32] {
        &self.server_pids
    }

    /// Puts node 0 back on its own CPU: after a batch's process ended,
    /// which may have been killed while node 0 was beside it.
    pub fn node0_home(&self) {
        if let (true, Some(pid)) = (self.pinned, self.server_pids.first()) {
            env::pin(*pid, &server_cpu(0, self.cpus).to_string());
        }
    }

    /// The CPU the simulated node's threads go on: node 0's, apart from
    /// the client's; `None` when nothing is pinned.
    pub fn simulated_node_cpu(&self) -> Option<usize> {
        self.pinned.then(|| server_cpu(0, self.cpus))
    }

    /// Notes the simulated node's threads, to read back where they ran.
    pub fn note_simulated_node(&mut self, threads: &[u32]) {
        self.simulated_threads = threads.to_vec();
    }

    /// Pins the server of `service` at `pid` (every thread: an etcd
    /// member, a ZooKeeper JVM, a MariaDB server; a postmaster, whose
    /// backends are forked later and inherit it) to node 0's CPU, apart from the client's,
    /// when this pinning pinned; notes it to read back where it ran.
    pub fn place(&mut self, service: Service, pid: u32) {
        if self.pinned {
            env::pin(pid, &server_cpu(0, self.cpus).to_string());
        }
        match service {
            Service::Etcd => self.etcd_pid = Some(pid),
            Service::ZooKeeper => self.zookeeper_pid = Some(pid),
            Service::Postgres => self.postgres_pid = Some(pid),
            Service::MySql => self.mysql_pid = Some(pid),
        }
    }

    /// Whether node 0 can be moved beside the client: everything is pinned
    /// and the servers are ours.
    pub fn can_move_node0(&self) -> bool {
        self.pinned && !self.server_pids.is_empty()
    }

    /// Moves node 0 onto the client's CPU until the guard is dropped;
    /// `None` when nothing is pinned or the servers are not ours.
    pub fn node0_beside_client(&self) -> Option<Node0BesideClient> {
        let node0_pid = *self.server_pids.first()?;
        if !self.pinned {
            return None;
        }
        env::pin(node0_pid, &CLIENT_CPU.to_string());
        Some(Node0BesideClient {
            node0_pid,
            home_cpu: server_cpu(0, self.cpus),
        })
    }

    /// Where every process is allowed to run and last ran, now.
    pub fn read_back(&self) -> Placement {
        let (policy, sharing) = describe(self.server_pids.len(), self.cpus, self.pinned);
        Placement {
            policy,
            runtime: RUNTIME.to_string(),
            pinned: self.pinned,
            client: Proc::read("client".to_string(), self.client_pid),
            servers: self
                .server_pids
                .iter()
                .enumerate()
                .map(|(i, pid)| Proc::read(format!("node {i}"), *pid))
                .collect(),
            simulated_node: self
                .simulated_threads
                .iter()
                .zip(["simulated node", "simulated node's sockets"])
                .map(|(tid, role)| Proc::read(format!("{role} (thread)"), *tid))
                .collect(),
            etcd: self
                .etcd_pid
                .map(|pid| Proc::read("etcd member".to_string(), pid)),
            zookeeper: self
                .zookeeper_pid
                .map(|pid| Proc::read("ZooKeeper server".to_string(), pid)),
            postgres: self
                .postgres_pid
                .map(|pid| Proc::read("PostgreSQL postmaster".to_string(), pid)),
            mysql: self
                .mysql_pid
                .map(|pid| Proc::read("MariaDB server".to_string(), pid)),
            sharing,
        }
    }
}

impl Proc {
    fn read(role: String, pid: u32) -> Proc {
        Proc {
            role,
            pid,
            cpus_allowed: env::affinity(pid),
            last_cpu: harness::procfs::last_cpu(pid),
        }
    }
}

/// Node 0 on the client's CPU; dropping it puts node 0 back on its own
/// CPU, also when the measurement in between failed.
pub struct Node0BesideClient {
    node0_pid: u32,
    home_cpu: usize,
}

impl Drop for Node0BesideClient {
    fn drop(&mut self) {
        env::pin(self.node0_pid, &self.home_cpu.to_string());
    }
}
