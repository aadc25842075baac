//! The protocol's basic types, which every packet is built from:
//! little-endian fixed-length integers, length-encoded integers (one byte
//! below 251, else a marker byte and 2, 3 or 8 bytes), length-encoded
//! strings (such an integer, then that many bytes), NUL-terminated
//! strings, and strings that run to the end of the packet.
//!
//! [`Reader`] reads them from a packet's payload, each read naming what it
//! reads so a short or bad packet is reported as such; [`Writer`] appends
//! them to a buffer.

use bytes::BufMut;

use crate::error::{ProtoError, Result};

/// The first byte of a length-encoded integer that stands for NULL in a
/// text row (where it would otherwise be a length).
pub const NULL_MARKER: u8 = 0xfb;

/// A cursor over one packet's payload.
#[derive(Debug, Clone)]
pub struct Reader<'a> {
    buf: &'a [u8],
}

impl<'a> Reader<'a> {
    /// Reads `payload` from its start.
    pub fn new(payload: &'a [u8]) -> Self {
        Reader { buf: payload }
    }

    /// The bytes not read yet.
    pub fn remaining(&self) -> usize {
        self.buf.len()
    }

    /// Whether everything was read.
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// The next byte, not consumed.
    pub fn peek(&self) -> Option<u8> {
        self.buf.first().copied()
    }

    /// The next `n` bytes, as `what`.
    pub fn bytes(&mut self, n: usize, what: &'static str) -> Result<&'a [u8]> {
        if self.buf.len() < n {
            return Err(ProtoError::Short {
                what,
                needed: n,
                left: self.buf.len(),
            });
        }
        let (head, tail) = self.buf.split_at(n);
        self.buf = tail;
        Ok(head)
    }

    /// The next `N` bytes as an array, as `what`.
    pub fn array<const N: usize>(&mut self, what: &'static str) -> Result<[u8; N]> {
        let mut out = [0; N];
        out.copy_from_slice(self.bytes(N, what)?);
        Ok(out)
    }

    /// A 1-byte integer.
    pub fn u8(&mut self, what: &'static str) -> Result<u8> {
        Ok(self.array::<1>(what)?[0])
    }

    /// A 2-byte little-endian integer.
    pub fn u16(&mut self, what: &'static str) -> Result<u16> {
        Ok(u16::from_le_bytes(self.array(what)?))
    }

    /// A 3-byte little-endian integer.
    pub fn u24(&mut self, what: &'static str) -> Result<u32> {
        let [a, b, c] = self.array(what)?;
        Ok(u32::from_le_bytes([a, b, c, 0]))
    }

    /// A 4-byte little-endian integer.
    pub fn u32(&mut self, what: &'static str) -> Result<u32> {
        Ok(u32::from_le_bytes(self.array(what)?))
    }

    /// An 8-byte little-endian integer.
    pub fn u64(&mut self, what: &'static str) -> Result<u64> {
        Ok(u64::from_le_bytes(self.array(what)?))
    }

    /// A length-encoded integer; `None` for the NULL marker (0xFB), which
    /// only a text row's values may carry. 0xFF is an error packet's
    /// header, never an integer.
    pub fn lenenc_int_or_null(&mut self, what: &'static str) -> Result<Option<u64>> {
        match self.u8(what)? {
            NULL_MARKER => Ok(None),
            0xfc => Ok(Some(u64::from(self.u16(what)?))),
            0xfd => Ok(Some(u64::from(self.u24(what)?))),
            0xfe => Ok(Some(self.u64(what)?)),
            0xff => Err(ProtoError::invalid(
                what,
                "a length-encoded integer",
                "0xff (an error packet's header)",
            )),
            small => Ok(Some(u64::from(small))),
        }
    }

    /// A length-encoded integer, where NULL cannot be.
    pub fn lenenc_int(&mut self, what: &'static str) -> Result<u64> {
        self.lenenc_int_or_null(what)?.ok_or_else(|| {
            ProtoError::invalid(what, "a length-encoded integer", "the NULL marker 0xfb")
        })
    }

    /// A length-encoded string's bytes; `None` for NULL.
    pub fn lenenc_bytes_or_null(&mut self, what: &'static str) -> Result<Option<&'a [u8]>> {
        let Some(len) = self.lenenc_int_or_null(what)? else {
            return Ok(None);
        };
        // A length beyond the address space is beyond the packet too.
        let len = usize::try_from(len).unwrap_or(usize::MAX);
        self.bytes(len, what).map(Some)
    }

    /// A length-encoded string's bytes, where NULL cannot be.
    pub fn lenenc_bytes(&mut self, what: &'static str) -> Result<&'a [u8]> {
        let len = self.lenenc_int(what)?;
        let len = usize::try_from(len).unwrap_or(usize::MAX);
        self.bytes(len, what)
    }

    /// A length-encoded string, as UTF-8.
    pub fn lenenc_str(&mut self, what: &'static str) -> Result<String> {
        utf8(self.lenenc_bytes(what)?, what)
    }

    /// The bytes up to the next NUL, which is consumed but not returned.
    pub fn nul_bytes(&mut self, what: &'static str) -> Result<&'a [u8]> {
        let Some(end) = self.buf.iter().position(|&b| b == 0) else {
            return Err(ProtoError::invalid(
                what,
                "a NUL-terminated string",
                format_args!("{} bytes and no NUL", self.buf.len()),
            ));
        };
        let s = &self.buf[..end];
        self.buf = &self.buf[end + 1..];
        Ok(s)
    }

    /// A NUL-terminated string, as UTF-8.
    pub fn nul_str(&mut self, what: &'static str) -> Result<String> {
        utf8(self.nul_bytes(what)?, what)
    }

    /// Everything left.
    pub fn rest(&mut self) -> &'a [u8] {
        std::mem::take(&mut self.buf)
    }

    /// Everything left, as UTF-8.
    pub fn rest_str(&mut self, what: &'static str) -> Result<String> {
        utf8(self.rest(), what)
    }

    /// Fails unless everything was read: for packets of a fixed shape,
    /// where extra bytes mean the two sides disagree about it.
    pub fn finish(&self, what: &'static str) -> Result<()> {
        if self.buf.is_empty() {
            Ok(())
        } else {
            Err(ProtoError::Trailing {
                what,
                left: self.buf.len(),
            })
        }
    }
}

/// `bytes` as UTF-8, or an error naming `what`.
pub fn utf8(bytes: &[u8], what: &'static str) -> Result<String> {
    String::from_utf8(bytes.to_vec()).map_err(|e| {
        ProtoError::invalid(
            what,
            "UTF-8 text",
            format_args!("a bad byte at {}", e.utf8_error().valid_up_to()),
        )
    })
}

/// Appends the protocol's basic types to any buffer.
pub trait Writer: BufMut {
    /// A length-encoded integer, in as few bytes as it takes.
    fn put_lenenc_int(&mut self, v: u64) {
        match v {
            0..=250 => self.put_u8(v as u8),
            251..=0xffff => {
                self.put_u8(0xfc);
                self.put_u16_le(v as u16);
            }
            0x1_0000..=0xff_ffff => {
                self.put_u8(0xfd);
                self.put_uint_le(v, 3);
            }
            _ => {
                self.put_u8(0xfe);
                self.put_u64_le(v);
            }
        }
    }

    /// A length-encoded string.
    fn put_lenenc_bytes(&mut self, b: &[u8]) {
        self.put_lenenc_int(b.len() as u64);
        self.put_slice(b);
    }

    /// A NUL-terminated string; `s` must hold no NUL (the encoders check
    /// that before calling).
    fn put_nul_bytes(&mut self, s: &[u8]) {
        self.put_slice(s);
        self.put_u8(0);
    }
}

impl<B: BufMut + ?Sized> Writer for B {}

/// Refuses a string that holds a NUL where the protocol ends it with one:
/// sent, it would be cut short and the rest read as the next field.
pub fn no_nul(s: &[u8], what: &'static str) -> Result<()> {
    match s.iter().position(|&b| b == 0) {
        None => Ok(()),
        Some(at) => Err(ProtoError::invalid(
            what,
            "a string without NUL",
            format_args!("a NUL at byte {at}"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lenenc(v: u64) -> Vec<u8> {
        let mut b = Vec::new();
        b.put_lenenc_int(v);
        b
    }

    #[test]
    fn lenenc_integers_take_the_fewest_bytes_and_read_back() {
        for (v, len) in [
            (0, 1),
            (250, 1),
            (251, 3),
            (0xffff, 3),
            (0x1_0000, 4),
            (0xff_ffff, 4),
            (0x100_0000, 9),
            (u64::MAX, 9),
        ] {
            let b = lenenc(v);
            assert_eq!(b.len(), len, "{v}");
            let mut r = Reader::new(&b);
            assert_eq!(r.lenenc_int("n").unwrap(), v);
            assert!(r.is_empty());
        }
    }

    #[test]
    fn null_marker_and_error_header_are_not_integers() {
        assert_eq!(Reader::new(&[0xfb]).lenenc_int_or_null("n").unwrap(), None);
        let e = Reader::new(&[0xfb]).lenenc_int("n").unwrap_err();
        assert!(e.to_string().contains("NULL marker"), "{e}");
        let e = Reader::new(&[0xff]).lenenc_int("n").unwrap_err();
        assert!(e.to_string().contains("error packet"), "{e}");
    }

    #[test]
    fn truncated_integers_and_strings_say_what_they_lacked() {
        let e = Reader::new(&[0xfc, 1]).lenenc_int("row count").unwrap_err();
        assert_eq!(
            e.to_string(),
            "packet too short for row count: 2 bytes needed, 1 left"
        );
        let e = Reader::new(&[5, b'a']).lenenc_bytes("name").unwrap_err();
        assert!(
            matches!(
                e,
                ProtoError::Short {
                    needed: 5,
                    left: 1,
                    ..
                }
            ),
            "{e}"
        );
        // A length no packet can hold is short too, not a panic.
        let mut b = vec![0xfe];
        b.extend_from_slice(&u64::MAX.to_le_bytes());
        assert!(Reader::new(&b).lenenc_bytes("huge").is_err());
    }

    #[test]
    fn strings_round_trip() {
        let mut b = Vec::new();
        b.put_lenenc_bytes(b"hello");
        b.put_lenenc_bytes(&[b'x'; 300]);
        b.put_nul_bytes(b"root");
        b.put_slice(b"tail");
        let mut r = Reader::new(&b);
        assert_eq!(r.lenenc_str("a").unwrap(), "hello");
        assert_eq!(r.lenenc_bytes("b").unwrap(), &[b'x'; 300][..]);
        assert_eq!(r.nul_str("c").unwrap(), "root");
        assert_eq!(r.rest_str("d").unwrap(), "tail");
        assert!(r.finish("all").is_ok());
    }

    #[test]
    fn malformed_strings_are_errors() {
        let e = Reader::new(b"no end").nul_str("user").unwrap_err();
        assert!(e.to_string().contains("NUL-terminated"), "{e}");
        let e = Reader::new(&[2, 0xc3, 0x28])
            .lenenc_str("name")
            .unwrap_err();
        assert!(e.to_string().contains("UTF-8"), "{e}");
        assert!(no_nul(b"a\0b", "user").is_err());
        let e = Reader::new(&[1, 2]).finish("EOF packet").unwrap_err();
        assert_eq!(e.to_string(), "2 unexpected bytes after EOF packet");
    }

    #[test]
    fn fixed_integers_are_little_endian() {
        let b = [1, 0, 2, 0, 0, 3, 0, 0, 0];
        let mut r = Reader::new(&b);
        assert_eq!(r.u16("a").unwrap(), 1);
        assert_eq!(r.u24("b").unwrap(), 2);
        assert_eq!(r.u32("c").unwrap(), 3);
        assert!(r.u8("d").is_err());
    }
}
