//! Glob-style patterns as Redis's `stringmatchlen` matches them (`*`, `?`,
//! `[abc]`, `[^a-z]`, `\x`), for the `MATCH` option of `SSCAN` and `ZSCAN`.

/// Whether `text` matches `pattern`, case-sensitively.
pub(crate) fn matches(pattern: &[u8], text: &[u8]) -> bool {
    match_from(pattern, text, 0)
}

/// Matching with a bound on recursion, as Redis bounds its `*` nesting (a
/// pattern of many stars cannot take exponential time or the stack).
fn match_from(mut p: &[u8], mut s: &[u8], depth: usize) -> bool {
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
                for start in 0..=s.len() {
                    if match_from(&p[1..], &s[start..], depth + 1) {
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
                let Some(&ch) = s.first() else {
                    return false;
                };
                let (matched, rest) = class(&p[1..], ch);
                if !matched {
                    return false;
                }
                p = rest;
                s = &s[1..];
                // `rest` starts at the closing bracket (or the end).
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
            break;
        }
    }
    p.is_empty() && s.is_empty()
}

/// A bracket class after its `[`: whether `ch` is in it, and the pattern
/// from its closing `]` on (or empty if the class is unterminated, where
/// Redis treats the end of the pattern as the closing bracket).
fn class(mut p: &[u8], ch: u8) -> (bool, &[u8]) {
    let not = p.first() == Some(&b'^');
    if not {
        p = &p[1..];
    }
    let mut matched = false;
    loop {
        match p {
            [] => break,
            [b'\\', c, ..] => {
                matched |= *c == ch;
                p = &p[2..];
            }
            [b']', ..] => break,
            [lo, b'-', hi, ..] => {
                let (lo, hi) = if lo <= hi { (*lo, *hi) } else { (*hi, *lo) };
                matched |= (lo..=hi).contains(&ch);
                p = &p[3..];
            }
            [c, ..] => {
                matched |= *c == ch;
                p = &p[1..];
            }
        }
    }
    (matched != not, p)
}

#[cfg(test)]
mod tests {
    use super::matches;

    #[test]
    fn stars_questions_classes_and_escapes_match_as_in_redis() {
        assert!(matches(b"*", b""));
        assert!(matches(b"a*", b"abc"));
        assert!(matches(b"*c", b"abc"));
        assert!(!matches(b"a?", b"a"));
        assert!(matches(b"h[ae]llo", b"hello"));
        assert!(!matches(b"h[^e]llo", b"hello"));
        assert!(matches(b"h[a-b]llo", b"hbllo"));
        assert!(matches(b"a\\*", b"a*"));
        assert!(!matches(b"a\\*", b"ab"));
        assert!(matches(b"key:*:x", b"key:12:x"));
    }
}
