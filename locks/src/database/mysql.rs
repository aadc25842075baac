//! A [`Session`] on MySQL or MariaDB, over a [`Dialer`]'s stream, built on
//! the client half of `mysqlproto`: the server's greeting, a handshake
//! response as `root` with no password (`mysql_native_password` with an
//! empty token, no database), then each statement as `COM_QUERY`, its
//! answer read by a [`ReplyReader`].
//!
//! What the rungs see is what they see of PostgreSQL: rows as text
//! (NULL as `None`), the affected rows as the count (the rows returned,
//! for a result set), an ERR packet as [`DbError::Refused`] with its
//! SQLSTATE as the code (so that the classes `08`, connection, and `40`,
//! roll back and retry, mean what they mean for PostgreSQL) and
//! MariaDB's error number in the message, `ER 1062: Duplicate entry ...`.
//! A broken or timed-out connection is [`DbError::Lost`]; a reply that
//! cannot be decoded is [`DbError::Garbled`]; either closes the session.
//!
//! The user is `root` with no password, as the simulated server takes
//! any login and a real one is set up so on loopback only.

use crate::clock::BoxFuture;
use crate::conn::{ConnConfig, Dialer};
use crate::database::session::{Answer, DbError, Opener, Session};
use futures::{SinkExt, StreamExt};
use mysqlproto::{
    AuthSwitch, Capabilities, Command, ErrPacket, Handshake, HandshakeResponse, PacketCodec,
    ProtoError, Reply, ReplyReader, auth,
};
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_util::codec::Framed;

/// The user every session logs in as, with no password.
pub const MYSQL_USER: &str = "root";

/// One open session on a MySQL or MariaDB server: one connection.
pub struct MySqlSession<S> {
    /// The connection, one exchange at a time.
    conn: tokio::sync::Mutex<Framed<S, PacketCodec>>,
    /// The capabilities both sides use, which shape the replies.
    capabilities: Capabilities,
    /// The connection id the server gave the session (`CONNECTION_ID()`).
    connection_id: u32,
    response_timeout: Duration,
    /// Its number among the sessions its lock opened.
    number: u64,
    /// Set once the connection broke, timed out or sent what cannot be
    /// read: nothing more is sent on it.
    closed: AtomicBool,
}

impl<S> std::fmt::Debug for MySqlSession<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MySqlSession")
            .field("number", &self.number)
            .field("connection_id", &self.connection_id)
            .finish_non_exhaustive()
    }
}

/// A protocol failure on the connection as [`DbError`]: the stream's own
/// failure is a lost connection; anything else a reply that cannot be read.
fn lost_or_garbled(e: ProtoError) -> DbError {
    match e {
        ProtoError::Io(e) => DbError::Lost(e.to_string()),
        other => DbError::Garbled(other.to_string()),
    }
}

/// An ERR packet as the server's refusal: its SQLSTATE as the code, its
/// error number in the message.
fn refused(err: ErrPacket) -> DbError {
    DbError::Refused {
        code: err.sql_state().to_string(),
        message: format!("ER {}: {}", err.code, err.message),
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin + Send + 'static> MySqlSession<S> {
    /// Dials and logs in, within `conn.connect_timeout`; its statements
    /// then wait at most `conn.response_timeout` each.
    pub async fn open<D: Dialer<Stream = S>>(
        dialer: &D,
        conn: ConnConfig,
        number: u64,
    ) -> Result<MySqlSession<S>, DbError> {
        let connecting = async {
            let stream = dialer
                .dial()
                .await
                .map_err(|e| DbError::Lost(format!("connect: {e}")))?;
            let mut framed = Framed::new(stream, PacketCodec::default());
            let (capabilities, connection_id) = log_in(&mut framed).await?;
            Ok::<_, DbError>((framed, capabilities, connection_id))
        };
        let (framed, capabilities, connection_id) =
            tokio::time::timeout(conn.connect_timeout, connecting)
                .await
                .map_err(|_| DbError::Lost("connect: timed out".into()))??;
        Ok(MySqlSession {
            conn: tokio::sync::Mutex::new(framed),
            capabilities,
            connection_id,
            response_timeout: conn.response_timeout,
            number,
            closed: AtomicBool::new(false),
        })
    }

    /// The connection id the server gave this session.
    pub fn connection_id(&self) -> u32 {
        self.connection_id
    }

    /// Sends `sql` as `COM_QUERY` and reads its whole answer, within the
    /// response timeout; any failure closes the session.
    async fn com_query(&self, sql: &str) -> Result<Answer, DbError> {
        if self.closed.load(Ordering::SeqCst) {
            return Err(DbError::Lost("the connection was closed".into()));
        }
        let mut conn = self.conn.lock().await;
        let exchange = async {
            conn.codec_mut().reset();
            let mut payload = Vec::new();
            Command::Query(sql.to_string()).encode(&mut payload);
            conn.send(payload).await.map_err(lost_or_garbled)?;
            let mut reader = ReplyReader::new(self.capabilities);
            loop {
                let packet = match conn.next().await {
                    Some(packet) => packet.map_err(lost_or_garbled)?,
                    None => return Err(DbError::Lost("the server closed the connection".into())),
                };
                if let Some(reply) = reader.feed(&packet).map_err(lost_or_garbled)? {
                    return Ok(reply);
                }
            }
        };
        let reply = match tokio::time::timeout(self.response_timeout, exchange).await {
            Ok(Ok(reply)) => reply,
            Ok(Err(e)) => {
                self.closed.store(true, Ordering::SeqCst);
                return Err(e);
            }
            Err(_) => {
                self.closed.store(true, Ordering::SeqCst);
                return Err(DbError::Lost(format!(
                    "no reply within {:?}",
                    self.response_timeout
                )));
            }
        };
        match reply {
            Reply::Ok(ok) => Ok(Answer {
                rows: Vec::new(),
                count: ok.affected_rows,
            }),
            Reply::Err(err) => Err(refused(err)),
            Reply::ResultSet(set) => {
                let mut rows = Vec::with_capacity(set.rows.len());
                for row in set.rows {
                    let mut values = Vec::with_capacity(row.0.len());
                    for value in row.0 {
                        values.push(match value {
                            None => None,
                            Some(bytes) => Some(String::from_utf8(bytes).map_err(|_| {
                                DbError::Garbled("a value that is not UTF-8".into())
                            })?),
                        });
                    }
                    rows.push(values);
                }
                Ok(Answer {
                    count: rows.len() as u64,
                    rows,
                })
            }
        }
    }
}

/// The handshake: the greeting, the response as [`MYSQL_USER`] with an
/// empty password, an auth switch to `mysql_native_password` if the
/// server asks for one, and its OK. Gives the capabilities both sides
/// use and the connection id.
async fn log_in<S: AsyncRead + AsyncWrite + Unpin>(
    framed: &mut Framed<S, PacketCodec>,
) -> Result<(Capabilities, u32), DbError> {
    let greeting = read_packet(framed).await?;
    if greeting.first() == Some(&0xff) {
        // Refused before the handshake: too many connections, a host
        // blocked.
        return Err(refused(
            ErrPacket::decode(&greeting).map_err(lost_or_garbled)?,
        ));
    }
    let greeting = Handshake::decode(&greeting).map_err(lost_or_garbled)?;
    let token = auth::native_password_token(b"", &greeting.scramble);
    let response = HandshakeResponse::new(greeting.capabilities, MYSQL_USER, token, None);
    let capabilities = response.capabilities;
    let mut payload = Vec::new();
    response.encode(&mut payload).map_err(lost_or_garbled)?;
    framed.send(payload).await.map_err(lost_or_garbled)?;
    let mut answer = read_packet(framed).await?;
    if answer.first() == Some(&0xfe) {
        let switch = AuthSwitch::decode(&answer).map_err(lost_or_garbled)?;
        if switch.plugin != auth::NATIVE_PASSWORD {
            return Err(DbError::Refused {
                code: "28000".into(),
                message: format!("the server asks for the {} plugin", switch.plugin),
            });
        }
        let scramble = switch.data.get(..20).unwrap_or(&switch.data);
        framed
            .send(auth::native_password_token(b"", scramble))
            .await
            .map_err(lost_or_garbled)?;
        answer = read_packet(framed).await?;
    }
    match ReplyReader::new(capabilities)
        .feed(&answer)
        .map_err(lost_or_garbled)?
    {
        Some(Reply::Ok(_)) => Ok((capabilities, greeting.connection_id)),
        Some(Reply::Err(err)) => Err(refused(err)),
        _ => Err(DbError::Garbled(
            "the handshake's answer is neither OK nor ERR".into(),
        )),
    }
}

/// The next packet's payload; the stream's end is a lost connection.
async fn read_packet<S: AsyncRead + AsyncWrite + Unpin>(
    framed: &mut Framed<S, PacketCodec>,
) -> Result<bytes::Bytes, DbError> {
    match framed.next().await {
        Some(packet) => packet.map_err(lost_or_garbled),
        None => Err(DbError::Lost("the server closed the connection".into())),
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin + Send + 'static> Session for MySqlSession<S> {
    fn number(&self) -> u64 {
        self.number
    }

    /// Between statements the server sends nothing, so anything waiting
    /// on the connection (its end, an error, MariaDB's "connection was
    /// killed") means the session is over: a restarted server's sessions
    /// show as closed without a statement sent, as PostgreSQL's do.
    fn is_closed(&self) -> bool {
        if self.closed.load(Ordering::SeqCst) {
            return true;
        }
        let Ok(mut conn) = self.conn.try_lock() else {
            // A statement is under way: it will find out.
            return false;
        };
        let mut cx = Context::from_waker(futures::task::noop_waker_ref());
        match conn.poll_next_unpin(&mut cx) {
            Poll::Pending => false,
            Poll::Ready(_) => {
                self.closed.store(true, Ordering::SeqCst);
                true
            }
        }
    }

    fn query<'a>(&'a self, sql: &'a str) -> BoxFuture<'a, Result<Answer, DbError>> {
        Box::pin(self.com_query(sql))
    }
}

/// An [`Opener`] of MySQL sessions: dials `dialer` with the timeouts of
/// `conn`.
pub(crate) fn opener<D: Dialer>(dialer: D, conn: ConnConfig) -> Opener {
    let dialer = std::sync::Arc::new(dialer);
    Box::new(move |number| {
        let dialer = dialer.clone();
        Box::pin(async move {
            let session = MySqlSession::open(&*dialer, conn, number).await?;
            Ok(Box::new(session) as Box<dyn Session>)
        })
    })
}

/// A string as a MySQL literal: in single quotes, quotes and backslashes
/// doubled (MySQL reads a backslash as an escape, unless the server runs
/// with `NO_BACKSLASH_ESCAPES`, where a doubled one would be two: lock
/// names here have none).
pub fn literal(text: &str) -> String {
    format!("'{}'", text.replace('\\', "\\\\").replace('\'', "''"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conn::TcpDialer;
    use std::sync::Arc;

    #[test]
    fn a_literal_doubles_quotes_and_backslashes() {
        assert_eq!(literal("lock:stock"), "'lock:stock'");
        assert_eq!(literal(r"o'b\n"), r"'o''b\\n'");
    }

    /// A simulated MariaDB on a free loopback port, served until the test
    /// ends.
    async fn serve() -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let server = simmysql::Server::new(simmysql::Config::new(Arc::new(|| 0)));
        tokio::spawn(simmysql::serve_tcp(
            server,
            listener,
            std::future::pending(),
        ));
        addr
    }

    async fn open(addr: &str, number: u64) -> MySqlSession<tokio::net::TcpStream> {
        MySqlSession::open(&TcpDialer::new(addr), ConnConfig::default(), number)
            .await
            .expect("logs in")
    }

    #[tokio::test]
    async fn rows_come_back_as_text_with_null_as_none_and_errors_with_their_sqlstate() {
        let addr = serve().await;
        let a = open(&addr, 1).await;
        assert_eq!(a.number(), 1);
        let got = a.query("SELECT GET_LOCK('x', 0)").await.unwrap();
        assert_eq!(got.rows, vec![vec![Some("1".to_string())]]);
        assert_eq!(got.count, 1);
        let b = open(&addr, 2).await;
        assert_ne!(a.connection_id(), b.connection_id());
        assert_eq!(
            b.query("SELECT GET_LOCK('x', 0)").await.unwrap().first(),
            Some("0")
        );
        assert_eq!(
            b.query("SELECT RELEASE_LOCK('nobody')").await.unwrap().rows,
            vec![vec![None]]
        );
        // No database is chosen at login: a table statement is refused
        // with MariaDB's number and SQLSTATE.
        match b
            .query("CREATE TABLE t (name VARCHAR(64) PRIMARY KEY)")
            .await
        {
            Err(DbError::Refused { code, message }) => {
                assert_eq!(code, "3D000");
                assert!(message.starts_with("ER 1046: "), "{message}");
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            b.query("SELEC 1").await,
            Err(DbError::Refused { code, .. }) if code == "42000"
        ));
        assert!(!a.is_closed() && !b.is_closed());
    }

    #[tokio::test]
    async fn a_closed_server_closes_the_session_and_a_silent_one_times_it_out() {
        // A server that greets, lets the client in, then hangs up.
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let silent_addr = silent.local_addr().unwrap().to_string();
        tokio::spawn(async move {
            let (stream, _) = listener.accept().await.unwrap();
            let mut framed = Framed::new(stream, PacketCodec::default());
            let mut greeting = Vec::new();
            Handshake::new("5.5.5-10.11.19-MariaDB", 9, auth::scramble(1, 9))
                .encode(&mut greeting)
                .unwrap();
            framed.send(greeting).await.unwrap();
            let _ = framed.next().await;
            let mut ok = Vec::new();
            mysqlproto::OkPacket::default().encode(mysqlproto::OK_HEADER, &mut ok);
            framed.send(ok).await.unwrap();
            // Garbage where a reply should be.
            let _ = framed.next().await;
            framed.codec_mut().set_seq(1);
            framed.send(vec![0x00]).await.unwrap();
        });
        tokio::spawn(async move {
            let (_stream, _) = silent.accept().await.unwrap();
            std::future::pending::<()>().await;
        });
        let s = open(&addr, 1).await;
        assert_eq!(s.connection_id(), 9);
        let garbled = s.query("SELECT 1").await;
        assert!(matches!(garbled, Err(DbError::Garbled(_))), "{garbled:?}");
        assert!(s.is_closed());
        assert!(matches!(s.query("SELECT 1").await, Err(DbError::Lost(_))));
        let conn = ConnConfig {
            connect_timeout: Duration::from_millis(100),
            response_timeout: Duration::from_millis(100),
        };
        let timed_out = MySqlSession::open(&TcpDialer::new(silent_addr), conn, 1).await;
        assert!(
            matches!(&timed_out, Err(DbError::Lost(m)) if m.contains("timed out")),
            "{timed_out:?}"
        );
    }

    #[tokio::test]
    async fn a_restarted_server_shows_its_sessions_closed_before_a_statement() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let server = simmysql::Server::new(simmysql::Config::new(Arc::new(|| 0)));
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let serving = tokio::spawn(simmysql::serve_tcp(server, listener, async {
            let _ = stopped.await;
        }));
        let s = open(&addr, 1).await;
        assert!(!s.is_closed());
        stop.send(()).unwrap();
        serving.await.unwrap().unwrap();
        // The server's tasks are gone; the kernel's FIN follows.
        let mut closed = false;
        for _ in 0..100 {
            if s.is_closed() {
                closed = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(closed);
    }
}
