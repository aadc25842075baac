//! A [`Session`] on PostgreSQL: tokio-postgres over a [`Dialer`]'s
//! stream, its statements sent as simple queries.

use crate::clock::BoxFuture;
use crate::conn::{ConnConfig, Dialer};
use crate::database::session::{Answer, DbError, Opener, Session};
use std::time::Duration;
use tokio_postgres::SimpleQueryMessage;

/// The role and database every session logs in as: the simulated server
/// takes any; a real server is set up with them (trust authentication,
/// on loopback only).
pub const PG_USER: &str = "postgres";
/// The database the sessions use.
pub const PG_DATABASE: &str = "postgres";

/// One open session on a PostgreSQL server.
pub struct PgSession {
    client: tokio_postgres::Client,
    response_timeout: Duration,
    /// Its number among the sessions its lock opened.
    number: u64,
}

impl std::fmt::Debug for PgSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgSession")
            .field("number", &self.number)
            .finish_non_exhaustive()
    }
}

impl PgSession {
    /// Dials and logs in, within `conn.connect_timeout`; its statements
    /// then wait at most `conn.response_timeout` each.
    pub async fn open<D: Dialer>(
        dialer: &D,
        conn: ConnConfig,
        number: u64,
    ) -> Result<PgSession, DbError> {
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
        Ok(PgSession {
            client,
            response_timeout: conn.response_timeout,
            number,
        })
    }

    /// Runs one statement as a simple query, within the response
    /// timeout.
    async fn simple_query(&self, sql: &str) -> Result<Answer, DbError> {
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

impl Session for PgSession {
    fn number(&self) -> u64 {
        self.number
    }

    /// The connection's task ends when the server closes it or the
    /// stream fails, so a restarted server's sessions show as closed.
    fn is_closed(&self) -> bool {
        self.client.is_closed()
    }

    fn query<'a>(&'a self, sql: &'a str) -> BoxFuture<'a, Result<Answer, DbError>> {
        Box::pin(self.simple_query(sql))
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

/// An [`Opener`] of PostgreSQL sessions: dials `dialer` with the
/// timeouts of `conn`.
pub(crate) fn opener<D: Dialer>(dialer: D, conn: ConnConfig) -> Opener {
    let dialer = std::sync::Arc::new(dialer);
    Box::new(move |number| {
        let dialer = dialer.clone();
        Box::pin(async move {
            let session = PgSession::open(&*dialer, conn, number).await?;
            Ok(Box::new(session) as Box<dyn Session>)
        })
    })
}
