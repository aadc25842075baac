//! What locklab shows people and leaves on disk, rendered from what the
//! engines return: a judged run ([`judge::judged::Judged`]), a suite's
//! cells ([`judge::matrix::Cell`], [`judge::matrix::SuiteRun`]), a
//! search's totals and counterexample ([`search::Search`]).
//!
//! - [`output`]: a run for the terminal ([`output::describe`]) and its
//!   folder, `reports/runs/<scenario>/<rung>/<seed>/` ([`output::write_run`]);
//!   [`replay`] runs a recorded folder again (with the engine it is given)
//!   and compares it file by file;
//! - [`timeline`]: each client's holds, ASCII for the terminal and SVG for
//!   the run folder;
//! - [`matrix`]: the safety matrix as markdown, SVG and JSON, complete or
//!   partial, and its files;
//! - [`html`]: self-contained pages for a run, a suite and a search, and
//!   the pieces every page shares (the benchmark's page, in the `bench`
//!   crate, uses them too);
//! - [`junit`]: JUnit XML for a suite and a search;
//! - [`tour`]: the tour's text, one rung at a time.
//!
//! Everything here is a pure function of its data (the same data, the
//! same bytes) or a writer of such text. The layering is Cargo's: this
//! crate depends on `model` and `judge` (and on `locks` for the ladder's
//! metadata, and `harness` for whole-file writes), never on an engine, so
//! the command line hands the engines' results to it.

pub mod html;
pub mod junit;
pub mod matrix;
pub mod output;
pub mod replay;
pub mod search;
pub mod suite;
pub mod timeline;
pub mod tour;
