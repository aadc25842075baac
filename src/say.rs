//! Human text, the one way out: standard output, or standard error when
//! `--json` keeps standard output for the document. A reader that went
//! away (`locklab run ... | head`) ends the process quietly with exit code
//! 141 instead of a panic on a broken pipe. Errors go through
//! [`error!`](crate::error), which also keeps them for the `--json`
//! document's `errors`.

use sim::exit::ExitCode;

/// `print!` that ends the process quietly when standard output is closed.
macro_rules! out {
    ($($arg:tt)*) => { $crate::say::emit(format_args!($($arg)*), false) };
}

/// `println!` with the same care for a closed standard output.
macro_rules! outln {
    () => { $crate::say::emit(format_args!(""), true) };
    ($($arg:tt)*) => { $crate::say::emit(format_args!($($arg)*), true) };
}

/// Writes to standard output; a reader that went away (a closed pipe) ends
/// the process at once, as a SIGPIPE would, with exit code 141.
/// With `--json`, standard output carries the JSON document only, so the
/// human text goes to standard error.
pub fn emit(args: std::fmt::Arguments<'_>, newline: bool) {
    use std::io::Write as _;
    if crate::json::active() {
        let mut stderr = std::io::stderr().lock();
        let _ = stderr.write_fmt(args);
        if newline {
            let _ = stderr.write_all(b"\n");
        }
        return;
    }
    let mut stdout = std::io::stdout().lock();
    let written = stdout.write_fmt(args).and_then(|()| {
        if newline {
            stdout.write_all(b"\n")
        } else {
            Ok(())
        }
    });
    if let Err(e) = written
        && e.kind() == std::io::ErrorKind::BrokenPipe
    {
        std::process::exit(i32::from(ExitCode::BrokenPipe.code()));
    }
}
