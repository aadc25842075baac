//! locklab's simulated Redis node (`simredis`) as Redis 8.4, served on
//! real TCP on 127.0.0.1 by this process: the one server on this machine
//! that answers `DELEX` (Redis 8.4), which the `native-cad` rung releases
//! with (redis-server 7.0 knows neither it nor Valkey 9.0's `DELIFEQ`,
//! Valkey 8.1 only `SET ... IFEQ`). The rows measured on it are reported
//! apart and say so.
//!
//! In-process rather than a child process: the bench library has no
//! `locklab` binary to start (`locklab sim-server` runs the same
//! [`simredis::serve_bound_until`]), and threads end with this process
//! however it ends (`SIGKILL` included), so nothing can outlive the run.
//! The node runs on two threads of its own: the node's, and its sockets'
//! (`simredis-front`, started by the node's thread and inheriting its
//! CPUs). When the run pins, the node's thread pins itself to the CPU of
//! redis-server node 0 before it serves, so the client keeps its CPU and
//! the simulated node sits where a server would.

use crate::client::Node;
use crate::env;
use std::io;
use std::net::{SocketAddr, TcpListener};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The name of the socket thread `simredis` starts (see `simredis::tcp`).
const FRONT_THREAD: &str = "simredis-front";

/// How long the node may take to answer its first `PING`, and to stop.
const WITHIN: Duration = Duration::from_secs(5);

/// A simulated node serving on loopback; stopped when dropped (at return,
/// on error, while unwinding from a panic).
pub struct SimNode {
    node: Node,
    /// Dropping it completes the server's stop future.
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<JoinHandle<io::Result<()>>>,
    /// Thread ids: the node's, then its socket thread's when found.
    threads: Vec<u32>,
}

impl SimNode {
    /// Starts a node on a free port of 127.0.0.1; its threads go on `cpu`
    /// when given. Fails, saying why, when it cannot bind or does not
    /// answer `PING` within 5 s.
    pub fn start(cpu: Option<usize>) -> anyhow::Result<SimNode> {
        let listener = TcpListener::bind("127.0.0.1:0")
            .map_err(|e| anyhow::anyhow!("the simulated node cannot listen on 127.0.0.1: {e}"))?;
        let addr = listener.local_addr()?;
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        // Socket threads of other nodes of this process (tests start
        // several): the new one is the one not among them.
        let fronts_before = threads_named(FRONT_THREAD);
        let (tid_tx, tid_rx) = mpsc::channel::<Option<u32>>();
        let thread = std::thread::Builder::new()
            .name("bench-sim-node".into())
            .spawn(move || {
                let tid = own_thread_id();
                if let (Some(tid), Some(cpu)) = (tid, cpu) {
                    // Before serving: the socket thread inherits the CPUs.
                    env::pin_thread(tid, &cpu.to_string());
                }
                let _ = tid_tx.send(tid);
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()?;
                let config = simredis::NodeConfig::new("bench-sim-node")
                    .version(simredis::ServerVersion::Redis8_4);
                runtime.block_on(simredis::serve_bound_until(listener, config, async move {
                    // A dropped sender stops the server as a sent one would.
                    let _ = stopped.await;
                }))
            })
            .map_err(|e| anyhow::anyhow!("cannot start the simulated node's thread: {e}"))?;
        let mut node = SimNode {
            node: Node::from_url(&format!("redis://{addr}"))?,
            stop: Some(stop),
            thread: Some(thread),
            threads: Vec::new(),
        };
        node.threads
            .extend(tid_rx.recv_timeout(WITHIN).ok().flatten());
        wait_answering(addr)?;
        let new_fronts: Vec<u32> = threads_named(FRONT_THREAD)
            .into_iter()
            .filter(|tid| !fronts_before.contains(tid))
            .collect();
        // Two nodes started at once cannot be told apart: neither is named.
        if let [front] = new_fronts[..] {
            node.threads.push(front);
        }
        Ok(node)
    }

    /// The node to connect to.
    pub fn node(&self) -> &Node {
        &self.node
    }

    /// Its threads' ids (the node's, then its sockets'), for the placement.
    pub fn threads(&self) -> &[u32] {
        &self.threads
    }
}

impl Drop for SimNode {
    fn drop(&mut self) {
        drop(self.stop.take());
        let Some(thread) = self.thread.take() else {
            return;
        };
        // Bounded: a node that does not stop is left to end with the
        // process rather than hang the run's end.
        let deadline = Instant::now() + WITHIN;
        while !thread.is_finished() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(2));
        }
        if thread.is_finished() {
            let _ = thread.join();
        }
    }
}

/// This thread's id, read from `/proc/thread-self` (`<pid>/task/<tid>`).
fn own_thread_id() -> Option<u32> {
    let link = std::fs::read_link("/proc/thread-self").ok()?;
    link.file_name()?.to_str()?.parse().ok()
}

/// The ids of this process's threads named `name`.
fn threads_named(name: &str) -> Vec<u32> {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return Vec::new();
    };
    tasks
        .filter_map(Result::ok)
        .filter(|task| {
            std::fs::read_to_string(task.path().join("comm")).is_ok_and(|c| c.trim() == name)
        })
        .filter_map(|task| task.file_name().to_str()?.parse().ok())
        .collect()
}

/// Waits until `addr` answers `PING`, at most [`WITHIN`].
fn wait_answering(addr: SocketAddr) -> anyhow::Result<()> {
    let deadline = Instant::now() + WITHIN;
    loop {
        match harness::ping(addr) {
            Ok(()) => return Ok(()),
            Err(e) if Instant::now() >= deadline => {
                anyhow::bail!(
                    "the simulated node on {addr} did not answer PING within {} s: {e}",
                    WITHIN.as_secs()
                )
            }
            Err(_) => std::thread::sleep(Duration::from_millis(5)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::TcpStream;

    #[test]
    fn a_started_node_answers_delex_and_is_gone_after_drop() {
        let sim = SimNode::start(None).expect("start");
        let addr: SocketAddr = sim.node().addr.parse().unwrap();
        let mut stream = TcpStream::connect(addr).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(2)))
            .unwrap();
        stream
            .write_all(b"*4\r\n$5\r\nDELEX\r\n$1\r\nk\r\n$4\r\nIFEQ\r\n$1\r\nv\r\n")
            .unwrap();
        let mut buf = [0u8; 16];
        let n = stream.read(&mut buf).unwrap();
        assert_eq!(
            &buf[..n],
            b":0\r\n",
            "DELEX of a missing key deletes nothing"
        );
        assert!(!sim.threads().is_empty(), "the node's thread id is known");
        drop(stream);
        drop(sim);
        assert!(harness::ping(addr).is_err(), "still answering after drop");
    }

    #[test]
    fn a_node_placed_on_a_cpu_runs_both_its_threads_there_and_nothing_else() {
        if !env::taskset_available() || env::online_cpus() < 2 {
            eprintln!("taskset or a second CPU missing; skipped");
            return;
        }
        let before = env::affinity(std::process::id());
        let sim = SimNode::start(Some(1)).expect("start");
        // Its socket thread is named unless another test's node started
        // at the same moment.
        assert!(!sim.threads().is_empty(), "the node's thread");
        for tid in sim.threads() {
            assert_eq!(env::affinity(*tid), "1", "thread {tid}");
        }
        assert_eq!(
            env::affinity(std::process::id()),
            before,
            "the process moved"
        );
    }
}
