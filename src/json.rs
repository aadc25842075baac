//! `--json`: every command's one JSON document on standard output.
//!
//! With `--json`, a command prints exactly one document, on one line, to
//! standard output, and all its human text goes to standard error. Every
//! document has the same envelope ([`Document`]): `schema` (this format's
//! name and version, [`SCHEMA`]), `command`, `locklab` (the version of the
//! binary), `exit_code`, `errors` and `result`, the command's own data
//! (`null` when it failed before it had any). The JSON Schemas under
//! `docs/schema/` are generated from these types ([`schemas`]); a test
//! keeps the files equal to what the types say, and `docs/json.md`
//! describes them for people.

use judge::verdict::VerdictDoc;
use model::verdict::Verdict;
use schemars::JsonSchema;
use serde::Serialize;
use sim::exit::ExitCode;
use sim::interrupt::Cause;
use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

/// The name and version of the document format. A change that could break
/// a reader (a field removed, renamed or retyped) gets a new version; new
/// commands or new fields in a new version only.
pub const SCHEMA: &str = "locklab/1";

/// Whether `--json` was given: human text then goes to standard error.
static ACTIVE: AtomicBool = AtomicBool::new(false);

/// Whether the one document was printed already (a second is never printed).
static PRINTED: AtomicBool = AtomicBool::new(false);

/// The errors reported so far with [`error!`](crate::error), for the
/// document's `errors`.
static ERRORS: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Turns `--json` on for the rest of the process: from now on the human
/// text that would go to standard output goes to standard error.
pub fn enable() {
    ACTIVE.store(true, Ordering::SeqCst);
}

/// Whether `--json` is on.
pub fn active() -> bool {
    ACTIVE.load(Ordering::SeqCst)
}

/// Records an error for the document's `errors` (the caller prints it).
pub fn record_error(message: String) {
    ERRORS
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push(message);
}

/// Prints `error: MESSAGE` on standard error and, for `--json`, keeps the
/// message for the document's `errors`.
#[macro_export]
macro_rules! error {
    ($($arg:tt)*) => {{
        let message = format!($($arg)*);
        eprintln!("error: {message}");
        $crate::json::record_error(message);
    }};
}

/// The commands, as `command` names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum CommandName {
    /// `locklab ladder`.
    Ladder,
    /// `locklab run`.
    Run,
    /// `locklab replay`.
    Replay,
    /// `locklab suite`.
    Suite,
    /// `locklab tour`.
    Tour,
    /// `locklab scenarios`.
    Scenarios,
    /// `locklab explore`.
    Explore,
    /// `locklab sim-server`.
    SimServer,
    /// `locklab bench`.
    Bench,
    /// `locklab check`.
    Check,
}

// The schema files are written by the tests (below), not by the binary.
#[cfg(test)]
impl CommandName {
    /// Every command, in the order of `locklab --help`.
    pub const ALL: [CommandName; 10] = [
        CommandName::Ladder,
        CommandName::Run,
        CommandName::Replay,
        CommandName::Suite,
        CommandName::Tour,
        CommandName::Scenarios,
        CommandName::Explore,
        CommandName::SimServer,
        CommandName::Bench,
        CommandName::Check,
    ];

    /// The name as typed on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            CommandName::Ladder => "ladder",
            CommandName::Run => "run",
            CommandName::Replay => "replay",
            CommandName::Suite => "suite",
            CommandName::Tour => "tour",
            CommandName::Scenarios => "scenarios",
            CommandName::Explore => "explore",
            CommandName::SimServer => "sim-server",
            CommandName::Bench => "bench",
            CommandName::Check => "check",
        }
    }
}

/// The envelope every `--json` document shares; `T` is the command's own
/// result.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Document<T> {
    /// The document format and its version: `locklab/1`.
    pub schema: &'static str,
    /// The command that printed it.
    pub command: CommandName,
    /// The version of locklab that printed it.
    pub locklab: &'static str,
    /// The process's exit code (0 success or safe, 1 violated or differs, 2
    /// unknown, 3 bad input or harness error, 4 deadlock, 130 interrupted).
    /// Absent only from `sim-server`'s document, which is printed when the
    /// server is ready, before it exits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<u8>,
    /// The errors the command reported on standard error (without their
    /// `error: ` prefix), in order; empty when there were none.
    pub errors: Vec<String>,
    /// The command's own result; `null` when it failed before it had one
    /// (bad input): `errors` then says why.
    pub result: Option<T>,
}

/// Prints the one document of `command`, unless one was printed already,
/// with the errors recorded so far; returns `exit_code` (or bad input when
/// the document cannot be written).
pub fn print<T: Serialize>(
    command: CommandName,
    exit_code: Option<ExitCode>,
    result: Option<T>,
) -> ExitCode {
    let fallback = exit_code.unwrap_or(ExitCode::Success);
    if PRINTED.swap(true, Ordering::SeqCst) {
        return fallback;
    }
    let errors = std::mem::take(&mut *ERRORS.lock().unwrap_or_else(|p| p.into_inner()));
    let document = Document {
        schema: SCHEMA,
        command,
        locklab: env!("CARGO_PKG_VERSION"),
        exit_code: exit_code.map(ExitCode::code),
        errors,
        result,
    };
    match serde_json::to_string(&document) {
        Ok(line) => {
            write_stdout(&line);
            fallback
        }
        Err(e) => {
            eprintln!("error: --json: cannot write the document: {e}");
            ExitCode::BadInput
        }
    }
}

/// Prints the document of a command that has ended with `code`, when
/// `--json` is on (and none was printed yet); returns `code`.
pub fn finish<T: Serialize>(command: CommandName, code: ExitCode, result: Option<T>) -> ExitCode {
    if active() {
        print(command, Some(code), result)
    } else {
        code
    }
}

/// Writes one line to the real standard output (not redirected by
/// `--json`); a closed pipe ends the process as [`crate::say::emit`]
/// does.
fn write_stdout(line: &str) {
    use std::io::Write as _;
    let mut stdout = std::io::stdout().lock();
    let written = stdout
        .write_all(line.as_bytes())
        .and_then(|()| stdout.write_all(b"\n"))
        .and_then(|()| stdout.flush());
    if let Err(e) = written
        && e.kind() == std::io::ErrorKind::BrokenPipe
    {
        std::process::exit(i32::from(ExitCode::BrokenPipe.code()));
    }
}

/// `ladder`'s result.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct LadderResult {
    /// Every rung, in ladder order.
    pub rungs: Vec<locks::Rung>,
}

/// One run of `run`: its folder and its judgement.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct RunEntry {
    /// The run's folder (`<out>/runs/<scenario>/<rung>/<seed>`); `null`
    /// when it could not be written (`errors` says why).
    pub folder: Option<String>,
    /// What the run's `verdict.json` holds.
    pub verdict_json: VerdictDoc,
}

/// `run`'s result.
#[derive(Debug, Clone, Default, Serialize, JsonSchema)]
pub struct RunResult {
    /// The scenario's name.
    pub scenario: String,
    /// The runs asked for: rungs × seeds.
    pub runs_planned: usize,
    /// The runs finished, in the order run (rung by rung, seed by seed); a
    /// run that could not be run is missing (`errors` names it).
    pub runs: Vec<RunEntry>,
    /// The signal that interrupted the command, or `null`: then the runs
    /// not listed were abandoned or never started.
    pub interrupted_by: Option<Cause>,
}

/// `check`'s result.
#[derive(Debug, Clone, Default, Serialize, JsonSchema)]
pub struct CheckResult {
    /// Each history judged, in the order given; a file that could not be
    /// read or judged is missing (`errors` names it).
    pub files: Vec<CheckedFile>,
}

/// One history judged by `check`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct CheckedFile {
    /// The file, as given.
    pub file: String,
    /// The format it was read as.
    pub format: String,
    /// The model it was judged against.
    pub model: String,
    /// The verdict, by `run`'s rules.
    pub verdict: Verdict,
    /// elle-cli's word for it: `true` (safe), `false` (violated or
    /// deadlock) or `unknown`.
    pub valid: String,
    /// Every checker's result, by name.
    pub checks: BTreeMap<String, CheckedEntry>,
    /// The damage figures (`null`: not measured).
    pub damage: serde_json::Value,
    /// Operations read.
    pub operations: usize,
    /// Events of locklab's history they became (the ones judged).
    pub events_judged: usize,
    /// Operations not judged (a nemesis's, functions no model knows),
    /// counted by process and function.
    pub left_out: BTreeMap<String, usize>,
    /// Whether clocks with a bound were taken into account.
    pub clock_bounded: bool,
    /// Whether the history was cut short (the verdict is then unknown).
    pub cut_short: bool,
    /// The page written, if any.
    pub page: Option<String>,
}

/// One checker's result in `check`'s document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct CheckedEntry {
    /// `valid`, `invalid` or `unknown`.
    pub verdict: String,
    /// The operations that prove a violation, by the history's own index
    /// (Jepsen's `:index`, else the position in the file from 0).
    pub witness: Vec<u64>,
    /// The violation, or why it could not be decided, in words.
    pub why: Option<String>,
    /// Reported for information only; it does not decide the verdict.
    pub informational: bool,
}

/// `replay`'s result.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ReplayResult {
    /// The run folder replayed.
    pub folder: String,
    /// The scenario's name, from its `verdict.json`.
    pub scenario: String,
    /// The rung's id (spelled `variant`, as in `verdict.json`).
    pub variant: String,
    /// The seed.
    pub seed: u64,
    /// Whether the replay gave the same history byte for byte and the same
    /// judgement.
    pub identical: bool,
    /// Where the replay first differs, for people; `null` when identical.
    pub difference: Option<String>,
}

/// Which cells a suite ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum GridName {
    /// Each scenario against the rungs it names (`locklab suite`).
    Named,
    /// Every rung against every scenario (`locklab suite --all`).
    All,
}

/// A cell of the suite that was not run (the suite was interrupted).
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct NotRun {
    /// The rung's id.
    pub variant: String,
    /// The scenario's name.
    pub scenario: String,
}

/// `suite`'s result.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct SuiteResult {
    /// The grid run.
    pub grid: GridName,
    /// Every finished cell, in matrix order, as in `safety-matrix.json`.
    pub cells: Vec<judge::matrix::Cell>,
    /// The cells asked for.
    pub cells_planned: usize,
    /// The cells whose verdict differs from their scenario's expectation.
    pub unexpected: usize,
    /// The markdown matrix written (`<out>/safety-matrix.md`, `-all.md` or
    /// `.partial.md`); `null` when it could not be written.
    pub matrix: Option<String>,
    /// The JUnit report written (`--junit`); `null` without one.
    pub junit: Option<String>,
    /// The signal that interrupted the suite, or `null`.
    pub interrupted_by: Option<Cause>,
    /// The cells asked for and not run (interrupted suites only).
    pub not_run: Vec<NotRun>,
}

/// One stop of the tour: a rung broken by its scenario, and the next rung
/// in the same scenario.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct TourStop {
    /// The rung's id.
    pub variant: String,
    /// Its number on the ladder, from 0.
    pub rung: u8,
    /// What it fixes relative to the rung before.
    pub fixes: &'static str,
    /// The flaw that remains.
    pub flaw: &'static str,
    /// The scenario that breaks it.
    pub scenario: String,
    /// The rung's run in that scenario, as its `verdict.json` would hold it.
    pub broken: VerdictDoc,
    /// The next rung's run in the same scenario; `null` when the scenario
    /// does not name it.
    pub next: Option<VerdictDoc>,
}

impl TourStop {
    /// The stop as the tour ran it.
    pub fn of(stop: &sim::tour::Stop) -> TourStop {
        let doc = |judged: &sim::cell::Judged| {
            VerdictDoc::new(&judged.results, &judged.scenario, &judged.rung, judged.seed)
        };
        TourStop {
            variant: stop.rung.id.to_string(),
            rung: stop.rung.number,
            fixes: stop.rung.fixes,
            flaw: stop.rung.flaw,
            scenario: stop.scenario.clone(),
            broken: doc(&stop.broken),
            next: stop.next.as_ref().map(doc),
        }
    }
}

/// `tour`'s result.
#[derive(Debug, Clone, Default, Serialize, JsonSchema)]
pub struct TourResult {
    /// The stops shown, in ladder order (a rung no scenario breaks has none).
    pub stops: Vec<TourStop>,
    /// The signal that interrupted the tour, or `null`.
    pub interrupted_by: Option<Cause>,
}

/// A built-in scenario.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ScenarioEntry {
    /// Its name.
    pub name: String,
    /// The rungs it names, in its order.
    pub rungs: Vec<String>,
}

/// `scenarios`'s result.
#[derive(Debug, Clone, Default, Serialize, JsonSchema)]
pub struct ScenariosResult {
    /// The built-in scenarios (empty with `--export`).
    pub scenarios: Vec<ScenarioEntry>,
    /// The folder written to with `--export`, or `null`.
    pub exported_to: Option<String>,
    /// The files written with `--export`, in order.
    pub written: Vec<String>,
}

/// `sim-server`'s result: printed once the server listens, so that a
/// script can read the address (also of `--port 0`) and connect at once.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct SimServerResult {
    /// The service it speaks: `redis`, `etcd`, `zookeeper`, `postgres` or `mysql`.
    pub service: String,
    /// The address it listens on, `IP:PORT`.
    pub address: String,
    /// The port it listens on (the one the system chose for `--port 0`).
    pub port: u16,
    /// How long a script runs before other clients get `BUSY`, ms (Redis
    /// only; `null` for the others).
    pub busy_reply_threshold_ms: Option<u64>,
    /// The server's process id (to stop it with SIGINT or SIGTERM).
    pub pid: u32,
}

#[cfg(test)]
/// One schema file: its name under `docs/schema/` and its text.
pub struct SchemaFile {
    /// `<command>.json`.
    pub file_name: String,
    /// The schema, pretty-printed, ending in a newline.
    pub text: String,
}

#[cfg(test)]
/// The JSON Schema (draft 2020-12) of every command's document, generated
/// from the types above: each object closed (`additionalProperties:
/// false`), each field described by its doc comment, `schema` and
/// `command` fixed to their values.
pub fn schemas() -> Vec<SchemaFile> {
    CommandName::ALL
        .into_iter()
        .map(|command| {
            let schema = match command {
                CommandName::Ladder => schema_for::<LadderResult>(command),
                CommandName::Run => schema_for::<RunResult>(command),
                CommandName::Replay => schema_for::<ReplayResult>(command),
                CommandName::Suite => schema_for::<SuiteResult>(command),
                CommandName::Tour => schema_for::<TourResult>(command),
                CommandName::Scenarios => schema_for::<ScenariosResult>(command),
                CommandName::Explore => schema_for::<sim::explore::search::Summary>(command),
                CommandName::SimServer => schema_for::<SimServerResult>(command),
                CommandName::Bench => schema_for::<bench::report::Report>(command),
                CommandName::Check => schema_for::<CheckResult>(command),
            };
            let mut text = serde_json::to_string_pretty(&schema).unwrap_or_default();
            text.push('\n');
            SchemaFile {
                file_name: format!("{}.json", command.as_str()),
                text,
            }
        })
        .collect()
}

#[cfg(test)]
/// The schema of `command`'s document, whose result is a `T`.
fn schema_for<T: JsonSchema>(command: CommandName) -> serde_json::Value {
    let settings = schemars::generate::SchemaSettings::draft2020_12().with_transform(
        schemars::transform::RecursiveTransform(close_objects as fn(&mut schemars::Schema)),
    );
    let schema = settings
        .into_generator()
        .into_root_schema_for::<Document<T>>();
    let mut value = schema.to_value();
    let name = command.as_str();
    if let Some(root) = value.as_object_mut() {
        root.insert(
            "title".into(),
            format!("locklab {name} --json ({SCHEMA})").into(),
        );
        root.insert(
            "description".into(),
            format!(
                "The one document `locklab {name} --json` prints on standard output \
                 (docs/json.md)."
            )
            .into(),
        );
    }
    let fixed = [
        ("schema", SCHEMA, "The document format and its version."),
        ("command", name, "The command that printed it."),
    ];
    for (field, constant, description) in fixed {
        value["properties"][field] = serde_json::json!({
            "description": description,
            "const": constant,
        });
    }
    // `result` is always there (`null` on failure), and so is the exit
    // code but in sim-server's document, printed while it runs.
    let mut always = vec!["result"];
    if command != CommandName::SimServer {
        always.push("exit_code");
    }
    if let Some(required) = value["required"].as_array_mut() {
        for field in always {
            if !required.iter().any(|r| r == field) {
                required.push(field.into());
            }
        }
    }
    value
}

#[cfg(test)]
/// Closes every object schema with properties: a field the schema does not
/// name is an error, never silently accepted.
fn close_objects(schema: &mut schemars::Schema) {
    if schema.get("properties").is_some() {
        schema.insert("additionalProperties".into(), false.into());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    /// Where the schema files live, from the crate's root.
    fn schema_dir() -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/schema")
    }

    #[test]
    fn the_schema_files_are_what_the_types_say() {
        // `LOCKLAB_WRITE_SCHEMA=1 cargo test --release -p locklab --bin
        // locklab json` rewrites them after a change to a type.
        let write = std::env::var_os("LOCKLAB_WRITE_SCHEMA").is_some();
        for file in schemas() {
            let path = schema_dir().join(&file.file_name);
            if write {
                std::fs::create_dir_all(schema_dir()).unwrap();
                std::fs::write(&path, &file.text).unwrap();
            }
            let committed = std::fs::read_to_string(&path).unwrap_or_default();
            assert!(
                committed == file.text,
                "{} is not what the types say: run LOCKLAB_WRITE_SCHEMA=1 cargo test --release \
                 -p locklab --bin locklab json, and review the difference",
                path.display()
            );
        }
    }

    /// Every object schema reachable in `value` (by JSON pointer).
    fn objects<'a>(
        value: &'a serde_json::Value,
        at: String,
        out: &mut Vec<(String, &'a serde_json::Value)>,
    ) {
        match value {
            serde_json::Value::Object(map) => {
                if map.contains_key("properties") {
                    out.push((at.clone(), value));
                }
                for (key, child) in map {
                    objects(child, format!("{at}/{key}"), out);
                }
            }
            serde_json::Value::Array(items) => {
                for (i, child) in items.iter().enumerate() {
                    objects(child, format!("{at}/{i}"), out);
                }
            }
            _ => {}
        }
    }

    #[test]
    fn every_object_is_closed_and_every_field_described() {
        for file in schemas() {
            let schema: serde_json::Value = serde_json::from_str(&file.text).unwrap();
            assert_eq!(
                schema["$schema"], "https://json-schema.org/draft/2020-12/schema",
                "{}",
                file.file_name
            );
            let mut found = Vec::new();
            objects(&schema, String::new(), &mut found);
            assert!(!found.is_empty());
            for (at, object) in found {
                assert_eq!(
                    object["additionalProperties"], false,
                    "{}#{at} is open",
                    file.file_name
                );
                let has_text = |v: &serde_json::Value| {
                    v["description"]
                        .as_str()
                        .is_some_and(|d| !d.trim().is_empty())
                };
                for (field, property) in object["properties"].as_object().unwrap() {
                    // An internally tagged enum's tag (a `const`) is
                    // described by its variant, which must be.
                    let tag = property.get("const").is_some() && has_text(object);
                    let described = tag || has_text(property);
                    assert!(
                        described,
                        "{}#{at}/{field} has no description",
                        file.file_name
                    );
                }
            }
        }
    }

    #[test]
    fn every_command_has_a_schema_file_named_after_it() {
        let names: Vec<String> = schemas().into_iter().map(|f| f.file_name).collect();
        assert_eq!(names.len(), CommandName::ALL.len());
        for command in CommandName::ALL {
            let quoted = serde_json::to_value(command).unwrap();
            assert_eq!(quoted, command.as_str(), "the JSON name is the CLI name");
            assert!(names.contains(&format!("{}.json", command.as_str())));
        }
    }
}
