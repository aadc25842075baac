//! The Lock service (`v3lock`), which `etcdctl` does not call (its `lock`
//! command runs the mutex in the client), checked through a Rust client:
//! the same sequence of calls against real etcd 3.4.23 and against the
//! simulated member, and the same transcript from both, lease IDs and
//! revisions written relative to the sequence's own.
//!
//! The sequence: a lock on a free name, a second caller queued behind it
//! (still waiting after 500 ms), the first unlocked and the second
//! handed the lock, a lock on a lease that does not exist, an unlock of a
//! key nobody holds.

use etcdproto::etcdserverpb::lease_client::LeaseClient;
use etcdproto::etcdserverpb::{LeaseGrantRequest, ResponseHeader};
use etcdproto::v3lockpb::lock_client::LockClient;
use etcdproto::v3lockpb::{LockRequest, UnlockRequest};
use harness::etcd::EtcdServer;
use std::net::SocketAddr;
use std::time::Duration;
use tonic::transport::Channel;

use crate::common;

/// Writes what the member said so that two members can be compared.
struct Transcript {
    lines: Vec<String>,
    /// The revision before the sequence began.
    base_revision: i64,
    /// Each lease's hex ID and its name in the transcript.
    leases: Vec<(String, &'static str)>,
}

impl Transcript {
    fn masked(&self, text: &str) -> String {
        let mut text = text.to_string();
        for (hex, name) in &self.leases {
            text = text.replace(hex.as_str(), name);
        }
        text
    }

    fn header(&self, header: Option<&ResponseHeader>) -> String {
        let revision = header.map_or(0, |h| h.revision);
        format!("revision +{}", revision - self.base_revision)
    }

    fn lock(
        &mut self,
        step: &str,
        answer: Result<tonic::Response<etcdproto::v3lockpb::LockResponse>, tonic::Status>,
    ) {
        let line = match answer {
            Ok(r) => {
                let r = r.into_inner();
                let key = String::from_utf8_lossy(&r.key).into_owned();
                format!(
                    "{step}: key {} {}",
                    self.masked(&key),
                    self.header(r.header.as_ref())
                )
            }
            Err(status) => format!("{step}: {:?} {}", status.code(), status.message()),
        };
        self.lines.push(line);
    }

    fn unlock(
        &mut self,
        step: &str,
        answer: Result<tonic::Response<etcdproto::v3lockpb::UnlockResponse>, tonic::Status>,
    ) {
        let line = match answer {
            Ok(r) => format!("{step}: ok {}", self.header(r.into_inner().header.as_ref())),
            Err(status) => format!("{step}: {:?} {}", status.code(), status.message()),
        };
        self.lines.push(line);
    }
}

async fn grant(channel: &Channel) -> i64 {
    let granted = LeaseClient::new(channel.clone())
        .lease_grant(LeaseGrantRequest { ttl: 30, id: 0 })
        .await
        .expect("a lease");
    granted.into_inner().id
}

/// Runs the sequence against the member at `addr`; its transcript.
async fn sequence(addr: SocketAddr) -> Vec<String> {
    let channel = Channel::from_shared(format!("http://{addr}"))
        .expect("an endpoint")
        .connect()
        .await
        .expect("connected");
    let (first, second) = (grant(&channel).await, grant(&channel).await);
    let mut lock = LockClient::new(channel.clone());
    // The name is unique to this run: a real member may have served others.
    let name = format!("conformance-{first:x}");
    let locked = lock
        .lock(LockRequest {
            name: name.clone().into_bytes(),
            lease: first,
        })
        .await;
    let base_revision = match &locked {
        Ok(r) => r.get_ref().header.as_ref().map_or(0, |h| h.revision) - 1,
        Err(_) => 0,
    };
    let mut t = Transcript {
        lines: Vec::new(),
        base_revision,
        leases: vec![
            (format!("{first:x}"), "<first>"),
            (format!("{second:x}"), "<second>"),
        ],
    };
    let first_key = locked
        .as_ref()
        .map(|r| r.get_ref().key.clone())
        .unwrap_or_default();
    t.lock("lock, free", locked);

    let mut queued_client = lock.clone();
    let queued_name = name.clone().into_bytes();
    let mut queued = tokio::spawn(async move {
        queued_client
            .lock(LockRequest {
                name: queued_name,
                lease: second,
            })
            .await
    });
    let waited = tokio::time::timeout(Duration::from_millis(500), &mut queued).await;
    t.lines.push(format!(
        "lock, taken: still waiting after 500 ms: {}",
        waited.is_err()
    ));

    let unlocked = lock
        .unlock(UnlockRequest {
            key: first_key.clone(),
        })
        .await;
    t.unlock("unlock the holder", unlocked);
    let handed = tokio::time::timeout(Duration::from_secs(5), queued)
        .await
        .expect("the queued lock is handed over")
        .expect("the queued task");
    t.lock("lock, handed over", handed);

    let no_lease = lock
        .lock(LockRequest {
            name: name.clone().into_bytes(),
            lease: 0x7a11,
        })
        .await;
    t.lock("lock on a lease that does not exist", no_lease);
    let nobody = lock.unlock(UnlockRequest { key: first_key }).await;
    t.unlock("unlock a key nobody holds", nobody);
    t.lines
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_lock_service_answers_as_real_etcd_3_4_does() {
    let real = EtcdServer::start().expect("etcd (scripts/setup installs it)");
    let expected = sequence(real.addr()).await;
    let got = sequence(common::start_simulated()).await;
    assert_eq!(
        got,
        expected,
        "the simulated member's Lock service differs from real etcd's\nreal:\n{}\nsimulated:\n{}",
        expected.join("\n"),
        got.join("\n")
    );
}
