//! `cmsgpack.unpack`, `unpack_one`, `unpack_limit`: MessagePack bytes as
//! Lua values.

use mlua::{Lua, MultiValue, Table, Value};

use crate::lua::c_args::{check_bytes, check_integer, opt_integer};
use crate::lua::{caller_error, plain_error};

/// `LUAI_MAXCSTACK`: the stack slots a C function may use. The decoder
/// keeps every value it made (and, inside a table, the table and its
/// pending key) on the stack, so a long stream or a deep nesting runs out
/// of them as in Redis.
const MAX_SLOTS: usize = 8000;

/// Why decoding stopped early.
enum Stop {
    /// The input ends inside a value.
    Eof,
    /// A byte no value starts with.
    BadFormat,
    /// A Lua error (out of stack, a nil or NaN map key).
    Lua(mlua::Error),
}

impl From<mlua::Error> for Stop {
    fn from(e: mlua::Error) -> Stop {
        Stop::Lua(e)
    }
}

/// `cmsgpack.unpack(s)`: every value in `s`.
pub(super) fn unpack(lua: &Lua, args: &[Value]) -> mlua::Result<MultiValue> {
    unpack_full(lua, args, 0, 0)
}

/// `cmsgpack.unpack_one(s [, offset])`.
pub(super) fn unpack_one(lua: &Lua, args: &[Value]) -> mlua::Result<MultiValue> {
    let offset = opt_integer(lua, args, 2, 0)?;
    unpack_full(lua, &args[..args.len().min(1)], 1, offset)
}

/// `cmsgpack.unpack_limit(s, limit [, offset])`.
pub(super) fn unpack_limit(lua: &Lua, args: &[Value]) -> mlua::Result<MultiValue> {
    let limit = check_integer(lua, args, 2)?;
    let offset = opt_integer(lua, args, 3, 0)?;
    unpack_full(lua, &args[..args.len().min(1)], limit, offset)
}

/// `mp_unpack_full`: up to `limit` values from byte `offset` on, preceded
/// by the offset after them; a limit and an offset of 0 mean every value,
/// without the offset.
fn unpack_full(lua: &Lua, args: &[Value], limit: i64, offset: i64) -> mlua::Result<MultiValue> {
    let s = check_bytes(lua, args, 1)?;
    let len = s.len();
    let decode_all = limit == 0 && offset == 0;
    if offset < 0 || limit < 0 {
        return Err(caller_error(
            lua,
            &format!(
                "Invalid request to unpack with offset of {} and limit of {}.",
                offset as i32, len as i32
            ),
        ));
    }
    if offset as u64 > len as u64 {
        return Err(caller_error(
            lua,
            &format!(
                "Start offset {} greater than input length {}.",
                offset as i32, len as i32
            ),
        ));
    }
    let limit = if decode_all {
        i64::from(i32::MAX)
    } else {
        limit
    };
    let mut cursor = Cursor {
        lua,
        data: &s,
        at: offset as usize,
    };
    let mut values = Vec::new();
    while cursor.at < len && (values.len() as i64) < limit {
        // The string argument, then every value so far.
        match cursor.value(1 + values.len()) {
            Ok(v) => values.push(v),
            Err(Stop::Eof) => return Err(caller_error(lua, "Missing bytes in input.")),
            Err(Stop::BadFormat) => return Err(caller_error(lua, "Bad data format in input.")),
            Err(Stop::Lua(e)) => return Err(e),
        }
    }
    if !decode_all {
        let next = if cursor.at == len {
            -1
        } else {
            cursor.at as i64
        };
        values.insert(0, Value::Number(next as f64));
    }
    Ok(MultiValue::from_iter(values))
}

/// A position in the input.
struct Cursor<'a> {
    lua: &'a Lua,
    data: &'a [u8],
    at: usize,
}

impl Cursor<'_> {
    /// The next `n` bytes (consumed), or the end-of-input stop.
    fn take(&mut self, n: usize) -> Result<&[u8], Stop> {
        if self.data.len() - self.at < n {
            return Err(Stop::Eof);
        }
        let bytes = &self.data[self.at..self.at + n];
        self.at += n;
        Ok(bytes)
    }

    /// The next `N` bytes as an array.
    fn fixed<const N: usize>(&mut self) -> Result<[u8; N], Stop> {
        let mut b = [0u8; N];
        b.copy_from_slice(self.take(N)?);
        Ok(b)
    }

    /// `luaL_checkstack(L, 1, why)` with `used` slots taken.
    fn need_slot(&self, used: usize, why: &str) -> Result<(), Stop> {
        if used + 1 > MAX_SLOTS {
            return Err(Stop::Lua(caller_error(
                self.lua,
                &format!("stack overflow ({why})"),
            )));
        }
        Ok(())
    }

    /// `mp_decode_to_lua_type`: the next value, with `used` stack slots
    /// already taken. Tables are filled with an explicit stack of the ones
    /// open, not by recursion: the input may nest them thousands deep.
    fn value(&mut self, used: usize) -> Result<Value, Stop> {
        let mut open: Vec<Open> = Vec::new();
        loop {
            let slots = used + open.iter().map(Open::slots).sum::<usize>();
            let mut v = match self.item(slots)? {
                Item::Value(v) => v,
                Item::Array(len) => {
                    let table = self.lua.create_table()?;
                    self.need_slot(slots + 1, "in function mp_decode_to_lua_array")?;
                    if len == 0 {
                        Value::Table(table)
                    } else {
                        open.push(Open::Array {
                            table,
                            next: 1,
                            len,
                        });
                        continue;
                    }
                }
                Item::Map(len) => {
                    let table = self.lua.create_table()?;
                    if len == 0 {
                        Value::Table(table)
                    } else {
                        open.push(Open::Map {
                            table,
                            left: len,
                            key: None,
                        });
                        continue;
                    }
                }
            };
            // Into the innermost open table, closing every table it fills.
            loop {
                match open.last_mut() {
                    None => return Ok(v),
                    Some(Open::Array { table, next, len }) => {
                        table.raw_set(*next, v)?;
                        *next += 1;
                        if *next <= *len {
                            break;
                        }
                    }
                    Some(Open::Map {
                        key: key @ None, ..
                    }) => {
                        *key = Some(v);
                        break;
                    }
                    Some(Open::Map { table, left, key }) => {
                        set_field(table, key.take().unwrap_or(Value::Nil), v)?;
                        *left -= 1;
                        if *left > 0 {
                            break;
                        }
                    }
                }
                v = match open.pop() {
                    Some(Open::Array { table, .. } | Open::Map { table, .. }) => {
                        Value::Table(table)
                    }
                    None => Value::Nil,
                };
            }
        }
    }

    /// One value, or the header of a table (its element count).
    fn item(&mut self, used: usize) -> Result<Item, Stop> {
        if self.at >= self.data.len() {
            return Err(Stop::Eof);
        }
        self.need_slot(
            used,
            "too many return values at once; use unpack_one or unpack_limit instead.",
        )?;
        let first = self.data[self.at];
        // Single-byte types are consumed with their first byte; the others
        // read their header whole.
        let number = |n: f64| Ok(Item::Value(Value::Number(n)));
        match first {
            0xc0 => {
                self.at += 1;
                Ok(Item::Value(Value::Nil))
            }
            0xc2 | 0xc3 => {
                self.at += 1;
                Ok(Item::Value(Value::Boolean(first == 0xc3)))
            }
            0xcc => number(f64::from(self.fixed::<2>()?[1])),
            0xd0 => number(f64::from(self.fixed::<2>()?[1] as i8)),
            0xcd => {
                let b = self.fixed::<3>()?;
                number(f64::from(u16::from_be_bytes([b[1], b[2]])))
            }
            0xd1 => {
                let b = self.fixed::<3>()?;
                number(f64::from(i16::from_be_bytes([b[1], b[2]])))
            }
            0xce => number(f64::from(u32::from_be_bytes(self.word::<4>()?))),
            0xd2 => number(f64::from(i32::from_be_bytes(self.word::<4>()?))),
            // Pushed as a C `ptrdiff_t`: past 2^63 it wraps negative.
            0xcf => number(u64::from_be_bytes(self.word::<8>()?) as i64 as f64),
            0xd3 => number(i64::from_be_bytes(self.word::<8>()?) as f64),
            0xca => number(f64::from(f32::from_be_bytes(self.word::<4>()?))),
            0xcb => number(f64::from_be_bytes(self.word::<8>()?)),
            0xd9 => {
                let l = usize::from(self.fixed::<2>()?[1]);
                self.at -= 2;
                let bytes = self.take(2 + l)?[2..].to_vec();
                self.string(&bytes)
            }
            0xda => {
                let b = self.fixed::<3>()?;
                let l = usize::from(u16::from_be_bytes([b[1], b[2]]));
                self.at -= 3;
                let bytes = self.take(3 + l)?[3..].to_vec();
                self.string(&bytes)
            }
            0xdb => {
                let l = u32::from_be_bytes(self.word::<4>()?) as usize;
                let bytes = self.take(l)?.to_vec();
                self.string(&bytes)
            }
            0xdc => {
                let b = self.fixed::<3>()?;
                Ok(Item::Array(u16::from_be_bytes([b[1], b[2]]).into()))
            }
            0xdd => {
                let n = u32::from_be_bytes(self.word::<4>()?);
                Ok(Item::Array(n as usize))
            }
            0xde => {
                let b = self.fixed::<3>()?;
                Ok(Item::Map(u16::from_be_bytes([b[1], b[2]]).into()))
            }
            0xdf => {
                let n = u32::from_be_bytes(self.word::<4>()?);
                Ok(Item::Map(n as usize))
            }
            b if b & 0x80 == 0 => {
                self.at += 1;
                number(f64::from(b))
            }
            b if b & 0xe0 == 0xe0 => {
                self.at += 1;
                number(f64::from(b as i8))
            }
            b if b & 0xe0 == 0xa0 => {
                let l = usize::from(b & 0x1f);
                let bytes = self.take(1 + l)?[1..].to_vec();
                self.string(&bytes)
            }
            b if b & 0xf0 == 0x90 => {
                self.at += 1;
                Ok(Item::Array(usize::from(b & 0xf)))
            }
            b if b & 0xf0 == 0x80 => {
                self.at += 1;
                Ok(Item::Map(usize::from(b & 0xf)))
            }
            _ => Err(Stop::BadFormat),
        }
    }

    /// A type byte and the `N` bytes after it: those bytes.
    fn word<const N: usize>(&mut self) -> Result<[u8; N], Stop> {
        if self.data.len() - self.at < N + 1 {
            return Err(Stop::Eof);
        }
        self.at += 1;
        self.fixed::<N>()
    }

    fn string(&self, bytes: &[u8]) -> Result<Item, Stop> {
        Ok(Item::Value(Value::String(self.lua.create_string(bytes)?)))
    }
}

/// What the next bytes hold.
enum Item {
    /// A value that is not a table.
    Value(Value),
    /// An array's header: its length.
    Array(usize),
    /// A map's header: its pair count.
    Map(usize),
}

/// A table being filled.
enum Open {
    /// An array: its values go under the keys `next..=len`.
    Array {
        table: Table,
        next: usize,
        len: usize,
    },
    /// A map: `left` pairs to go, the pending key if its value is next.
    Map {
        table: Table,
        left: usize,
        key: Option<Value>,
    },
}

impl Open {
    /// The stack slots Redis's decoder holds for this table while it reads
    /// the table's next value: the table, and the array index or the map
    /// key read.
    fn slots(&self) -> usize {
        match self {
            Open::Array { .. } => 2,
            Open::Map { key, .. } => 1 + usize::from(key.is_some()),
        }
    }
}

/// `lua_settable` on a fresh table, with Lua's errors for the keys a table
/// cannot have.
fn set_field(t: &Table, k: Value, v: Value) -> Result<(), Stop> {
    match &k {
        Value::Nil => Err(Stop::Lua(plain_error("table index is nil"))),
        Value::Number(n) if n.is_nan() => Err(Stop::Lua(plain_error("table index is NaN"))),
        _ => Ok(t.raw_set(k, v)?),
    }
}
