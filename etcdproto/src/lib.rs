//! The part of etcd's v3 gRPC API that locklab speaks, generated at build
//! time from `proto/` (see `build.rs`): the messages, a client for each
//! service (the etcd locks use them) and a server trait for each (the
//! simulated member implements them). The `.proto` files are written for
//! locklab: etcd's field numbers and names, only the parts used.

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
