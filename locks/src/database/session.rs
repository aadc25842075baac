//! One database session: a connection opened through a [`Dialer`], its
//! statements sent as simple queries with a bound on each reply, and its
//! answers as rows of text. The rungs see only this, so that the same
//! lock code runs on a simulated server and a real one.
//!
//! A session is what a database's session-scoped locks belong to: when
//! its connection ends, for any reason, the server ends the session and
//! lets its locks go. So a session here is never quietly replaced: a
//! failed or timed-out statement closes it ([`Session::query`] reports
//! the connection lost), and the lock that owned it decides what that
//! means for what it held.

use crate::clock::BoxFuture;
use crate::conn::{ConnConfig, Dialer};
use crate::error::LockError;
use std::time::Duration;
use tokio_postgres::SimpleQueryMessage;

/// The role and database every session logs in as: the simulated server
/// takes any; a real server is set up with them (trust authentication,
/// on loopback only).
pub const PG_USER: &str = "postgres";
/// The database the sessions use.
pub const PG_DATABASE: &str = "postgres";

/// Why a statement gave no answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DbError {
    /// The connection could not be made, broke or timed out: whether the
    /// statement ran is unknown, and the session is gone.
    Lost(String),
    /// The server refused the statement with an error of its own.
    Refused {
        /// Its SQLSTATE (`23505`: a duplicate key).
        code: String,
        /// Its message.
        message: String,
    },
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
        }
    }
}

/// What one statement answered: its rows (each column as text, `None`
/// for NULL) and how many rows it wrote or returned.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Answer {
    /// The rows it returned, if any.
    pub rows: Vec<Vec<Option<String>>>,
    /// The count of its command tag (`INSERT 0 1`: 1).
    pub count: u64,
}

impl Answer {
    /// The first column of the first row, if there is one and it is not
    /// NULL.
    pub fn first(&self) -> Option<&str> {
        self.rows.first()?.first()?.as_deref()
    }
}

/// One open session on a PostgreSQL server.
pub struct Session {
    client: tokio_postgres::Client,
    response_timeout: Duration,
    /// The number of this session among those its lock opened: a lease
    /// taken in one session is not held in another.
    pub number: u64,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("number", &self.number)
            .finish_non_exhaustive()
    }
}

impl Session {
    /// Dials and logs in, within `conn.connect_timeout`; its statements
    /// then wait at most `conn.response_timeout` each.
    pub async fn open<D: Dialer>(
        dialer: &D,
        conn: ConnConfig,
        number: u64,
    ) -> Result<Session, DbError> {
        let connecting = async {
            let stream = dialer
                .dial()
                .await
                .map_err(|e| DbError::Lost(format!("connect: {e}")))?;
            let mut config = tokio_postgres::Config::new();
            config
                .user(PG_USER)
                .dbname(PG_DATABASE)
                .application_name("locklab");
            let (client, connection) = config
                .connect_raw(stream, tokio_postgres::NoTls)
                .await
                .map_err(lost_or_refused)?;
            // The connection's I/O runs beside the session and ends when
            // the client is dropped (it then says goodbye to the server)
            // or the stream fails.
            tokio::spawn(async move {
                let _ = connection.await;
            });
            Ok(client)
        };
        let client = tokio::time::timeout(conn.connect_timeout, connecting)
            .await
            .map_err(|_| DbError::Lost("connect: timed out".into()))??;
        Ok(Session {
            client,
            response_timeout: conn.response_timeout,
            number,
        })
    }

    /// Whether the connection has ended.
    pub fn is_closed(&self) -> bool {
        self.client.is_closed()
    }

    /// Runs one statement and returns its answer. A reply that does not
    /// come within the response timeout is [`DbError::Lost`]: the caller
    /// must drop the session, which closes its connection.
    pub async fn query(&self, sql: &str) -> Result<Answer, DbError> {
        let messages = tokio::time::timeout(self.response_timeout, self.client.simple_query(sql))
            .await
            .map_err(|_| DbError::Lost(format!("no reply within {:?}", self.response_timeout)))?
            .map_err(lost_or_refused)?;
        let mut answer = Answer::default();
        for message in messages {
            match message {
                SimpleQueryMessage::Row(row) => answer.rows.push(
                    (0..row.len())
                        .map(|i| row.get(i).map(str::to_string))
                        .collect(),
                ),
                SimpleQueryMessage::CommandComplete(n) => answer.count = n,
                _ => {}
            }
        }
        Ok(answer)
    }
}

/// A driver error as [`DbError`]: the server's own error, or a lost
/// connection.
fn lost_or_refused(e: tokio_postgres::Error) -> DbError {
    match e.as_db_error() {
        Some(db) => DbError::Refused {
            code: db.code().code().to_string(),
            message: db.message().to_string(),
        },
        None => DbError::Lost(e.to_string()),
    }
}

/// Makes sessions for a lock: opens one on demand and hands the same one
/// out until it fails.
pub(crate) type Opener =
    Box<dyn Fn(u64) -> BoxFuture<'static, Result<Session, DbError>> + Send + Sync>;

/// An [`Opener`] that dials `dialer` with the timeouts of `conn`.
pub(crate) fn opener<D: Dialer>(dialer: D, conn: ConnConfig) -> Opener {
    let dialer = std::sync::Arc::new(dialer);
    Box::new(move |number| {
        let dialer = dialer.clone();
        Box::pin(async move { Session::open(&*dialer, conn, number).await })
    })
}

/// A string as an SQL literal: in single quotes, quotes doubled. Lock
/// names and owner tokens are the only values the rungs put in their
/// statements.
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
