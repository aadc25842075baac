//! Redis's glob-style matching (`stringmatchlen` of `util.c`): `*`, `?`,
//! `[abc]`, `[^a-z]` and `\` escapes, byte by byte, as `PSUBSCRIBE`
//! patterns match channels.

/// Whether `pattern` matches all of `s`.
pub(crate) fn matches(pattern: &[u8], s: &[u8]) -> bool {
    match_from(pattern, s, 0)
}

/// The recursion of `stringmatchlen`, bounded as Redis bounds it (a
/// pattern with many stars gives up rather than taking exponential time).
fn match_from(mut p: &[u8], mut s: &[u8], depth: u32) -> bool {
    if depth > 1000 {
        return false;
    }
    while let Some(&c) = p.first() {
        match c {
            b'*' => {
                while p.len() > 1 && p[1] == b'*' {
                    p = &p[1..];
                }
                if p.len() == 1 {
                    return true;
                }
                for i in 0..=s.len() {
                    if match_from(&p[1..], &s[i..], depth + 1) {
                        return true;
                    }
                }
                return false;
            }
            b'?' => {
                if s.is_empty() {
                    return false;
                }
                s = &s[1..];
            }
            b'[' => {
                let Some((&sc, rest)) = s.split_first() else {
                    return false;
                };
                let (hit, after) = class(&p[1..], sc);
                if !hit {
                    return false;
                }
                s = rest;
                // `after` starts at the closing `]` (or the pattern's end).
                p = after;
                if p.is_empty() {
                    return s.is_empty();
                }
            }
            b'\\' if p.len() >= 2 => {
                p = &p[1..];
                if s.first() != Some(&p[0]) {
                    return false;
                }
                s = &s[1..];
            }
            _ => {
                if s.first() != Some(&c) {
                    return false;
                }
                s = &s[1..];
            }
        }
        p = &p[1..];
        if s.is_empty() {
            while p.first() == Some(&b'*') {
                p = &p[1..];
            }
            return p.is_empty();
        }
    }
    s.is_empty()
}

/// Matches byte `c` against a `[...]` class whose body starts at `p`;
/// returns whether it matched and the pattern from the class's closing
/// `]` on (Redis treats an unclosed class as ending with the pattern).
fn class(mut p: &[u8], c: u8) -> (bool, &[u8]) {
    let negate = p.first() == Some(&b'^');
    if negate {
        p = &p[1..];
    }
    let mut hit = false;
    loop {
        match p {
            [] => return (hit != negate, p),
            [b']', ..] => return (hit != negate, p),
            [b'\\', e, ..] => {
                hit |= *e == c;
                p = &p[2..];
            }
            [lo, b'-', hi, ..] => {
                let (lo, hi) = if lo <= hi { (*lo, *hi) } else { (*hi, *lo) };
                hit |= (lo..=hi).contains(&c);
                p = &p[3..];
            }
            [x, ..] => {
                hit |= *x == c;
                p = &p[1..];
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::matches;

    #[test]
    fn globs_match_as_in_redis() {
        assert!(matches(b"foo*", b"foobar"));
        assert!(matches(b"*", b""));
        assert!(matches(b"f?o", b"fxo"));
        assert!(!matches(b"f?o", b"fo"));
        assert!(matches(b"h[ae]llo", b"hallo"));
        assert!(!matches(b"h[^e]llo", b"hello"));
        assert!(matches(b"h[a-c]llo", b"hbllo"));
        assert!(matches(b"a\\*b", b"a*b"));
        assert!(!matches(b"a\\*b", b"axb"));
        assert!(matches(b"news.*", b"news.art"));
        assert!(!matches(b"news.*", b"new"));
    }
}
