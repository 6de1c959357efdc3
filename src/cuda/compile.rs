//! NVRTC: `kernels/*.cu` to a cubin for one GPU architecture.
//!
//! A cubin is compiled for the device's own `sm_XY`, so a newer NVRTC never
//! hands the driver PTX it is too old to load. When the device is newer than
//! NVRTC knows, dlbridge compiles PTX for the newest architecture NVRTC has,
//! which any newer driver can JIT. Results are cached on disk (see
//! [`cache_dir`]) and, once loaded, in memory by the device.

use super::library;
use crate::{Error, Result};
use cudarc::nvrtc::sys;
use std::ffi::{CStr, CString, c_char, c_int};
use std::path::PathBuf;

/// One kernel source file.
#[derive(Debug)]
pub struct KernelFile {
    pub name: &'static str,
    pub source: &'static str,
    /// Compiled one dtype at a time (`-DDLB_ONLY=DLB_TAG_<tag>`), because the
    /// whole file takes seconds.
    pub per_dtype: bool,
}

const COMMON: &str = include_str!("../../kernels/common.cuh");

/// Every kernel file dlbridge ships.
pub const FILES: &[KernelFile] = &[
    KernelFile {
        name: "elementwise.cu",
        source: include_str!("../../kernels/elementwise.cu"),
        per_dtype: true,
    },
    KernelFile {
        name: "cast.cu",
        source: include_str!("../../kernels/cast.cu"),
        per_dtype: true,
    },
    KernelFile {
        name: "copy.cu",
        source: include_str!("../../kernels/copy.cu"),
        per_dtype: false,
    },
    KernelFile {
        name: "reduce.cu",
        source: include_str!("../../kernels/reduce.cu"),
        per_dtype: true,
    },
    KernelFile {
        name: "random.cu",
        source: include_str!("../../kernels/random.cu"),
        per_dtype: false,
    },
    KernelFile {
        name: "compare.cu",
        source: include_str!("../../kernels/compare.cu"),
        per_dtype: true,
    },
];

/// A compiled module image, ready for `cuModuleLoadData`.
pub enum Image {
    Cubin(Vec<u8>),
    /// NUL-terminated PTX text.
    Ptx(Vec<u8>),
}

impl Image {
    pub fn bytes(&self) -> &[u8] {
        match self {
            Image::Cubin(b) | Image::Ptx(b) => b,
        }
    }
}

fn nvrtc_missing() -> Error {
    crate::err!(
        Driver,
        "NVRTC (libnvrtc.so.13 or libnvrtc.so.12) was not found, so dlbridge cannot compile its CUDA \
         kernels. Install the CUDA toolkit, set CUDA_PATH or CUDA_HOME, install a PyTorch or CuPy CUDA \
         wheel (which ship it under site-packages/nvidia/*/lib), or point DLBRIDGE_NVRTC at the file."
    )
}

fn check(r: sys::nvrtcResult, what: &str) -> Result<()> {
    if r == sys::nvrtcResult::NVRTC_SUCCESS {
        return Ok(());
    }
    // SAFETY: nvrtcGetErrorString returns a static NUL-terminated string.
    let text = unsafe { CStr::from_ptr(sys::nvrtcGetErrorString(r)) };
    Err(crate::err!(
        Driver,
        "NVRTC error in {what}: {}",
        text.to_string_lossy()
    ))
}

/// Runs an NVRTC call sequence, turning a panic from a missing symbol
/// (cudarc panics when a function is absent from the loaded library) into an error.
fn guarded<T>(f: impl FnOnce() -> Result<T>) -> Result<T> {
    if !library::ensure_nvrtc() {
        return Err(nvrtc_missing());
    }
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or_else(|_| {
        Err(crate::err!(
            Driver,
            "the NVRTC library found lacks a function dlbridge needs (NVRTC 12 or newer is required)"
        ))
    })
}

/// NVRTC's `(major, minor)` version.
pub fn nvrtc_version() -> Result<(i32, i32)> {
    guarded(|| {
        let (mut major, mut minor) = (0, 0);
        // SAFETY: both pointers are valid for writes.
        check(
            unsafe { sys::nvrtcVersion(&mut major, &mut minor) },
            "nvrtcVersion",
        )?;
        Ok((major, minor))
    })
}

/// The `sm_XY` numbers (XY = 10 * major + minor) NVRTC can target.
pub fn supported_archs() -> Result<Vec<i32>> {
    guarded(|| {
        let mut n: c_int = 0;
        // SAFETY: n is valid for a write.
        check(
            unsafe { sys::nvrtcGetNumSupportedArchs(&mut n) },
            "nvrtcGetNumSupportedArchs",
        )?;
        let mut archs = vec![0 as c_int; n.max(0) as usize];
        // SAFETY: archs has room for the n entries NVRTC reported.
        check(
            unsafe { sys::nvrtcGetSupportedArchs(archs.as_mut_ptr()) },
            "nvrtcGetSupportedArchs",
        )?;
        Ok(archs)
    })
}

/// What to build for a device of compute capability `cc` (10 * major + minor):
/// a cubin for its own architecture when NVRTC knows it, else PTX for the
/// newest architecture NVRTC knows below it.
pub fn target_for(cc: i32) -> Result<String> {
    let archs = supported_archs()?;
    if archs.contains(&cc) {
        return Ok(format!("sm_{cc}"));
    }
    match archs.iter().copied().filter(|&a| a <= cc).max() {
        Some(a) => Ok(format!("compute_{a}")),
        None => Err(crate::err!(
            Driver,
            "this NVRTC cannot compile for compute capability {}.{} (it supports {:?}); install a \
             CUDA toolkit or wheel that matches the GPU",
            cc / 10,
            cc % 10,
            archs
        )),
    }
}

/// 64-bit FNV-1a: a stable hash for cache file names.
fn fnv1a(parts: &[&[u8]]) -> u64 {
    let mut h: u64 = 0xcbf29ce484222325;
    for part in parts {
        for &b in *part {
            h = (h ^ b as u64).wrapping_mul(0x100000001b3);
        }
        h = (h ^ 0xff).wrapping_mul(0x100000001b3);
    }
    h
}

/// Where compiled kernels are kept: `$DLBRIDGE_CACHE_DIR` (empty disables
/// the disk cache), else `$XDG_CACHE_HOME/dlbridge/kernels`, else
/// `~/.cache/dlbridge/kernels`.
pub fn cache_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("DLBRIDGE_CACHE_DIR") {
        return (!dir.is_empty()).then(|| PathBuf::from(dir));
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    Some(base.join("dlbridge").join("kernels"))
}

/// The image of `file` (restricted to one dtype tag when given) for
/// `target` (`sm_90` for a cubin, `compute_90` for PTX), from the disk cache
/// when present.
pub fn compile_cached(file: &KernelFile, only: Option<&str>, target: &str) -> Result<Image> {
    let version = nvrtc_version()?;
    let is_ptx = target.starts_with("compute_");
    let key = fnv1a(&[
        format!("{version:?}").as_bytes(),
        target.as_bytes(),
        file.name.as_bytes(),
        only.unwrap_or("").as_bytes(),
        COMMON.as_bytes(),
        file.source.as_bytes(),
    ]);
    let stem = file.name.trim_end_matches(".cu");
    let path = cache_dir().map(|d| {
        d.join(format!(
            "{stem}-{}-{target}-{key:016x}.{}",
            only.unwrap_or("all"),
            if is_ptx { "ptx" } else { "cubin" }
        ))
    });
    if let Some(bytes) = path.as_ref().and_then(|p| std::fs::read(p).ok()) {
        return Ok(if is_ptx {
            Image::Ptx(bytes)
        } else {
            Image::Cubin(bytes)
        });
    }
    let image = compile(file, only, target)?;
    if let Some(path) = path {
        // Best effort: a read-only home directory only costs a recompile.
        let tmp = path.with_extension(format!("tmp{}", std::process::id()));
        if path
            .parent()
            .is_some_and(|d| std::fs::create_dir_all(d).is_ok())
            && std::fs::write(&tmp, image.bytes()).is_ok()
        {
            let _ = std::fs::rename(&tmp, &path);
        }
    }
    Ok(image)
}

/// Compiles `file` with NVRTC (no cache).
pub fn compile(file: &KernelFile, only: Option<&str>, target: &str) -> Result<Image> {
    guarded(|| {
        let src = CString::new(file.source).expect("kernel sources have no NUL");
        let name = CString::new(file.name).expect("no NUL");
        let header = CString::new(COMMON).expect("no NUL");
        let header_name = c"common.cuh";
        let headers = [header.as_ptr()];
        let include_names = [header_name.as_ptr()];
        let mut prog: sys::nvrtcProgram = std::ptr::null_mut();
        // SAFETY: every pointer is a live NUL-terminated string; the arrays hold one entry each.
        check(
            unsafe {
                sys::nvrtcCreateProgram(
                    &mut prog,
                    src.as_ptr(),
                    name.as_ptr(),
                    1,
                    headers.as_ptr(),
                    include_names.as_ptr(),
                )
            },
            "nvrtcCreateProgram",
        )?;
        let program = Program(prog);
        let mut options = vec![
            format!("--gpu-architecture={target}"),
            "-std=c++17".to_string(),
            "--device-as-default-execution-space".to_string(),
        ];
        if let Some(tag) = only {
            options.push(format!("-DDLB_ONLY=DLB_TAG_{tag}"));
        }
        let options: Vec<CString> = options
            .into_iter()
            .map(|o| CString::new(o).expect("no NUL"))
            .collect();
        let option_ptrs: Vec<*const c_char> = options.iter().map(|o| o.as_ptr()).collect();
        // SAFETY: prog is live; option_ptrs points at live strings.
        let status = unsafe {
            sys::nvrtcCompileProgram(program.0, option_ptrs.len() as c_int, option_ptrs.as_ptr())
        };
        if status != sys::nvrtcResult::NVRTC_SUCCESS {
            return Err(crate::err!(
                Driver,
                "NVRTC could not compile kernels/{} for {target}:\n{}",
                file.name,
                program.log()
            ));
        }
        let ptx = target.starts_with("compute_");
        let mut size = 0usize;
        // SAFETY: prog compiled successfully; size is valid for a write.
        check(
            unsafe {
                if ptx {
                    sys::nvrtcGetPTXSize(program.0, &mut size)
                } else {
                    sys::nvrtcGetCUBINSize(program.0, &mut size)
                }
            },
            "nvrtcGetCUBINSize",
        )?;
        let mut bytes = vec![0u8; size];
        // SAFETY: bytes has the size NVRTC reported.
        check(
            unsafe {
                if ptx {
                    sys::nvrtcGetPTX(program.0, bytes.as_mut_ptr().cast())
                } else {
                    sys::nvrtcGetCUBIN(program.0, bytes.as_mut_ptr().cast())
                }
            },
            "nvrtcGetCUBIN",
        )?;
        Ok(if ptx {
            Image::Ptx(bytes)
        } else {
            Image::Cubin(bytes)
        })
    })
}

/// Destroys the NVRTC program on every exit path.
struct Program(sys::nvrtcProgram);

impl Program {
    fn log(&self) -> String {
        let mut size = 0usize;
        // SAFETY: self.0 is a live program; size is valid for a write.
        if unsafe { sys::nvrtcGetProgramLogSize(self.0, &mut size) }
            != sys::nvrtcResult::NVRTC_SUCCESS
        {
            return String::new();
        }
        let mut log = vec![0u8; size];
        // SAFETY: log has the size NVRTC reported.
        unsafe { sys::nvrtcGetProgramLog(self.0, log.as_mut_ptr().cast()) };
        String::from_utf8_lossy(&log)
            .trim_end_matches('\0')
            .to_string()
    }
}

impl Drop for Program {
    fn drop(&mut self) {
        // SAFETY: self.0 came from nvrtcCreateProgram and is destroyed once.
        unsafe { sys::nvrtcDestroyProgram(&mut self.0) };
    }
}

/// Compiles every kernel file for `target` (whole files, no cache): the CI
/// check that needs no GPU. Returns each file's image size.
pub fn compile_all(target: &str) -> Result<Vec<(&'static str, usize)>> {
    FILES
        .iter()
        .map(|f| Ok((f.name, compile(f, None, target)?.bytes().len())))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_keys_are_stable_and_sensitive() {
        let a = fnv1a(&[b"sm_90", b"src"]);
        assert_eq!(a, fnv1a(&[b"sm_90", b"src"]));
        assert_ne!(a, fnv1a(&[b"sm_90", b"src2"]));
        // Part boundaries matter: ("ab", "c") is not ("a", "bc").
        assert_ne!(fnv1a(&[b"ab", b"c"]), fnv1a(&[b"a", b"bc"]));
    }

    #[test]
    fn every_kernel_file_is_listed() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("kernels");
        let mut on_disk: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|n| n.ends_with(".cu"))
            .collect();
        on_disk.sort();
        let mut listed: Vec<String> = FILES.iter().map(|f| f.name.to_string()).collect();
        listed.sort();
        assert_eq!(on_disk, listed);
    }
}
