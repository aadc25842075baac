//! A server whose process is killed leaves its machine running.
//!
//! When a real server process dies (`SIGKILL`, an out-of-memory kill, a
//! crash), its machine's kernel lives on: it closes the process's
//! connections (their peers read end-of-file), answers any later segment
//! on them with a reset, and refuses new connections to the port at once.
//! A client therefore learns of a dead server within a round trip. Only a
//! machine that loses power leaves its peers to their timeouts.
//!
//! turmoil's crash stops the whole machine: its streams send their FIN as
//! they are dropped, but from then on nothing is delivered to it, so a
//! connection attempt waits for the dialer's own timeout, as if the
//! machine had lost power. A client without a per-node timeout (rslock,
//! for instance) then spends its reply timeout on every round with a dead
//! master, where on a real machine its dial is refused in a millisecond.
//!
//! So after a process kill the machine is started again at once, with
//! nothing bound on it: turmoil delivers to it again, drops a connection
//! attempt to a port nobody listens on (the dialer reads that as
//! "connection refused") and answers data on a closed connection with a
//! reset. The node counts as down until its restart, which serves again.

use crate::service::Software;
use model::host::Host;
use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

/// The servers whose process is dead while their machine runs on.
#[derive(Debug, Clone, Default)]
pub struct KilledServers {
    hosts: Arc<Mutex<BTreeSet<Host>>>,
}

impl KilledServers {
    /// `host`'s software, which serves nothing while its process is dead:
    /// the machine's own kernel, with no port bound.
    pub fn wrap(&self, host: Host, software: Software) -> Software {
        let killed = self.clone();
        Box::new(move || {
            if killed.is_killed(host) {
                Box::pin(std::future::pending())
            } else {
                software()
            }
        })
    }

    /// Marks `host`'s process dead (its machine must be restarted after,
    /// to run the empty software).
    pub fn kill(&self, host: Host) {
        self.lock().insert(host);
    }

    /// Marks `host`'s process alive again (its restart).
    pub fn revive(&self, host: Host) {
        self.lock().remove(&host);
    }

    /// Whether `host`'s process is dead.
    pub fn is_killed(&self, host: Host) -> bool {
        self.lock().contains(&host)
    }

    /// The set, also after a panic elsewhere poisoned it (a set of hosts
    /// holds no invariant a panic could break).
    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeSet<Host>> {
        self.hosts.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_killed_host_is_known_as_killed_until_revived() {
        let killed = KilledServers::default();
        assert!(!killed.is_killed(Host::Node(1)));
        killed.kill(Host::Node(1));
        assert!(killed.is_killed(Host::Node(1)));
        assert!(!killed.is_killed(Host::Node(0)));
        killed.revive(Host::Node(1));
        assert!(!killed.is_killed(Host::Node(1)));
    }
}
