//! A minimal MySQL client for the simulation tests: the handshake (no
//! password) and COM_QUERY over any stream, each answer read whole and
//! kept as text.

#![allow(dead_code)]

use std::io::{Error, ErrorKind, Result};
use std::sync::Arc;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// A fixed wall clock for `NOW()`: 2027-01-15 08:00:00 UTC.
pub const WALL_CLOCK_MS: i64 = 1_800_000_000_000;

/// A fresh server reading [`WALL_CLOCK_MS`].
pub fn server() -> simmysql::Server {
    simmysql::Server::new(simmysql::Config::new(Arc::new(|| WALL_CLOCK_MS)))
}

/// One statement's answer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Answer {
    /// Column names.
    pub columns: Vec<String>,
    /// Rows, NULL as `None`.
    pub rows: Vec<Vec<Option<String>>>,
    /// An OK packet's affected row count.
    pub affected: Option<u64>,
    /// The error: (number, message).
    pub error: Option<(u16, String)>,
}

impl Answer {
    /// The single value of a one-row, one-column answer.
    pub fn value(&self) -> Option<&str> {
        self.rows.first()?.first()?.as_deref()
    }

    /// The error's number.
    pub fn code(&self) -> Option<u16> {
        self.error.as_ref().map(|e| e.0)
    }
}

/// A connection: one session.
pub struct My<S> {
    stream: S,
    /// The connection id the handshake gave.
    pub id: u32,
    /// The version the handshake gave.
    pub version: String,
}

const PROTOCOL_41: u32 = 0x200;
const SECURE_CONNECTION: u32 = 0x8000;
const CONNECT_WITH_DB: u32 = 0x8;
const PLUGIN_AUTH: u32 = 0x80000;
const TRANSACTIONS: u32 = 0x2000;

fn bad(what: &str) -> Error {
    Error::new(ErrorKind::InvalidData, what.to_owned())
}

/// A length-encoded integer from `b` at `*at`.
fn lenenc(b: &[u8], at: &mut usize) -> Result<Option<u64>> {
    let first = *b.get(*at).ok_or_else(|| bad("short packet"))?;
    *at += 1;
    let n = match first {
        0xfb => return Ok(None),
        0xfc => 2,
        0xfd => 3,
        0xfe => 8,
        v => return Ok(Some(u64::from(v))),
    };
    let bytes = b.get(*at..*at + n).ok_or_else(|| bad("short packet"))?;
    *at += n;
    Ok(Some(
        bytes
            .iter()
            .rev()
            .fold(0u64, |acc, &x| (acc << 8) | u64::from(x)),
    ))
}

fn lenenc_str(b: &[u8], at: &mut usize) -> Result<Option<String>> {
    let Some(n) = lenenc(b, at)? else {
        return Ok(None);
    };
    let n = usize::try_from(n).map_err(|_| bad("length"))?;
    let s = b.get(*at..*at + n).ok_or_else(|| bad("short packet"))?;
    *at += n;
    Ok(Some(String::from_utf8_lossy(s).into_owned()))
}

impl<S: AsyncRead + AsyncWrite + Unpin> My<S> {
    /// The handshake as `mariadb -u root` does it, with `database` if
    /// given.
    pub async fn connect(stream: S, database: Option<&str>) -> Result<My<S>> {
        let mut my = My {
            stream,
            id: 0,
            version: String::new(),
        };
        let greeting = my.read_packet().await?;
        if greeting.first() != Some(&10) {
            return Err(bad("not protocol 10"));
        }
        let end = greeting[1..]
            .iter()
            .position(|&c| c == 0)
            .ok_or_else(|| bad("version"))?;
        my.version = String::from_utf8_lossy(&greeting[1..1 + end]).into_owned();
        let at = 2 + end;
        let id = greeting.get(at..at + 4).ok_or_else(|| bad("id"))?;
        my.id = u32::from_le_bytes([id[0], id[1], id[2], id[3]]);
        let mut caps = PROTOCOL_41 | SECURE_CONNECTION | PLUGIN_AUTH | TRANSACTIONS | 1;
        if database.is_some() {
            caps |= CONNECT_WITH_DB;
        }
        let mut p = Vec::new();
        p.extend_from_slice(&caps.to_le_bytes());
        p.extend_from_slice(&(16u32 << 20).to_le_bytes());
        p.push(33);
        p.extend_from_slice(&[0; 23]);
        p.extend_from_slice(b"root\0");
        p.push(0);
        if let Some(db) = database {
            p.extend_from_slice(db.as_bytes());
            p.push(0);
        }
        p.extend_from_slice(b"mysql_native_password\0");
        my.write_packet(1, &p).await?;
        let reply = my.read_packet().await?;
        if reply.first() != Some(&0) {
            return Err(bad("handshake refused"));
        }
        Ok(my)
    }

    async fn read_packet(&mut self) -> Result<Vec<u8>> {
        let mut head = [0u8; 4];
        self.stream.read_exact(&mut head).await?;
        let len = usize::from(head[0]) | usize::from(head[1]) << 8 | usize::from(head[2]) << 16;
        let mut body = vec![0; len];
        self.stream.read_exact(&mut body).await?;
        Ok(body)
    }

    async fn write_packet(&mut self, seq: u8, body: &[u8]) -> Result<()> {
        let len = u32::try_from(body.len()).map_err(|_| bad("too long"))?;
        let mut p = len.to_le_bytes()[..3].to_vec();
        p.push(seq);
        p.extend_from_slice(body);
        self.stream.write_all(&p).await
    }

    /// Sends `sql` without waiting for its answer.
    pub async fn send(&mut self, sql: &str) -> Result<()> {
        let mut p = vec![3];
        p.extend_from_slice(sql.as_bytes());
        self.write_packet(0, &p).await
    }

    /// Sends raw bytes (for malformed-input tests).
    pub async fn send_raw(&mut self, bytes: &[u8]) -> Result<()> {
        self.stream.write_all(bytes).await
    }

    /// Reads the answer to the statement sent last.
    pub async fn recv(&mut self) -> Result<Answer> {
        let first = self.read_packet().await?;
        let mut answer = Answer::default();
        match first.first() {
            Some(0) => {
                let mut at = 1;
                answer.affected = lenenc(&first, &mut at)?;
                return Ok(answer);
            }
            Some(0xff) => {
                let code = u16::from_le_bytes([first[1], first[2]]);
                let msg = String::from_utf8_lossy(&first[9..]).into_owned();
                answer.error = Some((code, msg));
                return Ok(answer);
            }
            _ => {}
        }
        let mut at = 0;
        let n = lenenc(&first, &mut at)?.ok_or_else(|| bad("column count"))?;
        for _ in 0..n {
            let def = self.read_packet().await?;
            let mut at = 0;
            for _ in 0..4 {
                lenenc_str(&def, &mut at)?;
            }
            answer
                .columns
                .push(lenenc_str(&def, &mut at)?.unwrap_or_default());
        }
        let eof = self.read_packet().await?;
        if eof.first() != Some(&0xfe) {
            return Err(bad("no EOF after the columns"));
        }
        loop {
            let row = self.read_packet().await?;
            if row.first() == Some(&0xfe) && row.len() < 9 {
                return Ok(answer);
            }
            if row.first() == Some(&0xff) {
                let code = u16::from_le_bytes([row[1], row[2]]);
                answer.error = Some((code, String::from_utf8_lossy(&row[9..]).into_owned()));
                return Ok(answer);
            }
            let mut at = 0;
            let mut values = Vec::new();
            for _ in 0..n {
                values.push(lenenc_str(&row, &mut at)?);
            }
            answer.rows.push(values);
        }
    }

    /// Sends `sql` and reads its answer.
    pub async fn query(&mut self, sql: &str) -> Result<Answer> {
        self.send(sql).await?;
        self.recv().await
    }

    /// COM_QUIT, then waits for the server to close.
    pub async fn quit(mut self) -> Result<()> {
        self.write_packet(0, &[1]).await?;
        let mut rest = Vec::new();
        let _ = self.stream.read_to_end(&mut rest).await;
        Ok(())
    }
}
