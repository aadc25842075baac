//! What the etcd section says of its rows; they are measured by the
//! machinery every service beside Redis shares ([`super::beside`]).

/// What the report says of the etcd rows.
pub const NOTE: &str = "The etcd rungs on one real etcd member this run started (a one-member \
     cluster on 127.0.0.1, its write-ahead log on this machine's disk), beside the floor and \
     lua-release on redis-server node 0, interleaved round by round in a shuffled order, \
     intervals over rounds; × floor is to the Redis floor in the same rounds. etcd pays for its \
     guarantees: every write is a Raft entry the member fsyncs to its write-ahead log before it \
     answers, and every acquire opens a session (a lease grant) that its release revokes, so an \
     uncontended cycle is 4 requests and 4 fsynced writes where Redis answers 2 commands from \
     memory. The hand-off: 16 clients, each with connections of its own, acquire one key and \
     release it at once; a hand-off is the lock passing to another client (taking it straight \
     back is none); wake-ups are counted by the lock code: each retry of a polling waiter, each \
     release message a notified waiter hears, each watch response an etcd waiter receives. An \
     etcd Mutex waiter watches only the key just before its own, so a release wakes one waiter; \
     etcd-lock-rpc waits inside the member (the Lock request returns once the lock is granted), \
     so its client has no wake-ups to count (–).";
