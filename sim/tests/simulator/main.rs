//! The simulator's integration tests, one module per subject, built as one
//! test binary (one link instead of one per file).

mod common;

mod bad_input;
mod checkers;
mod databases;
mod estimate;
mod findings;
mod generated_scenarios;
mod herd;
mod html_pages;
mod libraries;
mod one_nemesis;
mod ordering;
mod outage;
mod properties;
mod replay_mutations;
mod runaway_script;
mod rung_files;
mod scale;
mod scenarios;
mod zookeeper;
