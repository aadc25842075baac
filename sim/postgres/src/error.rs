//! PostgreSQL's errors and warnings as simpg sends them: a SQLSTATE, the
//! message PostgreSQL words the same way, and the optional detail, hint and
//! position fields psql prints.

/// An error (or, sent as a notice, a warning) with PostgreSQL's fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PgError {
    /// The SQLSTATE, e.g. `42883`.
    pub code: &'static str,
    /// The primary message.
    pub message: String,
    /// `DETAIL:`
    pub detail: Option<String>,
    /// `HINT:`
    pub hint: Option<String>,
    /// The byte offset in the query the error points at.
    pub position: Option<usize>,
}

impl PgError {
    /// An error with `code` and `message`.
    pub fn new(code: &'static str, message: String) -> PgError {
        PgError {
            code,
            message,
            detail: None,
            hint: None,
            position: None,
        }
    }

    /// A syntax error (42601) at byte `at`.
    pub fn syntax(message: String, at: usize) -> PgError {
        PgError::new("42601", message).at(at)
    }

    /// The same error, pointing at byte `at` of the query.
    pub fn at(mut self, at: usize) -> PgError {
        self.position = Some(at);
        self
    }

    /// The same error with a detail line.
    pub fn detail(mut self, detail: String) -> PgError {
        self.detail = Some(detail);
        self
    }

    /// The same error with a hint line.
    pub fn hint(mut self, hint: &str) -> PgError {
        self.hint = Some(hint.to_string());
        self
    }

    /// The wire fields, with `severity` (`ERROR`, `WARNING`), and the
    /// position counted in characters from 1 as PostgreSQL counts it.
    pub(crate) fn fields(&self, severity: &str, query: &str) -> Vec<(u8, String)> {
        let mut fields = vec![
            (b'S', severity.to_string()),
            (b'V', severity.to_string()),
            (b'C', self.code.to_string()),
            (b'M', self.message.clone()),
        ];
        if let Some(d) = &self.detail {
            fields.push((b'D', d.clone()));
        }
        if let Some(h) = &self.hint {
            fields.push((b'H', h.clone()));
        }
        if let Some(at) = self.position {
            let chars = query.get(..at).map_or(at, |s| s.chars().count());
            fields.push((b'P', (chars + 1).to_string()));
        }
        fields
    }
}

/// 25P02: what every statement but COMMIT and ROLLBACK gets in a failed
/// transaction block.
pub fn in_failed_transaction() -> PgError {
    PgError::new(
        "25P02",
        "current transaction is aborted, commands ignored until end of transaction block".into(),
    )
}

/// 42P01 for a table that does not exist, pointing at its name.
pub fn no_such_table(name: &str, at: usize) -> PgError {
    PgError::new("42P01", format!("relation \"{name}\" does not exist")).at(at)
}

/// 42703 for a column that does not exist.
pub fn no_such_column(name: &str) -> PgError {
    PgError::new("42703", format!("column \"{name}\" does not exist"))
}
