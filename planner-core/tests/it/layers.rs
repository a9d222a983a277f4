//! The layering rule of `lib.rs`'s map, checked on the source: every `crate::`
//! path in planner-core/src (in `use` lines and inline paths, comments aside)
//! points to its own folder or to a folder below. `memory` and `time` share a
//! rank and never import each other. And the page's door: `app/src` and
//! `app-worker/src` name `planner_core::` paths under [`PAGE_DOORS`] only.

use std::path::{Path, PathBuf};

/// Bottom to top; folders with the same rank are siblings.
const LAYERS: [(&str, u32); 13] = [
    ("base", 0),
    ("input", 1),
    ("resolve", 2),
    ("parallel", 3),
    ("memory", 4),
    ("time", 4),
    ("serving", 5),
    ("search", 6),
    ("bill", 7),
    ("evaluate", 7),
    ("figures", 8),
    ("view", 9),
    ("edges", 10),
];

/// What the page (`app/`, `app-worker/`) may import from planner-core: the question's
/// types, the page's sections, the drawn figures, text in and out, explained numbers.
const PAGE_DOORS: [&str; 5] = ["input", "view", "figures", "edges", "base::explain"];

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
        .expect("a readable source folder")
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

/// `ident` or `ident::ident` at the start of `s`: a path's first two segments (the
/// second only when it is a plain name, so `base::{…}` reads as `base::`).
fn head_of(s: &str) -> String {
    let first = ident_at(s);
    let rest = &s[first.len()..];
    match rest.strip_prefix("::") {
        Some(after) => format!("{first}::{}", ident_at(after)),
        None => first.to_string(),
    }
}

/// The head ([`head_of`]) of every path after `prefix` in `code`, including each
/// top-level item of a `prefix{a::x, b}` group (which may span lines), with its offset.
fn heads_after(code: &str, prefix: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut rest = code;
    let mut offset = 0;
    while let Some(i) = rest.find(prefix) {
        let after = &rest[i + prefix.len()..];
        let at = offset + i;
        // `xcrate::` or `my_planner_core::` is another path.
        let glued = rest[..i]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_alphanumeric() || c == '_');
        if let (false, Some(group)) = (glued, after.strip_prefix('{')) {
            let mut depth = 0;
            let mut item_start = true;
            for (j, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => item_start = true,
                    c if item_start && (c.is_alphanumeric() || c == '_') => {
                        out.push((at, head_of(&group[j..])));
                        item_start = false;
                    }
                    _ => {}
                }
            }
        } else if !glued {
            out.push((at, head_of(after)));
        }
        offset += i + prefix.len();
        rest = &rest[prefix.len() + i..];
    }
    out
}

/// The first path segment after every `crate::` in `code`, including each
/// top-level item of a `crate::{a::x, b}` group (which may span lines).
fn targets(code: &str) -> Vec<(usize, String)> {
    heads_after(code, "crate::")
        .into_iter()
        .map(|(at, head)| {
            let first = head.split("::").next().unwrap_or_default().to_string();
            (at, first)
        })
        .collect()
}

/// The source with every line's `//` comment removed.
fn without_comments(text: &str) -> String {
    text.lines().map(code_of).collect::<Vec<_>>().join("\n")
}

/// Each `planner_core::` path in `code` that leaves [`PAGE_DOORS`], as (line, head).
fn page_door_violations(code: &str) -> Vec<(usize, String)> {
    heads_after(code, "planner_core::")
        .into_iter()
        .filter(|(_, head)| {
            !PAGE_DOORS
                .iter()
                .any(|door| head == door || head.split("::").next() == Some(door))
        })
        .map(|(at, head)| (code[..at].matches('\n').count() + 1, head))
        .collect()
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
        let code = without_comments(&text);
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

#[test]
fn the_page_imports_only_input_view_figures_edges_and_explain() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut found = Vec::new();
    for dir in ["app/src", "app-worker/src"] {
        let mut files = Vec::new();
        source_files(&root.join(dir), &mut files);
        assert!(!files.is_empty(), "{dir} has Rust files");
        for file in files {
            let text = std::fs::read_to_string(&file).expect("readable source");
            for (line, head) in page_door_violations(&without_comments(&text)) {
                let rel = file.strip_prefix(&root).unwrap_or(&file);
                found.push(format!("{}:{line}: planner_core::{head}", rel.display()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "the page imports planner-core past {PAGE_DOORS:?} ({} paths): re-export through view or move the type down to input\n{}",
        found.len(),
        found.join("\n")
    );
}

#[test]
fn the_page_door_check_reports_paths_past_the_doors() {
    // A fixture that breaks the rule three ways, beside paths that keep it.
    let source = "use planner_core::{input::model::ModelSpec, memory::serving::ServingPlan};\n\
        use planner_core::base::explain::Term; // planner_core::search in a comment\n\
        let gpus = planner_core::base::bounds::MAX_GPUS;\n\
        use planner_core::view::{memory, pipeline::{self, Bubble}};\n\
        let e = planner_core::evaluate::evaluate(&s);";
    let found = page_door_violations(&without_comments(source));
    assert_eq!(
        found,
        [
            (1, "memory::serving".to_string()),
            (3, "base::bounds".to_string()),
            (5, "evaluate::evaluate".to_string()),
        ]
    );
}
