//! Tidy checks over the source tree (after rust-analyzer's and TigerBeetle's): file docs, ASCII,
//! whitespace, banned test shortcuts, and the one-way crate dependency order.

use std::path::{Path, PathBuf};

/// The workspace root (the parent of `xtask/`).
pub(crate) fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().map(Path::to_path_buf).unwrap_or_default()
}

/// Crates in dependency order: a crate may depend only on crates before it (and `protocol` sits
/// beside `storage`, so neither depends on the other).
const LAYERS: &[(&str, &[&str])] = &[
    ("seglog-format", &[]),
    ("seglog-storage", &["seglog-format"]),
    ("seglog-protocol", &[]),
    ("seglog-sim", &["seglog-format", "seglog-storage"]),
    ("seglog-broker", &["seglog-format", "seglog-storage", "seglog-protocol"]),
    (
        "seglog",
        &["seglog-format", "seglog-storage", "seglog-protocol", "seglog-broker", "seglog-sim"],
    ),
];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            if path.file_name().is_some_and(|name| name == "target") {
                continue;
            }
            rust_files(&path, out);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            out.push(path);
        }
    }
}

/// Every problem found, one line each, naming the file.
pub(crate) fn check(root: &Path) -> Vec<String> {
    let mut problems = Vec::new();
    let mut files = Vec::new();
    for dir in ["crates", "xtask", "fuzz"] {
        rust_files(&root.join(dir), &mut files);
    }
    for path in &files {
        let shown = path.strip_prefix(root).unwrap_or(path).display().to_string();
        let Ok(text) = std::fs::read_to_string(path) else {
            problems.push(format!("{shown}: not UTF-8"));
            continue;
        };
        problems.extend(crate::sizes::check_file(&shown, &text));
        if !text.starts_with("//!") {
            problems.push(format!("{shown}: must start with a `//!` doc line"));
        }
        for (line_idx, line) in text.lines().enumerate() {
            let line_no = line_idx + 1;
            // `§` is allowed: the spec's section sign, cited throughout.
            if line.chars().any(|c| !c.is_ascii() && c != '§') {
                problems.push(format!("{shown}:{line_no}: non-ASCII character"));
            }
            if line.ends_with(' ') || line.ends_with('\t') {
                problems.push(format!("{shown}:{line_no}: trailing whitespace"));
            }
            let trimmed = line.trim_start();
            if trimmed.starts_with("matches!(") {
                problems.push(format!("{shown}:{line_no}: bare matches! (assert on it)"));
            }
            for banned in ["#[should_panic", "#[ignore"] {
                if trimmed.starts_with(banned) {
                    problems.push(format!("{shown}:{line_no}: {banned}] is not allowed"));
                }
            }
        }
    }
    problems.extend(check_layers(root));
    problems.extend(crate::sizes::stale_allowances(root));
    problems
}

/// Reads each crate manifest and reports dependencies that point the wrong way.
fn check_layers(root: &Path) -> Vec<String> {
    let mut problems = Vec::new();
    let Ok(entries) = std::fs::read_dir(root.join("crates")) else {
        return vec!["crates/ is missing".to_owned()];
    };
    for entry in entries.flatten() {
        let manifest = entry.path().join("Cargo.toml");
        let Ok(text) = std::fs::read_to_string(&manifest) else { continue };
        let name = text
            .lines()
            .find_map(|line| line.strip_prefix("name = "))
            .map(|name| name.trim_matches('"').to_owned())
            .unwrap_or_default();
        let Some((_, allowed)) = LAYERS.iter().find(|(layer, _)| *layer == name) else {
            problems.push(format!("crates/{name}: not in the layer list of xtask tidy"));
            continue;
        };
        let mut in_dependencies = false;
        for line in text.lines() {
            if line.starts_with('[') {
                in_dependencies = line.trim() == "[dependencies]";
                continue;
            }
            let dependency = line.split(['.', ' ', '=']).next().unwrap_or_default();
            if in_dependencies && dependency.starts_with("seglog") && !allowed.contains(&dependency)
            {
                problems.push(format!("{name} must not depend on {dependency} (one-way layers)"));
            }
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tree_is_tidy() {
        let problems = check(&workspace_root());
        assert!(problems.is_empty(), "tidy problems:\n{}", problems.join("\n"));
    }

    #[test]
    fn tidy_catches_what_it_should() {
        let dir = std::env::temp_dir().join(format!("seglog-tidy-{}", std::process::id()));
        let src = dir.join("crates/format/src");
        std::fs::create_dir_all(&src).unwrap();
        std::fs::write(
            dir.join("crates/format/Cargo.toml"),
            "[package]\nname = \"seglog-format\"\n[dependencies]\nseglog-storage.workspace = true\n",
        )
        .unwrap();
        std::fs::write(src.join("lib.rs"), "fn f() {} \n#[ignore]\n    matches!(x, y);\n").unwrap();
        let problems = check(&dir);
        std::fs::remove_dir_all(&dir).unwrap();
        let joined = problems.join("\n");
        for expected in
            ["`//!`", "trailing whitespace", "#[ignore", "bare matches!", "must not depend"]
        {
            assert!(joined.contains(expected), "missing {expected:?} in:\n{joined}");
        }
    }
}
