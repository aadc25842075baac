//! One database session, whatever the database: a connection opened
//! through a [`Dialer`](crate::conn::Dialer), its statements sent as
//! text with a bound on each reply, and its answers as rows of text. The
//! rungs see only this, so that the same lock code runs on a simulated
//! server and a real one, and on PostgreSQL ([`crate::database::postgres`])
//! and MariaDB ([`crate::database::mysql`]) alike.
//!
//! A session is what a database's session-scoped locks belong to: when
//! its connection ends, for any reason, the server ends the session and
//! lets its locks go. So a session here is never quietly replaced: a
//! failed or timed-out statement closes it ([`Session::query`] reports
//! the connection lost), and the lock that owned it decides what that
//! means for what it held.

use crate::clock::BoxFuture;
use crate::error::LockError;

/// Why a statement gave no answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DbError {
    /// The connection could not be made, broke or timed out: whether the
    /// statement ran is unknown, and the session is gone.
    Lost(String),
    /// The server refused the statement with an error of its own.
    Refused {
        /// Its SQLSTATE (`23505`: a duplicate key). MariaDB's errors carry
        /// one too, and its error number is kept in the message.
        code: String,
        /// Its message.
        message: String,
    },
    /// The server's reply could not be read as its protocol says: the
    /// session cannot be trusted after it, so it is closed, and whether
    /// the statement ran is unknown.
    Garbled(String),
}

impl DbError {
    /// Whether the server refused with this SQLSTATE.
    pub fn is(&self, code: &str) -> bool {
        matches!(self, DbError::Refused { code: c, .. } if c == code)
    }
}

impl From<DbError> for LockError {
    fn from(e: DbError) -> LockError {
        match e {
            DbError::Lost(message) => LockError::Database {
                message,
                transient: true,
            },
            DbError::Refused { code, message } => LockError::Database {
                // Connection exceptions, a server shutting down, and
                // conflicts PostgreSQL asks the client to retry.
                transient: ["08", "57P", "40"].iter().any(|c| code.starts_with(c)),
                message: format!("{code}: {message}"),
            },
            DbError::Garbled(reply) => LockError::Protocol {
                command: "a database statement",
                reply,
            },
        }
    }
}

/// What one statement answered: its rows (each column as text, `None`
/// for NULL) and how many rows it wrote or returned.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Answer {
    /// The rows it returned, if any.
    pub rows: Vec<Vec<Option<String>>>,
    /// The count of its command tag (`INSERT 0 1`: 1), or MariaDB's
    /// affected rows (the rows returned, for a result set).
    pub count: u64,
}

impl Answer {
    /// The first column of the first row, if there is one and it is not
    /// NULL.
    pub fn first(&self) -> Option<&str> {
        self.rows.first()?.first()?.as_deref()
    }
}

/// One open session on a database server, as the rungs use it: the one
/// thing that differs between PostgreSQL and MariaDB under the same lock
/// code.
pub trait Session: Send + Sync {
    /// The number of this session among those its lock opened: a lease
    /// taken in one session is not held in another.
    fn number(&self) -> u64;

    /// Whether the connection is known to have ended.
    fn is_closed(&self) -> bool;

    /// Runs one statement and returns its answer. A reply that does not
    /// come within the response timeout is [`DbError::Lost`]: the caller
    /// must drop the session, which closes its connection.
    fn query<'a>(&'a self, sql: &'a str) -> BoxFuture<'a, Result<Answer, DbError>>;
}

/// Makes sessions for a lock: opens one, numbered by the lock, on demand.
pub(crate) type Opener =
    Box<dyn Fn(u64) -> BoxFuture<'static, Result<Box<dyn Session>, DbError>> + Send + Sync>;

/// A string as a PostgreSQL literal: in single quotes, quotes doubled.
/// Lock names and owner tokens are the only values the rungs put in
/// their statements.
pub fn literal(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_literal_doubles_its_quotes() {
        assert_eq!(literal("lock:stock"), "'lock:stock'");
        assert_eq!(literal("o'brien"), "'o''brien'");
    }

    #[test]
    fn connection_failures_are_transient_and_refusals_by_their_class() {
        let lost: LockError = DbError::Lost("reset".into()).into();
        assert!(lost.transient() && lost.outcome_unknown());
        let duplicate: LockError = DbError::Refused {
            code: "23505".into(),
            message: "duplicate key".into(),
        }
        .into();
        assert!(!duplicate.transient());
        let shutdown: LockError = DbError::Refused {
            code: "57P01".into(),
            message: "terminating connection due to administrator command".into(),
        }
        .into();
        assert!(shutdown.transient());
    }
}
