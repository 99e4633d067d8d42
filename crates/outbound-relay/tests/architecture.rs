//! The relay's house rules (ARCHITECTURE.md, "outbound-relay"), read from the source:
//! folders depend only downward, no two files import each other in a circle, and no file
//! holds more than 800 lines of non-test code.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// The layers, lowest first: a module may use its own layer's and lower ones'.
const LAYERS: &[&[&str]] = &[
    &["config"],
    &["http"],
    &["sources"],
    &["operations"],
    &["tracking", "control", "console"],
    &["server"],
    &["main"],
];

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

/// Each file (path under `src/`, no `.rs`, `/mod` dropped) and its code lines: comments and
/// everything from its `#[cfg(test)]` on left out.
fn sources() -> Vec<(String, Vec<String>)> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    files
        .into_iter()
        .map(|f| {
            let rel = f.strip_prefix(&src).unwrap().with_extension("");
            let mut name = rel.to_string_lossy().into_owned();
            if let Some(dir) = name.strip_suffix("/mod") {
                name = dir.to_owned();
            }
            let text = fs::read_to_string(&f).unwrap();
            let code = (text.lines())
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
    (LAYERS.iter().position(|l| l.contains(&top)))
        .unwrap_or_else(|| panic!("{module}: in no layer of LAYERS; add it there"))
}

/// The modules of the crate each file names (`crate::a::b` → the longest that is a file).
fn uses(files: &[(String, Vec<String>)]) -> BTreeMap<String, BTreeSet<String>> {
    let modules: BTreeSet<String> = files.iter().map(|(n, _)| n.clone()).collect();
    let mut out = BTreeMap::new();
    for (name, code) in files {
        let mut used = BTreeSet::new();
        for line in code {
            for (i, _) in line.match_indices("crate::") {
                let rest = &line[i + 7..];
                let path: String = rest
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
                    .collect();
                let parts: Vec<&str> = path.split("::").filter(|p| !p.is_empty()).collect();
                let target = (1..=parts.len())
                    .rev()
                    .map(|n| parts[..n].join("/"))
                    .find(|m| modules.contains(m));
                if let Some(t) = target.filter(|t| t != name) {
                    used.insert(t);
                }
            }
        }
        out.insert(name.clone(), used);
    }
    out
}

#[test]
fn folders_depend_only_downward() {
    let files = sources();
    let mut wrong = Vec::new();
    for (from, used) in uses(&files) {
        for to in used {
            if layer(&to) > layer(&from) {
                wrong.push(format!("{from} uses {to}, a layer above it"));
            }
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}

#[test]
fn no_two_modules_use_each_other() {
    let graph = uses(&sources());
    let mut circles = Vec::new();
    for (a, used) in &graph {
        for b in used {
            // A folder's mod.rs and its own files are one unit (`super::`), as in the core.
            let parent = |x: &str, y: &str| y.starts_with(&format!("{x}/"));
            if graph.get(b).is_some_and(|u| u.contains(a))
                && a < b
                && !parent(a, b)
                && !parent(b, a)
            {
                circles.push(format!("{a} <-> {b}"));
            }
        }
    }
    assert!(circles.is_empty(), "{circles:#?}");
}

#[test]
fn no_file_holds_more_than_800_lines_of_code() {
    let long: Vec<String> = (sources().into_iter())
        .filter(|(_, code)| code.len() > 800)
        .map(|(name, code)| format!("{name}: {}", code.len()))
        .collect();
    assert!(long.is_empty(), "{long:?}");
}
