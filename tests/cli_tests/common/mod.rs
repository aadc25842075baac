//! What the command-line tests share: running the `locklab` binary that
//! cargo built for the tests (no second release build), reading its
//! output, and a fresh folder per test.

#![allow(dead_code)] // each test file uses its own part of the helpers

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Runs `locklab` with `args` from the project's root.
pub fn locklab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_locklab"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run locklab")
}

/// Runs `locklab` with the words of `line` (see [`words`]) from the
/// project's root.
pub fn locklab_line(line: &str) -> Output {
    locklab(&words(line))
}

/// Runs `locklab` with the words of `line` and `--out` a fresh
/// [`scratch`] folder `name`, from the project's root; the output and the
/// folder.
pub fn locklab_out(line: &str, name: &str) -> (Output, PathBuf) {
    let dir = scratch(name);
    let mut args = words(line);
    args.extend(["--out", path(&dir)]);
    (locklab(&args), dir)
}

/// The words of a command line, split at white space, so that a test
/// writes a command as one types it. The folders from [`scratch`] hold no
/// white space; a path that might is passed on its own.
pub fn words(line: &str) -> Vec<&str> {
    line.split_whitespace().collect()
}

/// Runs `locklab` with `args` from `dir`.
pub fn locklab_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_locklab"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run locklab")
}

/// The project's root.
pub fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Standard output as text.
pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Standard error as text.
pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A fresh, empty folder for one test's output, unique to this process.
pub fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("locklab-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    assert!(
        !path(&dir).contains(char::is_whitespace),
        "{dir:?}: a scratch folder must split as one word"
    );
    dir
}

/// Fails, showing `text`, unless it contains `part`.
#[track_caller]
pub fn assert_contains(text: &str, part: &str) {
    assert!(text.contains(part), "expected {part:?} in:\n{text}");
}

/// A path as a command-line argument.
pub fn path(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// The one `--json` document of a command's standard output: exactly one
/// line, one JSON object in the `locklab/1` envelope.
pub fn document(out: &Output) -> serde_json::Value {
    document_of(&stdout(out))
}

/// [`document`] of standard output already read as text.
pub fn document_of(stdout: &str) -> serde_json::Value {
    assert_eq!(
        stdout.lines().count(),
        1,
        "--json prints one line on standard output, got:\n{stdout}"
    );
    let doc: serde_json::Value = serde_json::from_str(stdout).expect("one JSON document");
    assert_eq!(doc["schema"], "locklab/1", "{doc}");
    doc
}
