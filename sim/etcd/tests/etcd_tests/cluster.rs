//! A three-member simulated etcd cluster on turmoil's network: writes
//! commit on a majority, a member cut off from it cannot commit, a leader
//! cut off steps down and the others elect a new one, acknowledged
//! writes outlive the leader's crash, and a new leader gives every lease
//! its TTL and 1 s more.

use etcdproto::etcdserverpb::kv_client::KvClient;
use etcdproto::etcdserverpb::lease_client::LeaseClient;
use etcdproto::etcdserverpb::maintenance_client::MaintenanceClient;
use etcdproto::etcdserverpb::*;
use locks::BoxFuture;
use locks::Dialer;
use locks::etcd::channel::channel;
use simetcd::node::PEER_PORT;
use simetcd::{Identity, Member, Node, Place, Recheck};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tonic::transport::Channel;

const PORT: u16 = 2379;
const MEMBERS: [&str; 3] = ["m0", "m1", "m2"];

/// Dials one member through turmoil.
struct To(&'static str);

impl Dialer for To {
    type Stream = turmoil::net::TcpStream;

    fn dial(&self) -> BoxFuture<'static, std::io::Result<Self::Stream>> {
        Box::pin(turmoil::net::TcpStream::connect((self.0, PORT)))
    }
}

fn to(member: &'static str) -> Channel {
    channel(Arc::new(To(member)))
}

/// A simulation of three members, `m0` its first leader, seeded.
fn cluster(seed: u64, secs: u64) -> turmoil::Sim<'static> {
    let mut sim = turmoil::Builder::new()
        .simulation_duration(Duration::from_secs(secs))
        .tick_duration(Duration::from_millis(1))
        .rng_seed(seed)
        .build();
    let peers: BTreeMap<u64, (String, u16)> = (MEMBERS.iter().enumerate())
        .map(|(i, m)| (i as u64 + 1, (m.to_string(), PEER_PORT)))
        .collect();
    for (i, name) in MEMBERS.iter().enumerate() {
        let raft_id = i as u64 + 1;
        let place = Place {
            raft_id,
            size: 3,
            peers: (peers.iter())
                .filter(|(id, _)| **id != raft_id)
                .map(|(id, at)| (*id, at.clone()))
                .collect(),
            seed,
            first_leader: i == 0,
        };
        let node = Node::new(Member::new(Identity::of_member(raft_id, 3)), place);
        sim.host(*name, move || {
            simetcd::serve_sim(node.clone(), PORT, Recheck::No)
        });
    }
    sim
}

fn now_ms() -> u64 {
    turmoil::sim_elapsed().unwrap_or_default().as_millis() as u64
}

async fn sleep_ms(ms: u64) {
    tokio::time::sleep(Duration::from_millis(ms)).await;
}

async fn put(member: &'static str, key: &str, value: &str) -> Result<PutResponse, tonic::Status> {
    let put = PutRequest {
        key: key.into(),
        value: value.into(),
        ..PutRequest::default()
    };
    KvClient::new(to(member))
        .put(put)
        .await
        .map(|r| r.into_inner())
}

async fn get(
    member: &'static str,
    key: &str,
    serializable: bool,
) -> Result<Option<(String, i64)>, tonic::Status> {
    let range = RangeRequest {
        key: key.into(),
        serializable,
        ..RangeRequest::default()
    };
    let resp = KvClient::new(to(member)).range(range).await?.into_inner();
    Ok(resp.kvs.first().map(|kv| {
        (
            String::from_utf8_lossy(&kv.value).into_owned(),
            kv.mod_revision,
        )
    }))
}

/// The leader a member names, as its member ID (0: none).
async fn leader_seen_by(member: &'static str) -> u64 {
    match MaintenanceClient::new(to(member))
        .status(StatusRequest {})
        .await
    {
        Ok(s) => s.into_inner().leader,
        Err(_) => 0,
    }
}

fn member_id(i: u64) -> u64 {
    Identity::of_member(i + 1, 3).member_id
}

/// Waits until `member` names a leader; returns it.
async fn until_led(member: &'static str) -> u64 {
    loop {
        let leader = leader_seen_by(member).await;
        if leader != 0 {
            return leader;
        }
        sleep_ms(100).await;
    }
}

fn cut_off(member: &str) {
    for other in MEMBERS.iter().filter(|m| **m != member) {
        turmoil::partition(member, *other);
    }
}

fn heal(member: &str) {
    for other in MEMBERS.iter().filter(|m| **m != member) {
        turmoil::repair(member, *other);
    }
}

#[test]
fn the_first_member_leads_a_fresh_cluster_and_a_write_through_a_follower_reaches_all() {
    let mut sim = cluster(1, 30);
    sim.client("test", async {
        sleep_ms(500).await;
        for m in MEMBERS {
            assert_eq!(until_led(m).await, member_id(0), "{m} names the leader");
        }
        let written = put("m2", "k", "v").await?;
        let rev = written.header.unwrap_or_default().revision;
        // A linearizable read anywhere sees it at once.
        assert_eq!(get("m1", "k", false).await?, Some(("v".into(), rev)));
        sleep_ms(300).await;
        for m in MEMBERS {
            assert_eq!(get(m, "k", true).await?, Some(("v".into(), rev)), "{m}");
        }
        Ok(())
    });
    sim.run().expect("the cluster serves");
}

#[test]
fn a_member_cut_off_from_the_majority_cannot_commit_and_serves_stale_serializable_reads() {
    let mut sim = cluster(2, 60);
    sim.client("test", async {
        sleep_ms(500).await;
        put("m0", "k", "old").await?;
        sleep_ms(300).await;
        cut_off("m2");
        put("m0", "k", "new").await?;
        let started = now_ms();
        let refused = put("m2", "k", "mine").await.expect_err("no majority");
        assert_eq!(refused.code(), tonic::Code::Unavailable, "{refused:?}");
        assert_eq!(refused.message(), "etcdserver: request timed out");
        let waited = now_ms() - started;
        assert!(
            (6_900..7_500).contains(&waited),
            "gave up after {waited} ms"
        );
        // Its own store still has the old value, and says so when asked
        // for a serializable read; a linearizable read cannot be served.
        let stale = get("m2", "k", true).await?.map(|(v, _)| v);
        assert_eq!(stale.as_deref(), Some("old"));
        assert!(get("m2", "k", false).await.is_err());
        heal("m2");
        sleep_ms(3_000).await;
        let caught_up = get("m2", "k", false).await?.map(|(v, _)| v);
        assert_eq!(caught_up.as_deref(), Some("new"));
        Ok(())
    });
    sim.run().expect("the minority cannot commit");
}

#[test]
fn a_leader_cut_off_steps_down_and_the_majority_elects_another() {
    let mut sim = cluster(3, 60);
    sim.client("test", async {
        sleep_ms(500).await;
        assert_eq!(until_led("m1").await, member_id(0));
        cut_off("m0");
        let cut_at = now_ms();
        // CheckQuorum: the old leader steps down within two election
        // timeouts, and names no leader.
        while leader_seen_by("m0").await != 0 {
            sleep_ms(50).await;
        }
        let stepped_down = now_ms() - cut_at;
        assert!(
            stepped_down <= 2_100,
            "stepped down after {stepped_down} ms"
        );
        let mut leader = 0;
        while leader == 0 || leader == member_id(0) {
            leader = leader_seen_by("m1").await;
            sleep_ms(50).await;
        }
        assert!([member_id(1), member_id(2)].contains(&leader));
        let rev = put("m1", "k", "v")
            .await?
            .header
            .unwrap_or_default()
            .revision;
        heal("m0");
        sleep_ms(3_000).await;
        assert_eq!(get("m0", "k", true).await?, Some(("v".into(), rev)));
        Ok(())
    });
    sim.run().expect("a new leader is elected");
}

#[test]
fn acknowledged_writes_survive_the_leaders_crash_at_the_same_revisions() {
    let mut sim = cluster(4, 60);
    let written: Arc<Mutex<Vec<(String, i64)>>> = Arc::default();
    let log = written.clone();
    sim.client("writer", async move {
        sleep_ms(500).await;
        for i in 0..5 {
            let value = format!("v{i}");
            let resp = put("m0", &format!("k{i}"), &value).await?;
            let rev = resp.header.unwrap_or_default().revision;
            log.lock().unwrap().push((value, rev));
        }
        Ok(())
    });
    while written.lock().unwrap().len() < 5 {
        sim.step().expect("writes go through");
    }
    sim.crash("m0");
    let acked = written.lock().unwrap().clone();
    let check = acked.clone();
    sim.client("reader", async move {
        for (i, expected) in check.iter().enumerate() {
            let got = get("m1", &format!("k{i}"), false).await?;
            assert_eq!(got.as_ref(), Some(expected), "k{i} on the new leader");
        }
        Ok(())
    });
    for _ in 0..10_000 {
        sim.step().expect("the survivors serve");
    }
    sim.bounce("m0");
    sim.client("after-restart", async move {
        sleep_ms(3_000).await;
        for (i, expected) in acked.iter().enumerate() {
            let got = get("m0", &format!("k{i}"), true).await?;
            assert_eq!(got.as_ref(), Some(expected), "k{i} on the restarted member");
        }
        Ok(())
    });
    sim.run().expect("nothing acknowledged is lost");
}

#[test]
fn a_new_leader_gives_every_lease_its_ttl_and_one_second_more() {
    let mut sim = cluster(5, 60);
    let lease = Arc::new(Mutex::new(None::<i64>));
    let granted = lease.clone();
    sim.client("granter", async move {
        sleep_ms(500).await;
        let grant = LeaseGrantRequest { ttl: 5, id: 0 };
        let resp = LeaseClient::new(to("m1")).lease_grant(grant).await?;
        *granted.lock().unwrap() = Some(resp.into_inner().id);
        Ok(())
    });
    while lease.lock().unwrap().is_none() {
        sim.step().expect("the grant goes through");
    }
    let id = lease.lock().unwrap().unwrap_or_default();
    // The lease carries the bits of the member that chose its ID.
    let chooser = Identity::of_member(2, 3).member_id & 0x7fff;
    assert_eq!((id >> 48) as u64, chooser);
    let granted_at = sim.elapsed();
    while sim.elapsed() < granted_at + Duration::from_secs(3) {
        sim.step().expect("time passes");
    }
    sim.crash("m0");
    sim.client("watcher", async move {
        let crashed_at = now_ms();
        // The survivors elect a leader, which promotes its lessor when it
        // commits the first entry of its term.
        let mut leader = 0;
        while leader == 0 || leader == member_id(0) {
            leader = leader_seen_by("m1").await;
            sleep_ms(50).await;
        }
        let led_at = now_ms();
        assert_ne!(leader, member_id(0));
        assert!(
            led_at - crashed_at < 4_000,
            "elected after {} ms",
            led_at - crashed_at
        );
        let ask = LeaseTimeToLiveRequest { id, keys: false };
        let left = LeaseClient::new(to("m1")).lease_time_to_live(ask).await?;
        assert_eq!(left.into_inner().ttl, 5, "TTL and 1 s more, truncated");
        // Without keep-alives the lease dies TTL + 1 s after the promotion
        // (the revoke loop looks every 500 ms).
        loop {
            let ask = LeaseTimeToLiveRequest { id, keys: false };
            let left = LeaseClient::new(to("m1")).lease_time_to_live(ask).await?;
            if left.into_inner().ttl == -1 {
                break;
            }
            sleep_ms(100).await;
        }
        let lived = now_ms() - led_at;
        assert!(
            (5_500..6_900).contains(&lived),
            "revoked {lived} ms after the election"
        );
        Ok(())
    });
    sim.run().expect("the lease is refreshed on promotion");
}

#[test]
fn a_lease_kept_alive_through_a_follower_outlives_many_ttls() {
    let mut sim = cluster(6, 60);
    sim.client("test", async {
        sleep_ms(500).await;
        let grant = LeaseGrantRequest { ttl: 3, id: 0 };
        let id = LeaseClient::new(to("m2"))
            .lease_grant(grant)
            .await?
            .into_inner()
            .id;
        for _ in 0..10 {
            sleep_ms(1_000).await;
            let (tx, rx) = futures::channel::mpsc::unbounded();
            tx.unbounded_send(LeaseKeepAliveRequest { id })?;
            let mut answers = LeaseClient::new(to("m2"))
                .lease_keep_alive(rx)
                .await?
                .into_inner();
            let answer = answers.message().await?.expect("an answer");
            assert_eq!(answer.ttl, 3, "renewed by the leader through m2");
        }
        let ask = LeaseTimeToLiveRequest { id, keys: false };
        let left = LeaseClient::new(to("m2")).lease_time_to_live(ask).await?;
        assert!(left.into_inner().ttl >= 1, "alive after 10 s");
        Ok(())
    });
    sim.run().expect("keep-alives are forwarded");
}

/// What one run of a leader's partition looks like from a client: the
/// leaders it saw and when.
fn trace_of_a_leader_partition(seed: u64) -> Vec<(u64, u64)> {
    let mut sim = cluster(seed, 30);
    let trace: Arc<Mutex<Vec<(u64, u64)>>> = Arc::default();
    let seen = trace.clone();
    sim.client("test", async move {
        sleep_ms(500).await;
        cut_off("m0");
        for _ in 0..60 {
            let leader = leader_seen_by("m1").await;
            {
                let mut seen = seen.lock().unwrap();
                if seen.last().map(|(_, l)| *l) != Some(leader) {
                    seen.push((now_ms(), leader));
                }
            }
            sleep_ms(100).await;
        }
        Ok(())
    });
    sim.run().expect("the run ends");
    trace.lock().unwrap().clone()
}

#[test]
fn one_seed_replays_the_same_election_and_another_seed_may_differ() {
    let first = trace_of_a_leader_partition(7);
    assert_eq!(first, trace_of_a_leader_partition(7));
    assert!(first.len() >= 2, "a new leader after the cut: {first:?}");
    let others: Vec<_> = (8..14).map(trace_of_a_leader_partition).collect();
    assert!(
        others.iter().any(|t| *t != first),
        "six other seeds all elected at the same moments: {first:?}"
    );
}
