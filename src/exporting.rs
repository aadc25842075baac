//! `--export FORMAT FILE` of `run` and `replay`: a run's history written
//! in Jepsen's format, with the header that lets `locklab check` judge it
//! as its cell was judged (`docs/check.md`).

use interchange::export::{Header, to_ops, write_edn, write_json};
use model::history::History;
use std::path::{Path, PathBuf};

/// The formats a history can be exported in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportFormat {
    /// Jepsen's EDN, one operation a line.
    JepsenEdn,
    /// Jepsen's operations as JSON, one a line.
    JepsenJson,
}

/// Where to export a run: `--export FORMAT FILE`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Export {
    /// The format.
    pub format: ExportFormat,
    /// The file written.
    pub file: PathBuf,
}

impl Export {
    /// The export `--export` asked for (its two values), or why not.
    pub fn parse(values: &[String]) -> Result<Export, String> {
        let [format, file] = values else {
            return Err("--export: expected a format and a file".to_string());
        };
        let format = match format.as_str() {
            "jepsen-edn" => ExportFormat::JepsenEdn,
            "jepsen-json" => ExportFormat::JepsenJson,
            other => {
                return Err(format!(
                    "--export {other}: expected jepsen-edn or jepsen-json"
                ));
            }
        };
        Ok(Export {
            format,
            file: PathBuf::from(file),
        })
    }
}

/// The text of `history` in `format`, after `header`.
pub fn text(history: &History, header: &Header, format: ExportFormat) -> String {
    let ops = to_ops(history, header);
    match format {
        ExportFormat::JepsenEdn => write_edn(&ops),
        ExportFormat::JepsenJson => write_json(&ops),
    }
}

/// Writes `history` with `header` as `export` asks.
pub fn write(history: &History, header: &Header, export: &Export) -> Result<(), String> {
    write_file(&export.file, &text(history, header, export.format))
}

fn write_file(path: &Path, text: &str) -> Result<(), String> {
    harness::atomic::write_whole(path, text).map_err(|e| format!("{}: {e}", path.display()))
}
