//! Writing a file whole or not at all: the one way locklab writes what it
//! keeps (run folders, reports, the bench's report and plots, files it
//! unpacks).
//!
//! The bytes go to a temporary file beside the target (same folder, so
//! the same file system), are synced (a full disk surfaces here, as an
//! error, not later as a short file), and the file is then renamed over
//! the target, which replaces it in one step, or hard-linked to it, which
//! never replaces an existing file. A kill or an error in the middle
//! leaves the previous file, or none, never half of a new one; the
//! temporary file is removed on every error.

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Writes `bytes` to `path` whole or not at all, replacing what is there.
pub fn write_whole(path: &Path, bytes: impl AsRef<[u8]>) -> io::Result<()> {
    replace_with(path, |tmp| fill_with(tmp, bytes.as_ref()))
}

/// Writes `bytes` to `path` whole or not at all; `path` must not exist
/// (an `AlreadyExists` error, and nothing written, when it does).
pub fn write_new(path: &Path, bytes: impl AsRef<[u8]>) -> io::Result<()> {
    let tmp = temporary_beside(path);
    let done = fill_with(&tmp, bytes.as_ref()).and_then(|()| std::fs::hard_link(&tmp, path));
    let removed = std::fs::remove_file(&tmp);
    done.and(removed)
}

/// Lets `fill` write a temporary file beside `path` (a plotting library
/// that writes to a path of its own), then renames it over `path`.
pub fn replace_with(path: &Path, fill: impl FnOnce(&Path) -> io::Result<()>) -> io::Result<()> {
    let tmp = temporary_beside(path);
    let done = fill(&tmp).and_then(|()| std::fs::rename(&tmp, path));
    if done.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    done
}

/// Creates `tmp` with `bytes`, synced to disk.
fn fill_with(tmp: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut file = std::fs::File::create(tmp)?;
    file.write_all(bytes)?;
    file.sync_all()
}

/// A temporary name beside `path` that no other writer in this process
/// or another uses: `.<name>.<pid>.<n>.partial`.
fn temporary_beside(path: &Path) -> PathBuf {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    path.with_file_name(format!(".{name}.{}.{n}.partial", std::process::id()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn folder(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("atomic-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn write_whole_replaces_the_file_and_leaves_nothing_beside_it() {
        let dir = folder("whole");
        let path = dir.join("a.txt");
        write_whole(&path, b"old").unwrap();
        write_whole(&path, b"new").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"new");
        assert_eq!(names(&dir), ["a.txt"]);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn write_new_refuses_an_existing_file_and_keeps_it() {
        let dir = folder("new");
        let path = dir.join("a.txt");
        write_new(&path, b"first").unwrap();
        let err = write_new(&path, b"second").unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(std::fs::read(&path).unwrap(), b"first");
        assert_eq!(names(&dir), ["a.txt"]);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_fill_that_fails_leaves_the_old_file_and_no_temporary_one() {
        let dir = folder("fails");
        let path = dir.join("a.txt");
        write_whole(&path, b"old").unwrap();
        let err = replace_with(&path, |tmp| {
            std::fs::write(tmp, b"half")?;
            Err(io::Error::other("disk full"))
        })
        .unwrap_err();
        assert_eq!(err.to_string(), "disk full");
        assert_eq!(std::fs::read(&path).unwrap(), b"old");
        assert_eq!(names(&dir), ["a.txt"]);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_folder_that_cannot_exist_is_an_error_not_a_panic() {
        let dir = folder("nofolder");
        let file = dir.join("plain");
        std::fs::write(&file, b"x").unwrap();
        // A path under a regular file: no folder can be made there.
        assert!(write_whole(&file.join("a.txt"), b"y").is_err());
        assert!(write_new(&file.join("b.txt"), b"y").is_err());
        std::fs::remove_dir_all(dir).unwrap();
    }
}
