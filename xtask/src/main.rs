//! Project automation. `cargo xtask tidy` runs the tidy checks, which also run as tests
//! (`cargo test -p xtask`), so CI enforces them through the README's test command.

#![allow(clippy::print_stdout, clippy::print_stderr)]

mod sizes;
mod tidy;

use std::process::ExitCode;

fn main() -> ExitCode {
    if std::env::args().nth(1).as_deref() != Some("tidy") {
        eprintln!("usage: cargo xtask tidy");
        return ExitCode::from(2);
    }
    let problems = tidy::check(&tidy::workspace_root());
    for problem in &problems {
        eprintln!("{problem}");
    }
    if problems.is_empty() {
        println!("tidy: ok");
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
