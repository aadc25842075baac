//! The simulated server on a real TCP port, driven by a minimal client
//! written on zkproto's records: what a ZooKeeper 3.8 client sees.

use crate::common;

use std::time::Duration;

use common::{Client, handshake, server_at};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use zkproto::codes::{CreateMode, ErrorCode, EventType, OpCode};
use zkproto::frame::{MAX_FRAME, read_frame, write_frame};
use zkproto::jute::{decode, encode};
use zkproto::records::{
    AddWatchRequest, ErrorResponse, RemoveWatchesRequest, ReplyHeader, RequestHeader, SetWatches,
    WhoAmIResponse,
};

/// Serves `server` on a free loopback port; the server stops when the
/// returned sender is dropped.
async fn start(server: simzk::Server) -> (String, tokio::sync::oneshot::Sender<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(simzk::serve_tcp(server, listener, async {
        let _ = stop_rx.await;
    }));
    (addr, stop_tx)
}

async fn client(addr: &str) -> Client<TcpStream> {
    Client::connect(TcpStream::connect(addr).await.unwrap(), 30_000)
        .await
        .unwrap()
}

#[tokio::test]
async fn a_session_timeout_is_clamped_to_two_and_twenty_ticks() {
    let (addr, _stop) = start(server_at(0)).await;
    let long = client(&addr).await;
    assert_eq!(long.timeout_ms, 10_000);
    let short = Client::connect(TcpStream::connect(&addr).await.unwrap(), 10)
        .await
        .unwrap();
    assert_eq!(short.timeout_ms, 1_000);
    assert_eq!(short.session_id, long.session_id + 1);
}

#[tokio::test]
async fn writes_and_failed_writes_take_zxids_and_reads_report_the_last() {
    let (addr, _stop) = start(server_at(1_700_000_000_000)).await;
    let mut c = client(&addr).await;
    // zxid 1 was the session.
    assert_eq!(
        c.create("/a", None, CreateMode::Persistent).await.unwrap(),
        Ok("/a".into())
    );
    assert_eq!(c.last_zxid, 2);
    let again = c.create("/a", None, CreateMode::Persistent).await.unwrap();
    assert_eq!(again, Err(ErrorCode::NodeExists.code()));
    assert_eq!(c.last_zxid, 3, "a failed write is an error transaction");
    c.create("/a/b", Some(b"x"), CreateMode::Persistent)
        .await
        .unwrap()
        .unwrap();
    let (data, stat) = c.get("/a", false).await.unwrap().unwrap();
    assert_eq!(data, None, "created without data: null, not empty");
    assert_eq!(c.last_zxid, 4, "a read's header carries the last zxid");
    assert_eq!(
        (stat.czxid, stat.pzxid, stat.cversion, stat.num_children),
        (2, 4, 1, 1)
    );
    assert_eq!(stat.ctime, 1_700_000_000_000);
    assert_eq!(
        c.delete("/a/b", 5).await.unwrap(),
        ErrorCode::BadVersion.code()
    );
    assert_eq!(
        c.delete("/a", -1).await.unwrap(),
        ErrorCode::NotEmpty.code()
    );
    assert_eq!(c.delete("/a/b", -1).await.unwrap(), 0);
    let stat = c.exists("/a", false).await.unwrap().unwrap();
    assert_eq!((stat.pzxid, stat.cversion, stat.num_children), (7, 2, 0));
    let seq = c
        .create("/a/s-", None, CreateMode::PersistentSequential)
        .await
        .unwrap();
    assert_eq!(seq, Ok("/a/s-0000000001".into()));
    assert_eq!(
        c.exists("/nope", false).await.unwrap(),
        Err(ErrorCode::NoNode.code())
    );
}

#[tokio::test]
async fn an_ephemeral_node_has_no_children_and_goes_with_its_session() {
    let (addr, _stop) = start(server_at(0)).await;
    let mut owner = client(&addr).await;
    let mut other = client(&addr).await;
    owner
        .create("/e", None, CreateMode::Ephemeral)
        .await
        .unwrap()
        .unwrap();
    let stat = other.exists("/e", true).await.unwrap().unwrap();
    assert_eq!(stat.ephemeral_owner, owner.session_id);
    let child = owner
        .create("/e/x", None, CreateMode::Persistent)
        .await
        .unwrap();
    assert_eq!(child, Err(ErrorCode::NoChildrenForEphemerals.code()));
    let reply = owner.close().await.unwrap();
    assert_eq!(reply.header.err, 0);
    assert!(owner.closed_by_server().await);
    let notices = other.wait_notices(Duration::from_millis(10)).await.unwrap();
    assert_eq!(notices.len(), 1);
    assert_eq!(notices[0].r#type, EventType::NodeDeleted.code());
    assert_eq!(notices[0].path, "/e");
    assert_eq!(
        other.exists("/e", false).await.unwrap(),
        Err(ErrorCode::NoNode.code())
    );
}

#[tokio::test]
async fn a_watch_fires_once_and_before_the_reply_to_the_write_that_fired_it() {
    let (addr, _stop) = start(server_at(0)).await;
    let mut c = client(&addr).await;
    c.create("/w", Some(b"1"), CreateMode::Persistent)
        .await
        .unwrap()
        .unwrap();
    c.get("/w", true).await.unwrap().unwrap();
    c.children("/", true).await.unwrap().unwrap();
    c.set("/w", b"2", 0).await.unwrap().unwrap();
    assert_eq!(
        c.notices.len(),
        1,
        "the notification arrives before the reply"
    );
    assert_eq!(c.notices[0].r#type, EventType::NodeDataChanged.code());
    c.notices.clear();
    c.set("/w", b"3", 1).await.unwrap().unwrap();
    assert!(c.notices.is_empty(), "a watch is one-shot");
    c.create("/w2", None, CreateMode::Persistent)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(c.notices.len(), 1);
    assert_eq!(c.notices[0].r#type, EventType::NodeChildrenChanged.code());
    assert_eq!(c.notices[0].path, "/");
}

#[tokio::test]
async fn a_wrong_password_gets_timeout_zero_and_the_connection_closes() {
    let (addr, _stop) = start(server_at(0)).await;
    let c = client(&addr).await;
    let mut stream = TcpStream::connect(&addr).await.unwrap();
    let response = handshake(&mut stream, 30_000, Some((c.session_id, vec![1; 16])))
        .await
        .unwrap();
    assert_eq!((response.time_out, response.session_id), (0, 0));
    assert_eq!(response.passwd.bytes(), [0; 16]);
    assert_eq!(response.read_only, Some(false));
    assert!(matches!(read_frame(&mut stream).await, Ok(None) | Err(_)));
}

#[tokio::test]
async fn resuming_a_session_elsewhere_closes_its_old_connection() {
    let (addr, _stop) = start(server_at(0)).await;
    let mut first = client(&addr).await;
    first
        .create("/mine", None, CreateMode::Ephemeral)
        .await
        .unwrap()
        .unwrap();
    let resume = Some((first.session_id, first.passwd.clone()));
    let mut second = Client::resume(TcpStream::connect(&addr).await.unwrap(), 30_000, resume)
        .await
        .unwrap();
    assert_eq!(second.session_id, first.session_id);
    assert!(first.closed_by_server().await);
    let stat = second.exists("/mine", false).await.unwrap().unwrap();
    assert_eq!(stat.ephemeral_owner, second.session_id);
}

#[tokio::test]
async fn set_watches_after_a_reconnect_fires_what_changed_since() {
    let (addr, _stop) = start(server_at(0)).await;
    let mut writer = client(&addr).await;
    writer
        .create("/x", Some(b"1"), CreateMode::Persistent)
        .await
        .unwrap()
        .unwrap();
    let mut c = client(&addr).await;
    let seen = c.ping().await.unwrap();
    writer.set("/x", b"2", -1).await.unwrap().unwrap();
    let request = SetWatches {
        relative_zxid: seen,
        data_watches: vec!["/x".into()],
        exist_watches: vec!["/y".into()],
        child_watches: vec!["/".into()],
    };
    let reply = c.set_watches(&request).await.unwrap();
    assert_eq!(reply.header.err, 0);
    assert_eq!(c.notices.len(), 1);
    assert_eq!(c.notices[0].r#type, EventType::NodeDataChanged.code());
    c.notices.clear();
    writer
        .create("/y", None, CreateMode::Persistent)
        .await
        .unwrap()
        .unwrap();
    let notices = c.wait_notices(Duration::from_millis(10)).await.unwrap();
    let kinds: Vec<i32> = notices.iter().map(|n| n.r#type).collect();
    assert_eq!(
        kinds,
        [
            EventType::NodeCreated.code(),
            EventType::NodeChildrenChanged.code()
        ]
    );
}

#[tokio::test]
async fn an_unknown_operation_gets_unimplemented_then_the_connection_closes() {
    let (addr, _stop) = start(server_at(0)).await;
    let mut c = client(&addr).await;
    let zxid_before = c.ping().await.unwrap();
    let header = RequestHeader {
        xid: 7,
        r#type: 999,
    };
    write_frame(&mut c.stream, &encode(&header)).await.unwrap();
    let frame = read_frame(&mut c.stream).await.unwrap().unwrap();
    let reply: ReplyHeader = decode(&frame).unwrap();
    let unimplemented = ErrorCode::Unimplemented.code();
    assert_eq!(
        reply,
        ReplyHeader {
            xid: 7,
            zxid: -1,
            err: unimplemented
        }
    );
    assert!(c.closed_by_server().await);
    let mut again = client(&addr).await;
    assert_eq!(
        again.ping().await.unwrap(),
        zxid_before + 1,
        "only the new session took a zxid"
    );
}

#[tokio::test]
async fn an_oversized_or_malformed_frame_closes_the_connection() {
    let (addr, _stop) = start(server_at(0)).await;
    let mut c = client(&addr).await;
    c.stream
        .write_all(&((MAX_FRAME as i32) + 1).to_be_bytes())
        .await
        .unwrap();
    assert!(c.closed_by_server().await);
    let mut stream = TcpStream::connect(&addr).await.unwrap();
    write_frame(&mut stream, &[1, 2, 3]).await.unwrap();
    assert!(matches!(read_frame(&mut stream).await, Ok(None) | Err(_)));
    let mut c = client(&addr).await;
    write_frame(
        &mut c.stream,
        &encode(&RequestHeader { xid: 1, r#type: 4 })[..5],
    )
    .await
    .unwrap();
    assert!(c.closed_by_server().await);
}

#[tokio::test]
async fn reads_of_the_system_nodes_answer_as_a_fresh_server() {
    let (addr, _stop) = start(server_at(0)).await;
    let mut c = client(&addr).await;
    let (data, stat) = c.get("/zookeeper/config", false).await.unwrap().unwrap();
    assert_eq!(data, Some(Vec::new()));
    assert_eq!((stat.aversion, stat.czxid), (-1, 0));
    let mut children = c.children("/zookeeper", false).await.unwrap().unwrap();
    children.sort();
    assert_eq!(children, ["config", "quota"]);
    let deleted = c.delete("/zookeeper/quota", -1).await.unwrap();
    assert_eq!(deleted, ErrorCode::BadArguments.code());
}

#[tokio::test]
async fn watches_can_be_checked_and_removed_and_who_am_i_names_the_peer() {
    let (addr, _stop) = start(server_at(0)).await;
    let mut c = client(&addr).await;
    c.children("/", true).await.unwrap().unwrap();
    let request = |kind| RemoveWatchesRequest {
        path: "/".into(),
        r#type: kind,
    };
    let check = c.call(OpCode::CheckWatches, &request(2)).await.unwrap();
    assert_eq!(
        check.header.err,
        ErrorCode::NoWatcher.code(),
        "no data watch"
    );
    let removed = c.call(OpCode::RemoveWatches, &request(3)).await.unwrap();
    assert_eq!(removed.header.err, 0);
    let again = c.call(OpCode::RemoveWatches, &request(3)).await.unwrap();
    assert_eq!(again.header.err, ErrorCode::NoWatcher.code());
    let who = c.call(OpCode::WhoAmI, &common::Empty).await.unwrap();
    let who: WhoAmIResponse = who.decode();
    assert_eq!(who.client_info.len(), 1);
    assert_eq!(
        (
            who.client_info[0].auth_scheme.as_str(),
            who.client_info[0].user.as_str()
        ),
        ("ip", "127.0.0.1")
    );
}

#[tokio::test]
async fn a_persistent_recursive_watch_fires_for_every_change_below_and_stays() {
    let (addr, _stop) = start(server_at(0)).await;
    let mut c = client(&addr).await;
    let add = AddWatchRequest {
        path: "/r".into(),
        mode: 1,
    };
    let reply = c.call(OpCode::AddWatch, &add).await.unwrap();
    assert_eq!(reply.header.err, 0);
    assert_eq!(reply.decode::<ErrorResponse>().err, 0);
    c.create("/r", None, CreateMode::Persistent)
        .await
        .unwrap()
        .unwrap();
    c.create("/r/a", None, CreateMode::Persistent)
        .await
        .unwrap()
        .unwrap();
    c.set("/r/a", b"x", -1).await.unwrap().unwrap();
    let seen: Vec<(i32, &str)> = c
        .notices
        .iter()
        .map(|n| (n.r#type, n.path.as_str()))
        .collect();
    let created = EventType::NodeCreated.code();
    let changed = EventType::NodeDataChanged.code();
    assert_eq!(
        seen,
        [(created, "/r"), (created, "/r/a"), (changed, "/r/a")]
    );
}
