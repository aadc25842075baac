//! A row of a text result set: one length-encoded string per column, or
//! the single byte 0xFB for NULL. Every value is text, numbers included,
//! as `SELECT` prints them.

use bytes::BufMut;

use crate::error::{ProtoError, Result};
use crate::wire::{NULL_MARKER, Reader, Writer};

/// A text row: each value's bytes, or `None` for NULL.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TextRow(pub Vec<Option<Vec<u8>>>);

impl TextRow {
    /// The payload.
    pub fn encode(&self, out: &mut impl BufMut) {
        for v in &self.0 {
            match v {
                Some(b) => out.put_lenenc_bytes(b),
                None => out.put_u8(NULL_MARKER),
            }
        }
    }

    /// Reads a row of `columns` values.
    pub fn decode(payload: &[u8], columns: usize) -> Result<Self> {
        let mut r = Reader::new(payload);
        // No more values than bytes: a column count from a bad packet
        // cannot make this allocate much.
        let mut values = Vec::with_capacity(columns.min(payload.len()));
        for _ in 0..columns {
            values.push(r.lenenc_bytes_or_null("row value")?.map(<[u8]>::to_vec));
        }
        if !r.is_empty() {
            return Err(ProtoError::invalid(
                "text row",
                "one value per column",
                format_args!("{} bytes after {columns} values", r.remaining()),
            ));
        }
        Ok(TextRow(values))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_values_and_nulls() {
        let row = TextRow(vec![
            Some(b"1".to_vec()),
            None,
            Some(Vec::new()),
            Some(vec![b'x'; 300]),
        ]);
        let mut b = Vec::new();
        row.encode(&mut b);
        assert_eq!(&b[..3], &[1, b'1', 0xfb]);
        assert_eq!(TextRow::decode(&b, 4).unwrap(), row);
    }

    #[test]
    fn a_row_of_the_wrong_width_is_an_error() {
        let mut b = Vec::new();
        TextRow(vec![Some(b"a".to_vec()), Some(b"b".to_vec())]).encode(&mut b);
        let e = TextRow::decode(&b, 1).unwrap_err();
        assert!(e.to_string().contains("one value per column"), "{e}");
        assert!(TextRow::decode(&b, 3).is_err());
        assert!(TextRow::decode(&[5, b'a'], 1).is_err());
        assert!(TextRow::decode(&[0xff], 1).is_err());
    }
}
