//! The `store` host: the simulated Redis node that holds the guarded
//! resource, whatever lock service the run's locks use (the workload's
//! sales speak Redis, [`crate::resource`]). It is never faulted by a
//! scenario's deployment and feeds no ground truth.

use crate::service::redis::node_clock;
use model::host::Host;
use simredis::{NodeConfig, NodeHandle};

/// The store of one run.
pub(crate) struct StoreHost {
    handle: NodeHandle,
}

impl StoreHost {
    /// Registers the store as a turmoil host (after the service's nodes,
    /// so that host order, and with it the run, stays as it was).
    pub(crate) fn start(sim: &mut turmoil::Sim<'static>) -> StoreHost {
        let name = Host::Store.to_string();
        let store = NodeHandle::new(NodeConfig::new(&name).clock(node_clock()));
        let handle = store.clone();
        sim.host(name, move || simredis::serve(store.clone()));
        StoreHost { handle }
    }

    /// The store's instruction limit, if it aborted a runaway script.
    pub(crate) fn aborted_a_script(&self) -> Option<u64> {
        (self.handle.aborted_scripts() > 0).then(|| self.handle.config().script_instruction_limit)
    }
}
