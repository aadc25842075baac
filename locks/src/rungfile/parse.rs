//! Reading a rung file: its TOML, each table checked, then the rules
//! across tables.

use super::checker::Checker;
use super::format::{Nodes, Operation, OperationKind, Outcome, OwnerMark};
use super::raw::RawFile;
use super::reply::Capture;
use super::{MAX_FILE_BYTES, RungFile, RungFileError, ScriptSource, line_column};
use crate::UnknownRung;
use std::sync::Arc;
use toml::Spanned;

impl RungFile {
    /// Reads a rung file's text; `file` names it in errors.
    pub fn parse(text: &str, file: &str) -> Result<RungFile, RungFileError> {
        let raw = read_toml(text, file)?;
        let check = Checker { text, file };
        let plays = raw.plays.as_ref().map(|p| check.plays(p)).transpose()?;
        let nodes = match &raw.nodes {
            None => Nodes::Single,
            Some(n) => check.nodes(n)?,
        };
        let wait = raw.wait.as_ref().map(|w| check.wait(w)).transpose()?;
        let renewal = raw.renewal.as_ref().map(|r| check.renewal(r)).transpose()?;
        let acquire = check.operation(OperationKind::Acquire, &raw.acquire)?;
        let release = check.operation(OperationKind::Release, &raw.release)?;
        let extend = raw
            .extend
            .as_ref()
            .map(|o| check.operation(OperationKind::Extend, o))
            .transpose()?;
        let reclaim = raw
            .reclaim
            .as_ref()
            .map(|o| check.operation(OperationKind::Reclaim, o))
            .transpose()?;
        check.across_tables(
            &raw,
            nodes,
            extend.is_some(),
            [Some(&acquire), reclaim.as_ref()],
        )?;
        Ok(RungFile {
            id: raw.id.into_inner(),
            file: file.to_string(),
            text: Arc::from(text),
            plays,
            fixes: raw.fixes,
            flaw: raw.flaw,
            token: raw.token,
            nodes,
            wait,
            renewal,
            acquire,
            release,
            extend,
            reclaim,
        })
    }

    /// Every Lua script with the file line it starts on, to be compiled
    /// by a caller that has Lua.
    pub fn scripts(&self) -> Vec<ScriptSource> {
        let raw: RawFile = match toml::from_str(&self.text) {
            Ok(raw) => raw,
            Err(_) => return Vec::new(),
        };
        let ops = [
            ("acquire", Some(&raw.acquire)),
            ("release", Some(&raw.release)),
            ("extend", raw.extend.as_ref()),
            ("reclaim", raw.reclaim.as_ref()),
        ];
        ops.into_iter()
            .filter_map(|(name, op)| {
                let script = op?.get_ref().script.as_ref()?;
                Some(ScriptSource {
                    operation: name,
                    text: script.get_ref().clone(),
                    first_line: first_content_line(&self.text, script.span()),
                })
            })
            .collect()
    }

    /// An error at `line` of this file.
    pub fn error_at(&self, line: usize, message: String) -> RungFileError {
        RungFileError {
            file: self.file.clone(),
            line,
            column: 0,
            message,
        }
    }
}

/// The line a string's content starts on: a multi-line string's first
/// line break right after its opening quotes is not part of it.
fn first_content_line(text: &str, span: std::ops::Range<usize>) -> usize {
    let token = &text[span.start.min(text.len())..span.end.min(text.len())];
    let (line, _) = line_column(text, span.start);
    let multi = token.starts_with("\"\"\"") || token.starts_with("'''");
    let after_quotes = token.get(3..).unwrap_or("");
    if multi && (after_quotes.starts_with('\n') || after_quotes.starts_with("\r\n")) {
        line + 1
    } else {
        line
    }
}

/// The file's TOML, or its error at the place the TOML parser names.
fn read_toml(text: &str, file: &str) -> Result<RawFile, RungFileError> {
    let err = |line, column, message: String| RungFileError {
        file: file.to_string(),
        line,
        column,
        message,
    };
    if text.len() > MAX_FILE_BYTES {
        return Err(err(0, 0, "file too large: more than 1 MiB".into()));
    }
    toml::from_str(text).map_err(|e| {
        let (line, column) = e.span().map_or((0, 0), |s| line_column(text, s.start));
        err(line, column, e.message().trim().to_string())
    })
}

impl Checker<'_> {
    /// The ladder rung a file plays, which must be a built-in one.
    fn plays(&self, plays: &Spanned<String>) -> Result<&'static str, RungFileError> {
        crate::ladder::built_in(plays.get_ref())
            .map(|r| r.id)
            .ok_or_else(|| {
                self.at(
                    plays.span(),
                    format!("`plays`: {}", UnknownRung(plays.get_ref().clone())),
                )
            })
    }

    /// The rules that join tables: what only a single-node lock may do,
    /// and what a table needs of another.
    fn across_tables(
        &self,
        raw: &RawFile,
        nodes: Nodes,
        has_extend: bool,
        granting: [Option<&Operation>; 2],
    ) -> Result<(), RungFileError> {
        let multi = matches!(nodes, Nodes::Independent { .. });
        if let (Some(r), true) = (&raw.reclaim, multi) {
            return Err(self.at(
                r.span(),
                "`reclaim`: only a single-node lock reclaims a lost grant; a failed round of independent nodes is undone on every node".into(),
            ));
        }
        if let (Some(r), true) = (&raw.reclaim, raw.token == OwnerMark::Owner) {
            return Err(self.at(
                r.span(),
                "`reclaim` needs `token = \"random\"`: with the owner's id as the mark, an acquire that finds its own mark is granted by `acquire` itself".into(),
            ));
        }
        if let (Some(r), true) = (&raw.renewal, multi) {
            return Err(self.at(
                r.span(),
                "`renewal`: only a single-node lock renews here (a multi-node lease's validity is set by its acquire)".into(),
            ));
        }
        if let (Some(r), false) = (&raw.renewal, has_extend) {
            return Err(self.at(
                r.span(),
                "`renewal` needs an `[extend]` operation: each renewal runs it".into(),
            ));
        }
        let keeps = |op: &Operation, c| op.captures(Outcome::Granted, c);
        let single_only = granting
            .into_iter()
            .flatten()
            .any(|op| keeps(op, Capture::Depth) || keeps(op, Capture::Fence));
        if multi && single_only {
            return Err(self.at(
                raw.acquire.span(),
                "`granted`: `depth` and `fence` are kept only by a single-node lock".into(),
            ));
        }
        Ok(())
    }
}
