//! Names that point at a host and can be re-pointed: in a replicated
//! deployment, clients dial `master`, and a failover points that name at
//! the promoted replica. And where each host listens: its machine and
//! port ([`crate::machines`]).

use crate::machines::Machines;
use model::host::Host;
use std::collections::BTreeMap;
use std::sync::Mutex;

/// The current host behind each alias of one run.
#[derive(Debug, Default)]
pub struct Directory {
    aliases: Mutex<BTreeMap<Host, Host>>,
    machines: Machines,
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
        }
    }

    /// Where the server behind `host` (an alias resolved first) listens:
    /// its machine's name and its port.
    pub fn address(&self, host: Host) -> (String, u16) {
        self.machines.address(self.resolve(host))
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
