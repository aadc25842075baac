//! Raft, as etcd 3.4's members run it (placeholder: being written).
