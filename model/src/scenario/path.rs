//! Typed paths to a field of a scenario file (`lock.ttl_ms`,
//! `clients[0].count`, `faults_for.fenced[1].on`), as errors name and
//! locate them.

use std::fmt;

/// One step of a [`FieldPath`]: a table's key or an array's index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Step {
    /// A key of a table.
    Key(String),
    /// An item of an array, from 0.
    Index(usize),
}

/// Where a field is in a scenario file, from the top: written as the file
/// would, `faults[2].at_ms`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct FieldPath(Vec<Step>);

impl FieldPath {
    /// The path of a top-level key.
    pub(crate) fn key(key: &str) -> FieldPath {
        FieldPath(vec![Step::Key(key.to_string())])
    }

    /// This path followed by a key.
    pub(crate) fn then(mut self, key: &str) -> FieldPath {
        self.0.push(Step::Key(key.to_string()));
        self
    }

    /// This path followed by an array's index.
    pub(crate) fn at(mut self, index: usize) -> FieldPath {
        self.0.push(Step::Index(index));
        self
    }

    /// The steps, from the top.
    pub(crate) fn steps(&self) -> &[Step] {
        &self.0
    }

    /// The path with its array indices left out: how a table header names
    /// a table (`[[faults]]`, `[faults.on]`).
    pub(crate) fn without_indices(&self) -> FieldPath {
        FieldPath(
            self.0
                .iter()
                .filter(|s| matches!(s, Step::Key(_)))
                .cloned()
                .collect(),
        )
    }

    /// Reads a path as [`fmt::Display`] writes it (`faults_for.a.b[2]`);
    /// `None` when `text` is not one.
    pub(crate) fn parse(text: &str) -> Option<FieldPath> {
        let mut steps = Vec::new();
        for part in text.split('.') {
            let (key, mut indices) = part.split_once('[').map_or((part, ""), |(k, i)| (k, i));
            if key.is_empty() {
                return None;
            }
            steps.push(Step::Key(key.to_string()));
            while let Some((index, rest)) = indices.split_once(']') {
                steps.push(Step::Index(index.parse().ok()?));
                indices = rest.strip_prefix('[').unwrap_or(rest);
            }
        }
        Some(FieldPath(steps))
    }
}

impl fmt::Display for FieldPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, step) in self.0.iter().enumerate() {
            match step {
                Step::Key(key) if i == 0 => write!(f, "{key}")?,
                Step::Key(key) => write!(f, ".{key}")?,
                Step::Index(index) => write!(f, "[{index}]")?,
            }
        }
        Ok(())
    }
}
