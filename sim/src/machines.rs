//! Which simulated machine each host runs on.
//!
//! turmoil's cost is per machine and per step: at every 1 ms step it ticks
//! each running machine's runtime, and each machine looks through every
//! link of the network for messages to it. With a machine per client, a
//! step cost clients × links, and links grow with the clients too: 256
//! clients ran 20 times slower than the time they simulated.
//!
//! turmoil needs a machine per host only for what it does to whole
//! machines: crash and restart them, and cut, hold or slow their links. So
//! a host that a fault crashes, or whose links a fault cuts, holds or
//! slows, runs on a machine of its own, named after it (`client-3`,
//! `redis-0`). Every other client runs on one shared machine,
//! [`CLIENTS_MACHINE`], as a process of its own there (its own
//! connections, owner id, pause gate, clock and place in the workload);
//! every other server (a lock service's node, the store) on
//! [`SERVERS_MACHINE`], each on its own port. Pauses and clock faults need
//! no machine: they act on one client's gate and clock, or one node's
//! clock. A node's power loss cuts its links to every host, the shared
//! machines' included.
//!
//! Two limits keep the network what it was. Clients and servers never
//! share a machine, so every request still crosses a link with its
//! latency. And servers share only when no two of them talk to each other
//! (a replica follows its master over the network; on one machine their
//! messages would skip the link's latency): the service says whether its
//! nodes do. A lone host keeps a machine of its own: sharing is for two
//! or more.

use model::fault::{FaultAction, FaultSpec};
use model::host::Host;
use std::collections::BTreeSet;

/// The machine the clients no fault touches share.
pub const CLIENTS_MACHINE: &str = "clients";

/// The machine the servers no fault touches share.
pub const SERVERS_MACHINE: &str = "servers";

/// The port a server listens on, on a machine of its own.
pub const SERVER_PORT: u16 = 6379;

/// Which hosts share a machine; every other host has one of its own.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Machines {
    /// Clients on [`CLIENTS_MACHINE`].
    clients: BTreeSet<usize>,
    /// Nodes and the store on [`SERVERS_MACHINE`].
    servers: BTreeSet<Host>,
    /// Hosts in all: clients, nodes and the store.
    hosts: usize,
}

impl Machines {
    /// The machines of a run: `clients` clients, the service's `nodes` and
    /// the store, under `faults` (the faults of the rung in its scenario);
    /// `nodes_talk` when the nodes send each other messages.
    pub fn plan(faults: &[FaultSpec], clients: usize, nodes: &[Host], nodes_talk: bool) -> Self {
        let touched = touched_hosts(faults, nodes);
        let untouched = |host: &Host| !touched.contains(host);
        let mut shared_clients: BTreeSet<usize> = (0..clients)
            .filter(|&c| untouched(&Host::Client(c)))
            .collect();
        let mut servers: Vec<Host> = if nodes_talk {
            Vec::new()
        } else {
            nodes.to_vec()
        };
        servers.push(Host::Store);
        let mut shared_servers: BTreeSet<Host> = servers.into_iter().filter(untouched).collect();
        if shared_clients.len() < 2 {
            shared_clients.clear();
        }
        if shared_servers.len() < 2 {
            shared_servers.clear();
        }
        Machines {
            clients: shared_clients,
            servers: shared_servers,
            hosts: clients + nodes.len() + 1,
        }
    }

    /// How many machines turmoil runs: each host on one of its own, and
    /// the shared ones.
    pub fn count(&self) -> usize {
        let on_shared = self.clients.len() + self.servers.len();
        let shared = usize::from(!self.clients.is_empty()) + usize::from(!self.servers.is_empty());
        self.hosts - on_shared + shared
    }

    /// Whether `host` runs on a shared machine.
    pub fn shares(&self, host: Host) -> bool {
        match host {
            Host::Client(c) => self.clients.contains(&c),
            other => self.servers.contains(&other),
        }
    }

    /// The clients on [`CLIENTS_MACHINE`], in index order.
    pub fn shared_clients(&self) -> impl Iterator<Item = usize> + '_ {
        self.clients.iter().copied()
    }

    /// turmoil's name for the machine `host` runs on.
    pub fn name(&self, host: Host) -> String {
        match host {
            Host::Client(_) if self.shares(host) => CLIENTS_MACHINE.to_string(),
            _ if self.shares(host) => SERVERS_MACHINE.to_string(),
            _ => host.to_string(),
        }
    }

    /// Where server `host` listens: its machine and port. On the shared
    /// machine the store keeps [`SERVER_PORT`] and node `i` takes the
    /// `i + 1`-th port after it.
    pub fn address(&self, host: Host) -> (String, u16) {
        let port = match host {
            Host::Node(i) if self.shares(host) => SERVER_PORT + 1 + i as u16,
            _ => SERVER_PORT,
        };
        (self.name(host), port)
    }
}

/// The hosts some fault crashes, or whose links it acts on (`master`
/// stands for every node it may point at).
fn touched_hosts(faults: &[FaultSpec], nodes: &[Host]) -> BTreeSet<Host> {
    let mut hosts: Vec<Host> = Vec::new();
    for fault in faults {
        match &fault.action {
            FaultAction::Crash(_) => hosts.extend(fault.target_host()),
            FaultAction::Partition(p) => hosts.extend(p.a.iter().chain(&p.b)),
            FaultAction::Delay(d) => hosts.extend(d.a.iter().chain(&d.b)),
            FaultAction::SlowLink(s) => hosts.extend(s.a.iter().chain(&s.b)),
            // It kills the master, and the master may be any node.
            FaultAction::Failover(_) => hosts.push(Host::Master),
            FaultAction::Pause(_) | FaultAction::ClockJump(_) | FaultAction::ClockDrift(_) => {}
        }
    }
    let mut touched = BTreeSet::new();
    for host in hosts {
        if host == Host::Master {
            touched.extend(nodes.iter().copied());
        } else {
            touched.insert(host);
        }
    }
    touched
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::scenario::Scenario;

    const NODES: [Host; 3] = [Host::Node(0), Host::Node(1), Host::Node(2)];

    fn faults(toml: &str) -> Vec<FaultSpec> {
        let text = format!(
            "name = \"m\"\ndescription = \"d\"\nrungs = [\"redlock\"]\nseeds = [1]\n\
             duration_ms = 1000\n[topology]\nkind = \"independent\"\nmasters = 3\n\
             [[clients]]\ncount = 4\ncycles = 1\ncritical_section_ms = 1\n{toml}"
        );
        Scenario::parse(&text, "machines", "m")
            .unwrap_or_else(|e| panic!("{e}"))
            .faults
    }

    fn plan(faults: &[FaultSpec]) -> Machines {
        Machines::plan(faults, 4, &NODES, false)
    }

    #[test]
    fn hosts_no_fault_touches_share_a_machine_for_clients_and_one_for_servers() {
        let machines = plan(&[]);
        assert_eq!(machines.shared_clients().collect::<Vec<_>>(), [0, 1, 2, 3]);
        assert_eq!(machines.name(Host::Client(2)), CLIENTS_MACHINE);
        assert_eq!(machines.name(Host::Node(1)), SERVERS_MACHINE);
        assert_eq!(machines.name(Host::Store), SERVERS_MACHINE);
        assert_eq!(machines.count(), 2);
    }

    #[test]
    fn servers_on_the_shared_machine_listen_on_ports_of_their_own() {
        let machines = plan(&[]);
        let ports: BTreeSet<u16> = NODES
            .iter()
            .chain(&[Host::Store])
            .map(|&h| machines.address(h).1)
            .collect();
        assert_eq!(ports.len(), 4);
        let alone = Machines::plan(&[], 4, &NODES, true);
        assert_eq!(
            alone.address(Host::Node(2)),
            ("redis-2".to_string(), SERVER_PORT)
        );
    }

    #[test]
    fn a_host_a_fault_crashes_or_cuts_off_runs_on_a_machine_of_its_own() {
        let faults = faults(
            "[[faults]]\nkind = \"crash\"\ntarget = \"client-1\"\nat_ms = 10\n\
             [[faults]]\nkind = \"partition\"\na = [\"client-3\"]\nb = [\"redis-0\"]\nat_ms = 10\n",
        );
        let machines = plan(&faults);
        assert_eq!(machines.shared_clients().collect::<Vec<_>>(), [0, 2]);
        assert_eq!(machines.name(Host::Client(1)), "client-1");
        assert_eq!(machines.name(Host::Client(3)), "client-3");
        assert_eq!(machines.name(Host::Node(0)), "redis-0");
        assert_eq!(machines.name(Host::Node(1)), SERVERS_MACHINE);
        // client-1, client-3, redis-0 and the two shared machines.
        assert_eq!(machines.count(), 5);
    }

    #[test]
    fn a_crash_aimed_at_a_fault_point_gives_the_triggering_client_its_own_machine() {
        let faults = faults(
            "[[faults]]\nkind = \"crash\"\non = { client = 2, cycle = 1, point = \"release-start\" }\n",
        );
        assert!(!plan(&faults).shares(Host::Client(2)));
    }

    #[test]
    fn pauses_and_clock_faults_leave_hosts_on_the_shared_machines() {
        let faults = faults(
            "[[faults]]\nkind = \"pause\"\ntarget = \"client-0\"\nat_ms = 10\nduration_ms = 5\n\
             [[faults]]\nkind = \"clock-jump\"\ntarget = \"client-1\"\nat_ms = 10\njump_ms = 5\n\
             [[faults]]\nkind = \"clock-jump\"\ntarget = \"redis-1\"\nat_ms = 10\njump_ms = 5\n",
        );
        let machines = plan(&faults);
        assert!(machines.shares(Host::Client(0)));
        assert!(machines.shares(Host::Client(1)));
        assert!(machines.shares(Host::Node(1)));
    }

    #[test]
    fn nodes_that_talk_to_each_other_never_share_a_machine() {
        let machines = Machines::plan(&[], 4, &NODES, true);
        assert!(NODES.iter().all(|&n| !machines.shares(n)));
        // The store alone has nothing to share with.
        assert!(!machines.shares(Host::Store));
    }

    #[test]
    fn a_lone_host_no_fault_touches_keeps_its_own_machine() {
        assert!(!Machines::plan(&[], 1, &NODES, true).shares(Host::Client(0)));
        let faults = faults("[[faults]]\nkind = \"crash\"\ntarget = \"client-0\"\nat_ms = 10\n");
        assert!(!Machines::plan(&faults, 2, &NODES, false).shares(Host::Client(1)));
    }
}
