//! What a run is made of, in words every other part of locklab shares:
//! the scenario format and its validation ([`scenario`]), its faults
//! ([`fault`]), host names ([`host`]), the guarded resource
//! ([`resource`]), the history a run records ([`history`]), why a run may
//! end early ([`cut_short`]) and the verdict words ([`verdict`]); what
//! asked a long command to stop ([`interrupt`]), a search's limit and
//! totals ([`search`]), and a scenario written back as a file
//! ([`scenario_text`]).
//!
//! No engine lives here: nothing in this crate runs a simulation, starts a
//! process or waits on a runtime. The engines (`sim`, `real`) produce
//! histories; the judge reads them; reports show them. All of them speak
//! these types.

pub mod cut_short;
pub mod fault;
pub mod history;
pub mod host;
pub mod interrupt;
pub mod resource;
pub mod scenario;
pub mod scenario_text;
pub mod search;
pub mod verdict;
