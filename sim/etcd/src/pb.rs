//! The etcd v3 messages and services, generated at build time from
//! `proto/` (see `build.rs`).

#![allow(missing_docs, clippy::all)]

/// Keys, values and watch events.
pub mod mvccpb {
    tonic::include_proto!("mvccpb");
}

/// The KV, Watch, Lease, Cluster and Maintenance services.
pub mod etcdserverpb {
    tonic::include_proto!("etcdserverpb");
}

/// The Lock service.
pub mod v3lockpb {
    tonic::include_proto!("v3lockpb");
}
