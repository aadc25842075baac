//! `locklab sim-server`: one simulated Redis node on a real TCP port.

use super::Outcome;
use crate::json::SimServerResult;
use sim::exit::ExitCode;

/// The arguments of `locklab sim-server`.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// The port to listen on.
    #[arg(long, default_value_t = 6390)]
    pub port: u16,
    /// The address to bind (loopback unless you say otherwise).
    #[arg(long, default_value = "127.0.0.1")]
    pub bind: std::net::IpAddr,
    /// How long a script runs before other clients get `BUSY` (Redis's
    /// `busy-reply-threshold`, in ms).
    #[arg(long, default_value_t = 5000, value_name = "MS")]
    pub busy_reply_threshold_ms: u64,
    /// Print one JSON document on standard output once the server
    /// listens (its address, port and pid; docs/json.md); the human
    /// text goes to standard error.
    #[arg(long)]
    pub json: bool,
}

/// `locklab sim-server --port P`: one simulated node on real TCP, until
/// Ctrl-C, SIGTERM or a client's `SHUTDOWN` (even while a script runs).
/// Its document is printed once the server listens, so the outcome carries
/// no result.
pub fn execute(args: Args) -> Outcome<SimServerResult> {
    Outcome::failed(serve(args.bind, args.port, args.busy_reply_threshold_ms))
}

/// Serves until stopped; `busy_reply_threshold_ms` is Redis's
/// `busy-reply-threshold`.
fn serve(bind: std::net::IpAddr, port: u16, busy_reply_threshold_ms: u64) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            crate::error!("cannot start a runtime: {e}");
            return ExitCode::BadInput;
        }
    };
    let asked = std::net::SocketAddr::new(bind, port);
    let mut config = simredis::NodeConfig::new("sim-server");
    config.busy_reply_threshold = std::time::Duration::from_millis(busy_reply_threshold_ms);
    // Bound here, so that the address said is the one listened on (the
    // system picks the port of `--port 0`).
    let bound = std::net::TcpListener::bind(asked).and_then(|l| Ok((l.local_addr()?, l)));
    let (addr, listener) = match bound {
        Ok(bound) => bound,
        Err(e) => {
            crate::error!("cannot serve on {asked}: {e}");
            return ExitCode::BadInput;
        }
    };
    let port = addr.port();
    eprintln!("simulated Redis node on {addr} (real time); try: redis-cli -p {port} ping");
    if crate::json::active() {
        let ready = SimServerResult {
            address: addr.to_string(),
            port,
            busy_reply_threshold_ms,
            pid: std::process::id(),
        };
        crate::json::print(crate::json::CommandName::SimServer, None, Some(ready));
    }
    // The signals are awaited on the server's socket thread: a script that
    // runs long blocks this one (the node's) inside Lua.
    let served = runtime.block_on(simredis::serve_bound_until(listener, config, stop_signal()));
    match served {
        Ok(()) => ExitCode::Success,
        Err(e) => {
            crate::error!("cannot serve on {addr}: {e}");
            ExitCode::BadInput
        }
    }
}

/// Completes on Ctrl-C (SIGINT) or SIGTERM.
async fn stop_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        if let Ok(mut term) = signal(SignalKind::terminate()) {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}
