//! The fault-injecting proxy on its own: a partition stops exactly the
//! links and directions it names and heals them; a hold delivers in order
//! once it ends; latency slows a direction; dropping the proxy closes its
//! ports. Each test talks to a line-echo server that also records every
//! line it received, so a test can tell a request that never arrived from
//! a reply that never came back. About 2 s in all.

use real::proxy::{Link, Proxy, Way};
use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

/// How long a test waits before it calls something lost.
const QUIET: Duration = Duration::from_millis(250);

/// A line-echo server on loopback that records what it received.
struct EchoServer {
    addr: SocketAddr,
    received: Arc<Mutex<Vec<String>>>,
}

impl EchoServer {
    fn start() -> EchoServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let received = Arc::new(Mutex::new(Vec::new()));
        let log = received.clone();
        // The accept thread ends with the test process.
        thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(conn) = conn else { return };
                let log = log.clone();
                thread::spawn(move || {
                    let mut writer = conn.try_clone().unwrap();
                    for line in BufReader::new(conn).lines() {
                        let Ok(line) = line else { return };
                        log.lock().unwrap().push(line.clone());
                        if writer.write_all(format!("{line}\n").as_bytes()).is_err() {
                            return;
                        }
                    }
                });
            }
        });
        EchoServer { addr, received }
    }

    fn received(&self) -> Vec<String> {
        self.received.lock().unwrap().clone()
    }

    /// Waits until `line` was received, or `QUIET` passed.
    fn got(&self, line: &str) -> bool {
        let deadline = Instant::now() + QUIET;
        while Instant::now() < deadline {
            if self.received().iter().any(|l| l == line) {
                return true;
            }
            thread::sleep(Duration::from_millis(5));
        }
        false
    }
}

/// A client connection through a link.
struct Conn {
    writer: TcpStream,
    reader: BufReader<TcpStream>,
}

impl Conn {
    fn open(addr: SocketAddr) -> Conn {
        let stream = TcpStream::connect(addr).unwrap();
        stream.set_read_timeout(Some(QUIET)).unwrap();
        Conn {
            writer: stream.try_clone().unwrap(),
            reader: BufReader::new(stream),
        }
    }

    fn send(&mut self, line: &str) {
        self.writer
            .write_all(format!("{line}\n").as_bytes())
            .unwrap();
    }

    /// The next line back, or `None` when nothing came within `QUIET`.
    fn reply(&mut self) -> Option<String> {
        let mut line = String::new();
        match self.reader.read_line(&mut line) {
            Ok(n) if n > 0 => Some(line.trim_end().to_string()),
            _ => None,
        }
    }

    /// Sends `line` and returns the reply.
    fn round_trip(&mut self, line: &str) -> Option<String> {
        self.send(line);
        self.reply()
    }
}

/// An echo server behind a fresh proxy's link `name`, and a connection
/// through that link. The proxy is kept: dropping it closes its ports.
struct Rig {
    server: EchoServer,
    _proxy: Proxy,
    link: Link,
    conn: Conn,
}

impl Rig {
    fn start(name: &str) -> Rig {
        let server = EchoServer::start();
        let proxy = Proxy::start().unwrap();
        let link = proxy.open(name, server.addr).unwrap();
        let conn = Conn::open(link.addr());
        Rig {
            server,
            _proxy: proxy,
            link,
            conn,
        }
    }
}

#[test]
fn a_healthy_link_forwards_both_ways() {
    let mut rig = Rig::start("client-0|redis-0");
    assert_eq!(rig.conn.round_trip("hello").as_deref(), Some("hello"));
}

#[test]
fn a_forward_cut_stops_only_that_link_and_direction_and_heals() {
    let server = EchoServer::start();
    let proxy = Proxy::start().unwrap();
    let cut = proxy.open("client-0|redis-0", server.addr).unwrap();
    let other = proxy.open("client-1|redis-0", server.addr).unwrap();
    let mut on_cut = Conn::open(cut.addr());
    let mut on_other = Conn::open(other.addr());
    assert_eq!(on_cut.round_trip("before").as_deref(), Some("before"));

    cut.set_cut(Way::Forward, true);
    on_cut.send("lost");
    assert_eq!(on_other.round_trip("passes").as_deref(), Some("passes"));
    assert!(!server.got("lost"), "a request crossed a cut direction");
    assert_eq!(on_cut.reply(), None);
    // A connection dialed during the cut never reaches the target.
    let mut during = Conn::open(cut.addr());
    during.send("during");
    assert!(!server.got("during"));

    cut.set_cut(Way::Forward, false);
    // The connection that lost bytes stays wedged, as after real loss;
    // a new one works.
    on_cut.send("after-on-wedged");
    assert!(!server.got("after-on-wedged"));
    let mut fresh = Conn::open(cut.addr());
    assert_eq!(fresh.round_trip("healed").as_deref(), Some("healed"));
}

#[test]
fn a_back_cut_lets_requests_through_and_loses_the_replies() {
    let mut rig = Rig::start("client-0|redis-0");
    rig.link.set_cut(Way::Back, true);
    assert!(rig.link.is_cut(Way::Back) && !rig.link.is_cut(Way::Forward));
    rig.conn.send("acted-on");
    assert!(
        rig.server.got("acted-on"),
        "the forward direction was not cut"
    );
    assert_eq!(rig.conn.reply(), None, "a reply crossed a cut direction");
    rig.link.set_cut(Way::Back, false);
    let mut fresh = Conn::open(rig.link.addr());
    assert_eq!(fresh.round_trip("again").as_deref(), Some("again"));
}

#[test]
fn a_hold_keeps_everything_then_delivers_it_in_order() {
    let mut rig = Rig::start("client-0|redis-0");
    rig.link.set_held(Way::Forward, true);
    for i in 1..=5 {
        rig.conn.send(&format!("m{i}"));
        thread::sleep(Duration::from_millis(10));
    }
    assert!(!rig.server.got("m1"), "a held message was delivered");
    rig.link.set_held(Way::Forward, false);
    assert!(rig.server.got("m5"));
    assert_eq!(rig.server.received(), ["m1", "m2", "m3", "m4", "m5"]);
    for i in 1..=5 {
        assert_eq!(rig.conn.reply(), Some(format!("m{i}")));
    }
}

#[test]
fn latency_slows_one_direction_until_it_is_reset() {
    let mut rig = Rig::start("redis-1|redis-0");
    rig.link.set_latency(Way::Back, Duration::from_millis(150));
    let started = Instant::now();
    assert_eq!(rig.conn.round_trip("slow").as_deref(), Some("slow"));
    assert!(started.elapsed() >= Duration::from_millis(150));
    rig.link.set_latency(Way::Back, Duration::ZERO);
    let started = Instant::now();
    assert_eq!(rig.conn.round_trip("fast").as_deref(), Some("fast"));
    assert!(started.elapsed() < Duration::from_millis(100));
}

#[test]
fn a_retargeted_link_sends_new_connections_to_the_new_target() {
    let old = EchoServer::start();
    let new = EchoServer::start();
    let proxy = Proxy::start().unwrap();
    let link = proxy.open("client-0|master", old.addr).unwrap();
    link.retarget(new.addr);
    let mut conn = Conn::open(link.addr());
    assert_eq!(conn.round_trip("promoted").as_deref(), Some("promoted"));
    assert!(new.got("promoted") && old.received().is_empty());
}

#[test]
fn dropping_the_proxy_closes_every_port_it_listened_on() {
    let server = EchoServer::start();
    let proxy = Proxy::start().unwrap();
    proxy.open("a", server.addr).unwrap();
    proxy.open("b", server.addr).unwrap();
    let addrs = proxy.addrs();
    assert_eq!(addrs.len(), 2);
    drop(proxy);
    for addr in addrs {
        assert!(TcpStream::connect(addr).is_err(), "{addr} still listens");
    }
}

#[test]
fn a_link_between_servers_closes_its_wedged_connections_when_the_cut_heals() {
    let mut rig = Rig::start("redis-0|redis-1");
    rig.link.close_wedged_on_heal();
    let mut untouched = Conn::open(rig.link.addr());
    assert_eq!(rig.conn.round_trip("before").as_deref(), Some("before"));
    assert_eq!(untouched.round_trip("idle").as_deref(), Some("idle"));

    rig.link.set_cut(Way::Forward, true);
    rig.conn.send("lost");
    assert!(!rig.server.got("lost"));
    rig.link.set_cut(Way::Forward, false);

    // The wedged connection is closed: its reader sees the end at once.
    let mut line = String::new();
    let started = Instant::now();
    let read = rig.conn.reader.read_line(&mut line);
    assert!(
        matches!(read, Ok(0)) || read.is_err(),
        "the wedged connection is closed ({read:?}, {line:?})"
    );
    assert!(started.elapsed() < QUIET, "closed at the heal");
    // A connection that sent nothing during the cut carries on.
    assert_eq!(untouched.round_trip("still").as_deref(), Some("still"));
}
