//! The bench crate's integration tests.
//! Built as one test binary, one module per subject (one link instead of
//! one per file).

mod common;

mod contention_slices;
mod database_rows;
mod etcd_rows;
mod failures;
mod paired_analysis;
mod round_trips;
mod smoke;
mod zookeeper_rows;
