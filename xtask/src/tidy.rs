//! Tidy checks over the source tree (after rust-analyzer's and TigerBeetle's): file docs, ASCII,
//! whitespace, banned test shortcuts, and the one-way crate dependency order.

use std::path::{Path, PathBuf};

/// The workspace root (the parent of `xtask/`).
pub(crate) fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().map(Path::to_path_buf).unwrap_or_default()
}

/// The workspace's crates in layer order, as `(folder under crates/, package name)`: a crate may
/// depend only on crates before it (in any dependency table, dev and build included). The
/// folders must be exactly `crates/*` and read, in order, as ARCHITECTURE.md's layer diagram.
const LAYERS: &[(&str, &str)] = &[
    ("format", "seglog-format"),
    ("storage", "seglog-storage"),
    ("remote", "seglog-remote"),
    ("broker", "seglog-broker"),
    ("cli", "seglog"),
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

/// The layer diagram of ARCHITECTURE.md (`format  ->  storage  ->  ...`, the first line of a
/// code block that has arrows), as folder names; `None` without one.
fn architecture_layers(root: &Path) -> Option<Vec<String>> {
    let text = std::fs::read_to_string(root.join("ARCHITECTURE.md")).ok()?;
    let mut in_code = false;
    for line in text.lines() {
        if line.starts_with("```") {
            in_code = !in_code;
        } else if in_code && line.contains("->") {
            return Some(line.split("->").map(|name| name.trim().to_owned()).collect());
        }
    }
    None
}

/// A manifest's package name and every dependency it names, in any dependency table
/// (`[dependencies]`, `[dev-dependencies]`, `[build-dependencies]`, their `[target.*.]` forms,
/// and `[dependencies.name]` tables), with the table each is in.
fn manifest_edges(text: &str) -> (String, Vec<(String, String)>) {
    let mut name = String::new();
    let mut section = String::new();
    let mut edges = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if let Some(header) = line.strip_prefix('[').and_then(|rest| rest.strip_suffix(']')) {
            header.trim().clone_into(&mut section);
            // `[dependencies.seglog-format]`: the table names the dependency.
            for table in ["dependencies.", "dev-dependencies.", "build-dependencies."] {
                if let Some((prefix, dependency)) = section.split_once(table)
                    && (prefix.is_empty() || prefix.ends_with('.'))
                {
                    edges.push((
                        format!("{prefix}{}", &table[..table.len() - 1]),
                        dependency.to_owned(),
                    ));
                }
            }
            continue;
        }
        if section == "package" {
            if let Some(value) = line.strip_prefix("name") {
                let value = value.trim_start();
                if let Some(value) = value.strip_prefix('=') {
                    value.trim().trim_matches('"').clone_into(&mut name);
                }
            }
            continue;
        }
        let is_dependency_table = ["dependencies", "dev-dependencies", "build-dependencies"]
            .iter()
            .any(|table| section == *table || section.ends_with(&format!(".{table}")));
        if is_dependency_table && !line.is_empty() && !line.starts_with('#') {
            let dependency = line.split(['.', ' ', '=']).next().unwrap_or_default();
            edges.push((section.clone(), dependency.trim_matches('"').to_owned()));
        }
    }
    (name, edges)
}

/// Checks the crate graph against the layers: `LAYERS` names exactly the folders of `crates/`
/// and their packages, ARCHITECTURE.md draws the same order, and no dependency of any kind
/// points to the same or a later layer (a crate's dev-dependency on itself, for features, is
/// allowed).
fn check_layers(root: &Path) -> Vec<String> {
    let mut problems = Vec::new();
    let folders: Vec<&str> = LAYERS.iter().map(|(folder, _)| *folder).collect();
    match architecture_layers(root) {
        Some(drawn) if drawn == folders => {}
        Some(drawn) => problems.push(format!(
            "ARCHITECTURE.md draws the layers {} but xtask tidy has {}",
            drawn.join(" -> "),
            folders.join(" -> ")
        )),
        None => problems.push("ARCHITECTURE.md: no layer diagram (`a -> b`) found".to_owned()),
    }
    let Ok(entries) = std::fs::read_dir(root.join("crates")) else {
        return vec!["crates/ is missing".to_owned()];
    };
    let mut seen = Vec::new();
    for entry in entries.flatten() {
        let folder = entry.file_name().to_string_lossy().into_owned();
        let Ok(text) = std::fs::read_to_string(entry.path().join("Cargo.toml")) else { continue };
        let (name, edges) = manifest_edges(&text);
        let Some(layer_idx) = LAYERS.iter().position(|(layer, _)| *layer == folder) else {
            problems.push(format!("crates/{folder}: not in the layers of xtask tidy"));
            continue;
        };
        seen.push(folder.clone());
        let (_, expected_name) = LAYERS[layer_idx];
        if name != expected_name {
            problems.push(format!(
                "crates/{folder}: package {name:?}, but the layers say {expected_name:?}"
            ));
        }
        for (table, dependency) in edges {
            let Some(dependency_idx) =
                LAYERS.iter().position(|(_, package)| *package == dependency)
            else {
                if dependency.starts_with("seglog") {
                    problems
                        .push(format!("{name} [{table}]: {dependency} is not a workspace crate"));
                }
                continue;
            };
            let own_features = dependency_idx == layer_idx && table.ends_with("dev-dependencies");
            if dependency_idx >= layer_idx && !own_features {
                problems.push(format!(
                    "{name} must not depend on {dependency} [{table}] (one-way layers: {})",
                    folders.join(" -> ")
                ));
            }
        }
    }
    for (folder, _) in LAYERS {
        if !seen.iter().any(|found| found == folder) {
            problems.push(format!("xtask tidy names crates/{folder}, which does not exist"));
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
        std::fs::create_dir_all(dir.join("crates/storage")).unwrap();
        std::fs::write(
            dir.join("crates/storage/Cargo.toml"),
            "[package]\nname = \"seglog-storage\"\n[dev-dependencies]\n\
             seglog-storage = { path = \".\", features = [\"sim\"] }\n\
             seglog-broker = { path = \"../broker\" }\n",
        )
        .unwrap();
        std::fs::create_dir_all(dir.join("crates/protocol")).unwrap();
        std::fs::write(dir.join("crates/protocol/Cargo.toml"), "[package]\nname = \"p\"\n")
            .unwrap();
        std::fs::write(dir.join("ARCHITECTURE.md"), "```\nformat -> broker -> cli\n```\n").unwrap();
        let problems = check(&dir);
        std::fs::remove_dir_all(&dir).unwrap();
        let joined = problems.join("\n");
        for expected in [
            "`//!`",
            "trailing whitespace",
            "#[ignore",
            "bare matches!",
            "seglog-format must not depend on seglog-storage [dependencies]",
            "seglog-storage must not depend on seglog-broker [dev-dependencies]",
            "crates/protocol: not in the layers",
            "names crates/broker, which does not exist",
            "ARCHITECTURE.md draws the layers format -> broker -> cli",
        ] {
            assert!(joined.contains(expected), "missing {expected:?} in:\n{joined}");
        }
        // A crate's dev-dependency on itself (for its features) is not an edge.
        assert!(!joined.contains("must not depend on seglog-storage [dev"), "{joined}");
    }

    #[test]
    fn manifests_are_read_in_every_dependency_table() {
        let (name, edges) = manifest_edges(
            "[package]\nname = \"seglog\"\nversion.workspace = true\n\
             [dependencies]\nseglog-format.workspace = true\n# seglog-x = \"1\"\n\
             [target.'cfg(unix)'.dependencies]\nseglog-storage = { path = \"s\" }\n\
             [build-dependencies]\nseglog-broker = \"0\"\n\
             [dev-dependencies.seglog-sim]\npath = \"x\"\n[lints]\nworkspace = true\n",
        );
        assert_eq!(name, "seglog");
        let edges: Vec<String> =
            edges.iter().map(|(table, dependency)| format!("{table}: {dependency}")).collect();
        assert_eq!(
            edges,
            [
                "dependencies: seglog-format",
                "target.'cfg(unix)'.dependencies: seglog-storage",
                "build-dependencies: seglog-broker",
                "dev-dependencies: seglog-sim",
            ]
        );
    }

    #[test]
    fn layers_are_the_crates_and_the_architecture_diagram() {
        let root = workspace_root();
        let drawn = architecture_layers(&root).unwrap();
        let folders: Vec<&str> = LAYERS.iter().map(|(folder, _)| *folder).collect();
        assert_eq!(drawn, folders);
        assert!(check_layers(&root).is_empty(), "{:?}", check_layers(&root));
    }
}
