//! What the ZooKeeper section says of its rows; they are measured by the
//! machinery every service beside Redis shares ([`super::beside`]).

/// What the report says of the ZooKeeper rows.
pub const NOTE: &str = "The ZooKeeper rungs on one real ZooKeeper standalone server this run \
     started (on 127.0.0.1, its transaction log on this machine's disk, forceSync on, its JVM \
     with the full JIT), beside the floor and lua-release on redis-server node 0, interleaved \
     round by round in a shuffled order, intervals over rounds; × floor is to the Redis floor in \
     the same rounds. ZooKeeper pays for its guarantees: every write is a transaction the server \
     fsyncs to its log before it answers. Each lock keeps one session from cycle to cycle, so an \
     uncontended cycle is 3 requests: the create of an EPHEMERAL_SEQUENTIAL node (create2 for \
     zk-fenced, whose token is the node's czxid), the parent's children listed, the delete; 2 of \
     them fsynced writes, where Redis answers 2 commands from memory. The hand-off: 16 clients, \
     each with a session of its own, acquire one key and release it at once; a hand-off is the \
     lock passing to another client (taking it straight back is none); wake-ups are counted by \
     the lock code: each retry of a polling waiter, each release message a notified waiter \
     hears, each watch event a ZooKeeper waiter receives. zk-recipe, curator-mutex and \
     zk-fenced queue their waiters: each watches only the node just before its own, so a release \
     wakes one waiter; zk-herd's waiters all watch the parent's children, so every change to \
     them (a release, a new arrival) wakes every waiter, about N per hand-off: the herd effect \
     the recipe was written to avoid.";
