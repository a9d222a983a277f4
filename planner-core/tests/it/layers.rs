//! The layering rule of `lib.rs`'s map, checked on the source: every `crate::`
//! path in planner-core/src (in `use` lines and inline paths, comments aside)
//! points to its own folder or to a folder below. `memory` and `time` share a
//! rank and never import each other.

use std::path::{Path, PathBuf};

/// Bottom to top; folders with the same rank are siblings.
const LAYERS: [(&str, u32); 12] = [
    ("base", 0),
    ("input", 1),
    ("resolve", 2),
    ("parallel", 3),
    ("memory", 4),
    ("time", 4),
    ("serving", 5),
    ("search", 6),
    ("evaluate", 7),
    ("figures", 8),
    ("view", 9),
    ("edges", 10),
];

fn rank(layer: &str) -> Option<u32> {
    LAYERS.iter().find(|(n, _)| *n == layer).map(|(_, r)| *r)
}

/// One `crate::` path that breaks the rule.
#[derive(Debug, PartialEq)]
struct Violation {
    file: String,
    line: usize,
    from: String,
    to: String,
}

fn source_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .expect("planner-core/src is readable")
        .map(|e| e.expect("directory entry").path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            source_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// The code of a line without its `//` comment (doc links may point anywhere:
/// they are not imports). A `//` inside a string literal ends the scan early,
/// which can only hide a path, never invent one.
fn code_of(line: &str) -> &str {
    match line.find("//") {
        Some(i) => &line[..i],
        None => line,
    }
}

fn ident_at(s: &str) -> &str {
    let end = s
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    &s[..end]
}

/// The first path segment after every `crate::` in `code`, including each
/// top-level item of a `crate::{a::x, b}` group (which may span lines).
fn targets(code: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut rest = code;
    let mut offset = 0;
    while let Some(i) = rest.find("crate::") {
        let after = &rest[i + "crate::".len()..];
        let at = offset + i;
        if let Some(group) = after.strip_prefix('{') {
            let mut depth = 0;
            let mut item_start = true;
            for (j, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => item_start = true,
                    c if item_start && (c.is_alphanumeric() || c == '_') => {
                        out.push((at, ident_at(&group[j..]).to_string()));
                        item_start = false;
                    }
                    _ => {}
                }
            }
        } else {
            out.push((at, ident_at(after).to_string()));
        }
        offset += i + "crate::".len();
        rest = &rest["crate::".len() + i..];
    }
    out
}

fn violations(src: &Path) -> Vec<Violation> {
    let mut files = Vec::new();
    source_files(src, &mut files);
    let mut found = Vec::new();
    for file in files {
        let rel = file.strip_prefix(src).expect("under src");
        let first = rel.components().next().expect("a path").as_os_str();
        let from = first.to_string_lossy().trim_end_matches(".rs").to_string();
        if from == "lib" {
            continue;
        }
        let from_rank = rank(&from).unwrap_or_else(|| {
            panic!(
                "{} is in no layer: add its folder to LAYERS and lib.rs's map",
                rel.display()
            )
        });
        let text = std::fs::read_to_string(&file).expect("readable source");
        let code: String = text.lines().map(code_of).collect::<Vec<_>>().join("\n");
        for (at, to) in targets(&code) {
            let Some(to_rank) = rank(&to) else {
                panic!("{}: `crate::{to}` is not a layer path", rel.display());
            };
            let upward = to_rank > from_rank;
            let sideways = to_rank == from_rank && to != from;
            if upward || sideways {
                found.push(Violation {
                    file: rel.display().to_string(),
                    line: code[..at].matches('\n').count() + 1,
                    from: from.clone(),
                    to,
                });
            }
        }
    }
    found
}

#[test]
fn imports_run_only_downward() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let found = violations(&src);
    let listed: Vec<String> = found
        .iter()
        .map(|v| format!("{}:{}: {} imports {}", v.file, v.line, v.from, v.to))
        .collect();
    assert!(
        found.is_empty(),
        "{} imports run up a layer or across siblings:\n{}",
        found.len(),
        listed.join("\n")
    );
}

#[test]
fn the_scanner_sees_groups_inline_paths_and_skips_comments() {
    let code = "use crate::{input::model::ModelSpec,\n time::cost::{A, B}};\nlet x = crate::edges::link::parse(s);";
    let seen: Vec<String> = targets(code).into_iter().map(|(_, t)| t).collect();
    assert_eq!(seen, ["input", "time", "edges"]);
    assert_eq!(code_of("let y = 1; // see [`crate::edges`]"), "let y = 1; ");
}
