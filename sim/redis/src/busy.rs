//! A script that runs long on the real-TCP server, handled as Redis 7.0
//! handles it (`scriptInterrupt`, `processCommand`, `scriptKill`).
//!
//! The node runs a script synchronously on its thread, so while it runs
//! the node cannot read other clients. The real-TCP server ([`crate::tcp`])
//! therefore reads and writes the sockets on a thread of its own (the
//! front) and shares a [`ScriptWatch`] with the node's Lua engine:
//!
//! * the engine says when a script starts and ends, and when it is about
//!   to write (which makes it unkillable: Redis's `SCRIPT_WRITE_DIRTY`);
//! * before the busy threshold (Redis's `busy-reply-threshold`) the front
//!   holds other clients' requests, as Redis leaves them unread;
//! * past it, the front answers them itself with what Redis's
//!   `processCommand` answers during a busy script ([`answer_while_busy`]):
//!   `BUSY`, except for the commands Redis flags `ALLOW_BUSY` that this
//!   node knows (`SCRIPT KILL`, `SHUTDOWN NOSAVE`, `QUIT`);
//! * `SCRIPT KILL` and `SHUTDOWN NOSAVE` become requests the engine's count
//!   hook (and every `redis.call`) looks at: it raises Redis's kill error in
//!   the script, or stops it for the shutdown.
//!
//! Only the real-TCP server uses this (it reads the real clock); inside a
//! simulation time stands still during a script, and the deterministic
//! instruction limit bounds it instead.

use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::watch;

use crate::commands::scripting::not_busy;
use crate::commands::server::{ShutdownRequest, no_shutdown_in_progress, shutdown_request};
use crate::commands::{refusal, resolve};
use crate::handle::{NodeHandle, lock};
use crate::resp::Reply;

/// The error every command but the allowed ones gets while a script is
/// busy (Redis's `shared.slowevalerr`).
pub(crate) const BUSY: &str =
    "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.";

/// The same error while a library's function is busy (Redis's
/// `shared.slowscripterr`).
pub(crate) const BUSY_FUNCTION: &str =
    "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE.";

/// `SCRIPT KILL` refused: the script already wrote.
const UNKILLABLE: &str = "UNKILLABLE Sorry the script already executed write commands against the dataset. You can either wait the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command.";

/// The running script, as the engine and the front share it.
struct Running {
    /// When it started (real time).
    started: Instant,
    /// It called a write command: `SCRIPT KILL` may no longer stop it.
    wrote: bool,
    /// `SCRIPT KILL` asked to stop it.
    kill: bool,
    /// It is a library's function (`FCALL`), which `FUNCTION KILL` stops,
    /// not `SCRIPT KILL`: what `FUNCTION STATS` shows of it.
    function: Option<FunctionRun>,
}

/// A running function as `FUNCTION STATS` shows it, and the engine's
/// counts (which cannot change while it runs).
#[derive(Debug, Clone)]
pub(crate) struct FunctionRun {
    /// The function's name.
    pub(crate) name: String,
    /// The command that runs it, as its client sent it.
    pub(crate) command: Vec<Vec<u8>>,
    /// How many libraries are loaded.
    pub(crate) libraries: usize,
    /// How many functions they hold.
    pub(crate) functions: usize,
}

/// The state behind [`ScriptWatch`]'s lock.
#[derive(Default)]
struct WatchState {
    /// The script running now, if any.
    running: Option<Running>,
    /// The server is stopping (`SHUTDOWN`, a signal, the serve future
    /// dropped).
    shutdown: bool,
}

/// What the engine must do with the running script, asked by the front.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Interrupt {
    /// `SCRIPT KILL`: raise Redis's kill error in the script.
    Kill,
    /// The server is stopping: end the script now.
    Shutdown,
}

/// What the front sees of the node's scripts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ScriptState {
    /// No script runs: requests go to the node.
    Idle,
    /// A script runs; until `busy_at` other clients wait, from then on
    /// they are answered `BUSY`.
    Running {
        /// When the script crosses the busy threshold.
        busy_at: Instant,
    },
    /// A killed script is ending: requests wait for it to end.
    Ending,
}

/// The running script's state, shared by the node's Lua engine and the
/// real-TCP server's front (see the module docs).
pub(crate) struct ScriptWatch {
    /// Redis's `busy-reply-threshold`, in ms.
    threshold_ms: AtomicU64,
    state: Mutex<WatchState>,
    /// Bumped at every change a held request waits for (a script starts,
    /// is killed or ends, the server stops).
    changes: watch::Sender<u64>,
    /// Set once the server stops (what the front's accept loop waits for).
    stopping: watch::Sender<bool>,
    /// Set first when the server stops, before anything can act on the
    /// stop: a reply that exists because of the stop (the abort of a
    /// running script) is therefore always written after this flag is
    /// set, and the front, which looks at it before each write, never
    /// sends one. Redis exits instead, and its clients read no reply.
    stop_flag: AtomicBool,
}

impl ScriptWatch {
    /// A watch with Redis's busy threshold `threshold`.
    pub(crate) fn new(threshold: Duration) -> Arc<ScriptWatch> {
        Arc::new(ScriptWatch {
            threshold_ms: AtomicU64::new(u64::try_from(threshold.as_millis()).unwrap_or(u64::MAX)),
            state: Mutex::new(WatchState::default()),
            changes: watch::Sender::new(0),
            stopping: watch::Sender::new(false),
            stop_flag: AtomicBool::new(false),
        })
    }

    /// `CONFIG SET busy-reply-threshold` (or `lua-time-limit`): scripts
    /// started from now on are busy after `ms`.
    pub(crate) fn set_threshold_ms(&self, ms: u64) {
        self.threshold_ms.store(ms, Ordering::Relaxed);
    }

    fn changed(&self) {
        self.changes.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// The engine starts a script (`function`: a library's function).
    pub(crate) fn script_started(&self, function: Option<FunctionRun>) {
        lock(&self.state).running = Some(Running {
            started: Instant::now(),
            wrote: false,
            kill: false,
            function,
        });
        self.changed();
    }

    /// The engine's script ended (however it ended).
    pub(crate) fn script_ended(&self) {
        lock(&self.state).running = None;
        self.changed();
    }

    /// What the running script must do now (asked by the engine's count
    /// hook and after each `redis.call`).
    pub(crate) fn interrupt(&self) -> Option<Interrupt> {
        let st = lock(&self.state);
        if st.shutdown {
            Some(Interrupt::Shutdown)
        } else if st.running.as_ref().is_some_and(|r| r.kill) {
            Some(Interrupt::Kill)
        } else {
            None
        }
    }

    /// The running script is about to run a write command. `false` if it
    /// is being killed or the server is stopping (the write must not run);
    /// otherwise the script is marked as having written, atomically with
    /// `SCRIPT KILL`'s check of that mark.
    pub(crate) fn claim_write(&self) -> bool {
        let mut st = lock(&self.state);
        if st.shutdown {
            return false;
        }
        match &mut st.running {
            Some(r) if r.kill => false,
            Some(r) => {
                r.wrote = true;
                true
            }
            None => true,
        }
    }

    /// The `BUSY` error for the running script's kind.
    pub(crate) fn busy_error(&self) -> Reply {
        let function = lock(&self.state)
            .running
            .as_ref()
            .is_some_and(|r| r.function.is_some());
        Reply::err(if function { BUSY_FUNCTION } else { BUSY })
    }

    /// `FUNCTION STATS` while a script is busy: the running function and
    /// how long it has run.
    pub(crate) fn function_stats(&self) -> Reply {
        let st = lock(&self.state);
        let Some((run, started)) = st
            .running
            .as_ref()
            .and_then(|r| Some((r.function.as_ref()?, r.started)))
        else {
            // The counts are the node's to give, and the node is busy
            // with an `EVAL` script: the front has nothing to show.
            return Reply::err(BUSY);
        };
        let bulk = |s: &[u8]| Reply::Bulk(s.to_vec());
        let running = Reply::Map(vec![
            (bulk(b"name"), bulk(run.name.as_bytes())),
            (
                bulk(b"command"),
                Reply::Array(run.command.iter().map(|a| bulk(a)).collect()),
            ),
            (
                bulk(b"duration_ms"),
                Reply::Int(i64::try_from(started.elapsed().as_millis()).unwrap_or(i64::MAX)),
            ),
        ]);
        crate::commands::functions::stats_reply(running, run.libraries, run.functions)
    }

    /// `SCRIPT KILL` (`function` false) or `FUNCTION KILL` while a script
    /// is busy: Redis's `scriptKill` reply (each kills only its own kind).
    pub(crate) fn kill(&self, function: bool) -> Reply {
        let reply = match &mut lock(&self.state).running {
            None => not_busy(),
            Some(r) if r.wrote => Reply::err(UNKILLABLE),
            Some(r) if r.function.is_some() != function => Reply::err(if r.function.is_some() {
                BUSY_FUNCTION
            } else {
                BUSY
            }),
            Some(r) => {
                r.kill = true;
                Reply::ok()
            }
        };
        self.changed();
        reply
    }

    /// Stops the server: a running script ends at the hook's next look, and
    /// the front closes every connection.
    pub(crate) fn shut_down(&self) {
        self.stop_flag.store(true, Ordering::SeqCst);
        lock(&self.state).shutdown = true;
        self.changed();
        self.stopping.send_replace(true);
    }

    /// Whether the server is stopping: from then on no client is written
    /// anything (see `stop_flag`).
    pub(crate) fn is_stopping(&self) -> bool {
        self.stop_flag.load(Ordering::SeqCst)
    }

    /// Completes once the server stops.
    pub(crate) async fn stopped(&self) {
        let mut stopping = self.stopping.subscribe();
        // The sender lives in `self`, so waiting cannot fail.
        let _ = stopping.wait_for(|stopped| *stopped).await;
    }

    /// The script state as the front acts on it.
    pub(crate) fn state(&self) -> ScriptState {
        let threshold = Duration::from_millis(self.threshold_ms.load(Ordering::Relaxed));
        match &lock(&self.state).running {
            None => ScriptState::Idle,
            Some(r) if r.kill => ScriptState::Ending,
            Some(r) => ScriptState::Running {
                busy_at: r.started.checked_add(threshold).unwrap_or(r.started),
            },
        }
    }

    /// A receiver that wakes at every change of the script state.
    pub(crate) fn subscribe(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }
}

/// What the node's side of one connection tells the front (see
/// `server::connection`): how far it has executed the requests forwarded
/// to it, and whether the client is in subscribed mode.
#[derive(Default)]
pub(crate) struct ConnProbe {
    /// Bytes of requests the node has executed (and whose replies it has
    /// written); set each time it waits for more.
    executed: AtomicU64,
    /// Whether the client is in subscribed mode (set with `executed`).
    subscribed: AtomicBool,
    /// Whether the client has a transaction open (set with `executed`).
    in_multi: AtomicBool,
    /// What the front did to the client's transaction while the node was
    /// busy, for the node to apply before its next request:
    /// [`FrontMulti`] as a byte.
    front_multi: AtomicU8,
}

/// A client's transaction as the front leaves it after answering for a
/// busy node (Redis runs `MULTI` and `DISCARD` while busy, and a refused
/// command flags the transaction, or ends it if it is `EXEC`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FrontMulti {
    /// Untouched.
    Unchanged = 0,
    /// Ended (`DISCARD`, or `EXEC` refused with `EXECABORT`).
    Closed = 1,
    /// Open (`MULTI`), no command refused since.
    Open = 2,
    /// Open, and a command was refused: its `EXEC` must abort.
    Refused = 3,
}

impl ConnProbe {
    /// The node has executed `executed` bytes of requests and waits for
    /// more.
    pub(crate) fn settle(&self, executed: u64, subscribed: bool) {
        self.subscribed.store(subscribed, Ordering::Relaxed);
        // Release: the replies written before are visible to the front
        // once it reads this count.
        self.executed.store(executed, Ordering::Release);
    }

    /// Whether the client has a transaction open (the node says so before
    /// it settles).
    pub(crate) fn set_in_multi(&self, in_multi: bool) {
        self.in_multi.store(in_multi, Ordering::Relaxed);
    }

    /// Whether the client had a transaction open when the node settled.
    pub(crate) fn in_multi(&self) -> bool {
        self.in_multi.load(Ordering::Relaxed)
    }

    /// The front leaves the client's transaction this way.
    pub(crate) fn set_front_multi(&self, m: FrontMulti) {
        self.front_multi.store(m as u8, Ordering::Release);
    }

    /// What the front did to the client's transaction, once.
    pub(crate) fn take_front_multi(&self) -> FrontMulti {
        match self.front_multi.swap(0, Ordering::Acquire) {
            1 => FrontMulti::Closed,
            2 => FrontMulti::Open,
            3 => FrontMulti::Refused,
            _ => FrontMulti::Unchanged,
        }
    }

    /// Bytes of requests the node has executed.
    pub(crate) fn executed(&self) -> u64 {
        self.executed.load(Ordering::Acquire)
    }

    /// Whether the client is in subscribed mode.
    pub(crate) fn subscribed(&self) -> bool {
        self.subscribed.load(Ordering::Relaxed)
    }
}

/// What the front does with a request while a script is busy.
#[derive(Debug, PartialEq)]
pub(crate) enum BusyAnswer {
    /// Send this reply.
    Reply(Reply),
    /// Send this reply, then close the connection (`QUIT`).
    ReplyAndClose(Reply),
    /// Stop the server (`SHUTDOWN NOSAVE`); the caller gets no reply.
    ShutDown,
}

/// Redis's `processCommand` while a script is busy: the checks that come
/// before the busy check (unknown command, arity, subcommand, `READONLY`,
/// subscribed mode), then `BUSY` for every command but the `ALLOW_BUSY`
/// ones this node knows: `SCRIPT KILL`, `SHUTDOWN` (which needs `NOSAVE`
/// while busy) and `QUIT`.
pub(crate) fn answer_while_busy(
    args: &[Vec<u8>],
    subscribed: bool,
    handle: &NodeHandle,
    watch: &ScriptWatch,
) -> BusyAnswer {
    let resolved = match resolve(args, handle.config().version) {
        Ok(r) => r,
        Err(e) => return BusyAnswer::Reply(e),
    };
    if let Some(e) = refusal(resolved, subscribed, &handle.role()) {
        return BusyAnswer::Reply(e);
    }
    match resolved.full_name() {
        "script|kill" => BusyAnswer::Reply(watch.kill(false)),
        "function|kill" => BusyAnswer::Reply(watch.kill(true)),
        "function|stats" => BusyAnswer::Reply(watch.function_stats()),
        "quit" => BusyAnswer::ReplyAndClose(Reply::ok()),
        "shutdown" => match shutdown_request(args) {
            Ok(ShutdownRequest::Stop { nosave: true }) => BusyAnswer::ShutDown,
            Ok(ShutdownRequest::Stop { nosave: false }) => BusyAnswer::Reply(watch.busy_error()),
            Ok(ShutdownRequest::Abort) => BusyAnswer::Reply(no_shutdown_in_progress()),
            Err(e) => BusyAnswer::Reply(e),
        },
        _ => BusyAnswer::Reply(watch.busy_error()),
    }
}

/// [`answer_while_busy`] for a client whose transaction state is `multi`
/// (`None`: no transaction; `Some(refused)`), as Redis 7.0 treats
/// transactions while busy: `MULTI` and `DISCARD` run (`ALLOW_BUSY`), any
/// other refusal flags the transaction, and `EXEC`, refused, ends it with
/// `EXECABORT` naming the refusal.
pub(crate) fn answer_while_busy_in_multi(
    args: &[Vec<u8>],
    subscribed: bool,
    handle: &NodeHandle,
    watch: &ScriptWatch,
    multi: &mut Option<bool>,
) -> BusyAnswer {
    let resolved = resolve(args, handle.config().version).ok();
    let name = resolved.map(|r| r.full_name());
    let allowed = resolved.is_some_and(|r| refusal(r, subscribed, &handle.role()).is_none());
    match name {
        Some("multi") if allowed => {
            return BusyAnswer::Reply(if multi.is_some() {
                Reply::err("ERR MULTI calls can not be nested")
            } else {
                *multi = Some(false);
                Reply::ok()
            });
        }
        Some("discard") if allowed => {
            return BusyAnswer::Reply(if multi.take().is_some() {
                Reply::ok()
            } else {
                Reply::err("ERR DISCARD without MULTI")
            });
        }
        _ => {}
    }
    let answer = answer_while_busy(args, subscribed, handle, watch);
    if let BusyAnswer::Reply(Reply::Error(e)) = &answer {
        if name == Some("exec") {
            *multi = None;
            let e = e.strip_prefix("ERR ").unwrap_or(e);
            return BusyAnswer::Reply(Reply::err(format!(
                "EXECABORT Transaction discarded because of: {e}"
            )));
        }
        if let Some(refused) = multi.as_mut() {
            *refused = true;
        }
    }
    answer
}

/// The reply to a malformed request, whether or not a script is busy
/// (Redis checks the protocol before anything else).
pub(crate) fn protocol_error(msg: &'static str, byte: Option<u8>) -> Reply {
    Reply::Error(format!("ERR {}", crate::resp::Parse::error_text(msg, byte)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::errors::syntax_error;
    use crate::handle::NodeConfig;
    use futures::FutureExt;

    fn args(words: &[&str]) -> Vec<Vec<u8>> {
        words.iter().map(|w| w.as_bytes().to_vec()).collect()
    }

    fn answer(watch: &ScriptWatch, words: &[&str]) -> BusyAnswer {
        let handle = NodeHandle::new(NodeConfig::new("busy"));
        answer_while_busy(&args(words), false, &handle, watch)
    }

    #[test]
    fn a_busy_node_answers_busy_except_to_the_commands_redis_allows() {
        let w = ScriptWatch::new(Duration::ZERO);
        w.script_started(None);
        let busy = BusyAnswer::Reply(Reply::err(BUSY));
        assert_eq!(answer(&w, &["PING"]), busy);
        assert_eq!(answer(&w, &["SHUTDOWN"]), busy);
        assert_eq!(answer(&w, &["script", "load", "return 1"]), busy);
        assert_eq!(
            answer(&w, &["QUIT"]),
            BusyAnswer::ReplyAndClose(Reply::ok())
        );
        assert_eq!(answer(&w, &["shutdown", "nosave"]), BusyAnswer::ShutDown);
        assert_eq!(
            answer(&w, &["shutdown", "nosave", "save"]),
            BusyAnswer::Reply(syntax_error())
        );
        assert!(matches!(
            answer(&w, &["get"]),
            BusyAnswer::Reply(Reply::Error(e)) if e.contains("wrong number of arguments for 'get'")
        ));
        assert_eq!(
            answer(&w, &["SCRIPT", "KILL"]),
            BusyAnswer::Reply(Reply::ok())
        );
        assert_eq!(w.interrupt(), Some(Interrupt::Kill));
        assert_eq!(w.state(), ScriptState::Ending);
        w.script_ended();
        assert_eq!(
            answer(&w, &["SCRIPT", "KILL"]),
            BusyAnswer::Reply(not_busy())
        );
    }

    /// An engine under `watch` whose `redis.call` runs `call`.
    fn watched_engine(
        watch: &Arc<ScriptWatch>,
        call: impl Fn(&[Vec<u8>]) -> Reply + 'static,
    ) -> crate::lua::LuaEngine {
        let engine = crate::lua::LuaEngine::new(std::rc::Rc::new(call));
        engine.watch(watch.clone());
        engine
    }

    fn killed(sha: &str, line: u32) -> Reply {
        Reply::Error(format!(
            "ERR Script killed by user with SCRIPT KILL... script: {sha}, on @user_script:{line}."
        ))
    }

    #[test]
    fn a_kill_reaches_a_looping_script_through_the_hook_from_another_thread() {
        let w = ScriptWatch::new(Duration::ZERO);
        let engine = watched_engine(&w, |_| Reply::Nil);
        let body = "local i = 0\nwhile true do i = i + 1 end";
        let sha = engine.load(body.as_bytes()).expect("compiles");
        let front = w.clone();
        let (ended, script_ended) = std::sync::mpsc::channel::<()>();
        let killer = std::thread::spawn(move || {
            let deadline = std::time::Instant::now() + Duration::from_secs(5);
            while front.state() == ScriptState::Idle && std::time::Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(1));
            }
            let reply = front.kill(false);
            // Should the hook miss the kill, the shutdown still ends the
            // script and the assertion below fails instead of hanging.
            if script_ended.recv_timeout(Duration::from_secs(2)).is_err() {
                front.shut_down();
            }
            reply
        });
        let reply = engine.run(&sha, &[], &[]);
        let _ = ended.send(());
        assert_eq!(reply, Some(killed(&sha, 2)));
        assert_eq!(w.state(), ScriptState::Idle);
        assert_eq!(killer.join().expect("killer"), Reply::ok());
    }

    #[test]
    fn a_killed_script_runs_no_further_command() {
        let w = ScriptWatch::new(Duration::ZERO);
        let front = w.clone();
        let calls = std::rc::Rc::new(std::cell::Cell::new(0));
        let counted = calls.clone();
        // The first call stands for a SCRIPT KILL that arrives meanwhile.
        let engine = watched_engine(&w, move |_| {
            counted.set(counted.get() + 1);
            front.kill(false);
            Reply::Status("PONG".into())
        });
        let body = "while true do redis.pcall('ping') end";
        let sha = engine.load(body.as_bytes()).expect("compiles");
        assert_eq!(engine.run(&sha, &[], &[]), Some(killed(&sha, 1)));
        assert_eq!(calls.get(), 1);
    }

    #[test]
    fn a_busy_function_is_killed_by_function_kill_and_not_by_script_kill() {
        let w = ScriptWatch::new(Duration::ZERO);
        w.script_started(Some(FunctionRun {
            name: "f".into(),
            command: vec![b"fcall".to_vec(), b"f".to_vec(), b"0".to_vec()],
            libraries: 1,
            functions: 1,
        }));
        let busy = BusyAnswer::Reply(Reply::err(BUSY_FUNCTION));
        assert_eq!(answer(&w, &["PING"]), busy);
        assert_eq!(answer(&w, &["SCRIPT", "KILL"]), busy);
        assert_eq!(w.interrupt(), None);
        assert_eq!(
            answer(&w, &["FUNCTION", "KILL"]),
            BusyAnswer::Reply(Reply::ok())
        );
        assert_eq!(w.interrupt(), Some(Interrupt::Kill));
        w.script_ended();
        // And the other way round: FUNCTION KILL does not stop a script.
        w.script_started(None);
        assert_eq!(
            answer(&w, &["FUNCTION", "KILL"]),
            BusyAnswer::Reply(Reply::err(BUSY))
        );
        assert_eq!(w.interrupt(), None);
    }

    #[test]
    fn a_script_that_wrote_cannot_be_killed_and_a_killed_one_cannot_write() {
        let w = ScriptWatch::new(Duration::ZERO);
        w.script_started(None);
        assert!(w.claim_write());
        assert_eq!(w.kill(false), Reply::err(UNKILLABLE));
        assert_eq!(w.interrupt(), None);
        w.script_ended();
        w.script_started(None);
        assert_eq!(w.kill(false), Reply::ok());
        assert!(!w.claim_write());
        w.script_ended();
        w.shut_down();
        assert_eq!(w.interrupt(), Some(Interrupt::Shutdown));
        assert!(w.stopped().now_or_never().is_some());
    }
}
