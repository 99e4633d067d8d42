//! The core's house rules (ARCHITECTURE.md, "Folders and the dependency rule"), read from the
//! source: folders depend only downward, modules inside a folder import each other one way,
//! and no file holds more than 1,000 lines of non-test code.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// The layers, lowest first: a file may use its own layer's modules and those of lower ones.
/// `error` and `log` are leaves that import nothing of the crate.
const LAYERS: &[&[&str]] = &[
    &["error", "log"],
    &["model"],
    &["wire"],
    &["http"],
    &["durable"],
    &["delivery"],
    &["engine"],
    &["client"],
    &["audience", "testing", "delivery_records"],
    &["lib"],
];

/// Folders whose files form one module of their folder (they share `super::*`).
const UNITS: &[&str] = &["delivery/scheduler", "delivery/lane", "durable/sqlite"];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Each file's path under `src/` (no `.rs`, `mod` dropped) and its code lines: comments,
/// and everything from the file's `#[cfg(test)]` module on, left out.
fn sources() -> Vec<(String, Vec<String>)> {
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    files.sort();
    files
        .into_iter()
        .filter(|f| !f.ends_with("tests.rs"))
        .map(|f| {
            let rel = f.strip_prefix(src()).unwrap().with_extension("");
            let mut name = rel.to_string_lossy().into_owned();
            if let Some(dir) = name.strip_suffix("/mod") {
                name = dir.to_owned();
            }
            let text = fs::read_to_string(&f).unwrap();
            let code = text
                .lines()
                .take_while(|l| l.trim() != "#[cfg(test)]")
                .filter(|l| !l.trim_start().starts_with("//"))
                .map(str::to_owned)
                .collect();
            (name, code)
        })
        .collect()
}

fn layer(module: &str) -> usize {
    let top = module.split('/').next().unwrap();
    LAYERS
        .iter()
        .position(|l| l.contains(&top))
        .unwrap_or_else(|| panic!("{module}: not in any layer of LAYERS; add it there"))
}

/// The module a `crate::a::b::Item` path names: the longest prefix that is a file or folder
/// of the crate, folded into its unit.
fn target(path: &str, modules: &BTreeSet<String>) -> Option<String> {
    let parts: Vec<&str> = path.split("::").collect();
    (1..=parts.len())
        .rev()
        .map(|n| parts[..n].join("/"))
        .find(|m| modules.contains(m))
        .map(|m| unit(&m))
}

fn unit(module: &str) -> String {
    UNITS
        .iter()
        .find(|u| module == **u || module.starts_with(&format!("{u}/")))
        .map_or(module.to_owned(), |u| (*u).to_owned())
}

/// Every `crate::` path a file names: (line number, the module it reaches).
fn imports() -> Vec<(String, usize, String)> {
    let files = sources();
    let modules: BTreeSet<String> = files.iter().map(|(m, _)| m.clone()).collect();
    let mut out = Vec::new();
    for (module, code) in &files {
        for (i, line) in code.iter().enumerate() {
            for (at, _) in line.match_indices("crate::") {
                let rest = &line[at + "crate::".len()..];
                let end = rest
                    .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
                    .unwrap_or(rest.len());
                let path = rest[..end].trim_end_matches(':');
                if let Some(t) = target(path, &modules) {
                    out.push((module.clone(), i + 1, t));
                }
            }
        }
    }
    out
}

#[test]
fn lower_folders_never_import_upper_ones() {
    let upward: Vec<String> = imports()
        .into_iter()
        .filter(|(from, _, to)| layer(to) > layer(from))
        .map(|(from, line, to)| format!("{from}.rs:{line} uses {to}"))
        .collect();
    assert!(
        upward.is_empty(),
        "imports against the layers:\n{}",
        upward.join("\n")
    );
}

#[test]
fn leaves_import_nothing_of_the_crate() {
    let from_leaves: Vec<String> = imports()
        .into_iter()
        .filter(|(from, _, to)| layer(from) == 0 && from != to)
        .map(|(from, line, to)| format!("{from}.rs:{line} uses {to}"))
        .collect();
    assert!(from_leaves.is_empty(), "{}", from_leaves.join("\n"));
}

#[test]
fn modules_import_each_other_one_way() {
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (from, _, to) in imports() {
        let from = unit(&from);
        if from != to {
            graph.entry(from).or_default().insert(to);
        }
    }
    // Any edge a -> b with a path b -> ... -> a is part of a circle.
    let reaches = |start: &str, goal: &str| {
        let mut seen = BTreeSet::new();
        let mut todo = vec![start.to_owned()];
        while let Some(m) = todo.pop() {
            if m == goal {
                return true;
            }
            if seen.insert(m.clone()) {
                todo.extend(graph.get(&m).into_iter().flatten().cloned());
            }
        }
        false
    };
    let circles: Vec<String> = graph
        .iter()
        .flat_map(|(a, tos)| tos.iter().map(move |b| (a, b)))
        .filter(|(a, b)| reaches(b, a))
        .map(|(a, b)| format!("{a} -> {b}"))
        .collect();
    assert!(
        circles.is_empty(),
        "imports in a circle:\n{}",
        circles.join("\n")
    );
}

#[test]
fn no_file_holds_more_than_1000_lines_of_non_test_code() {
    let big: Vec<String> = sources()
        .into_iter()
        .filter(|(_, code)| code.len() > 1000)
        .map(|(m, code)| format!("{m}: {} lines", code.len()))
        .collect();
    assert!(
        big.is_empty(),
        "split along the data flow: {}",
        big.join(", ")
    );
}
