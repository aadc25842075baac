//! The `store` host: the simulated Redis node that holds the guarded
//! resource, whatever lock service the run's locks use (the workload's
//! sales speak Redis, [`crate::resource`]). It is never faulted by a
//! scenario's deployment and feeds no ground truth.

use crate::machines::Machines;
use crate::service::Software;
use crate::service::redis::{node_clock, serving};
use model::host::Host;
use simredis::{NodeConfig, NodeHandle};

/// The store of one run.
pub(crate) struct StoreHost {
    handle: NodeHandle,
}

impl StoreHost {
    /// Builds the store, listening where `machines` puts it, and its
    /// software (placed after the service's nodes, so that machine order,
    /// and with it the run, stays as it was).
    pub(crate) fn new(machines: &Machines) -> (StoreHost, Software) {
        let mut config = NodeConfig::new(Host::Store.to_string()).clock(node_clock());
        config.port = machines.address(Host::Store).1;
        let handle = NodeHandle::new(config);
        (
            StoreHost {
                handle: handle.clone(),
            },
            serving(handle),
        )
    }

    /// The store's instruction limit, if it aborted a runaway script.
    pub(crate) fn aborted_a_script(&self) -> Option<u64> {
        (self.handle.aborted_scripts() > 0).then(|| self.handle.config().script_instruction_limit)
    }
}
