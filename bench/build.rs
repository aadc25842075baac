//! Records the toolchain and the locked crate versions for the bench report.

use std::process::Command;

fn main() {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_string());
    let version = Command::new(rustc)
        .arg("--version")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "unknown".to_string());
    println!("cargo:rustc-env=LOCKLAB_RUSTC_VERSION={version}");

    // The versions Cargo.lock pins, for the crates whose speed the report
    // is about; a crate locked in two versions lists both.
    // Read when the script runs, not when it was compiled: a script
    // compiled in another checkout would name that checkout's lock file.
    let manifest_dir = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| ".".to_string());
    let lock = format!("{manifest_dir}/../Cargo.lock");
    println!("cargo:rerun-if-changed={lock}");
    let text = std::fs::read_to_string(&lock).unwrap_or_default();
    let wanted = [
        "redis",
        "rslock",
        "tokio",
        "hdrhistogram",
        "plotters",
        "criterion",
    ];
    let mut found: Vec<(String, String)> = Vec::new();
    let mut name = None;
    for line in text.lines() {
        if let Some(n) = line.strip_prefix("name = ") {
            name = Some(n.trim_matches('"').to_string());
        } else if let (Some(v), Some(n)) = (line.strip_prefix("version = "), name.take())
            && wanted.contains(&n.as_str())
        {
            found.push((n, v.trim_matches('"').to_string()));
        }
    }
    let joined: Vec<String> = found.iter().map(|(n, v)| format!("{n}={v}")).collect();
    println!(
        "cargo:rustc-env=LOCKLAB_CRATE_VERSIONS={}",
        joined.join(",")
    );
}
