//! Numbers as C and Lua 5.1 convert them: `(int)` and `(long long)` casts,
//! `lua_tonumber`, and glibc's `strtod`, which lua-cjson's decoder reads
//! numbers with.

use mlua::Value;

/// A C `(int)` conversion of a double as x86-64 does it: out of range (or
/// NaN) gives `INT_MIN`.
pub(super) fn c_int(x: f64) -> i32 {
    if x > -2_147_483_649.0 && x < 2_147_483_648.0 {
        x as i32
    } else {
        i32::MIN
    }
}

/// A C `(long long)` conversion of a double as x86-64 does it: out of range
/// (or NaN) gives `LLONG_MIN`.
pub(crate) fn c_long_long(x: f64) -> i64 {
    if x > -9_223_372_036_854_777_856.0 && x < 9_223_372_036_854_775_808.0 {
        x as i64
    } else {
        i64::MIN
    }
}

/// A Lua value as a number, as `lua_tonumber` converts it (numeric strings
/// included).
pub(super) fn to_number(v: &Value) -> Option<f64> {
    match v {
        Value::Integer(i) => Some(*i as f64),
        Value::Number(n) => Some(*n),
        Value::String(s) => lua_str2number(&s.as_bytes()),
        _ => None,
    }
}

/// Lua 5.1's `luaO_str2d`: `strtod` (or a hex integer), surrounded by
/// optional white space and nothing else.
pub(super) fn lua_str2number(s: &[u8]) -> Option<f64> {
    let is_space = |c: &u8| matches!(c, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c);
    let start = s.iter().position(|c| !is_space(c))?;
    let (mut value, used) = strtod(&s[start..])?;
    let mut end = start + used;
    if matches!(s.get(end), Some(b'x' | b'X')) {
        // `luaO_str2d` retries a failed `0x...` as an unsigned long.
        let digits = &s[end + 1..];
        let n = digits.iter().take_while(|c| c.is_ascii_hexdigit()).count();
        if n == 0 {
            return None;
        }
        value = digits[..n].iter().fold(0u64, |acc, c| {
            acc.wrapping_mul(16)
                .wrapping_add(u64::from((*c as char).to_digit(16).unwrap_or(0)))
        }) as f64;
        end += 1 + n;
    }
    s[end..].iter().all(is_space).then_some(value)
}

/// C's `strtod` (glibc, "C" locale) at the start of `s`: the value and the
/// bytes it used, or `None` when no number starts there.
pub(crate) fn strtod(s: &[u8]) -> Option<(f64, usize)> {
    let byte = |i: usize| s.get(i).copied().unwrap_or(0);
    let mut i = 0;
    let negative = byte(0) == b'-';
    if matches!(byte(0), b'+' | b'-') {
        i = 1;
    }
    let sign = |x: f64| if negative { -x } else { x };
    let starts = |at: usize, w: &[u8]| {
        s.len() >= at + w.len() && s[at..at + w.len()].eq_ignore_ascii_case(w)
    };
    if starts(i, b"inf") {
        let used = if starts(i, b"infinity") { i + 8 } else { i + 3 };
        return Some((sign(f64::INFINITY), used));
    }
    if starts(i, b"nan") {
        let mut used = i + 3;
        if byte(used) == b'(' {
            let n = s[used + 1..]
                .iter()
                .take_while(|c| c.is_ascii_alphanumeric() || **c == b'_')
                .count();
            if byte(used + 1 + n) == b')' {
                used += n + 2;
            }
        }
        return Some((sign(f64::NAN), used));
    }
    if byte(i) == b'0' && byte(i + 1) | 0x20 == b'x' {
        let hex_start = i + 2;
        if byte(hex_start).is_ascii_hexdigit()
            || (byte(hex_start) == b'.' && byte(hex_start + 1).is_ascii_hexdigit())
        {
            let (v, used) = hex_float(&s[hex_start..]);
            return Some((sign(v), hex_start + used));
        }
        // "0x" with no digits: only the 0 is a number.
        return Some((sign(0.0), i + 1));
    }
    let start = i;
    let int_digits = s[i..].iter().take_while(|c| c.is_ascii_digit()).count();
    i += int_digits;
    let mut frac_digits = 0;
    if byte(i) == b'.' {
        frac_digits = s[i + 1..].iter().take_while(|c| c.is_ascii_digit()).count();
        if int_digits + frac_digits > 0 {
            i += 1 + frac_digits;
        }
    }
    if int_digits + frac_digits == 0 {
        return None;
    }
    if byte(i) | 0x20 == b'e' {
        let mut j = i + 1;
        if matches!(byte(j), b'+' | b'-') {
            j += 1;
        }
        let exp_digits = s[j..].iter().take_while(|c| c.is_ascii_digit()).count();
        if exp_digits > 0 {
            i = j + exp_digits;
        }
    }
    let text = std::str::from_utf8(&s[start..i]).ok()?;
    let v: f64 = text.parse().ok()?;
    Some((sign(v), i))
}

/// The digits of a hex float after `0x` (`h.hhhp±d`): its value and the
/// bytes used. Keeps 64 significant bits (and a sticky bit for the rest),
/// so the value is rounded once, to nearest, as glibc's is (subnormal
/// results aside).
fn hex_float(s: &[u8]) -> (f64, usize) {
    let mut mantissa: u64 = 0;
    let mut exp: i64 = 0;
    let mut sticky = false;
    let mut i = 0;
    let mut seen_point = false;
    loop {
        let c = s.get(i).copied().unwrap_or(0);
        if c == b'.' && !seen_point {
            seen_point = true;
            i += 1;
            continue;
        }
        let Some(d) = (c as char).to_digit(16) else {
            break;
        };
        if mantissa >> 60 == 0 {
            mantissa = mantissa * 16 + u64::from(d);
            if seen_point {
                exp -= 4;
            }
        } else {
            sticky |= d != 0;
            if !seen_point {
                exp += 4;
            }
        }
        i += 1;
    }
    if s.get(i).copied().unwrap_or(0) | 0x20 == b'p' {
        let mut j = i + 1;
        let negative = s.get(j) == Some(&b'-');
        if matches!(s.get(j), Some(b'+' | b'-')) {
            j += 1;
        }
        let digits = s[j.min(s.len())..]
            .iter()
            .take_while(|c| c.is_ascii_digit())
            .count();
        if digits > 0 {
            let e = s[j..j + digits]
                .iter()
                .fold(0i64, |acc, c| (acc * 10 + i64::from(c - b'0')).min(100_000));
            exp += if negative { -e } else { e };
            i = j + digits;
        }
    }
    if sticky {
        mantissa |= 1;
    }
    let mut v = mantissa as f64;
    // Scale by 2^exp in steps that cannot overflow on the way.
    while exp > 0 {
        let step = exp.min(1000);
        v *= 2f64.powi(step as i32);
        exp -= step;
    }
    while exp < 0 {
        let step = exp.max(-1000);
        v *= 2f64.powi(step as i32);
        exp -= step;
    }
    (v, i)
}
