//! `locklab scenarios [--export DIR]`: the built-in scenarios, listed or
//! written out to edit.

use super::Outcome;
use crate::json::{ScenarioEntry, ScenariosResult};
use sim::exit::ExitCode;
use std::path::{Path, PathBuf};

/// The arguments of `locklab scenarios`.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// Write the built-in scenario files into this folder (created if
    /// need be; no existing file is overwritten).
    #[arg(long, value_name = "DIR")]
    pub export: Option<PathBuf>,
    /// Print one JSON document on standard output (docs/json.md); the
    /// human text goes to standard error.
    #[arg(long)]
    pub json: bool,
}

/// `locklab scenarios`: the list (or what was written) for the document,
/// when it could be made.
pub fn execute(args: Args) -> Outcome<ScenariosResult> {
    let mut result = ScenariosResult::default();
    let code = list_or_export(args.export.as_deref(), &mut result);
    let listed = code == ExitCode::Success;
    Outcome::new(code, listed.then_some(result))
}

/// `locklab scenarios [--export DIR]`: lists the built-in scenarios, or
/// writes them out (overwriting nothing); `result` gets what `--json`
/// prints.
fn list_or_export(export: Option<&Path>, result: &mut ScenariosResult) -> ExitCode {
    let Some(dir) = export else {
        let all = match crate::builtin::load() {
            Ok(all) => all,
            Err(e) => {
                crate::error!("{e}");
                return ExitCode::BadInput;
            }
        };
        outln!("{:<36} rungs", "built-in scenario");
        for scenario in all {
            outln!("{:<36} {}", scenario.name, scenario.rungs.join(", "));
            result.scenarios.push(ScenarioEntry {
                name: scenario.name,
                rungs: scenario.rungs,
            });
        }
        return ExitCode::Success;
    };
    match crate::builtin::export(dir) {
        Ok(written) => {
            for path in &written {
                outln!("{}", path.display());
            }
            result.exported_to = Some(dir.display().to_string());
            result.written = written.iter().map(|p| p.display().to_string()).collect();
            eprintln!(
                "{} scenario files written to {}; `locklab suite --scenarios {}` runs them",
                written.len(),
                dir.display(),
                dir.display()
            );
            ExitCode::Success
        }
        Err(e) => {
            crate::error!("--export {}: {e}", dir.display());
            ExitCode::BadInput
        }
    }
}
