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

/// The end of the range of every key that starts with `prefix` (what
/// clientv3's `GetPrefixRangeEnd` computes): the prefix with its last byte
/// below 0xff incremented and what follows dropped; `"\0"` (every key from
/// `prefix` on) when every byte is 0xff.
pub fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    vec![0]
}
