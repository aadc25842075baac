//! A script's shebang line, as Redis 7.0 reads it (`#!lua flags=...`):
//! the first line of a script that starts with `#!` names its engine,
//! which must be `lua`, and may declare flags. A script with a shebang
//! leaves Redis's compatibility mode; of its flags, `no-writes` (the
//! script may not write, and may run on a replica and through `EVAL_RO`)
//! and `allow-oom` (it may run over `maxmemory`) change what the node
//! does. The others (`allow-stale`, `no-cluster`,
//! `allow-cross-slot-keys`) are accepted and have nothing to act on here.

/// What a script declared in its shebang.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ScriptFlags {
    /// It has a shebang: it is out of compatibility mode.
    pub declared: bool,
    /// `flags=no-writes`: a read-only script.
    pub no_writes: bool,
    /// `flags=allow-oom`: may run when memory is over `maxmemory`.
    pub allow_oom: bool,
}

impl ScriptFlags {
    /// Whether Redis refuses the script's command when memory is over
    /// `maxmemory`: it declared a shebang with neither `no-writes` nor
    /// `allow-oom` (a script in compatibility mode starts, and only its
    /// growing calls are refused).
    pub fn denies_oom(&self) -> bool {
        self.declared && !self.no_writes && !self.allow_oom
    }
}

/// The flags Redis 7.0 knows.
const KNOWN_FLAGS: [&str; 5] = [
    "no-writes",
    "allow-oom",
    "allow-stale",
    "no-cluster",
    "allow-cross-slot-keys",
];

/// Reads the shebang of `body`, if it has one: its flags and the length
/// of the line before its line feed (the code compiled starts at the line
/// feed, so that line numbers stay the user's). The error is Redis's text,
/// without its `ERR ` prefix.
pub(crate) fn parse(body: &[u8]) -> Result<(ScriptFlags, usize), String> {
    if !body.starts_with(b"#!") {
        return Ok((ScriptFlags::default(), 0));
    }
    let Some(end) = body.iter().position(|&b| b == b'\n') else {
        return Err("Invalid script shebang".into());
    };
    let line = String::from_utf8_lossy(&body[..end]);
    let mut parts = line.split_ascii_whitespace();
    let engine = parts.next().unwrap_or_default();
    if engine != "#!lua" {
        return Err(format!("Unexpected engine in script shebang: {engine}"));
    }
    let mut flags = ScriptFlags {
        declared: true,
        ..ScriptFlags::default()
    };
    for part in parts {
        let Some(list) = part.strip_prefix("flags=") else {
            return Err(format!("Unknown lua shebang option: {part}"));
        };
        for flag in list.split(',').filter(|f| !f.is_empty()) {
            if !KNOWN_FLAGS.contains(&flag) {
                return Err(format!("Unexpected flag in script shebang: {flag}"));
            }
            flags.no_writes |= flag == "no-writes";
            flags.allow_oom |= flag == "allow-oom";
        }
    }
    Ok((flags, end))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_script_without_a_shebang_is_in_compatibility_mode() {
        assert_eq!(parse(b"return 1"), Ok((ScriptFlags::default(), 0)));
    }

    #[test]
    fn the_flags_are_read_and_the_line_feed_kept() {
        let (flags, skip) = parse(b"#!lua flags=no-writes,allow-stale\nreturn 1").unwrap();
        assert!(flags.declared && flags.no_writes);
        assert_eq!(skip, 33);
        let (flags, _) = parse(b"#!lua flags=\nreturn 1").unwrap();
        assert!(flags.declared && !flags.no_writes);
    }

    #[test]
    fn a_bad_shebang_is_refused_with_redis_words() {
        assert_eq!(parse(b"#!lua").unwrap_err(), "Invalid script shebang");
        assert_eq!(
            parse(b"#!python\n").unwrap_err(),
            "Unexpected engine in script shebang: #!python"
        );
        assert_eq!(
            parse(b"#!lua flags=bogus\n").unwrap_err(),
            "Unexpected flag in script shebang: bogus"
        );
        assert_eq!(
            parse(b"#!lua name=x\n").unwrap_err(),
            "Unknown lua shebang option: name=x"
        );
    }
}
