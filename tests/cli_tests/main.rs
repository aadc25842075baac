//! locklab's command-line tests: each runs the built `locklab` binary.
//! Built as one test binary, one module per subject (one link instead of
//! one per file).

mod common;

mod bench_signals;
mod builtin_cli;
mod check_cli;
mod cli;
mod committed_reports;
mod explore_cli;
mod html_reports;
mod interrupt_cli;
mod json_cli;
mod junit_cli;
mod lock_log_cli;
mod own_lock;
mod real_cli;
mod rung_file_cli;
mod sim_server;
