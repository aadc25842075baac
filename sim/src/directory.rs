//! Names that point at a host and can be re-pointed: in a replicated
//! deployment, clients dial `master`, and a failover points that name at
//! the promoted replica.

use model::host::Host;
use std::collections::BTreeMap;
use std::sync::Mutex;

/// The current host behind each alias of one run.
#[derive(Debug, Default)]
pub struct Directory {
    aliases: Mutex<BTreeMap<Host, Host>>,
}

impl Directory {
    /// An empty directory: every host stands for itself.
    pub fn new() -> Self {
        Directory::default()
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
