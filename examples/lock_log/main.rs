//! `cargo run --release --example lock_log -- --redis 127.0.0.1:PORT --out FILE [--clients 4] [--cycles 50]`
//!
//! A service that guards a counter with its own Redis lock and records
//! what its clients did, in the log format `locklab check` reads, so that
//! locklab can judge a lock it never ran. Nothing here uses locklab's
//! lock code: the lock is the one a user would write.
//!
//! - acquire: `SET locklab:example:lock TOKEN NX PX TTL`, retried every
//!   2 ms until it succeeds or a deadline passes;
//! - the guarded work: `GET locklab:example:counter`, then a write of
//!   counter + 1 that a script performs only while the lock key still
//!   holds this lease's token;
//! - release: a script that deletes the lock key only if it still holds
//!   the token.
//!
//! Every key it touches starts with `locklab:example:`.
//!
//! # The log
//!
//! One JSON object per line, in the order the events happened:
//!
//! ```text
//! {"process":0,"type":"invoke","f":"acquire","lock":"locklab:example:lock","value":null,"time":5123,"clock-bound":0}
//! {"process":0,"type":"ok","f":"acquire","lock":"locklab:example:lock","token":"0-1","value":null,"valid-for-us":1999924,"time":81234,"clock-bound":0}
//! ```
//!
//! - `process`: who acted: a client, by number. A client whose operation
//!   ended `info` goes on under a new number, as in Jepsen's histories;
//! - `type`: `invoke` when the request is about to be sent; then `ok` (it
//!   took effect), `fail` (it did not: the lock was taken, the lease was
//!   no longer ours) or `info` (unknown: an error or a timeout, the
//!   request may or may not have taken effect);
//! - `f`: `acquire`, `read`, `write` or `release`;
//! - `lock`: the lock's key;
//! - `token`: the lease's token, on everything done under a lease (absent
//!   on an acquire's invoke, before there is one);
//! - `value`: what was read, or what is written (`null` for the lock's own
//!   operations);
//! - `time`: when, in ns since the service started, on its one clock;
//! - `valid-for-us` (optional, on an acquire's `ok`): how much longer the
//!   lease lasts in the client's own view, µs (its TTL less the time the
//!   acquire took), so that a client that stops acting (after an `info`)
//!   is not taken to hold the lock forever;
//! - `clock-bound`: how far that clock may be from true time, ns: 0 here,
//!   where every client shares one process's monotonic clock. Services on
//!   several machines write each machine's bound (its NTP error, say),
//!   and `locklab check` widens every operation by it.

mod service;

use clap::Parser;
use std::path::PathBuf;

/// The command line.
#[derive(Parser)]
#[command(about = "A service with its own Redis lock, recording a log for `locklab check`")]
struct Args {
    /// The Redis server, host:port.
    #[arg(long)]
    redis: String,
    /// Where to write the log (JSON lines).
    #[arg(long)]
    out: PathBuf,
    /// How many clients run at once.
    #[arg(long, default_value_t = 4)]
    clients: u64,
    /// How many times each client takes the lock.
    #[arg(long, default_value_t = 50)]
    cycles: u64,
}

fn main() -> std::process::ExitCode {
    let args = Args::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("error: could not start the runtime: {e}");
            return std::process::ExitCode::from(3);
        }
    };
    let config = service::Config {
        redis: args.redis,
        out: args.out,
        clients: args.clients,
        cycles: args.cycles,
    };
    match runtime.block_on(service::run(&config)) {
        Ok(done) => {
            println!(
                "{} clients, {} cycles each: {} writes accepted, counter {}; {} log lines in {}",
                config.clients,
                config.cycles,
                done.written,
                done.counter,
                done.lines,
                config.out.display()
            );
            std::process::ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            std::process::ExitCode::from(3)
        }
    }
}
