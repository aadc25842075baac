//! `GETBIT` and `SETBIT`, as Redis 7.0.15's `bitops.c` answers them: bit 0
//! is the most significant bit of the first byte, and a string grows (with
//! zero bytes) to hold the bit it sets.

use super::errors::wrongtype;
use super::strings::MAX_STRING_LEN;
use crate::handle::NodeHandle;
use crate::keyspace::{Keyspace, Value};
use crate::resp::{Reply, string2ll};

/// A handler's answer: `Err` is an error reply, returned early with `?`.
type R = Result<Reply, Reply>;

/// Parses a bit offset as Redis's `getBitOffsetFromArgument`: an integer
/// from 0 to below `proto-max-bulk-len` bytes.
fn bit_offset(arg: &[u8]) -> Result<u64, Reply> {
    let err = || Reply::err("ERR bit offset is not an integer or out of range");
    let n = string2ll(arg).ok_or_else(err)?;
    if n < 0 || (n >> 3) >= MAX_STRING_LEN {
        return Err(err());
    }
    Ok(n as u64)
}

/// The bit at `offset` of `s` (0 past its end).
fn bit_at(s: &[u8], offset: u64) -> bool {
    let byte = (offset >> 3) as usize;
    let mask = 1u8 << (7 - (offset & 7));
    s.get(byte).is_some_and(|b| b & mask != 0)
}

/// `GETBIT key offset`: the bit, 0 past the end or for a missing key.
pub(crate) fn getbit(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    let offset = bit_offset(&a[2])?;
    Ok(Reply::Int(match ks.get(&a[1]) {
        None => 0,
        Some(e) => match &e.value {
            Value::Str(s) => i64::from(bit_at(s, offset)),
            _ => return Err(wrongtype()),
        },
    }))
}

/// `SETBIT key offset 0|1`: the bit's old value; the key keeps its
/// deadline.
pub(crate) fn setbit(ks: &mut Keyspace, a: &[Vec<u8>], _: &NodeHandle) -> R {
    let offset = bit_offset(&a[2])?;
    let bit_error = || Reply::err("ERR bit is not an integer or out of range");
    let on = string2ll(&a[3]).ok_or_else(bit_error)?;
    if on & !1 != 0 {
        return Err(bit_error());
    }
    let key = &a[1];
    let byte = (offset >> 3) as usize;
    let mask = 1u8 << (7 - (offset & 7));
    let current = match ks.get(key) {
        None => None,
        Some(e) => match &e.value {
            Value::Str(s) => Some(s.clone()),
            _ => return Err(wrongtype()),
        },
    };
    let exists = current.is_some();
    let mut s = current.unwrap_or_default();
    let old = bit_at(&s, offset);
    let grows = s.len() <= byte;
    if grows {
        s.resize(byte + 1, 0);
    }
    if on == 1 {
        s[byte] |= mask;
    } else {
        s[byte] &= !mask;
    }
    if !exists {
        ks.set(key, Value::Str(s), None);
    } else if grows || old != (on == 1) {
        if let Some(e) = ks.get_mut(key) {
            e.value = Value::Str(s);
        }
        ks.mark_written(key);
    }
    Ok(Reply::Int(i64::from(old)))
}
