//! One history as `locklab check` takes it: read in its format, with what
//! it declares about its own judging, then judged ([`crate::judging`]).

use crate::error::BadHistory;
use crate::export::header_of;
use crate::format::{Format, read};
use crate::judging::{Judgement, Model, Reading, claims_of, judge, model_of};
use crate::locklab_format::{client_count, read_history};
use crate::op::Op;
use judge::check::CheckConfig;
use std::time::Duration;

/// A history read, with what it declares about its own judging.
#[derive(Debug, Clone, PartialEq)]
pub struct ReadHistory {
    /// The file, as named.
    pub file: String,
    /// Its format.
    pub format: Format,
    /// Its operations, well formed, in the file's order.
    pub ops: Vec<Op>,
    /// How they become locklab's history.
    pub reading: Reading,
    /// How locklab judged it, when locklab recorded it: its cell's
    /// configuration (from an export's header, or given by the caller for
    /// a run folder).
    pub declared: Option<CheckConfig>,
}

/// Reads `text`, the history `file` in `format`; `declared` is the cell's
/// configuration when it is known from elsewhere (a run folder's
/// scenario), and an exported history's own header overrides it.
pub fn read_history_text(
    file: &str,
    text: &str,
    format: Format,
    declared: Option<CheckConfig>,
) -> Result<ReadHistory, BadHistory> {
    let ops = read(file, text, format)?;
    let header = header_of(&ops).transpose().map_err(|e| e.in_file(file))?;
    let (reading, declared) = match (&header, format) {
        (Some(header), _) => (
            Reading::Locklab {
                clients: header.clients,
            },
            Some(header.check_config()),
        ),
        (None, Format::Locklab) => (
            Reading::Locklab {
                clients: client_count(&read_history(file, text)?),
            },
            declared,
        ),
        (None, _) => (Reading::Foreign, None),
    };
    Ok(ReadHistory {
        file: file.to_string(),
        format,
        ops,
        reading,
        declared,
    })
}

/// Judges `read` against `model` (else the model it declares, else
/// `owner-mutex`), with liveness judged within `liveness_bound` when
/// given (else as it declares).
pub fn judge_read(
    read: &ReadHistory,
    model: Option<Model>,
    liveness_bound: Option<Duration>,
) -> Result<Judgement, BadHistory> {
    let declared = read.declared.as_ref();
    let model = model
        .or_else(|| declared.map(model_of))
        .unwrap_or(Model::OwnerMutex);
    let mut claims = declared.map(claims_of).unwrap_or_default();
    if liveness_bound.is_some() {
        claims.liveness_bound = liveness_bound;
    }
    judge(&read.file, &read.ops, read.reading, model, &claims)
}

/// Reads and judges `text` as [`read_history_text`] and [`judge_read`]
/// do with nothing given beyond the text.
pub fn judge_text(file: &str, text: &str, format: Format) -> Result<Judgement, BadHistory> {
    judge_read(&read_history_text(file, text, format, None)?, None, None)
}
