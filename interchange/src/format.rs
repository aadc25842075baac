//! The history formats `locklab check` reads, and reading a file in one
//! of them: size-limited, UTF-8 only, and checked well formed.

use crate::error::BadHistory;
use crate::jepsen_edn::read_edn;
use crate::jepsen_json::read_json;
use crate::locklab_format::read_locklab;
use crate::op::Op;
use crate::porcupine::read_porcupine;
use crate::wellformed::check_well_formed;
use std::io::Read;
use std::path::Path;

/// The largest history file read, bytes (1 GiB): a larger one is refused
/// by its size, before any of it is read.
pub const MAX_HISTORY_BYTES: u64 = 1 << 30;

/// A history format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    /// locklab's own `history.jsonl`.
    Locklab,
    /// Jepsen's EDN (`history.edn`).
    JepsenEdn,
    /// Jepsen's operations as JSON (elle-cli's input; users' own logs).
    JepsenJson,
    /// Porcupine's operations as JSON.
    Porcupine,
}

impl Format {
    /// Every format, in the order `--format` lists them.
    pub const ALL: [Format; 4] = [
        Format::Locklab,
        Format::JepsenEdn,
        Format::JepsenJson,
        Format::Porcupine,
    ];

    /// The name `--format` gives it.
    pub fn name(self) -> &'static str {
        match self {
            Format::Locklab => "locklab",
            Format::JepsenEdn => "jepsen-edn",
            Format::JepsenJson => "jepsen-json",
            Format::Porcupine => "porcupine",
        }
    }

    /// The format named `name`.
    pub fn from_name(name: &str) -> Option<Format> {
        Format::ALL.into_iter().find(|f| f.name() == name)
    }

    /// The format a file's name says: `history.jsonl` is locklab's own,
    /// `.edn` Jepsen's EDN, `.json` and `.jsonl` Jepsen's JSON; `None`
    /// when the name does not say (Porcupine's files have no name of
    /// their own).
    pub fn of_path(path: &Path) -> Option<Format> {
        if path.file_name().is_some_and(|name| name == "history.jsonl") {
            return Some(Format::Locklab);
        }
        match path.extension()?.to_str()? {
            "edn" => Some(Format::JepsenEdn),
            "json" | "jsonl" => Some(Format::JepsenJson),
            _ => None,
        }
    }
}

impl std::fmt::Display for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Reads the history `text` of `file` in `format` and checks it well
/// formed ([`check_well_formed`]).
pub fn read(file: &str, text: &str, format: Format) -> Result<Vec<Op>, BadHistory> {
    let ops = match format {
        Format::Locklab => read_locklab(file, text)?,
        Format::JepsenEdn => read_edn(file, text)?,
        Format::JepsenJson => read_json(file, text)?,
        Format::Porcupine => read_porcupine(file, text)?,
    };
    check_well_formed(file, &ops)?;
    Ok(ops)
}

/// Reads the history file at `path` in `format` ([`read`]). A file larger
/// than [`MAX_HISTORY_BYTES`] is refused by its size without being read;
/// one that is not UTF-8 is refused at the first line that is not.
pub fn read_file(path: &Path, format: Format) -> Result<Vec<Op>, BadHistory> {
    let text = read_text(path)?;
    read(&path.display().to_string(), &text, format)
}

/// The text of the history file at `path`, refused as [`read_file`]
/// refuses it (too large, not UTF-8), for a caller that reads it in more
/// than one way.
pub fn read_text(path: &Path) -> Result<String, BadHistory> {
    let file = path.display().to_string();
    let whole = |expected: &str, found: String| BadHistory::at(file.as_str(), 0, expected, found);
    let opened = std::fs::File::open(path).map_err(|e| whole("a readable file", e.to_string()))?;
    let size = opened
        .metadata()
        .map_err(|e| whole("a readable file", e.to_string()))?
        .len();
    if size > MAX_HISTORY_BYTES {
        return Err(whole(
            &format!("a history of at most {MAX_HISTORY_BYTES} bytes (1 GiB)"),
            format!("{size} bytes"),
        ));
    }
    let mut bytes = Vec::with_capacity(size as usize);
    // The limit holds even if the file grows while it is read.
    opened
        .take(MAX_HISTORY_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| whole("a readable file", e.to_string()))?;
    if bytes.len() as u64 > MAX_HISTORY_BYTES {
        return Err(whole(
            &format!("a history of at most {MAX_HISTORY_BYTES} bytes (1 GiB)"),
            "a file that grew past it while read".into(),
        ));
    }
    let text = String::from_utf8(bytes).map_err(|e| {
        let valid = e.utf8_error().valid_up_to();
        let line = 1 + e.as_bytes()[..valid]
            .iter()
            .filter(|&&b| b == b'\n')
            .count();
        BadHistory::at(
            file.as_str(),
            line,
            "UTF-8 text",
            format!("a byte that is not UTF-8 at byte {valid}"),
        )
    })?;
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs::File;
    use std::io::Write;

    fn temp_dir(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("interchange-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn every_format_reads_back_from_its_name() {
        for format in Format::ALL {
            assert_eq!(Format::from_name(format.name()), Some(format));
        }
        assert_eq!(Format::from_name("knossos"), None);
    }

    #[test]
    fn a_file_over_one_gib_is_refused_by_its_size() {
        let dir = temp_dir("big");
        let path = dir.join("big.edn");
        File::create(&path).unwrap().set_len(2 << 30).unwrap();
        let err = read_file(&path, Format::JepsenEdn).unwrap_err();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(err.line, 0);
        assert_eq!(err.found, format!("{} bytes", 2u64 << 30));
    }

    #[test]
    fn a_file_that_is_not_utf8_is_refused_at_its_line() {
        let dir = temp_dir("utf8");
        let path = dir.join("bad.json");
        let mut file = File::create(&path).unwrap();
        file.write_all(b"{\"process\":0,\"type\":\"invoke\",\"f\":\"read\"}\n{\"f\":\"\xff\"}\n")
            .unwrap();
        drop(file);
        let err = read_file(&path, Format::JepsenJson).unwrap_err();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(err.line, 2);
        assert_eq!(err.expected, "UTF-8 text");
    }

    #[test]
    fn a_missing_file_is_refused_as_a_whole() {
        let err = read_file(Path::new("/nonexistent/history.edn"), Format::JepsenEdn).unwrap_err();
        assert_eq!(err.line, 0);
    }

    #[test]
    fn read_refuses_a_history_that_is_not_well_formed() {
        let err = read(
            "h.json",
            r#"{"process":0,"type":"ok","f":"read"}"#,
            Format::JepsenJson,
        )
        .unwrap_err();
        assert_eq!(err.line, 1);
    }
}
