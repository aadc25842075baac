//! Embeds the built-in scenarios: lists `scenarios/` (subfolders too, in
//! path order) and writes a table of `include_str!`s, so the `locklab`
//! binary runs `tour` and `suite` from any folder. Cargo reruns this
//! script whenever anything under `scenarios/` changes, so the table
//! never falls out of step with the folder.

use std::path::{Path, PathBuf};

fn main() {
    println!("cargo:rerun-if-changed=scenarios");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
    let mut files = Vec::new();
    collect(&root, &mut files);
    files.sort();
    let mut table = String::from(
        "/// The built-in scenario files: (path under `scenarios/`, `/`-separated; text).\n\
         pub const FILES: &[(&str, &str)] = &[\n",
    );
    for file in &files {
        let relative: Vec<String> = file
            .strip_prefix(&root)
            .expect("under scenarios/")
            .components()
            .map(|c| utf8(c.as_os_str().to_str(), file).to_string())
            .collect();
        let absolute = utf8(file.to_str(), file);
        table.push_str(&format!(
            "    ({:?}, include_str!({absolute:?})),\n",
            relative.join("/")
        ));
    }
    table.push_str("];\n");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    std::fs::write(out.join("builtin_scenarios.rs"), table).expect("write the scenario table");
}

/// Every `*.toml` under `dir`, skipping hidden entries and not following
/// symbolic links to folders (a link loop would never end).
fn collect(dir: &Path, files: &mut Vec<PathBuf>) {
    let entries =
        std::fs::read_dir(dir).unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()));
    for entry in entries {
        let entry = entry.unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()));
        let path = entry.path();
        if entry.file_name().to_string_lossy().starts_with('.') {
            continue;
        }
        let kind = entry
            .file_type()
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        if kind.is_dir() {
            collect(&path, files);
        } else if path.extension().is_some_and(|x| x == "toml") {
            files.push(path);
        }
    }
}

fn utf8<'a>(s: Option<&'a str>, file: &Path) -> &'a str {
    s.unwrap_or_else(|| panic!("{}: a scenario path must be UTF-8", file.display()))
}
