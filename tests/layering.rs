//! The seams the code is built around stay where they are:
//! - raw CUDA driver calls live only in the runtime layer
//!   (`src/cuda/driver.rs`, `src/cuda/runtime.rs`); everything else goes
//!   through its safe types and fallible functions;
//! - nothing decides a C status or a Python exception by reading error text
//!   (`ErrorKind` does that);
//! - `src/storage/` knows nothing of CUDA: a backend hands it what it needs
//!   (`Owner::Device`, `DeviceQueue`), so storage never calls a backend;
//! - no source file in `src/` or `python/` grows past [`MAX_LINES`]: a file
//!   that long holds more than one idea.

mod common;

use common::rust_files;
use std::path::Path;

/// The files allowed to call the driver directly.
const DRIVER_LAYER: [&str; 2] = ["src/cuda/driver.rs", "src/cuda/runtime.rs"];

/// Lines of `text` that call the driver API raw: cudarc's `result` module
/// or a `sys::cuXxx` function.
fn raw_driver_calls(text: &str) -> Vec<String> {
    text.lines()
        .filter(|line| {
            let code = line.split("//").next().unwrap_or("");
            code.contains("driver::result")
                || code.contains("result as cu")
                || code
                    .match_indices("sys::cu")
                    .any(|(at, _)| code[at + 7..].starts_with(|c: char| c.is_ascii_uppercase()))
        })
        .map(|l| l.trim().to_string())
        .collect()
}

/// Lines of `text` that branch on an error's message.
fn decisions_on_error_text(text: &str) -> Vec<String> {
    text.lines()
        .filter(|line| {
            let code = line.split("//").next().unwrap_or("");
            (code.contains("to_string().contains(") || code.contains("message().contains("))
                && !code.contains("assert")
        })
        .map(|l| l.trim().to_string())
        .collect()
}

fn sources() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    files
        .into_iter()
        .map(|p| {
            let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            (rel, std::fs::read_to_string(&p).unwrap())
        })
        .collect()
}

#[test]
fn raw_driver_calls_stay_in_the_runtime_layer() {
    let mut found = Vec::new();
    for (path, text) in sources() {
        if !DRIVER_LAYER.contains(&path.as_str()) {
            found.extend(
                raw_driver_calls(&text)
                    .into_iter()
                    .map(|l| format!("{path}: {l}")),
            );
        }
    }
    assert!(
        found.is_empty(),
        "raw driver calls outside {DRIVER_LAYER:?}:\n{}",
        found.join("\n")
    );
}

/// Lines of `text` that name the CUDA backend (or any backend) directly.
fn backend_references(text: &str) -> Vec<String> {
    text.lines()
        .filter(|line| {
            let code = line.split("//").next().unwrap_or("");
            code.contains("crate::cuda")
                || code.contains("crate::backend")
                || code.contains("feature = \"cuda\"")
        })
        .map(|l| l.trim().to_string())
        .collect()
}

#[test]
fn storage_knows_nothing_of_cuda() {
    let mut found = Vec::new();
    for (path, text) in sources() {
        if path.starts_with("src/storage/") {
            found.extend(
                backend_references(&text)
                    .into_iter()
                    .map(|l| format!("{path}: {l}")),
            );
        }
    }
    assert!(
        found.is_empty(),
        "storage/ calls into a backend:\n{}",
        found.join("\n")
    );
}

#[test]
fn no_code_decides_by_error_text() {
    let mut found = Vec::new();
    for (path, text) in sources() {
        found.extend(
            decisions_on_error_text(&text)
                .into_iter()
                .map(|l| format!("{path}: {l}")),
        );
    }
    assert!(
        found.is_empty(),
        "decisions on message text:\n{}",
        found.join("\n")
    );
}

/// The most lines a source file may have.
const MAX_LINES: usize = 800;

/// Every file under `dir` (recursively) whose name ends in one of `exts`.
fn files_ending(dir: &Path, exts: &[&str], out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files_ending(&path, exts, out);
        } else if exts.iter().any(|e| path.to_string_lossy().ends_with(e)) {
            out.push(path);
        }
    }
}

/// `path: lines` for each text longer than [`MAX_LINES`].
fn too_long<'a>(texts: impl IntoIterator<Item = (String, &'a str)>) -> Vec<String> {
    texts
        .into_iter()
        .filter(|(_, t)| t.lines().count() > MAX_LINES)
        .map(|(p, t)| format!("{p}: {} lines", t.lines().count()))
        .collect()
}

#[test]
fn no_source_file_is_over_800_lines() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut paths = Vec::new();
    files_ending(&root.join("src"), &[".rs"], &mut paths);
    files_ending(&root.join("python"), &[".py", ".pyi", ".rs"], &mut paths);
    assert!(paths.len() > 50, "found only {} sources", paths.len());
    let texts: Vec<(String, String)> = paths
        .iter()
        .map(|p| (p.display().to_string(), std::fs::read_to_string(p).unwrap()))
        .collect();
    let found = too_long(texts.iter().map(|(p, t)| (p.clone(), t.as_str())));
    assert!(
        found.is_empty(),
        "files over {MAX_LINES} lines:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_checks_can_fail() {
    assert_eq!(
        raw_driver_calls("use cudarc::driver::result as cu;").len(),
        1
    );
    assert_eq!(
        raw_driver_calls("let r = sys::cuDriverGetVersion(&mut v);").len(),
        1
    );
    assert!(raw_driver_calls("let p: sys::CUdeviceptr = 0; // sys::cuMemAlloc").is_empty());
    let bad = "_ if e.to_string().contains(\"out of memory\") => OOM,";
    assert_eq!(decisions_on_error_text(bad).len(), 1);
    assert!(decisions_on_error_text("assert!(e.to_string().contains(\"x\"));").is_empty());
    assert_eq!(
        backend_references("crate::cuda::Cuda.before_foreign_release(d);").len(),
        1
    );
    assert!(backend_references("// not crate::cuda, a comment").is_empty());
    let long = "x\n".repeat(MAX_LINES + 1);
    assert_eq!(too_long([("a.rs".to_string(), long.as_str())]).len(), 1);
    assert!(too_long([("b.rs".to_string(), &long[2..])]).is_empty());
}
