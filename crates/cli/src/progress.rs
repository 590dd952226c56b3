//! Progress bars on stderr, shown only when stderr is a terminal.

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressStyle};

/// A bar of `total` steps, hidden when stderr is not a terminal (piped output stays clean).
pub(crate) fn bar(total: u64, message: &'static str) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(total).with_message(message);
    if let Ok(style) = ProgressStyle::with_template("{msg} {bar:40} {pos}/{len} {elapsed}") {
        bar.set_style(style);
    }
    bar
}
