//! The x87 80-bit `long double` that Redis's `INCRBYFLOAT` and
//! `HINCRBYFLOAT` compute in: parsed as glibc's `strtold` parses (correctly
//! rounded to a 64-bit mantissa), added with one rounding (to nearest,
//! ties to even), and printed as Redis's `ld2string(LD_STR_HUMAN)` prints
//! (`%.17Lf`, trailing zeros stripped).
//!
//! Rust has no such type, and `f64` would answer differently from
//! redis-server (`INCRBYFLOAT k 0.1` three times gives
//! `0.30000000000000000` there, where doubles drift), so the few operations
//! needed are done exactly on small big integers.

use crate::resp::Reply;

/// `ERR value is not a valid float`: an argument or a value that `strtold`
/// refuses.
pub(crate) fn float_error() -> Reply {
    Reply::err("ERR value is not a valid float")
}

/// The lowest binary exponent of the mantissa's last bit (subnormals).
const MIN_EXP: i64 = -16445;
/// The highest binary exponent of the mantissa's last bit.
const MAX_EXP: i64 = 16320;
/// Redis's `MAX_LONG_DOUBLE_CHARS`: longer input is refused.
const MAX_CHARS: usize = 5 * 1024;

/// A finite or infinite x87 extended value (no NaN: Redis refuses it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct LongDouble {
    /// Negative (also for -0).
    neg: bool,
    /// The magnitude.
    kind: Magnitude,
}

/// The magnitude of a [`LongDouble`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Magnitude {
    /// `mant * 2^exp` (`mant` ≠ 0).
    Finite { mant: u64, exp: i64 },
    /// Zero.
    Zero,
    /// Infinity.
    Inf,
}

impl LongDouble {
    /// Positive zero.
    pub(crate) const ZERO: LongDouble = LongDouble {
        neg: false,
        kind: Magnitude::Zero,
    };

    /// Whether it is not infinite.
    pub(crate) fn is_finite(&self) -> bool {
        self.kind != Magnitude::Inf
    }

    /// Parses `s` as Redis's `string2ld`: the whole string must be a
    /// number `strtold` reads (decimal, hexadecimal, `inf`); NaN, leading
    /// space, an overflow or an underflow to zero are refused.
    pub(crate) fn parse(s: &[u8]) -> Option<LongDouble> {
        if s.is_empty() || s.len() >= MAX_CHARS || s[0].is_ascii_whitespace() || s[0] == 0x0b {
            return None;
        }
        let (neg, body) = match s[0] {
            b'-' => (true, &s[1..]),
            b'+' => (false, &s[1..]),
            _ => (false, s),
        };
        let lower = body.to_ascii_lowercase();
        if lower == b"inf" || lower == b"infinity" {
            return Some(LongDouble {
                neg,
                kind: Magnitude::Inf,
            });
        }
        let kind = if lower.starts_with(b"0x") {
            parse_hex(&lower[2..])?
        } else {
            parse_decimal(&lower)?
        };
        match kind {
            Magnitude::Inf => None,
            _ => Some(LongDouble { neg, kind }),
        }
    }

    /// The sum, rounded once (to nearest, ties to even); an overflow is
    /// infinite; an exact zero is +0 (unless both are -0).
    pub(crate) fn add(self, other: LongDouble) -> LongDouble {
        use Magnitude::*;
        match (self.kind, other.kind) {
            (Inf, _) | (_, Inf) => {
                let neg = if self.kind == Inf {
                    self.neg
                } else {
                    other.neg
                };
                LongDouble { neg, kind: Inf }
            }
            (Zero, Zero) => LongDouble {
                neg: self.neg && other.neg,
                kind: Zero,
            },
            (Zero, _) => other,
            (_, Zero) => self,
            (Finite { mant: ma, exp: ea }, Finite { mant: mb, exp: eb }) => {
                let e = ea.min(eb);
                let a = Big::from_u64(ma).shl((ea - e) as usize);
                let b = Big::from_u64(mb).shl((eb - e) as usize);
                let (neg, magnitude) = if self.neg == other.neg {
                    (self.neg, a.add(&b))
                } else if a >= b {
                    (self.neg, a.sub(&b))
                } else {
                    (other.neg, b.sub(&a))
                };
                if magnitude.is_zero() {
                    return LongDouble::ZERO;
                }
                LongDouble {
                    neg,
                    kind: round(magnitude, e, false),
                }
            }
        }
    }

    /// `%.17Lf` with trailing zeros (and a trailing dot) stripped, and
    /// `-0` written `0`, as Redis's `ld2string(LD_STR_HUMAN)`.
    pub(crate) fn to_human_string(self) -> String {
        let digits = match self.kind {
            Magnitude::Inf => return if self.neg { "-inf" } else { "inf" }.into(),
            Magnitude::Zero => "0".to_string(),
            Magnitude::Finite { mant, exp } => {
                let scaled = Big::from_u64(mant).mul_pow10(17);
                let x = if exp >= 0 {
                    scaled.shl(exp as usize)
                } else {
                    scaled.shr_round_even((-exp) as usize)
                };
                x.to_decimal()
            }
        };
        let padded = format!("{digits:0>18}");
        let (int, frac) = padded.split_at(padded.len() - 17);
        let frac = frac.trim_end_matches('0');
        let mut out = String::new();
        if self.neg {
            out.push('-');
        }
        out.push_str(int);
        if !frac.is_empty() {
            out.push('.');
            out.push_str(frac);
        }
        if out == "-0" { "0".into() } else { out }
    }
}

/// Splits number text into its integer digits, its fraction digits and
/// its exponent (after `marker`: `e` or `p`, a signed decimal, clamped far
/// past any double's range); `None` unless there is at least one digit
/// and every digit passes `is_digit`.
fn split_number(s: &[u8], marker: u8, is_digit: fn(&u8) -> bool) -> Option<(&[u8], &[u8], i64)> {
    let (mantissa, exponent) = match s.iter().position(|&c| c == marker) {
        Some(i) => (&s[..i], Some(&s[i + 1..])),
        None => (s, None),
    };
    let (int, frac) = match mantissa.iter().position(|&c| c == b'.') {
        Some(i) => (&mantissa[..i], &mantissa[i + 1..]),
        None => (mantissa, &mantissa[..0]),
    };
    if int.len() + frac.len() == 0 || !int.iter().chain(frac).all(is_digit) {
        return None;
    }
    let exponent = match exponent {
        None => 0,
        Some(e) => {
            let digits = e
                .strip_prefix(b"-")
                .or_else(|| e.strip_prefix(b"+"))
                .unwrap_or(e);
            if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
                return None;
            }
            let n = digits
                .iter()
                .fold(0i64, |n, d| (n * 10 + i64::from(d - b'0')).min(1 << 40));
            if e[0] == b'-' { -n } else { n }
        }
    };
    Some((int, frac, exponent))
}

/// The magnitude of decimal text (`12.5e-3`, `.5`, `5.`), as `strtold`
/// rounds it; `None` if the text is not a whole number or underflows to
/// zero, `Inf` if it overflows.
fn parse_decimal(s: &[u8]) -> Option<Magnitude> {
    let (int, frac, exponent) = split_number(s, b'e', u8::is_ascii_digit)?;
    let exp10 = exponent - frac.len() as i64;
    let mut num = Big::default();
    for &d in int.iter().chain(frac) {
        num = num.mul_small(10).add(&Big::from_u64(u64::from(d - b'0')));
    }
    if num.is_zero() {
        return Some(Magnitude::Zero);
    }
    let digits = num.to_decimal().len() as i64;
    if digits + exp10 > 4934 {
        return Some(Magnitude::Inf);
    }
    if digits + exp10 < -4952 {
        return None;
    }
    let kind = if exp10 >= 0 {
        round(num.mul_pow10(exp10 as u32), 0, false)
    } else {
        let den = Big::from_u64(1).mul_pow10((-exp10) as u32);
        let s = (den.bit_len() + 67).saturating_sub(num.bit_len());
        let (q, rem_nonzero) = num.shl(s).div_rem_nonzero(&den);
        round(q, -(s as i64), rem_nonzero)
    };
    (kind != Magnitude::Zero).then_some(kind)
}

/// The magnitude of hexadecimal text after `0x` (`1.8p3`), as `strtold`
/// rounds it.
fn parse_hex(s: &[u8]) -> Option<Magnitude> {
    let (int, frac, exponent) = split_number(s, b'p', u8::is_ascii_hexdigit)?;
    let exp2 = exponent - 4 * frac.len() as i64;
    let mut num = Big::default();
    for &d in int.iter().chain(frac) {
        let v = (d as char).to_digit(16).unwrap_or(0);
        num = num.mul_small(16).add(&Big::from_u64(u64::from(v)));
    }
    if num.is_zero() {
        return Some(Magnitude::Zero);
    }
    if num.bit_len() as i64 + exp2 > 16400 {
        return Some(Magnitude::Inf);
    }
    if num.bit_len() as i64 + exp2 < -16500 {
        return None;
    }
    let kind = round(num, exp2, false);
    (kind != Magnitude::Zero).then_some(kind)
}

/// Rounds `q * 2^exp` (plus a little more if `sticky`) to a 64-bit
/// mantissa, to nearest, ties to even, with the x87 exponent range
/// (subnormals below it, infinity above).
fn round(q: Big, exp: i64, sticky: bool) -> Magnitude {
    let top = q.bit_len() as i64 - 1 + exp;
    let target = (top - 63).max(MIN_EXP);
    let shift = target - exp;
    let (mut mant, mut e) = if shift <= 0 {
        (q.shl((-shift) as usize).low_u64(), target)
    } else {
        let shift = shift as usize;
        let kept = q.shr(shift);
        let half = q.bit(shift - 1);
        let below = sticky || q.any_below(shift - 1);
        let mut m = kept.low_u64() as u128;
        if half && (below || m & 1 == 1) {
            m += 1;
        }
        if m >> 64 != 0 {
            (u64::MAX / 2 + 1, target + 1)
        } else {
            (m as u64, target)
        }
    };
    if mant == 0 {
        return Magnitude::Zero;
    }
    while mant & 1 == 0 && e < MAX_EXP {
        mant >>= 1;
        e += 1;
    }
    if e + (63 - mant.leading_zeros() as i64) > MAX_EXP + 63 {
        return Magnitude::Inf;
    }
    Magnitude::Finite { mant, exp: e }
}

/// A non-negative big integer, little-endian 32-bit limbs, no trailing
/// zero limbs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Big(Vec<u32>);

impl PartialOrd for Big {
    fn partial_cmp(&self, other: &Big) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Big {
    fn cmp(&self, other: &Big) -> std::cmp::Ordering {
        self.0
            .len()
            .cmp(&other.0.len())
            .then_with(|| self.0.iter().rev().cmp(other.0.iter().rev()))
    }
}

impl Big {
    fn from_u64(n: u64) -> Big {
        Big(vec![n as u32, (n >> 32) as u32]).trimmed()
    }

    fn trimmed(mut self) -> Big {
        while self.0.last() == Some(&0) {
            self.0.pop();
        }
        self
    }

    fn is_zero(&self) -> bool {
        self.0.is_empty()
    }

    fn bit_len(&self) -> usize {
        self.0
            .last()
            .map_or(0, |top| self.0.len() * 32 - top.leading_zeros() as usize)
    }

    fn bit(&self, i: usize) -> bool {
        self.0.get(i / 32).is_some_and(|l| l >> (i % 32) & 1 == 1)
    }

    /// Whether any bit below bit `i` is set.
    fn any_below(&self, i: usize) -> bool {
        let (limbs, bits) = (i / 32, i % 32);
        self.0.iter().take(limbs).any(|&l| l != 0)
            || (bits > 0
                && self
                    .0
                    .get(limbs)
                    .is_some_and(|l| l & ((1 << bits) - 1) != 0))
    }

    fn low_u64(&self) -> u64 {
        let lo = u64::from(self.0.first().copied().unwrap_or(0));
        let hi = u64::from(self.0.get(1).copied().unwrap_or(0));
        lo | hi << 32
    }

    fn mul_small(&self, m: u32) -> Big {
        let mut carry = 0u64;
        let mut out: Vec<u32> = self
            .0
            .iter()
            .map(|&l| {
                let v = u64::from(l) * u64::from(m) + carry;
                carry = v >> 32;
                v as u32
            })
            .collect();
        out.push(carry as u32);
        Big(out).trimmed()
    }

    fn mul_pow10(&self, n: u32) -> Big {
        let mut x = self.clone();
        for _ in 0..n / 9 {
            x = x.mul_small(1_000_000_000);
        }
        x.mul_small(10u32.pow(n % 9))
    }

    fn add(&self, other: &Big) -> Big {
        let n = self.0.len().max(other.0.len());
        let mut out = Vec::with_capacity(n + 1);
        let mut carry = 0u64;
        for i in 0..n {
            let v = u64::from(self.0.get(i).copied().unwrap_or(0))
                + u64::from(other.0.get(i).copied().unwrap_or(0))
                + carry;
            out.push(v as u32);
            carry = v >> 32;
        }
        out.push(carry as u32);
        Big(out).trimmed()
    }

    /// `self - other`; `self` must be at least `other`.
    fn sub(&self, other: &Big) -> Big {
        let mut out = Vec::with_capacity(self.0.len());
        let mut borrow = 0i64;
        for (i, &l) in self.0.iter().enumerate() {
            let mut v = i64::from(l) - i64::from(other.0.get(i).copied().unwrap_or(0)) - borrow;
            borrow = i64::from(v < 0);
            if v < 0 {
                v += 1 << 32;
            }
            out.push(v as u32);
        }
        Big(out).trimmed()
    }

    fn shl(&self, n: usize) -> Big {
        if self.is_zero() {
            return Big::default();
        }
        let (limbs, bits) = (n / 32, n % 32);
        let mut out = vec![0u32; limbs];
        let mut carry = 0u32;
        for &l in &self.0 {
            out.push((l << bits) | carry);
            carry = if bits == 0 { 0 } else { l >> (32 - bits) };
        }
        out.push(carry);
        Big(out).trimmed()
    }

    fn shr(&self, n: usize) -> Big {
        let (limbs, bits) = (n / 32, n % 32);
        if limbs >= self.0.len() {
            return Big::default();
        }
        let src = &self.0[limbs..];
        let out = (0..src.len())
            .map(|i| {
                let hi = if bits == 0 {
                    0
                } else {
                    src.get(i + 1).map_or(0, |h| h << (32 - bits))
                };
                (src[i] >> bits) | hi
            })
            .collect();
        Big(out).trimmed()
    }

    /// `self / 2^n`, rounded to nearest, ties to even.
    fn shr_round_even(&self, n: usize) -> Big {
        let q = self.shr(n);
        if n == 0 || !self.bit(n - 1) {
            return q;
        }
        if self.any_below(n - 1) || q.bit(0) {
            q.add(&Big::from_u64(1))
        } else {
            q
        }
    }

    /// The quotient by `den`, and whether a remainder is left (binary
    /// long division: the quotients here have under a hundred bits).
    fn div_rem_nonzero(&self, den: &Big) -> (Big, bool) {
        let mut rem = self.clone();
        let mut q = Big::default();
        if *self < *den {
            return (q, !self.is_zero());
        }
        let top = self.bit_len() - den.bit_len();
        for i in (0..=top).rev() {
            let d = den.shl(i);
            if rem >= d {
                rem = rem.sub(&d);
                q = q.add(&Big::from_u64(1).shl(i));
            }
        }
        (q, !rem.is_zero())
    }

    /// Divides by `d` in place; the remainder.
    fn div_small(&mut self, d: u32) -> u32 {
        let mut rem = 0u64;
        for l in self.0.iter_mut().rev() {
            let v = (rem << 32) | u64::from(*l);
            *l = (v / u64::from(d)) as u32;
            rem = v % u64::from(d);
        }
        *self = std::mem::take(self).trimmed();
        rem as u32
    }

    fn to_decimal(&self) -> String {
        if self.is_zero() {
            return "0".into();
        }
        let mut x = self.clone();
        let mut chunks = Vec::new();
        while !x.is_zero() {
            chunks.push(x.div_small(1_000_000_000));
        }
        let mut s = chunks.pop().unwrap_or(0).to_string();
        for c in chunks.iter().rev() {
            s.push_str(&format!("{c:09}"));
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn incr(a: &str, b: &str) -> String {
        let x = LongDouble::parse(a.as_bytes()).expect("a");
        let y = LongDouble::parse(b.as_bytes()).expect("b");
        x.add(y).to_human_string()
    }

    #[test]
    fn sums_print_as_redis_prints_them() {
        assert_eq!(incr("10.5", "0.1"), "10.6");
        assert_eq!(incr("0.1", "0.2"), "0.3");
        assert_eq!(incr("5.0e3", "2.0e2"), "5200");
        assert_eq!(incr("1", "-1"), "0");
        assert_eq!(incr("1.5e-20", "0"), "0");
        assert_eq!(incr("17179869184", "1.5"), "17179869185.5");
    }

    #[test]
    fn strtold_refuses_what_redis_refuses() {
        for bad in [
            "", " 1", "1 ", "nan", "1e", "abc", "1e-99999", "1e99999", ".",
        ] {
            assert!(LongDouble::parse(bad.as_bytes()).is_none(), "{bad}");
        }
        assert!(!LongDouble::parse(b"inf").expect("inf").is_finite());
        assert!(LongDouble::parse(b"0x1.8p3").is_some());
    }
}
