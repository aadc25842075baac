//! Column Definition 41: one packet per column of a result set, naming
//! it and saying what its values are (type, character set, display
//! length, flags). Text result sets send every value as text whatever
//! the type; the type tells a client how to show or convert it (`mariadb`
//! right-aligns numbers in its tables, drivers parse them).

use bytes::BufMut;

use crate::error::{ProtoError, Result};
use crate::wire::{Reader, Writer};

/// `binary`: the character set of numbers.
pub const BINARY: u16 = 63;
/// `utf8mb4_general_ci`.
pub const UTF8MB4_GENERAL_CI: u16 = 45;

/// A column's type (`MYSQL_TYPE_*`), the ones a lock service sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColumnType {
    /// A 64-bit integer (`BIGINT`; what MariaDB gives `GET_LOCK(...)`).
    LongLong,
    /// `DATETIME`.
    DateTime,
    /// `VARCHAR`.
    VarString,
    /// Any other type, by its number.
    Other(u8),
}

impl ColumnType {
    /// Its number on the wire.
    pub fn code(self) -> u8 {
        match self {
            ColumnType::LongLong => 0x08,
            ColumnType::DateTime => 0x0c,
            ColumnType::VarString => 0xfd,
            ColumnType::Other(c) => c,
        }
    }

    /// The type numbered `code`.
    pub fn from_code(code: u8) -> Self {
        match code {
            0x08 => ColumnType::LongLong,
            0x0c => ColumnType::DateTime,
            0xfd => ColumnType::VarString,
            c => ColumnType::Other(c),
        }
    }
}

/// Column flags (`*_FLAG`).
pub mod flags {
    /// The column cannot hold NULL.
    pub const NOT_NULL: u16 = 1;
    /// Part of the primary key.
    pub const PRIMARY_KEY: u16 = 2;
    /// Compared as bytes.
    pub const BINARY: u16 = 128;
}

/// A column definition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ColumnDefinition {
    /// The database (empty for an expression).
    pub schema: String,
    /// The table as the query named it (its alias).
    pub table: String,
    /// The table's own name.
    pub org_table: String,
    /// The column as the query named it (its alias, or the expression's
    /// text): what a client prints as the header.
    pub name: String,
    /// The column's own name.
    pub org_name: String,
    /// The character set and collation of its values.
    pub charset: u16,
    /// The display length, in bytes.
    pub length: u32,
    /// Its type.
    pub column_type: ColumnType,
    /// Its flags.
    pub flags: u16,
    /// Digits after the decimal point (0 for integers and strings).
    pub decimals: u8,
}

impl ColumnDefinition {
    /// A text column called `name`, of no table.
    pub fn text(name: impl Into<String>) -> Self {
        ColumnDefinition {
            schema: String::new(),
            table: String::new(),
            org_table: String::new(),
            name: name.into(),
            org_name: String::new(),
            charset: UTF8MB4_GENERAL_CI,
            length: 1024,
            column_type: ColumnType::VarString,
            flags: 0,
            decimals: 0,
        }
    }

    /// A 64-bit integer column called `name`, of no table.
    pub fn integer(name: impl Into<String>) -> Self {
        ColumnDefinition {
            charset: BINARY,
            length: 21,
            column_type: ColumnType::LongLong,
            flags: flags::BINARY,
            ..ColumnDefinition::text(name)
        }
    }

    /// The payload.
    pub fn encode(&self, out: &mut impl BufMut) {
        out.put_lenenc_bytes(b"def");
        out.put_lenenc_bytes(self.schema.as_bytes());
        out.put_lenenc_bytes(self.table.as_bytes());
        out.put_lenenc_bytes(self.org_table.as_bytes());
        out.put_lenenc_bytes(self.name.as_bytes());
        out.put_lenenc_bytes(self.org_name.as_bytes());
        // The length of the fixed fields that follow.
        out.put_lenenc_int(0x0c);
        out.put_u16_le(self.charset);
        out.put_u32_le(self.length);
        out.put_u8(self.column_type.code());
        out.put_u16_le(self.flags);
        out.put_u8(self.decimals);
        out.put_u16_le(0);
    }

    /// Reads a column definition.
    pub fn decode(payload: &[u8]) -> Result<Self> {
        let mut r = Reader::new(payload);
        let catalog = r.lenenc_bytes("catalog")?;
        if catalog != b"def" {
            return Err(ProtoError::invalid(
                "catalog",
                "\"def\"",
                String::from_utf8_lossy(catalog),
            ));
        }
        let schema = r.lenenc_str("schema")?;
        let table = r.lenenc_str("table")?;
        let org_table = r.lenenc_str("original table")?;
        let name = r.lenenc_str("column name")?;
        let org_name = r.lenenc_str("original column name")?;
        let fixed = r.lenenc_int("fixed fields' length")?;
        if fixed != 0x0c {
            return Err(ProtoError::invalid("fixed fields' length", "12", fixed));
        }
        let charset = r.u16("character set")?;
        let length = r.u32("column length")?;
        let column_type = ColumnType::from_code(r.u8("column type")?);
        let flags = r.u16("column flags")?;
        let decimals = r.u8("decimals")?;
        r.bytes(2, "filler")?;
        r.finish("column definition")?;
        Ok(ColumnDefinition {
            schema,
            table,
            org_table,
            name,
            org_name,
            charset,
            length,
            column_type,
            flags,
            decimals,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        for c in [
            ColumnDefinition::text("owner"),
            ColumnDefinition::integer("GET_LOCK('a', 0)"),
            ColumnDefinition {
                schema: "test".into(),
                table: "l".into(),
                org_table: "locks".into(),
                org_name: "expires".into(),
                column_type: ColumnType::DateTime,
                decimals: 0,
                ..ColumnDefinition::text("e")
            },
        ] {
            let mut b = Vec::new();
            c.encode(&mut b);
            assert_eq!(ColumnDefinition::decode(&b).unwrap(), c);
        }
    }

    #[test]
    fn types_keep_their_numbers() {
        for code in 0..=255u8 {
            assert_eq!(ColumnType::from_code(code).code(), code);
        }
    }

    #[test]
    fn malformed_definitions_are_errors() {
        let mut b = Vec::new();
        ColumnDefinition::text("x").encode(&mut b);
        for cut in [0, 3, 4, 10, b.len() - 1] {
            assert!(ColumnDefinition::decode(&b[..cut]).is_err(), "{cut}");
        }
        let mut wrong = b.clone();
        wrong[1] = b'x';
        let e = ColumnDefinition::decode(&wrong).unwrap_err();
        assert!(e.to_string().contains("catalog"), "{e}");
        let mut longer = b.clone();
        longer.push(0);
        assert!(ColumnDefinition::decode(&longer).is_err());
    }
}
