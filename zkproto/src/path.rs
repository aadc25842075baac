//! ZooKeeper's node paths: the rules both its client and its server check
//! (`PathUtils.validatePath`), a path's parent and last name, and the
//! sequence number a sequential node's name ends with.

use std::fmt;

/// Why a path is not a valid node path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadPath {
    /// The path.
    pub path: String,
    /// What is wrong with it, in ZooKeeper's words.
    pub reason: String,
}

impl fmt::Display for BadPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Invalid path string \"{}\" caused by {}",
            self.path, self.reason
        )
    }
}

impl std::error::Error for BadPath {}

/// Checks `path` as ZooKeeper does before a request: absolute, no empty
/// name, no `.` or `..` name, no trailing `/` (a sequential node's prefix
/// may end in `/`: its sequence number follows), no control or private-use
/// characters.
pub fn validate(path: &str, sequential: bool) -> Result<(), BadPath> {
    let bad = |reason: &str| {
        Err(BadPath {
            path: path.to_string(),
            reason: reason.to_string(),
        })
    };
    if path.is_empty() {
        return bad("path length must be > 0");
    }
    if !path.starts_with('/') {
        return bad("path must start with / character");
    }
    if path.len() == 1 {
        // The root; with a sequence number after it, a child of the root.
        return Ok(());
    }
    if path.ends_with('/') && !sequential {
        return bad("path must not end with / character");
    }
    let names: Vec<&str> = path[1..].split('/').collect();
    for (i, name) in names.iter().enumerate() {
        let last = i + 1 == names.len();
        if name.is_empty() && !(last && sequential) {
            return bad(&format!(
                "empty node name specified @{}",
                position_of(path, i)
            ));
        }
        if *name == "." || *name == ".." {
            // ZooKeeper points at the name's last dot.
            let at = position_of(path, i) + name.len() - 1;
            return bad(&format!("relative paths not allowed @{at}"));
        }
    }
    if let Some((at, c)) = path.char_indices().find(|(_, c)| forbidden(*c)) {
        let reason = if c == '\0' {
            format!("null character not allowed @{at}")
        } else {
            format!("invalid character @{at}")
        };
        return bad(&reason);
    }
    Ok(())
}

/// The byte where the `i`-th name (0: the first after the root) begins.
fn position_of(path: &str, i: usize) -> usize {
    path.match_indices('/').nth(i).map_or(0, |(at, _)| at + 1)
}

/// The characters ZooKeeper refuses in a path.
fn forbidden(c: char) -> bool {
    matches!(c,
        '\u{0}'..='\u{1f}'
        | '\u{7f}'..='\u{9f}'
        | '\u{e000}'..='\u{f8ff}'
        | '\u{fff0}'..='\u{ffff}')
}

/// The path of a node's parent (`/` for a child of the root); `None` for
/// the root.
pub fn parent(path: &str) -> Option<&str> {
    if path == "/" {
        return None;
    }
    match path.rfind('/') {
        Some(0) => Some("/"),
        Some(at) => Some(&path[..at]),
        None => None,
    }
}

/// A node's own name: what follows the last `/`.
pub fn name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// The path a sequential create with prefix `prefix` gets when its
/// parent's child version is `cversion`: the prefix and the number in ten
/// digits (`%010d`, so a negative one after the counter wraps keeps its
/// sign).
pub fn sequential(prefix: &str, cversion: i32) -> String {
    format!("{prefix}{cversion:010}")
}

/// The sequence number a sequential node's name ends with, if it ends
/// with ten digits.
pub fn sequence_of(name: &str) -> Option<i32> {
    let digits = name.get(name.len().checked_sub(10)?..)?;
    if digits.bytes().all(|b| b.is_ascii_digit()) {
        digits.parse().ok()
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absolute_paths_without_empty_or_relative_names_are_valid() {
        for ok in ["/", "/a", "/a/b-c_d", "/zookeeper/config", "/locks/é"] {
            assert_eq!(validate(ok, false), Ok(()), "{ok}");
        }
    }

    #[test]
    fn each_broken_rule_says_which_in_zookeepers_words() {
        let reason = |p: &str| validate(p, false).unwrap_err().reason;
        assert_eq!(reason(""), "path length must be > 0");
        assert_eq!(reason("a"), "path must start with / character");
        assert_eq!(reason("/a/"), "path must not end with / character");
        assert_eq!(reason("/a//b"), "empty node name specified @3");
        assert_eq!(reason("/a/../b"), "relative paths not allowed @4");
        assert_eq!(reason("/a/./b"), "relative paths not allowed @3");
        assert_eq!(reason("/a\u{1}"), "invalid character @2");
        assert_eq!(reason("/a\0"), "null character not allowed @2");
    }

    #[test]
    fn a_sequential_prefix_may_end_in_a_slash() {
        assert_eq!(validate("/locks/", true), Ok(()));
        assert!(validate("/locks/", false).is_err());
        assert_eq!(sequential("/locks/", 7), "/locks/0000000007");
    }

    #[test]
    fn parents_names_and_sequence_numbers() {
        assert_eq!(parent("/"), None);
        assert_eq!(parent("/a"), Some("/"));
        assert_eq!(parent("/a/b/c"), Some("/a/b"));
        assert_eq!(name("/a/lock-0000000012"), "lock-0000000012");
        assert_eq!(sequence_of("lock-0000000012"), Some(12));
        assert_eq!(sequence_of("lock-12"), None);
        assert_eq!(sequential("/p/n-", -1), "/p/n--000000001");
    }
}
