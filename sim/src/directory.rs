//! Names that point at a host and can be re-pointed: in a replicated
//! deployment, clients dial `master`, and a failover points that name at
//! the promoted replica. And where each host listens: its machine and
//! port ([`crate::machines`]), and whether its process is alive
//! ([`crate::killed_servers`]).

use crate::killed_servers::KilledServers;
use crate::machines::Machines;
use model::host::Host;
use std::collections::BTreeMap;
use std::sync::Mutex;

/// The current host behind each alias of one run.
#[derive(Debug, Default)]
pub struct Directory {
    aliases: Mutex<BTreeMap<Host, Host>>,
    machines: Machines,
    killed: KilledServers,
}

impl Directory {
    /// An empty directory: every host stands for itself, on a machine of
    /// its own.
    pub fn new() -> Self {
        Directory::default()
    }

    /// An empty directory of hosts on `machines`.
    pub fn with_machines(machines: Machines) -> Self {
        Directory {
            aliases: Mutex::default(),
            machines,
            killed: KilledServers::default(),
        }
    }

    /// Where the server behind `host` (an alias resolved first) listens:
    /// its machine's name and its port.
    pub fn address(&self, host: Host) -> (String, u16) {
        self.machines.address(self.resolve(host))
    }

    /// The servers whose process is dead, their machines up: a dial to
    /// one is refused.
    pub fn killed(&self) -> &KilledServers {
        &self.killed
    }

    /// Points an alias (e.g. [`Host::Master`]) at a host.
    pub fn point(&self, alias: Host, host: Host) {
        self.aliases
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(alias, host);
    }

    /// The host an alias points at; any other host stands for itself.
    pub fn resolve(&self, host: Host) -> Host {
        self.aliases
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&host)
            .copied()
            .unwrap_or(host)
    }
}
