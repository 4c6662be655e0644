//! `tickets`: the retry-safe ticket service. See `tickets --help`.
//!
//! A failure is printed for the person at the terminal: `Error:` and the
//! error with its causes on one line, exit code 1. No stack backtrace,
//! even where `RUST_BACKTRACE=1` is set for other programs: it shows this
//! code, not what went wrong for them. `RUST_LIB_BACKTRACE=1` adds it.

use std::process::ExitCode;

/// mimalloc rather than glibc's malloc: a request allocates and frees many
/// small blocks across the runtime's threads, and glibc's arenas spent
/// about a tenth of a replay's CPU there, locks included
/// (docs/performance.md, issue 30).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    match server::run::main() {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("Error: {}", kitchen::error_chain(error.as_ref()));
            if std::env::var_os("RUST_LIB_BACKTRACE").is_some_and(|v| v == "1") {
                eprintln!("\n{}", error.backtrace());
            }
            ExitCode::FAILURE
        }
    }
}
