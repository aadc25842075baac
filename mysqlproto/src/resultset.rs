//! A text result set, the answer to a `SELECT` sent as COM_QUERY, as its
//! packets go: the column count (a length-encoded integer), one
//! [`ColumnDefinition`] per column, an EOF packet (left out under
//! [`Capabilities::DEPRECATE_EOF`]), one [`TextRow`] per row, and an EOF
//! packet (an OK packet with the 0xFE header under DEPRECATE_EOF).
//!
//! [`ResultSet::encode`] gives a server the payloads in order;
//! [`ReplyReader`] reads any answer to a command, a result set or an OK
//! or ERR packet, one payload at a time, for a client.

use crate::column::ColumnDefinition;
use crate::eof::{EofPacket, is_end_of_rows};
use crate::err::{ERR_HEADER, ErrPacket};
use crate::error::{ProtoError, Result};
use crate::flags::{Capabilities, StatusFlags};
use crate::ok::{END_HEADER, OK_HEADER, OkPacket};
use crate::row::TextRow;
use crate::wire::{Reader, Writer};

/// A whole text result set.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ResultSet {
    /// The columns.
    pub columns: Vec<ColumnDefinition>,
    /// The rows, each as wide as `columns`.
    pub rows: Vec<TextRow>,
}

impl ResultSet {
    /// The payloads to send, in order, to a client using `capabilities`,
    /// with the server's `status` in the final packet. A set without
    /// columns cannot be sent as one (it is an OK packet).
    pub fn encode(&self, capabilities: Capabilities, status: StatusFlags) -> Result<Vec<Vec<u8>>> {
        if self.columns.is_empty() {
            return Err(ProtoError::invalid(
                "result set",
                "at least one column",
                "none",
            ));
        }
        if let Some(row) = self.rows.iter().find(|r| r.0.len() != self.columns.len()) {
            return Err(ProtoError::invalid(
                "result set row",
                "one value per column",
                format_args!("{} values for {} columns", row.0.len(), self.columns.len()),
            ));
        }
        let deprecate_eof = capabilities.contains(Capabilities::DEPRECATE_EOF);
        let mut out = Vec::with_capacity(self.columns.len() + self.rows.len() + 3);
        let mut count = Vec::new();
        count.put_lenenc_int(self.columns.len() as u64);
        out.push(count);
        for c in &self.columns {
            let mut b = Vec::new();
            c.encode(&mut b);
            out.push(b);
        }
        if !deprecate_eof {
            let mut b = Vec::new();
            EofPacket {
                warnings: 0,
                status,
            }
            .encode(&mut b);
            out.push(b);
        }
        for r in &self.rows {
            let mut b = Vec::new();
            r.encode(&mut b);
            out.push(b);
        }
        let mut end = Vec::new();
        if deprecate_eof {
            OkPacket {
                status,
                ..OkPacket::default()
            }
            .encode(END_HEADER, &mut end);
        } else {
            EofPacket {
                warnings: 0,
                status,
            }
            .encode(&mut end);
        }
        out.push(end);
        Ok(out)
    }
}

/// The answer to a command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// It succeeded, with no rows.
    Ok(OkPacket),
    /// It failed.
    Err(ErrPacket),
    /// Rows.
    ResultSet(ResultSet),
}

/// Where a [`ReplyReader`] is in an answer.
#[derive(Debug, Clone)]
enum State {
    Start,
    Columns { left: u64, set: ResultSet },
    ColumnsEof { set: ResultSet },
    Rows { set: ResultSet },
    Done,
}

/// Reads one answer to a command, payload by payload, as a client does.
#[derive(Debug, Clone)]
pub struct ReplyReader {
    capabilities: Capabilities,
    state: State,
}

impl ReplyReader {
    /// A reader for an answer sent under `capabilities` (both sides').
    pub fn new(capabilities: Capabilities) -> Self {
        ReplyReader {
            capabilities,
            state: State::Start,
        }
    }

    /// Takes the next payload; the answer once it is complete, `None`
    /// while more payloads are to come. A payload after the answer is an
    /// error.
    pub fn feed(&mut self, payload: &[u8]) -> Result<Option<Reply>> {
        let state = std::mem::replace(&mut self.state, State::Done);
        let (next, reply) = match state {
            State::Start => match payload.first() {
                Some(&OK_HEADER) => (
                    State::Done,
                    Some(Reply::Ok(OkPacket::decode(payload, self.capabilities)?)),
                ),
                Some(&ERR_HEADER) => (State::Done, Some(Reply::Err(ErrPacket::decode(payload)?))),
                Some(&0xfb) => {
                    return Err(ProtoError::invalid(
                        "reply",
                        "OK, ERR or a result set",
                        "a LOCAL INFILE request (not supported)",
                    ));
                }
                _ => {
                    let mut r = Reader::new(payload);
                    let left = r.lenenc_int("column count")?;
                    r.finish("column count")?;
                    if left == 0 {
                        return Err(ProtoError::invalid("column count", "at least 1", 0));
                    }
                    (
                        State::Columns {
                            left,
                            set: ResultSet::default(),
                        },
                        None,
                    )
                }
            },
            State::Columns { left, mut set } => {
                set.columns.push(ColumnDefinition::decode(payload)?);
                let next = if left > 1 {
                    State::Columns {
                        left: left - 1,
                        set,
                    }
                } else if self.capabilities.contains(Capabilities::DEPRECATE_EOF) {
                    State::Rows { set }
                } else {
                    State::ColumnsEof { set }
                };
                (next, None)
            }
            State::ColumnsEof { set } => {
                EofPacket::decode(payload)?;
                (State::Rows { set }, None)
            }
            State::Rows { mut set } => {
                if is_end_of_rows(payload) {
                    if self.capabilities.contains(Capabilities::DEPRECATE_EOF) {
                        OkPacket::decode(payload, self.capabilities)?;
                    } else {
                        EofPacket::decode(payload)?;
                    }
                    (State::Done, Some(Reply::ResultSet(set)))
                } else if payload.first() == Some(&ERR_HEADER) {
                    // A statement can fail part way through its rows.
                    (State::Done, Some(Reply::Err(ErrPacket::decode(payload)?)))
                } else {
                    set.rows.push(TextRow::decode(payload, set.columns.len())?);
                    (State::Rows { set }, None)
                }
            }
            State::Done => {
                return Err(ProtoError::invalid(
                    "reply",
                    "nothing after the end of the answer",
                    format_args!("{} more bytes", payload.len()),
                ));
            }
        };
        self.state = next;
        Ok(reply)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set() -> ResultSet {
        ResultSet {
            columns: vec![
                ColumnDefinition::integer("GET_LOCK('a', 0)"),
                ColumnDefinition::text("owner"),
            ],
            rows: vec![
                TextRow(vec![Some(b"1".to_vec()), None]),
                TextRow(vec![Some(b"0".to_vec()), Some(b"me".to_vec())]),
            ],
        }
    }

    fn read(caps: Capabilities, payloads: &[Vec<u8>]) -> Reply {
        let mut r = ReplyReader::new(caps);
        let (last, rest) = payloads.split_last().unwrap();
        for p in rest {
            assert_eq!(r.feed(p).unwrap(), None);
        }
        let reply = r.feed(last).unwrap().unwrap();
        assert!(r.feed(&[0]).is_err(), "nothing after the answer");
        reply
    }

    #[test]
    fn round_trips_with_and_without_eof_packets() {
        for (caps, packets) in [
            (Capabilities::PROTOCOL_41, 1 + 2 + 1 + 2 + 1),
            (
                Capabilities::PROTOCOL_41 | Capabilities::DEPRECATE_EOF,
                1 + 2 + 2 + 1,
            ),
        ] {
            let payloads = set().encode(caps, StatusFlags::AUTOCOMMIT).unwrap();
            assert_eq!(payloads.len(), packets);
            assert_eq!(payloads[0], [2]);
            assert_eq!(read(caps, &payloads), Reply::ResultSet(set()));
        }
    }

    #[test]
    fn the_last_packet_is_an_eof_or_an_ok_with_0xfe() {
        let caps = Capabilities::PROTOCOL_41;
        let p = set().encode(caps, StatusFlags::AUTOCOMMIT).unwrap();
        assert_eq!(p.last().unwrap(), &[0xfe, 0, 0, 2, 0]);
        let p = set()
            .encode(caps | Capabilities::DEPRECATE_EOF, StatusFlags::AUTOCOMMIT)
            .unwrap();
        assert_eq!(p.last().unwrap(), &[0xfe, 0, 0, 2, 0, 0, 0]);
    }

    #[test]
    fn oks_and_errs_are_replies_too() {
        let caps = Capabilities::PROTOCOL_41;
        let mut ok = Vec::new();
        OkPacket {
            affected_rows: 1,
            ..OkPacket::default()
        }
        .encode(OK_HEADER, &mut ok);
        assert!(matches!(read(caps, &[ok]), Reply::Ok(o) if o.affected_rows == 1));
        let mut err = Vec::new();
        ErrPacket::unknown_command().encode(&mut err);
        assert_eq!(read(caps, &[err]), Reply::Err(ErrPacket::unknown_command()));
    }

    #[test]
    fn an_error_among_the_rows_ends_the_answer() {
        let caps = Capabilities::PROTOCOL_41;
        let mut payloads = set().encode(caps, StatusFlags::empty()).unwrap();
        payloads.pop();
        let mut err = Vec::new();
        ErrPacket::new(1205, "HY000", "Lock wait timeout exceeded").encode(&mut err);
        payloads.push(err);
        assert!(matches!(read(caps, &payloads), Reply::Err(e) if e.code == 1205));
    }

    #[test]
    fn bad_sets_are_refused_to_encode() {
        let caps = Capabilities::PROTOCOL_41;
        assert!(
            ResultSet::default()
                .encode(caps, StatusFlags::empty())
                .is_err()
        );
        let mut s = set();
        s.rows.push(TextRow(vec![None]));
        let e = s.encode(caps, StatusFlags::empty()).unwrap_err();
        assert!(e.to_string().contains("1 values for 2 columns"), "{e}");
    }

    #[test]
    fn malformed_answers_are_errors() {
        let caps = Capabilities::PROTOCOL_41;
        assert!(ReplyReader::new(caps).feed(&[]).is_err());
        assert!(ReplyReader::new(caps).feed(&[0xfb, b'f']).is_err());
        assert!(ReplyReader::new(caps).feed(&[2, 0]).is_err());
        let mut r = ReplyReader::new(caps);
        r.feed(&[1]).unwrap();
        assert!(r.feed(b"junk").is_err());
        // A row where the EOF after the columns should be.
        let p = set().encode(caps, StatusFlags::empty()).unwrap();
        let mut r = ReplyReader::new(caps);
        for x in &p[..3] {
            r.feed(x).unwrap();
        }
        assert!(r.feed(&p[4]).is_err());
    }
}
