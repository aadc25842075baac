//! What can be wrong with bytes off the wire: every decoder returns a
//! [`ProtoError`] naming what it expected, never a panic, so a peer
//! sending junk costs its own connection and nothing else.

use std::fmt;

/// A packet that cannot be what it should be, or a failed read or write.
#[derive(Debug)]
pub enum ProtoError {
    /// The packet ended before `what` was read whole.
    Short {
        /// What was being read.
        what: &'static str,
        /// The bytes it needed.
        needed: usize,
        /// The bytes that were left.
        left: usize,
    },
    /// `what` was read but its value cannot be.
    Invalid {
        /// What was being read.
        what: &'static str,
        /// What it should have been.
        expected: &'static str,
        /// What it was.
        found: String,
    },
    /// A packet's sequence id was not the next one: the peer lost count,
    /// so nothing after it can be trusted.
    OutOfOrder {
        /// The id this side expected.
        expected: u8,
        /// The id the packet carried.
        got: u8,
    },
    /// A packet, its pieces put together, is longer than this side takes.
    TooLarge {
        /// Its length, or the length reached when reading stopped.
        len: usize,
        /// The most this side takes.
        max: usize,
    },
    /// Bytes left over after `what`, which has none.
    Trailing {
        /// What was read.
        what: &'static str,
        /// How many bytes were left.
        left: usize,
    },
    /// The stream under the codec failed.
    Io(std::io::Error),
}

impl ProtoError {
    /// A value read whole that cannot be: `what` should be `expected`.
    pub fn invalid(what: &'static str, expected: &'static str, found: impl fmt::Display) -> Self {
        ProtoError::Invalid {
            what,
            expected,
            found: found.to_string(),
        }
    }
}

impl fmt::Display for ProtoError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProtoError::Short { what, needed, left } => write!(
                f,
                "packet too short for {what}: {needed} bytes needed, {left} left"
            ),
            ProtoError::Invalid {
                what,
                expected,
                found,
            } => write!(f, "bad {what}: expected {expected}, found {found}"),
            ProtoError::OutOfOrder { expected, got } => write!(
                f,
                "packet out of order: sequence id {got}, expected {expected}"
            ),
            ProtoError::TooLarge { len, max } => {
                write!(f, "packet of {len} bytes is over the limit of {max}")
            }
            ProtoError::Trailing { what, left } => {
                write!(f, "{left} unexpected bytes after {what}")
            }
            ProtoError::Io(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for ProtoError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ProtoError::Io(e) => Some(e),
            _ => None,
        }
    }
}

impl From<std::io::Error> for ProtoError {
    fn from(e: std::io::Error) -> Self {
        ProtoError::Io(e)
    }
}

/// What decoders return.
pub type Result<T> = std::result::Result<T, ProtoError>;
