//! Size limits on non-test source (TigerBeetle's function-length rule, matklad's "files a
//! reader can hold"): a source file under `crates/*/src` may have at most
//! [`FILE_LINES_MAX`] lines before its `#[cfg(test)] mod`, and a function at most
//! [`FUNCTION_LINES_MAX`] lines. Today's exceptions are listed in [`ALLOWED`], each with its
//! reason; the list only shrinks.

use std::path::Path;

/// The most lines a non-test source file may have.
pub(crate) const FILE_LINES_MAX: usize = 1200;
/// The most lines a non-test function may have (signature to closing brace).
pub(crate) const FUNCTION_LINES_MAX: usize = 150;

/// Exceptions: a file (`path`) or a function (`path::name`), and why it is allowed for now.
const ALLOWED: &[(&str, &str)] = &[];

/// Whether `path` holds only tests (a `tests.rs`, a `*_tests.rs`, or a file under `tests/` or
/// `benches/`).
fn is_test_file(shown: &str) -> bool {
    let name = shown.rsplit('/').next().unwrap_or_default();
    name == "tests.rs"
        || name.ends_with("_tests.rs")
        || shown.contains("/tests/")
        || shown.contains("/benches/")
}

/// The function a line declares (`pub(crate) async fn name(`), if it does.
fn declared_function(line: &str) -> Option<&str> {
    let mut rest = line.trim_start();
    for prefix in ["pub(crate) ", "pub(super) ", "pub ", "async ", "const ", "unsafe "] {
        rest = rest.strip_prefix(prefix).unwrap_or(rest);
    }
    let rest = rest.strip_prefix("fn ")?;
    let end = rest.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(rest.len());
    rest.get(..end).filter(|name| !name.is_empty())
}

/// Every size violation of one file, `shown` being its path from the workspace root: what
/// (the file's path, or `path::function`) and the message.
fn violations(shown: &str, text: &str) -> Vec<(String, String)> {
    if !shown.starts_with("crates/") || !shown.contains("/src/") || is_test_file(shown) {
        return Vec::new();
    }
    let lines: Vec<&str> = text.lines().collect();
    // Only the part before the unit tests counts.
    let end = lines
        .windows(2)
        .position(|pair| {
            pair[0].trim() == "#[cfg(test)]" && pair[1].trim_start().starts_with("mod ")
        })
        .unwrap_or(lines.len());
    let code = &lines[..end];
    let mut found = Vec::new();
    if code.len() > FILE_LINES_MAX {
        let message = format!(
            "{shown}: {} lines of non-test code, more than {FILE_LINES_MAX} (split it, or add it \
             to xtask's size allow-list with a reason)",
            code.len()
        );
        found.push((shown.to_owned(), message));
    }
    for (start, line) in code.iter().enumerate() {
        let Some(name) = declared_function(line) else { continue };
        let indent = &line[..line.len() - line.trim_start().len()];
        // The body opens on the signature's last line; a declaration without a body has none.
        let Some(open) = code[start..].iter().position(|l| l.contains('{') || l.ends_with(';'))
        else {
            continue;
        };
        let open_line = code[start + open].trim_end();
        if open_line.ends_with(';') || open_line.ends_with("{}") {
            continue;
        }
        let closing = format!("{indent}}}");
        let Some(length) = code[start..].iter().position(|l| *l == closing) else { continue };
        let length = length + 1;
        if length > FUNCTION_LINES_MAX {
            let message = format!(
                "{shown}:{}: fn {name} has {length} lines, more than {FUNCTION_LINES_MAX}",
                start + 1
            );
            found.push((format!("{shown}::{name}"), message));
        }
    }
    found
}

/// Size problems of one file that the allow-list does not excuse.
pub(crate) fn check_file(shown: &str, text: &str) -> Vec<String> {
    violations(shown, text)
        .into_iter()
        .filter(|(what, _)| !ALLOWED.iter().any(|(item, _)| item == what))
        .map(|(_, message)| message)
        .collect()
}

/// Allow-list entries that no longer name anything too long (so the list only shrinks).
pub(crate) fn stale_allowances(root: &Path) -> Vec<String> {
    let mut problems = Vec::new();
    for (item, _) in ALLOWED {
        let path = item.split("::").next().unwrap_or(item);
        let Ok(text) = std::fs::read_to_string(root.join(path)) else {
            problems.push(format!("size allow-list names {item}, which does not exist"));
            continue;
        };
        if !violations(path, &text).iter().any(|(what, _)| what == item) {
            problems
                .push(format!("size allow-list entry {item} is within the limits now: drop it"));
        }
    }
    problems
}

#[cfg(test)]
#[allow(clippy::format_collect, reason = "test sources built line by line")]
mod tests {
    use super::*;

    fn function(name: &str, body_lines: usize) -> String {
        let body: String =
            (0..body_lines).map(|idx| format!("    let _x{idx} = {idx};\n")).collect();
        format!("fn {name}() {{\n{body}}}\n")
    }

    #[test]
    fn long_functions_and_files_are_caught_and_tests_are_not_counted() {
        let shown = "crates/demo/src/lib.rs";
        let short = function("short", FUNCTION_LINES_MAX - 2);
        assert!(check_file(shown, &short).is_empty(), "exactly the limit is fine");
        let long = function("long", FUNCTION_LINES_MAX - 1);
        let problems = check_file(shown, &long);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0].contains("fn long has 151 lines"), "{problems:?}");
        let in_tests = format!("//! demo\n#[cfg(test)]\nmod tests {{\n{long}}}\n");
        assert!(check_file(shown, &in_tests).is_empty(), "unit tests do not count");
        assert!(check_file("crates/demo/tests/it.rs", &long).is_empty());
        let big: String =
            (0..=FILE_LINES_MAX).map(|idx| format!("const C{idx}: u8 = 0;\n")).collect();
        let problems = check_file(shown, &big);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0].contains("1201 lines of non-test code"), "{problems:?}");
    }

    #[test]
    fn a_signature_over_several_lines_and_a_declaration_are_read_right() {
        let shown = "crates/demo/src/lib.rs";
        let body: String =
            (0..FUNCTION_LINES_MAX).map(|idx| format!("        let _x{idx} = 0;\n")).collect();
        let text = format!(
            "impl T {{\n    pub(crate) fn wide(\n        a: u8,\n    ) -> u8 {{\n{body}        a\n    }}\n    fn declared(&self);\n}}\n"
        );
        let problems = check_file(shown, &text);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0].contains("fn wide has"), "{problems:?}");
    }
}
