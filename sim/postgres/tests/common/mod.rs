//! A minimal PostgreSQL client for the simulation tests: the startup
//! handshake and simple Query messages over any stream, each answer read
//! up to ReadyForQuery and kept as text.

#![allow(dead_code)]

use std::sync::Arc;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// A fixed wall clock for `now()`: 2027-01-15 08:00:00 UTC.
pub const WALL_CLOCK_MS: i64 = 1_800_000_000_000;

/// A fresh server reading [`WALL_CLOCK_MS`].
pub fn server() -> simpg::Server {
    simpg::Server::new(simpg::Config::new(Arc::new(|| WALL_CLOCK_MS)))
}

/// One statement's (or query's) answer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Answer {
    /// Column names.
    pub columns: Vec<String>,
    /// Rows, NULL as `None`.
    pub rows: Vec<Vec<Option<String>>>,
    /// Command tags.
    pub tags: Vec<String>,
    /// Notices: (SQLSTATE, message).
    pub notices: Vec<(String, String)>,
    /// The error: (SQLSTATE, message).
    pub error: Option<(String, String)>,
    /// ReadyForQuery's status: I, T or E.
    pub status: char,
}

impl Answer {
    /// The single value of a one-row, one-column answer.
    pub fn value(&self) -> Option<&str> {
        self.rows.first()?.first()?.as_deref()
    }

    /// The error's SQLSTATE.
    pub fn code(&self) -> Option<&str> {
        self.error.as_ref().map(|(c, _)| c.as_str())
    }
}

/// A connection: one backend session.
pub struct Pg<S> {
    stream: S,
    /// The backend's pid.
    pub pid: i32,
}

impl<S: AsyncRead + AsyncWrite + Unpin> Pg<S> {
    /// The handshake as psql does it: SSLRequest (refused), then startup.
    pub async fn connect(mut stream: S) -> std::io::Result<Pg<S>> {
        stream
            .write_all(&[0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f])
            .await?;
        let mut n = [0u8; 1];
        stream.read_exact(&mut n).await?;
        assert_eq!(n[0], b'N', "SSL is refused");
        Self::start(stream).await
    }

    /// The startup message alone, as a client with no TLS sends it
    /// (`sslmode=disable`, tokio-postgres with `NoTls`).
    pub async fn start(mut stream: S) -> std::io::Result<Pg<S>> {
        let body = b"\x00\x03\x00\x00user\x00postgres\x00database\x00postgres\x00\x00";
        let mut m = ((body.len() + 4) as u32).to_be_bytes().to_vec();
        m.extend_from_slice(body);
        stream.write_all(&m).await?;
        let mut pg = Pg { stream, pid: 0 };
        loop {
            let (kind, body) = pg.message().await?;
            match kind {
                b'K' => pg.pid = i32::from_be_bytes(body[..4].try_into().unwrap()),
                b'Z' => return Ok(pg),
                b'E' => panic!("startup failed"),
                _ => {}
            }
        }
    }

    /// Sends `sql` as one simple Query, without waiting for the answer.
    pub async fn send(&mut self, sql: &str) -> std::io::Result<()> {
        let mut m = vec![b'Q'];
        m.extend_from_slice(&((sql.len() + 5) as u32).to_be_bytes());
        m.extend_from_slice(sql.as_bytes());
        m.push(0);
        self.stream.write_all(&m).await
    }

    /// Sends raw bytes (for malformed messages).
    pub async fn send_raw(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.stream.write_all(bytes).await
    }

    /// Reads one answer, up to ReadyForQuery.
    pub async fn recv(&mut self) -> std::io::Result<Answer> {
        let mut answer = Answer::default();
        loop {
            let (kind, body) = self.message().await?;
            match kind {
                b'T' => {
                    let n = u16::from_be_bytes([body[0], body[1]]) as usize;
                    let mut at = 2;
                    for _ in 0..n {
                        let end = at + body[at..].iter().position(|b| *b == 0).unwrap();
                        answer
                            .columns
                            .push(String::from_utf8_lossy(&body[at..end]).into());
                        at = end + 1 + 18;
                    }
                }
                b'D' => {
                    let n = u16::from_be_bytes([body[0], body[1]]) as usize;
                    let mut at = 2;
                    let mut row = Vec::new();
                    for _ in 0..n {
                        let len = i32::from_be_bytes(body[at..at + 4].try_into().unwrap());
                        at += 4;
                        if len < 0 {
                            row.push(None);
                        } else {
                            let end = at + len as usize;
                            row.push(Some(String::from_utf8_lossy(&body[at..end]).into()));
                            at = end;
                        }
                    }
                    answer.rows.push(row);
                }
                b'C' => answer
                    .tags
                    .push(String::from_utf8_lossy(&body[..body.len() - 1]).into()),
                b'E' => answer.error = Some(fields(&body)),
                b'N' => answer.notices.push(fields(&body)),
                b'Z' => {
                    answer.status = body[0] as char;
                    return Ok(answer);
                }
                _ => {}
            }
        }
    }

    /// Sends `sql` and reads its answer.
    pub async fn query(&mut self, sql: &str) -> std::io::Result<Answer> {
        self.send(sql).await?;
        self.recv().await
    }

    /// Says Terminate and closes.
    pub async fn close(mut self) -> std::io::Result<()> {
        self.stream.write_all(b"X\x00\x00\x00\x04").await?;
        self.stream.shutdown().await
    }

    async fn message(&mut self) -> std::io::Result<(u8, Vec<u8>)> {
        let kind = self.stream.read_u8().await?;
        let len = self.stream.read_u32().await? as usize;
        let mut body = vec![0; len.saturating_sub(4)];
        self.stream.read_exact(&mut body).await?;
        Ok((kind, body))
    }
}

/// The SQLSTATE and message of an ErrorResponse or NoticeResponse.
fn fields(body: &[u8]) -> (String, String) {
    let (mut code, mut message) = (String::new(), String::new());
    for field in body.split(|b| *b == 0).filter(|f| !f.is_empty()) {
        let text = String::from_utf8_lossy(&field[1..]).into_owned();
        match field[0] {
            b'C' => code = text,
            b'M' => message = text,
            _ => {}
        }
    }
    (code, message)
}
