//! Finding `libnvrtc` where users have it.
//!
//! cudarc opens libraries by name only (`libnvrtc.so.13`, then `.12`, ...),
//! which finds a system toolkit on the loader path but not the copies that the
//! PyTorch and CuPy wheels install under `site-packages/nvidia/*/lib`, nor a
//! toolkit named by `CUDA_PATH`/`CUDA_HOME`. So before cudarc's first NVRTC
//! call dlbridge opens the best copy it can find by full path: the dynamic
//! loader then hands cudarc that same library when it asks for the soname.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

/// Directories registered by the embedding program (the Python module adds
/// `sys.path`, where wheels put `nvidia/*/lib`).
static EXTRA_ROOTS: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// Adds places to look for `nvidia/*/lib` folders (site-packages roots).
/// Takes effect if NVRTC has not been loaded yet.
pub fn add_package_roots(roots: impl IntoIterator<Item = PathBuf>) {
    EXTRA_ROOTS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .extend(roots);
}

/// The NVRTC sonames dlbridge accepts, newest first (cudarc's bindings are
/// pinned to CUDA 13 and fall back to 12).
const NVRTC_NAMES: [&str; 2] = ["libnvrtc.so.13", "libnvrtc.so.12"];

/// The NVRTC sonames in order of preference: a driver only loads code from
/// an NVRTC of its own major version or older, so with a CUDA 12 driver the
/// 12 library comes first.
fn preferred_names() -> Vec<&'static str> {
    let mut names = NVRTC_NAMES.to_vec();
    if super::driver::major_version().is_some_and(|major| major < 13) {
        names.reverse();
    }
    names
}

/// Every directory that may hold an NVRTC library, most specific first.
fn candidate_dirs() -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    for var in ["CUDA_PATH", "CUDA_HOME", "CUDA_ROOT"] {
        if let Some(root) = std::env::var_os(var) {
            let root = PathBuf::from(root);
            dirs.push(root.join("lib64"));
            dirs.push(root.join("lib"));
            dirs.push(root.join("targets/x86_64-linux/lib"));
            dirs.push(root.join("targets/sbsa-linux/lib"));
        }
    }
    let roots = EXTRA_ROOTS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone();
    for root in roots {
        // CUDA 13 wheels: nvidia/cu13/lib; CUDA 12 wheels: nvidia/cuda_nvrtc/lib.
        if let Ok(entries) = std::fs::read_dir(root.join("nvidia")) {
            let mut found: Vec<PathBuf> = entries
                .filter_map(|e| e.ok())
                .map(|e| e.path().join("lib"))
                .filter(|p| p.is_dir())
                .collect();
            found.sort();
            dirs.extend(found);
        }
    }
    dirs.push(PathBuf::from("/usr/local/cuda/lib64"));
    dirs.push(PathBuf::from("/usr/local/cuda/targets/x86_64-linux/lib"));
    dirs.push(PathBuf::from("/opt/cuda/lib64"));
    dirs
}

/// The first NVRTC library file found, preferring CUDA 13 in every folder.
pub fn find_nvrtc() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("DLBRIDGE_NVRTC") {
        return Some(PathBuf::from(path));
    }
    let dirs = candidate_dirs();
    preferred_names().into_iter().find_map(|name| {
        dirs.iter()
            .map(|d| d.join(name))
            .find(|p: &PathBuf| p.is_file())
    })
}

/// Where NVRTC was loaded from (or `None` if it was only on the loader path).
static PRELOADED: OnceLock<Option<PathBuf>> = OnceLock::new();

/// Opens the best NVRTC copy by full path (once), so cudarc's later
/// open-by-soname returns it. Returns whether NVRTC can be used at all.
pub fn ensure_nvrtc() -> bool {
    PRELOADED.get_or_init(|| {
        find_nvrtc().filter(|path| {
            preload_builtins(path);
            dlopen_global(path)
        })
    });
    // SAFETY: is_culib_present only tries to dlopen candidate names.
    unsafe { cudarc::nvrtc::sys::is_culib_present() }
}

/// The NVRTC file dlbridge loaded itself, if it had to find one.
pub fn nvrtc_path() -> Option<PathBuf> {
    PRELOADED.get().cloned().flatten()
}

/// NVRTC opens `libnvrtc-builtins.so.<major>.<minor>` by name when it
/// compiles; a copy beside the chosen library is opened first, so that works
/// even when the folder is on no search path (older wheels set no RUNPATH).
fn preload_builtins(nvrtc: &Path) {
    let Some(dir) = nvrtc.parent() else { return };
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.filter_map(|e| e.ok()) {
        let name = entry.file_name();
        if name.to_string_lossy().starts_with("libnvrtc-builtins.so.") {
            dlopen_global(&entry.path());
        }
    }
}

/// `dlopen(path, RTLD_NOW | RTLD_GLOBAL)`, kept open for the process's life.
fn dlopen_global(path: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(path.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: c is a valid NUL-terminated path; the handle is deliberately
    // never closed, so the library stays mapped for cudarc's function pointers.
    let handle = unsafe { libc::dlopen(c.as_ptr(), libc::RTLD_NOW | libc::RTLD_GLOBAL) };
    !handle.is_null()
}
