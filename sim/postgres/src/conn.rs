//! One client connection, a backend session: the startup handshake (SSL
//! refused with `N`, trust authentication, PostgreSQL 15's parameters in a
//! fixed order, the pid and a secret derived from it), then simple Query
//! messages until the client says Terminate or goes away. pgwire supplies
//! the messages and their codec; the loop, the handshake and the answers
//! are simpg's, so nothing here draws randomness or spawns.
//!
//! The extended query protocol (Parse/Bind/Execute, what drivers use for
//! parameters) is refused with 0A000 until Sync. A message that cannot be
//! decoded ends the connection, and with it the session.

use std::net::SocketAddr;

use bytes::{BufMut, BytesMut};
use futures::{SinkExt, StreamExt};
use pgwire::api::{ClientInfo, DefaultClient, PgWireConnectionState};
use pgwire::error::PgWireError;
use pgwire::messages::data::{DataRow, FieldDescription, RowDescription};
use pgwire::messages::response::{
    CommandComplete, EmptyQueryResponse, ErrorResponse, GssEncResponse, NoticeResponse,
    ReadyForQuery, SslResponse, TransactionStatus,
};
use pgwire::messages::startup::{Authentication, BackendKeyData, ParameterStatus, SecretKey};
use pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage, SslNegotiationMetaMessage};
use pgwire::tokio::server::PgWireMessageServerCodec;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_util::codec::{Decoder, Encoder, Framed};

use crate::core::{Pid, Server};
use crate::error::PgError;
use crate::exec::{Output, Step, execute, txn_status};
use crate::sql::parse;

type Conn<S> = Framed<S, Codec>;

/// The longest message taken (PostgreSQL's own bound is 1 GB).
const MAX_MESSAGE_BYTES: usize = 64 << 20;

/// pgwire's codec behind a check of each message's length header, so a
/// length that cannot be (under the header's own four bytes, or huge) ends
/// the connection as PostgreSQL ends it, before pgwire sees it.
struct Codec(PgWireMessageServerCodec<String>);

impl Codec {
    fn set_state(&mut self, state: PgWireConnectionState) {
        self.0.client_info.set_state(state);
    }
}

impl Decoder for Codec {
    type Item = PgWireFrontendMessage;
    type Error = PgWireError;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<Self::Item>, Self::Error> {
        // Startup packets have no type byte; every later message has one.
        let (at, min) = match self.0.client_info.state() {
            PgWireConnectionState::AwaitingSslRequest | PgWireConnectionState::AwaitingStartup => {
                (0, 8)
            }
            _ => (1, 4),
        };
        if let Some(header) = src.get(at..at + 4) {
            let len = u32::from_be_bytes([header[0], header[1], header[2], header[3]]) as usize;
            if !(min..=MAX_MESSAGE_BYTES).contains(&len) {
                return Err(PgWireError::IoError(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    "invalid message length",
                )));
            }
        }
        self.0.decode(src)
    }
}

impl Encoder<PgWireBackendMessage> for Codec {
    type Error = std::io::Error;

    fn encode(
        &mut self,
        item: PgWireBackendMessage,
        dst: &mut BytesMut,
    ) -> Result<(), Self::Error> {
        self.0.encode(item, dst)
    }
}

/// Ends the session however the connection ends, a host crash (the task
/// dropped) included.
struct SessionGuard {
    server: Server,
    pid: Pid,
}

impl Drop for SessionGuard {
    fn drop(&mut self) {
        self.server.close_session(self.pid);
    }
}

/// Serves one connection from `peer` until either side ends it.
pub async fn serve_conn<S>(server: Server, stream: S, peer: SocketAddr)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + Sync + 'static,
{
    let mut conn: Conn<S> = Framed::new(
        stream,
        Codec(PgWireMessageServerCodec::new(DefaultClient::new(
            peer, false,
        ))),
    );
    let Some(pid) = startup(&server, &mut conn).await else {
        return;
    };
    let _guard = SessionGuard {
        server: server.clone(),
        pid,
    };
    // After an extended-protocol message is refused, the rest of its
    // batch is skipped up to Sync, as PostgreSQL skips it.
    let mut skipping_to_sync = false;
    while let Some(Ok(message)) = conn.next().await {
        let sent = match message {
            PgWireFrontendMessage::Terminate(_) => return,
            PgWireFrontendMessage::Query(q) => query(&server, pid, &mut conn, &q.query).await,
            PgWireFrontendMessage::Sync(_) => {
                skipping_to_sync = false;
                ready(&server, pid, &mut conn).await
            }
            m if m.is_extended_query() => {
                if skipping_to_sync {
                    continue;
                }
                skipping_to_sync = true;
                let e = PgError::new(
                    "0A000",
                    "the extended query protocol is not supported by this simulated server; use simple queries".into(),
                );
                conn.send(error_message("ERROR", &e, "")).await
            }
            // COPY data outside COPY and the like: ignored, as PostgreSQL
            // ignores them.
            _ => continue,
        };
        if sent.is_err() {
            return;
        }
    }
}

/// The handshake; the new session's pid, or `None` if the client left or
/// sent something else.
async fn startup<S>(server: &Server, conn: &mut Conn<S>) -> Option<Pid>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + Sync + 'static,
{
    conn.codec_mut()
        .set_state(PgWireConnectionState::AwaitingSslRequest);
    let params = loop {
        match conn.next().await? {
            Ok(PgWireFrontendMessage::SslNegotiation(SslNegotiationMetaMessage::PostgresSsl(
                _,
            ))) => {
                conn.send(PgWireBackendMessage::SslResponse(SslResponse::Refuse))
                    .await
                    .ok()?;
                conn.codec_mut()
                    .set_state(PgWireConnectionState::AwaitingStartup);
            }
            Ok(PgWireFrontendMessage::SslNegotiation(SslNegotiationMetaMessage::PostgresGss(
                _,
            ))) => {
                conn.send(PgWireBackendMessage::GssEncResponse(GssEncResponse::Refuse))
                    .await
                    .ok()?;
            }
            // No SSLRequest first (sslmode=disable, or a driver with no
            // TLS): pgwire has seen the start of a startup packet and
            // reads it whole once told to expect one.
            Ok(PgWireFrontendMessage::SslNegotiation(SslNegotiationMetaMessage::None)) => {
                conn.codec_mut()
                    .set_state(PgWireConnectionState::AwaitingStartup);
            }
            Ok(PgWireFrontendMessage::Startup(s)) => break s.parameters,
            // A cancel request, or anything else: this connection ends.
            _ => return None,
        }
    };
    let pid = server.open_session();
    let guard = SessionGuard {
        server: server.clone(),
        pid,
    };
    let user = params.get("user").cloned().unwrap_or_default();
    let app = params.get("application_name").cloned().unwrap_or_default();
    let version = server.lock().config.server_version.clone();
    let mut out = vec![PgWireBackendMessage::Authentication(Authentication::Ok)];
    // PostgreSQL 15's reported parameters, in its order.
    for (name, value) in [
        ("application_name", app.as_str()),
        ("client_encoding", "UTF8"),
        ("DateStyle", "ISO, MDY"),
        ("default_transaction_read_only", "off"),
        ("in_hot_standby", "off"),
        ("integer_datetimes", "on"),
        ("IntervalStyle", "postgres"),
        ("is_superuser", "on"),
        ("server_encoding", "UTF8"),
        ("server_version", version.as_str()),
        ("session_authorization", user.as_str()),
        ("standard_conforming_strings", "on"),
        ("TimeZone", "Etc/UTC"),
    ] {
        out.push(PgWireBackendMessage::ParameterStatus(ParameterStatus::new(
            name.into(),
            value.into(),
        )));
    }
    out.push(PgWireBackendMessage::BackendKeyData(BackendKeyData::new(
        pid,
        SecretKey::I32(secret_key(pid)),
    )));
    out.push(PgWireBackendMessage::ReadyForQuery(ReadyForQuery::new(
        TransactionStatus::Idle,
    )));
    for m in out {
        conn.feed(m).await.ok()?;
    }
    conn.flush().await.ok()?;
    conn.codec_mut()
        .set_state(PgWireConnectionState::ReadyForQuery);
    std::mem::forget(guard);
    Some(pid)
}

/// The cancel key for `pid`: a fixed function of it, since there is no
/// randomness to draw from (and cancelling is not served).
fn secret_key(pid: Pid) -> i32 {
    (pid as u32).wrapping_mul(0x9E37_79B9).rotate_left(13) as i32
}

/// Runs a simple Query: every statement in it in turn, each waiting its
/// turn for locks, stopping at the first error.
async fn query<S>(server: &Server, pid: Pid, conn: &mut Conn<S>, text: &str) -> std::io::Result<()>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + Sync + 'static,
{
    let statements = match parse(text) {
        Ok(s) => s,
        Err(e) => {
            fail_txn(server, pid);
            conn.feed(error_message("ERROR", &e, text)).await?;
            return ready(server, pid, conn).await;
        }
    };
    if statements.is_empty() {
        conn.feed(PgWireBackendMessage::EmptyQueryResponse(
            EmptyQueryResponse::new(),
        ))
        .await?;
    }
    for statement in &statements {
        let reply = loop {
            // Registered before looking, so a change between the look and
            // the wait still wakes it.
            let changed = server.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            let (step, wake) = {
                let mut state = server.lock();
                let step = execute(&mut state, pid, statement);
                (step, std::mem::take(&mut state.wake))
            };
            if wake {
                server.changed.notify_waiters();
            }
            match step {
                Step::Done(reply) => {
                    // Only a statement that ran can have freed something;
                    // waking others on a blocked one would have blocked
                    // statements wake each other for ever.
                    server.changed.notify_waiters();
                    break reply;
                }
                Step::Blocked => changed.await,
            }
        };
        for (severity, notice) in &reply.notices {
            conn.feed(PgWireBackendMessage::NoticeResponse(NoticeResponse::new(
                notice.fields(severity, text),
            )))
            .await?;
        }
        match reply.outcome {
            Ok(Output::Tag(tag)) => {
                conn.feed(complete(tag)).await?;
            }
            Ok(Output::Rows { columns, rows, tag }) => {
                let fields = columns
                    .iter()
                    .map(|(name, t)| {
                        FieldDescription::new(name.clone(), 0, 0, t.oid(), t.size(), -1, 0)
                    })
                    .collect();
                conn.feed(PgWireBackendMessage::RowDescription(RowDescription::new(
                    fields,
                )))
                .await?;
                for row in rows {
                    let mut data = BytesMut::new();
                    for v in &row {
                        match v.to_text() {
                            Some(t) => {
                                data.put_i32(t.len() as i32);
                                data.put_slice(t.as_bytes());
                            }
                            None => data.put_i32(-1),
                        }
                    }
                    conn.feed(PgWireBackendMessage::DataRow(DataRow::new(
                        data,
                        row.len() as i16,
                    )))
                    .await?;
                }
                conn.feed(complete(tag)).await?;
            }
            Err(e) => {
                conn.feed(error_message("ERROR", &e, text)).await?;
                break;
            }
        }
    }
    ready(server, pid, conn).await
}

/// A parse error inside a transaction block fails the block, as any error
/// does.
fn fail_txn(server: &Server, pid: Pid) {
    let mut state = server.lock();
    if let Some(t) = state.sessions.get_mut(&pid).and_then(|s| s.txn.as_mut()) {
        t.failed = true;
    }
}

fn complete(tag: String) -> PgWireBackendMessage {
    PgWireBackendMessage::CommandComplete(CommandComplete::new(tag))
}

fn error_message(severity: &str, e: &PgError, query: &str) -> PgWireBackendMessage {
    PgWireBackendMessage::ErrorResponse(ErrorResponse::new(e.fields(severity, query)))
}

/// ReadyForQuery with the session's transaction status, flushed.
async fn ready<S>(server: &Server, pid: Pid, conn: &mut Conn<S>) -> std::io::Result<()>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + Sync + 'static,
{
    let status = match txn_status(&server.lock(), pid) {
        b'E' => TransactionStatus::Error,
        b'T' => TransactionStatus::Transaction,
        _ => TransactionStatus::Idle,
    };
    conn.send(PgWireBackendMessage::ReadyForQuery(ReadyForQuery::new(
        status,
    )))
    .await
}
