//! The errors etcd 3.4 answers, with its gRPC codes and texts: etcdctl
//! prints the text after `Error: `, and clients match on both.

use tonic::{Code, Status};

fn etcd(code: Code, text: &str) -> Status {
    Status::new(code, format!("etcdserver: {text}"))
}

/// A put, delete or compare without a key.
pub fn empty_key() -> Status {
    etcd(Code::InvalidArgument, "key is not provided")
}

/// `ignore_value` or `ignore_lease` on a key that does not exist.
pub fn key_not_found() -> Status {
    etcd(Code::InvalidArgument, "key not found")
}

/// `ignore_value` together with a value.
pub fn value_provided() -> Status {
    etcd(Code::InvalidArgument, "value is provided")
}

/// `ignore_lease` together with a lease.
pub fn lease_provided() -> Status {
    etcd(Code::InvalidArgument, "lease is provided")
}

/// A transaction with more operations than a member accepts.
pub fn too_many_ops() -> Status {
    etcd(Code::InvalidArgument, "too many operations in txn request")
}

/// A transaction that writes one key twice.
pub fn duplicate_key() -> Status {
    etcd(Code::InvalidArgument, "duplicate key given in txn request")
}

/// A read or watch at a revision compaction has removed.
pub fn compacted() -> Status {
    etcd(
        Code::OutOfRange,
        "mvcc: required revision has been compacted",
    )
}

/// A read at a revision not yet written.
pub fn future_revision() -> Status {
    etcd(
        Code::OutOfRange,
        "mvcc: required revision is a future revision",
    )
}

/// A lease that does not exist (never granted, revoked or expired).
pub fn lease_not_found() -> Status {
    etcd(Code::NotFound, "requested lease not found")
}

/// A grant that names the ID of a lease that exists.
pub fn lease_exists() -> Status {
    etcd(Code::FailedPrecondition, "lease already exists")
}

/// A grant past the largest TTL etcd accepts.
pub fn lease_ttl_too_large() -> Status {
    etcd(Code::OutOfRange, "too large lease TTL")
}

/// A member cut off from a majority of its cluster: it cannot commit.
pub fn no_leader() -> Status {
    etcd(Code::Unavailable, "no leader")
}

/// A request that got no answer in etcd's request timeout: its write did
/// not reach a majority, or its read found no leader to confirm it.
pub fn request_timed_out() -> Status {
    etcd(Code::Unavailable, "request timed out")
}

/// A request whose member stopped (restarted) before answering it.
pub fn stopped() -> Status {
    etcd(Code::Unavailable, "server stopped")
}
