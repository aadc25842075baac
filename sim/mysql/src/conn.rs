//! One client connection, a session, over any stream: `mysqlproto`
//! frames and encodes the packets; this file runs the conversation and
//! answers. The greeting announces MariaDB's version, the session's
//! connection id and a scramble derived from the configured seed and that
//! id (so a simulated run sends the same bytes every time); any user and
//! password are let in; the database named at connect or by COM_INIT_DB
//! (`USE`) becomes the current one. Then commands until COM_QUIT or the
//! connection ends: COM_QUERY, COM_INIT_DB and COM_PING are served, the
//! prepared-statement commands refused with 1295 and any other with
//! MariaDB's 1047 "Unknown command". A command that cannot be read (a
//! query that is not UTF-8, the connection's character set) gets 1835
//! "Malformed communication packet" and the connection goes on; a packet
//! out of order or over 16 MiB gets 1156 or 1153 and the connection ends,
//! since what follows it cannot be framed with confidence.
//!
//! A statement that finds a lock held waits here, outside the server's
//! lock, for the next change or its own deadline on tokio's clock
//! (turmoil's, in a simulation), then runs again.

use std::time::Duration;

use futures::{SinkExt, StreamExt};
use mysqlproto::column::ColumnDefinition;
use mysqlproto::{
    Capabilities, Command, ErrPacket, Handshake, HandshakeResponse, OK_HEADER, OkPacket,
    PacketCodec, ProtoError, ResultSet, StatusFlags, TextRow, auth,
};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_util::codec::Framed;

use crate::core::{ConnId, Server};
use crate::error::MyError;
use crate::exec::{Outcome, Step, run};
use crate::sql::parse;

/// `COM_STMT_PREPARE` and `COM_STMT_EXECUTE`: refused with MariaDB's
/// error for statements that cannot be prepared, as a driver that
/// prepares everything is told.
const PREPARED: [u8; 2] = [0x16, 0x17];

type Conn<S> = Framed<S, PacketCodec>;

/// A session's end of the protocol. Dropping it (the connection closed,
/// or its task dropped by a host crash) ends the session.
pub(crate) struct Session {
    server: Server,
    id: ConnId,
}

impl Session {
    /// A new session, with the next connection id: opened at accept, so
    /// ids follow the order connections came in.
    pub(crate) fn open(server: Server) -> Session {
        let id = server.open_session();
        Session { server, id }
    }

    fn set_database(&self, database: &str) {
        if let Some(s) = self.server.lock().db.sessions.get_mut(&self.id) {
            s.database = Some(database.to_owned());
        }
    }

    /// Autocommit always (there is no `SET`), and whether a transaction
    /// is open: what OK and EOF packets report.
    fn status(&self) -> StatusFlags {
        let open = self
            .server
            .lock()
            .db
            .sessions
            .get(&self.id)
            .is_some_and(|s| s.txn.is_some());
        if open {
            StatusFlags::AUTOCOMMIT | StatusFlags::IN_TRANS
        } else {
            StatusFlags::AUTOCOMMIT
        }
    }

    /// Runs `query`, waiting while it is blocked.
    async fn answer(&self, query: &str) -> Result<Outcome, MyError> {
        let stmt = parse(query)?;
        let started = tokio::time::Instant::now();
        loop {
            let notified = self.server.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let step = {
                let mut state = self.server.lock();
                run(&mut state, self.id, &stmt, started.elapsed())
            };
            match step {
                Step::Done(result) => {
                    self.server.changed.notify_waiters();
                    return result;
                }
                Step::Blocked(None) => notified.await,
                Step::Blocked(Some(left)) => {
                    // A millisecond past the deadline, so the retry sees
                    // it passed.
                    let wait = left + Duration::from_millis(1);
                    let _ = tokio::time::timeout(wait, notified).await;
                }
            }
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.server.close_session(self.id);
    }
}

/// Serves `session` on `stream` until the client quits or either side
/// ends the connection; a broken or malformed conversation ends it too,
/// after telling the client why where MariaDB would.
pub(crate) async fn serve_conn<S>(session: Session, stream: S)
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let mut conn: Conn<S> = Framed::new(stream, PacketCodec::default());
    let Some(capabilities) = handshake(&session, &mut conn).await else {
        return;
    };
    loop {
        // Each command starts a new exchange.
        conn.codec_mut().reset();
        let payload = match conn.next().await {
            None | Some(Err(ProtoError::Io(_))) => return,
            Some(Err(e)) => {
                // The stream cannot be read on from here; say why first,
                // numbered after the packet that went wrong.
                if let ProtoError::OutOfOrder { got, .. } = e {
                    conn.codec_mut().set_seq(got.wrapping_add(1));
                }
                let _ = send_err(&mut conn, &framing_error(&e)).await;
                return;
            }
            Some(Ok(payload)) => payload,
        };
        let sent = match Command::decode(payload) {
            Err(_) => send_err(&mut conn, &ErrPacket::malformed_packet()).await,
            Ok(Command::Quit) => return,
            Ok(Command::Ping) => send_ok(&mut conn, &session, 0).await,
            Ok(Command::InitDb(database)) => {
                session.set_database(&database);
                send_ok(&mut conn, &session, 0).await
            }
            Ok(Command::Query(query)) => {
                answer_query(&mut conn, &session, capabilities, &query).await
            }
            Ok(Command::Other(code, _)) if PREPARED.contains(&code) => {
                send_err(&mut conn, &my_err(&MyError::unsupported_ps())).await
            }
            Ok(Command::Other(..)) => send_err(&mut conn, &ErrPacket::unknown_command()).await,
        };
        if sent.is_err() {
            return;
        }
    }
}

/// The greeting, the client's response, and OK; the capabilities both
/// sides use, or `None` if the client left or sent no valid response.
async fn handshake<S>(session: &Session, conn: &mut Conn<S>) -> Option<Capabilities>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let (version, seed) = {
        let state = session.server.lock();
        (
            state.config.server_version.clone(),
            state.config.scramble_seed,
        )
    };
    let greeting = Handshake::new(version, session.id, auth::scramble(seed, session.id));
    let mut payload = Vec::new();
    // The version is configuration; one with a NUL cannot be announced.
    greeting.encode(&mut payload).ok()?;
    conn.send(payload).await.ok()?;
    let response = match conn.next().await? {
        Ok(payload) => HandshakeResponse::decode(&payload),
        Err(ProtoError::Io(_)) => return None,
        Err(e) => Err(e),
    };
    let response = match response {
        Ok(r) => r,
        Err(_) => {
            // MariaDB's answer to a response it cannot read.
            let bad = ErrPacket::new(1043, "08S01", "Bad handshake");
            let _ = send_err(conn, &bad).await;
            return None;
        }
    };
    if let Some(database) = &response.database {
        session.set_database(database);
    }
    send_ok(conn, session, 0).await.ok()?;
    Some(response.capabilities & greeting.capabilities)
}

/// The error MariaDB sends before closing a connection whose packets
/// cannot be read.
fn framing_error(e: &ProtoError) -> ErrPacket {
    match e {
        ProtoError::TooLarge { .. } => ErrPacket::new(
            1153,
            "08S01",
            "Got a packet bigger than 'max_allowed_packet' bytes",
        ),
        ProtoError::OutOfOrder { .. } => ErrPacket::out_of_order(),
        _ => ErrPacket::malformed_packet(),
    }
}

/// Runs `query` and sends its answer.
async fn answer_query<S>(
    conn: &mut Conn<S>,
    session: &Session,
    capabilities: Capabilities,
    query: &str,
) -> Result<(), ProtoError>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    // What the interactive client asks to print its banner.
    if query.eq_ignore_ascii_case("select @@version_comment limit 1") {
        let set = ResultSet {
            columns: vec![ColumnDefinition::text("@@version_comment")],
            rows: vec![TextRow(vec![Some(b"locklab simmysql".to_vec())])],
        };
        return send_rows(conn, session, capabilities, &set).await;
    }
    match session.answer(query).await {
        Err(e) => send_err(conn, &my_err(&e)).await,
        Ok(Outcome::Done { affected }) => send_ok(conn, session, affected).await,
        Ok(Outcome::Rows { columns, rows }) => {
            let set = ResultSet {
                columns: columns
                    .into_iter()
                    .map(|(name, int)| {
                        if int {
                            ColumnDefinition::integer(name)
                        } else {
                            ColumnDefinition::text(name)
                        }
                    })
                    .collect(),
                rows: rows
                    .into_iter()
                    .map(|row| {
                        TextRow(
                            row.iter()
                                .map(|v| v.text().map(String::into_bytes))
                                .collect(),
                        )
                    })
                    .collect(),
            };
            send_rows(conn, session, capabilities, &set).await
        }
    }
}

/// A result set's packets, flushed once at the end.
async fn send_rows<S>(
    conn: &mut Conn<S>,
    session: &Session,
    capabilities: Capabilities,
    set: &ResultSet,
) -> Result<(), ProtoError>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    match set.encode(capabilities, session.status()) {
        Ok(payloads) => {
            for p in payloads {
                conn.feed(p).await?;
            }
            conn.flush().await
        }
        // Rows of the wrong width would be a bug here; the client gets an
        // error rather than packets it cannot read.
        Err(e) => {
            let bug = ErrPacket::new(1105, "HY000", format!("simmysql: {e}"));
            send_err(conn, &bug).await
        }
    }
}

async fn send_ok<S>(conn: &mut Conn<S>, session: &Session, affected: u64) -> Result<(), ProtoError>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let mut payload = Vec::new();
    OkPacket {
        affected_rows: affected,
        status: session.status(),
        ..OkPacket::default()
    }
    .encode(OK_HEADER, &mut payload);
    conn.send(payload).await
}

async fn send_err<S>(conn: &mut Conn<S>, e: &ErrPacket) -> Result<(), ProtoError>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let mut payload = Vec::new();
    e.encode(&mut payload);
    conn.send(payload).await
}

fn my_err(e: &MyError) -> ErrPacket {
    ErrPacket::new(e.code, e.sql_state(), e.message.clone())
}
