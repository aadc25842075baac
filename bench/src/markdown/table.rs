//! The Markdown tables of `bench.md`: a header, then one line per row;
//! the tables of measured implementations end with their ratios to the
//! floor and rslock.

use super::cells::ratio;
use crate::interval::Estimate;
use crate::report::{Ratios, Subject};
use std::fmt::Write as _;

/// A Markdown table: a header, then one line per row.
pub(super) struct Table<'a> {
    pub(super) out: &'a mut String,
}

impl<'a> Table<'a> {
    /// Writes the header line and its separator.
    pub(super) fn new(out: &'a mut String, columns: &[&str]) -> Table<'a> {
        let _ = writeln!(out, "| {} |", columns.join(" | "));
        let _ = writeln!(out, "|{}", "---|".repeat(columns.len()));
        Table { out }
    }

    /// Writes the header of a table of measured implementations: what was
    /// measured, `figures`, then the ratios to the floor and rslock.
    pub(super) fn of_subjects(out: &'a mut String, title: &str, figures: &[&str]) -> Table<'a> {
        let columns = [
            &["impl", "wait", "nodes"],
            figures,
            &["× floor", "× rslock"],
        ]
        .concat();
        Table::section(out, title, &columns)
    }

    /// Writes a section heading, then the table's header.
    pub(super) fn section(out: &'a mut String, title: &str, columns: &[&str]) -> Table<'a> {
        heading(out, title);
        Table::new(out, columns)
    }

    /// Writes one row of cells.
    pub(super) fn row(&mut self, cells: &[String]) {
        let _ = writeln!(self.out, "| {} |", cells.join(" | "));
    }

    /// Writes one row of a table made by [`Table::of_subjects`].
    pub(super) fn subject_row(&mut self, subject: &Subject, figures: &[String], ratios: &Ratios) {
        let named = [
            subject.impl_.clone(),
            subject.wait.clone(),
            subject.nodes.to_string(),
        ];
        // A baseline against itself is 1 by definition, not a measurement.
        let against = |baseline: &str, r: Option<Estimate>| {
            if subject.impl_ == baseline {
                "itself".to_string()
            } else {
                ratio(r)
            }
        };
        let compared = [
            against("floor", ratios.vs_floor),
            against("rslock", ratios.vs_rslock),
        ];
        self.row(&[&named[..], figures, &compared[..]].concat());
    }
}

/// A section heading, after a blank line.
pub(super) fn heading(s: &mut String, title: &str) {
    let _ = writeln!(s, "\n## {title}\n");
}
