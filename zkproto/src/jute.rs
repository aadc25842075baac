//! Jute's binary encoding, as ZooKeeper's `BinaryOutputArchive` writes
//! it: big-endian integers, a boolean as one byte, strings and buffers as
//! a 32-bit length (-1: null) then their bytes, vectors as a 32-bit count
//! (-1: null) then their elements, and a record as its fields in order,
//! with no tags and no padding.
//!
//! Reading never trusts a length: a length or count past the bytes left
//! is an error that names the field, never an allocation or a panic.

use std::fmt;

/// A value jute can write and read.
pub trait Jute: Sized {
    /// Appends the value's encoding to `out`.
    fn put(&self, out: &mut Vec<u8>);
    /// Reads one value from `r`.
    fn take(r: &mut Reader<'_>) -> Result<Self, JuteError>;
}

/// Encodes a value.
pub fn encode<T: Jute>(value: &T) -> Vec<u8> {
    let mut out = Vec::new();
    value.put(&mut out);
    out
}

/// Decodes a value that must fill `bytes` exactly; an error names the
/// field by its path from the value's type (`Pair.names[0]`).
pub fn decode<T: Jute>(bytes: &[u8]) -> Result<T, JuteError> {
    let mut r = Reader::new(bytes);
    let name = std::any::type_name::<T>();
    let name = name.rsplit("::").next().unwrap_or(name);
    let value = T::take(&mut r).map_err(|e| e.within(name))?;
    r.finish()?;
    Ok(value)
}

/// What went wrong reading, and where: the byte offset and the field
/// (`CreateRequest.acl[0].id.scheme`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JuteError {
    /// Offset of the byte where reading failed.
    pub offset: usize,
    /// The field being read, outermost first.
    pub field: String,
    /// What was expected there.
    pub expected: String,
}

impl JuteError {
    fn within(mut self, outer: &str) -> JuteError {
        self.field = if self.field.is_empty() {
            outer.to_string()
        } else if self.field.starts_with('[') {
            format!("{outer}{}", self.field)
        } else {
            format!("{outer}.{}", self.field)
        };
        self
    }
}

impl fmt::Display for JuteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let field = if self.field.is_empty() {
            "the message"
        } else {
            &self.field
        };
        write!(
            f,
            "at byte {}, {field}: expected {}",
            self.offset, self.expected
        )
    }
}

impl std::error::Error for JuteError {}

/// Reads jute values from a byte slice.
#[derive(Debug)]
pub struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    /// A reader at the start of `bytes`.
    pub fn new(bytes: &'a [u8]) -> Reader<'a> {
        Reader { bytes, at: 0 }
    }

    /// Bytes not read yet.
    pub fn remaining(&self) -> usize {
        self.bytes.len() - self.at
    }

    /// Reads a field named `name` (errors inside it name it).
    pub fn field<T: Jute>(&mut self, name: &str) -> Result<T, JuteError> {
        T::take(self).map_err(|e| e.within(name))
    }

    /// An error at the current byte.
    pub fn error(&self, expected: impl Into<String>) -> JuteError {
        JuteError {
            offset: self.at,
            field: String::new(),
            expected: expected.into(),
        }
    }

    /// Fails if bytes are left over.
    pub fn finish(&self) -> Result<(), JuteError> {
        if self.remaining() == 0 {
            Ok(())
        } else {
            Err(self.error(format!(
                "the end of the message, found {} more byte(s)",
                self.remaining()
            )))
        }
    }

    fn bytes(&mut self, n: usize, what: &str) -> Result<&'a [u8], JuteError> {
        if n > self.remaining() {
            return Err(self.error(format!(
                "{what} of {n} byte(s), found {} left",
                self.remaining()
            )));
        }
        let slice = &self.bytes[self.at..self.at + n];
        self.at += n;
        Ok(slice)
    }

    fn array<const N: usize>(&mut self, what: &str) -> Result<[u8; N], JuteError> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.bytes(N, what)?);
        Ok(out)
    }

    /// A length or count: -1 is null, any other negative is an error.
    fn length(&mut self, what: &str) -> Result<Option<usize>, JuteError> {
        let n = i32::take(self)?;
        match n {
            -1 => Ok(None),
            n if n < 0 => Err(self.error(format!("a {what} length of -1 or more, found {n}"))),
            n => Ok(Some(n as usize)),
        }
    }
}

impl Jute for i32 {
    fn put(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_be_bytes());
    }

    fn take(r: &mut Reader<'_>) -> Result<Self, JuteError> {
        Ok(i32::from_be_bytes(r.array("an int")?))
    }
}

impl Jute for i64 {
    fn put(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_be_bytes());
    }

    fn take(r: &mut Reader<'_>) -> Result<Self, JuteError> {
        Ok(i64::from_be_bytes(r.array("a long")?))
    }
}

impl Jute for bool {
    fn put(&self, out: &mut Vec<u8>) {
        out.push(u8::from(*self));
    }

    fn take(r: &mut Reader<'_>) -> Result<Self, JuteError> {
        match r.array::<1>("a boolean")?[0] {
            0 => Ok(false),
            1 => Ok(true),
            b => Err(r.error(format!("a boolean (0 or 1), found {b}"))),
        }
    }
}

/// A `ustring` that must not be null (a path, a scheme).
impl Jute for String {
    fn put(&self, out: &mut Vec<u8>) {
        (self.len() as i32).put(out);
        out.extend_from_slice(self.as_bytes());
    }

    fn take(r: &mut Reader<'_>) -> Result<Self, JuteError> {
        let Some(n) = r.length("string")? else {
            return Err(r.error("a string, found null"));
        };
        let bytes = r.bytes(n, "a string")?;
        String::from_utf8(bytes.to_vec()).map_err(|_| r.error("UTF-8 text"))
    }
}

/// A `buffer`: null (length -1) and empty are different values in
/// ZooKeeper (`get` prints `null` for the first, an empty line for the
/// second), so a buffer is an `Option`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Buffer(pub Option<Vec<u8>>);

impl Buffer {
    /// The bytes, empty for null.
    pub fn bytes(&self) -> &[u8] {
        self.0.as_deref().unwrap_or_default()
    }
}

impl Jute for Buffer {
    fn put(&self, out: &mut Vec<u8>) {
        match &self.0 {
            None => (-1i32).put(out),
            Some(bytes) => {
                (bytes.len() as i32).put(out);
                out.extend_from_slice(bytes);
            }
        }
    }

    fn take(r: &mut Reader<'_>) -> Result<Self, JuteError> {
        match r.length("buffer")? {
            None => Ok(Buffer(None)),
            Some(n) => Ok(Buffer(Some(r.bytes(n, "a buffer")?.to_vec()))),
        }
    }
}

/// A `vector`: a null one reads as empty (ZooKeeper's server treats them
/// alike, and no record here needs the difference).
impl<T: Jute> Jute for Vec<T> {
    fn put(&self, out: &mut Vec<u8>) {
        (self.len() as i32).put(out);
        for item in self {
            item.put(out);
        }
    }

    fn take(r: &mut Reader<'_>) -> Result<Self, JuteError> {
        let n = r.length("vector")?.unwrap_or(0);
        // Every element takes at least one byte: a count past the bytes
        // left is a lie, refused before anything is allocated for it.
        if n > r.remaining() {
            return Err(r.error(format!(
                "a vector of {n} element(s), found {} byte(s) left",
                r.remaining()
            )));
        }
        let mut items = Vec::with_capacity(n);
        for i in 0..n {
            items.push(r.field::<T>(&format!("[{i}]"))?);
        }
        Ok(items)
    }
}

/// Declares a jute record: a struct whose fields are written and read in
/// the order given, as ZooKeeper's `zookeeper.jute` declares them.
#[macro_export]
macro_rules! record {
    ($(#[$m:meta])* pub struct $name:ident { $($(#[$fm:meta])* pub $field:ident : $ty:ty),* $(,)? }) => {
        $(#[$m])*
        #[derive(Debug, Clone, PartialEq, Eq, Default)]
        pub struct $name {
            $($(#[$fm])* pub $field: $ty),*
        }

        impl $crate::jute::Jute for $name {
            fn put(&self, _out: &mut Vec<u8>) {
                $(self.$field.put(_out);)*
            }

            fn take(_r: &mut $crate::jute::Reader<'_>) -> Result<Self, $crate::jute::JuteError> {
                Ok($name {
                    $($field: _r.field(stringify!($field))?),*
                })
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    crate::record! {
        /// A record for the tests.
        pub struct Pair {
            /// A number.
            pub n: i32,
            /// Some names.
            pub names: Vec<String>,
        }
    }

    #[test]
    fn a_record_round_trips_in_field_order() {
        let pair = Pair {
            n: 7,
            names: vec!["a".into(), "bc".into()],
        };
        let bytes = encode(&pair);
        assert_eq!(bytes[..4], [0, 0, 0, 7]);
        assert_eq!(decode::<Pair>(&bytes), Ok(pair));
    }

    #[test]
    fn a_null_buffer_and_an_empty_one_stay_apart() {
        assert_eq!(encode(&Buffer(None)), [0xff, 0xff, 0xff, 0xff]);
        assert_eq!(encode(&Buffer(Some(Vec::new()))), [0, 0, 0, 0]);
        assert_eq!(decode::<Buffer>(&[0xff; 4]), Ok(Buffer(None)));
    }

    #[test]
    fn a_truncated_message_names_the_field_it_stopped_in() {
        let bytes = encode(&Pair {
            n: 1,
            names: vec!["abc".into()],
        });
        let err = decode::<Pair>(&bytes[..bytes.len() - 1]).unwrap_err();
        assert_eq!(err.field, "Pair.names[0]", "{err}");
        assert!(err.to_string().contains("a string of 3 byte(s)"), "{err}");
    }

    #[test]
    fn a_count_past_the_bytes_left_is_refused_before_allocating() {
        let mut bytes = encode(&1i32);
        bytes.extend_from_slice(&i32::MAX.to_be_bytes());
        let err = decode::<Pair>(&bytes).unwrap_err();
        assert!(err.to_string().contains("a vector of 2147483647"), "{err}");
    }

    #[test]
    fn leftover_bytes_and_bad_booleans_are_errors() {
        assert!(decode::<i32>(&[0, 0, 0, 1, 9]).is_err());
        assert!(decode::<bool>(&[2]).is_err());
        assert!(decode::<String>(&[0xff, 0xff, 0xff, 0xfe]).is_err());
    }
}
