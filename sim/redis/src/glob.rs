//! Redis's glob-style matching (`stringmatchlen` of `util.c`): `*`, `?`,
//! `[abc]`, `[^a-z]` and `\` escapes, byte by byte: how `KEYS`, `SCAN`'s
//! `MATCH` and `PSUBSCRIBE` patterns match (case-sensitively) and `CONFIG
//! GET`'s match parameter names (ignoring case).

/// Whether `pattern` matches all of `s`.
pub(crate) fn matches(pattern: &[u8], s: &[u8]) -> bool {
    match_from(pattern, s, 0, false, &mut false)
}

/// Whether `pattern` matches all of `s`, ignoring ASCII case (Redis's
/// `nocase`).
pub(crate) fn matches_nocase(pattern: &[u8], s: &[u8]) -> bool {
    match_from(pattern, s, 0, true, &mut false)
}

/// Whether two bytes are equal, ignoring ASCII case when `nocase`.
fn same(a: u8, b: u8, nocase: bool) -> bool {
    a == b || (nocase && a.eq_ignore_ascii_case(&b))
}

/// The recursion of `stringmatchlen`, bounded as Redis bounds it: at most
/// 1000 stars deep, and once the rest of the pattern after a star matched
/// nowhere in the rest of the string, no earlier star tries a longer match
/// (`skip_longer`, Redis's `skipLongerMatches`), so a pattern of many stars
/// fails in polynomial, not exponential, time.
fn match_from(
    mut p: &[u8],
    mut s: &[u8],
    depth: u32,
    nocase: bool,
    skip_longer: &mut bool,
) -> bool {
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
                while !s.is_empty() {
                    if match_from(&p[1..], s, depth + 1, nocase, skip_longer) {
                        return true;
                    }
                    if *skip_longer {
                        return false;
                    }
                    s = &s[1..];
                }
                *skip_longer = true;
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
                let (hit, after) = class(&p[1..], sc, nocase);
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
                if !s.first().is_some_and(|&b| same(b, p[0], nocase)) {
                    return false;
                }
                s = &s[1..];
            }
            _ => {
                if !s.first().is_some_and(|&b| same(b, c, nocase)) {
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
fn class(mut p: &[u8], c: u8, nocase: bool) -> (bool, &[u8]) {
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
                hit |= same(*e, c, nocase);
                p = &p[2..];
            }
            [lo, b'-', hi, ..] => {
                let (lo, hi) = if lo <= hi { (*lo, *hi) } else { (*hi, *lo) };
                hit |= (lo..=hi).contains(&c)
                    || (nocase && (lo..=hi).contains(&c.to_ascii_lowercase()))
                    || (nocase && (lo..=hi).contains(&c.to_ascii_uppercase()));
                p = &p[3..];
            }
            [x, ..] => {
                hit |= same(*x, c, nocase);
                p = &p[1..];
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{matches, matches_nocase};

    #[test]
    fn keys_patterns_match_as_redis_matches_them() {
        let cases: &[(&str, &str, bool)] = &[
            ("*", "anything", true),
            ("h?llo", "hello", true),
            ("h?llo", "hllo", false),
            ("h*llo", "heeeello", true),
            ("h[ae]llo", "hallo", true),
            ("h[ae]llo", "hillo", false),
            ("h[^e]llo", "hallo", true),
            ("h[^e]llo", "hello", false),
            ("h[a-b]llo", "hbllo", true),
            ("h[b-a]llo", "hbllo", true),
            ("h\\*llo", "h*llo", true),
            ("h\\*llo", "hello", false),
            ("a[", "a[", false),
            ("a[bc", "ab", true),
            ("*a*", "", false),
            ("", "", true),
            ("a*", "a", true),
        ];
        for (p, s, want) in cases {
            assert_eq!(matches(p.as_bytes(), s.as_bytes()), *want, "{p} {s}");
        }
    }

    #[test]
    fn many_stars_fail_fast_as_in_redis() {
        let long = [b'a'; 200];
        let pattern = [b"a*".repeat(40), b"b".to_vec()].concat();
        assert!(!matches(&pattern, &long));
        assert!(matches(&[b"a*".repeat(40), b"a".to_vec()].concat(), &long));
    }

    #[test]
    fn config_names_match_ignoring_case() {
        assert!(matches_nocase(b"hash-max-*", b"hash-max-ziplist-value"));
        assert!(matches_nocase(b"MAXMEMORY", b"maxmemory"));
        assert!(matches_nocase(b"max[a-m]emory", b"maxmemory"));
        assert!(!matches_nocase(b"max[^m]emory", b"maxmemory"));
        assert!(matches_nocase(b"?z", b"hz"));
        assert!(!matches_nocase(b"z", b"hz"));
        assert!(!matches(b"MAXMEMORY", b"maxmemory"));
    }

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
