//! Every `unsafe` block and `unsafe impl` says why it holds: a `SAFETY:`
//! comment on its line or in the few lines above it (where a statement that
//! wraps the block starts). Also keeps `unsafe_op_in_unsafe_fn` denied, so an
//! `unsafe fn` body cannot skip its blocks (and their comments).

mod common;

use common::rust_files;
use std::path::Path;

/// How far above an `unsafe` its comment may sit (a wrapped call such as
/// `check(\n unsafe { .. },` puts the comment above the statement).
const WINDOW: usize = 4;

/// `(line number, line)` of each `unsafe` block or impl in `text` without a
/// `SAFETY:` comment within `WINDOW` lines above it.
fn missing_safety_comments(text: &str) -> Vec<(usize, String)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut missing = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let code = line.split("//").next().unwrap_or("");
        let opens = code.match_indices("unsafe").any(|(at, _)| {
            let before = code[..at].chars().next_back();
            let rest = code[at + "unsafe".len()..].trim_start();
            !before.is_some_and(|c| c.is_alphanumeric() || c == '_')
                && (rest.starts_with('{') || rest.starts_with("impl"))
        });
        let commented = lines[i.saturating_sub(WINDOW)..=i]
            .iter()
            .any(|l| l.contains("SAFETY"));
        if opens && !commented {
            missing.push((i + 1, line.trim().to_string()));
        }
    }
    missing
}

#[test]
fn every_unsafe_block_has_a_safety_comment() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in ["src", "fuzz/src", "fuzz/fuzz_targets", "tests"] {
        rust_files(&root.join(dir), &mut files);
    }
    assert!(files.len() > 40, "found only {} Rust files", files.len());
    let mut report = String::new();
    // This file's own examples are strings, not code.
    files.retain(|f| !f.ends_with("tests/safety_comments.rs"));
    for file in &files {
        for (n, line) in missing_safety_comments(&std::fs::read_to_string(file).unwrap()) {
            report += &format!(
                "{}:{n}: {line}\n",
                file.strip_prefix(root).unwrap().display()
            );
        }
    }
    assert!(
        report.is_empty(),
        "unsafe without a SAFETY: comment:\n{report}"
    );
}

#[test]
fn the_check_finds_what_it_should() {
    let text = "fn f() {\n    let x = 1;\n    let y = 2;\n    let z = 3;\n    let w = 4;\n    unsafe { g() };\n}\n\
                // SAFETY: reasons.\nunsafe impl Send for T {}\n\
                fn h() { let _ = unsafe_thing(); } // not a block\n\
                // unsafe { in a comment }\n";
    assert_eq!(
        missing_safety_comments(text),
        vec![(6, "unsafe { g() };".to_string())]
    );
}

#[test]
fn unsafe_op_in_unsafe_fn_stays_denied() {
    let manifest =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml"));
    assert!(
        manifest
            .unwrap()
            .contains("unsafe_op_in_unsafe_fn = \"deny\"")
    );
}
