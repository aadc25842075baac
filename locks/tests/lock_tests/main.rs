//! The lock crate's integration tests.
//! Built as one test binary, one module per subject (one link instead of
//! one per file).

mod common;

mod database;
mod libraries;
mod notify;
mod outage;
mod properties;
mod redlock;
mod rungs;
mod watchdog;
