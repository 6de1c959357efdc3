//! The CUDA driver, one [`Gpu`] per device, set up on first use.
//!
//! dlbridge works in each device's primary context, the one PyTorch, CuPy and
//! JAX use, so pointers and events are shared with them. All of dlbridge's
//! work goes to the legacy default stream ([`STREAM`]), which is also
//! PyTorch's and CuPy's default: with those defaults no extra synchronisation
//! is ever needed, and the DLPack exchange adds an event wait for consumers
//! on other streams.

use super::compile::{self, KernelFile};
use super::driver::{STREAM, driver_error};
use crate::{Device, Error, Result};
use cudarc::driver::result::{self as cu, DriverError};
use cudarc::driver::{CudaContext, sys};
use std::collections::HashMap;
use std::ffi::{CString, c_void};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::{Arc, Mutex, OnceLock};

/// Restores the thread's previous current context when dropped.
#[must_use = "the context is only current while the guard lives"]
pub struct ContextGuard {
    /// `Some(previous)` when `bind` changed the current context.
    restore: Option<Option<sys::CUcontext>>,
}

impl Drop for ContextGuard {
    fn drop(&mut self) {
        if let Some(previous) = self.restore {
            // SAFETY: previous was current on this thread a moment ago (or
            // null, meaning none), so it is a live context handle.
            unsafe {
                let _ = cu::ctx::set_current(previous.unwrap_or(std::ptr::null_mut()));
            }
        }
    }
}

/// Per-device state.
pub struct Gpu {
    pub ordinal: u32,
    ctx: Arc<CudaContext>,
    /// dlbridge's own stream-ordered pool (None where the device has none).
    pool: Option<sys::CUmemoryPool>,
    /// The pool was created exportable (POSIX file descriptors), so its
    /// allocations can be opened by other processes (CUDA IPC).
    pool_ipc: bool,
    /// The pool as other processes open it, exported on first request.
    pool_export: OnceLock<PoolExport>,
    /// Compute capability as 10 * major + minor.
    pub cc: i32,
    pub sm_count: u32,
    pub total_mem: usize,
    target: OnceLock<Result<String>>,
    modules: Mutex<HashMap<(&'static str, &'static str), sys::CUmodule>>,
    functions: Mutex<HashMap<String, sys::CUfunction>>,
    pub(super) staging: Mutex<Option<super::transfer::Staging>>,
}

// SAFETY: the raw handles (pool, modules, functions) are process-wide driver
// objects usable from any thread once the context is current; the maps are
// behind mutexes.
unsafe impl Send for Gpu {}
// SAFETY: as above.
unsafe impl Sync for Gpu {}

struct Runtime {
    /// One slot per device, filled on first use. A failed open is not
    /// remembered (it may have been transient, e.g. out of memory).
    gpus: Vec<OnceLock<Gpu>>,
    opening: Mutex<()>,
}

static RUNTIME: OnceLock<std::result::Result<Runtime, String>> = OnceLock::new();

fn init() -> std::result::Result<Runtime, String> {
    if !super::driver::present() {
        return Err("the CUDA driver library (libcuda.so.1) is not installed".into());
    }
    let count = std::panic::catch_unwind(|| {
        cu::init().map_err(|e| format!("cuInit failed: {e:?}"))?;
        cu::device::get_count().map_err(|e| format!("cuDeviceGetCount failed: {e:?}"))
    })
    .unwrap_or_else(|_| Err("the CUDA driver library could not be used".into()))?;
    Ok(Runtime {
        gpus: (0..count.max(0)).map(|_| OnceLock::new()).collect(),
        opening: Mutex::new(()),
    })
}

fn runtime() -> Option<&'static Runtime> {
    RUNTIME.get_or_init(init).as_ref().ok()
}

/// Why CUDA is unavailable, if it is.
pub fn unavailable_reason() -> Option<String> {
    match RUNTIME.get_or_init(init) {
        Err(reason) => Some(reason.clone()),
        Ok(rt) if rt.gpus.is_empty() => Some("the CUDA driver reports no devices".into()),
        Ok(_) => None,
    }
}

/// Number of CUDA devices (0 without a driver).
pub fn device_count() -> usize {
    runtime().map_or(0, |rt| rt.gpus.len())
}

/// Checks that `cuda:<ordinal>` exists, without opening it.
fn slot(ordinal: u32) -> Result<(&'static Runtime, &'static OnceLock<Gpu>)> {
    let Some(rt) = runtime().filter(|rt| !rt.gpus.is_empty()) else {
        return Err(Error::no_cuda(Device::cuda(Some(ordinal))));
    };
    match rt.gpus.get(ordinal as usize) {
        Some(slot) => Ok((rt, slot)),
        None => Err(crate::err!(
            InvalidDevice,
            "CUDA error: invalid device ordinal (cuda:{ordinal} was requested; this machine has {} CUDA \
             device{})",
            rt.gpus.len(),
            if rt.gpus.len() == 1 { "" } else { "s" }
        )),
    }
}

/// The device `cuda:<ordinal>`, set up on first use.
pub fn gpu(ordinal: u32) -> Result<&'static Gpu> {
    let (rt, slot) = slot(ordinal)?;
    if let Some(gpu) = slot.get() {
        return Ok(gpu);
    }
    let _one_at_a_time = rt.opening.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(gpu) = slot.get() {
        return Ok(gpu);
    }
    let gpu = Gpu::open(ordinal)?;
    Ok(slot.get_or_init(|| gpu))
}

/// The devices dlbridge has used so far.
pub fn opened() -> impl Iterator<Item = &'static Gpu> {
    runtime()
        .into_iter()
        .flat_map(|rt| rt.gpus.iter().filter_map(|slot| slot.get()))
}

/// A device's name and compute capability, read without creating a context.
pub fn describe(ordinal: u32) -> Result<(String, i32, i32)> {
    slot(ordinal)?;
    let dev = cu::device::get(ordinal as i32).map_err(|e| driver_error(e, "cuDeviceGet"))?;
    let name = cu::device::get_name(dev).map_err(|e| driver_error(e, "cuDeviceGetName"))?;
    use sys::CUdevice_attribute_enum as A;
    // SAFETY: dev is a valid device handle.
    let attr = |a| {
        unsafe { cu::device::get_attribute(dev, a) }
            .map_err(|e| driver_error(e, "cuDeviceGetAttribute"))
    };
    Ok((
        name,
        attr(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?,
        attr(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?,
    ))
}

/// The device a CUDA tensor is on (`cuda` without an index means `cuda:0`,
/// PyTorch's default current device).
pub fn gpu_of(device: Device) -> Result<&'static Gpu> {
    gpu(device.index.unwrap_or(0))
}

impl Gpu {
    fn open(ordinal: u32) -> Result<Gpu> {
        // cudarc leaves the new context current; put back what was there.
        let previous = cu::ctx::get_current().ok().flatten();
        let _restore = ContextGuard {
            restore: Some(previous),
        };
        let ctx = CudaContext::new(ordinal as usize)
            .map_err(|e| driver_error(e, "retaining the primary context"))?;
        let attr = |a| {
            ctx.attribute(a)
                .map_err(|e| driver_error(e, "cuDeviceGetAttribute"))
        };
        use sys::CUdevice_attribute_enum as A;
        let cc = attr(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)? * 10
            + attr(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?;
        let sm_count = attr(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?.max(1) as u32;
        // Without a pool (old devices, or creation refused) allocations fall
        // back to plain cuMemAlloc/cuMemFree. The pool is made exportable
        // (for CUDA IPC) where the device supports POSIX descriptors, else
        // plain.
        let fd_handles = attr(A::CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES).unwrap_or(0)
            & sys::CUmemAllocationHandleType::CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR.0 as i32
            != 0;
        let (pool, pool_ipc) = if !ctx.has_async_alloc() {
            (None, false)
        } else if let Some(pool) = fd_handles
            .then(|| create_pool(ordinal, true).ok())
            .flatten()
        {
            (Some(pool), true)
        } else {
            (create_pool(ordinal, false).ok(), false)
        };
        Ok(Gpu {
            ordinal,
            total_mem: ctx.total_mem().unwrap_or(0),
            ctx,
            pool,
            pool_ipc,
            pool_export: OnceLock::new(),
            cc,
            sm_count,
            target: OnceLock::new(),
            modules: Mutex::new(HashMap::new()),
            functions: Mutex::new(HashMap::new()),
            staging: Mutex::new(None),
        })
    }

    pub fn device(&self) -> Device {
        Device::cuda(Some(self.ordinal))
    }

    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// Makes this device's primary context current on the calling thread
    /// until the guard drops, then restores whatever was current before:
    /// the CUDA runtime (PyTorch, CuPy) reads its current device from that
    /// same driver state, so dlbridge must leave it as it found it.
    pub fn bind(&self) -> Result<ContextGuard> {
        let previous =
            cu::ctx::get_current().map_err(|e| driver_error(e, "reading the current context"))?;
        let target = self.ctx.cu_ctx();
        if previous != Some(target) {
            // SAFETY: target is this device's primary context, retained for the process's life.
            unsafe { cu::ctx::set_current(target) }
                .map_err(|e| driver_error(e, "making the primary context current"))?;
        }
        Ok(ContextGuard {
            restore: (previous != Some(target)).then_some(previous),
        })
    }

    /// `bytes` of device memory from dlbridge's pool, ordered on [`STREAM`].
    pub fn alloc(&self, bytes: usize) -> Result<sys::CUdeviceptr> {
        let _ctx = self.bind()?;
        let bytes = bytes.max(1);
        let attempt = || -> std::result::Result<sys::CUdeviceptr, DriverError> {
            // SAFETY: the context is current; pool belongs to this device.
            unsafe {
                match self.pool {
                    Some(pool) => cu::mem_pool::alloc_async(pool, bytes, STREAM),
                    None => cu::malloc_sync(bytes),
                }
            }
        };
        match attempt() {
            Ok(ptr) => Ok(ptr),
            // A request larger than the whole device can come back as an
            // invalid value rather than out of memory: report both as OOM.
            Err(e) if e.0 == sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY || bytes > self.total_mem => {
                // Give cached blocks back to the driver and try once more.
                // SAFETY: the context is current; STREAM and pool are valid.
                unsafe {
                    let _ = cu::stream::synchronize(STREAM);
                    if let Some(pool) = self.pool {
                        let _ = cu::mem_pool::trim_to(pool, 0);
                    }
                }
                attempt().map_err(|_| self.out_of_memory(bytes))
            }
            Err(e) => Err(driver_error(e, &format!("allocating {bytes} bytes"))),
        }
    }

    fn out_of_memory(&self, bytes: usize) -> Error {
        let gib = |b: usize| b as f64 / (1u64 << 30) as f64;
        let free = cu::mem_get_info().map(|(free, _)| free).unwrap_or(0);
        crate::err!(
            OutOfMemory,
            "CUDA out of memory. Tried to allocate {:.2} GiB ({bytes} bytes). GPU {} has a total capacity \
             of {:.2} GiB of which {:.2} GiB is free.",
            gib(bytes),
            self.ordinal,
            gib(self.total_mem),
            gib(free)
        )
    }

    /// Returns memory from [`Gpu::alloc`], ordered after all work on [`STREAM`].
    pub fn free(&self, ptr: sys::CUdeviceptr) {
        let Ok(_ctx) = self.bind() else {
            return;
        };
        // SAFETY: ptr came from alloc on this device and is freed exactly once
        // (its owner's Drop); the free is stream-ordered after every use.
        unsafe {
            let _ = match self.pool {
                Some(_) => cu::free_async(ptr, STREAM),
                None => cu::free_sync(ptr),
            };
        }
    }

    // ----- CUDA IPC: pool memory opened by other processes -----

    /// This device's UUID, the same in every process (ordinals are not:
    /// `CUDA_VISIBLE_DEVICES` may differ).
    pub fn uuid(&self) -> Result<[u8; 16]> {
        let dev =
            cu::device::get(self.ordinal as i32).map_err(|e| driver_error(e, "cuDeviceGet"))?;
        let uuid = cu::device::get_uuid(dev).map_err(|e| driver_error(e, "cuDeviceGetUuid"))?;
        Ok(uuid.bytes.map(|b| b as u8))
    }

    /// dlbridge's pool as other processes open it (exported once; the
    /// descriptor stays open for the process's life). Refused where the pool
    /// is not exportable.
    pub fn pool_export(&self) -> Result<&PoolExport> {
        if let Some(export) = self.pool_export.get() {
            return Ok(export);
        }
        let Some(pool) = self.pool.filter(|_| self.pool_ipc) else {
            return Err(crate::err!(
                InvalidOperation,
                "cannot share cuda:{} memory with other processes: this device's memory pool is not \
                 exportable (the device or driver has no POSIX file-descriptor handles for \
                 stream-ordered pools)",
                self.ordinal
            ));
        };
        static EXPORTING: Mutex<()> = Mutex::new(());
        let _one = EXPORTING.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(export) = self.pool_export.get() {
            return Ok(export);
        }
        let mut raw: libc::c_int = -1;
        // SAFETY: for POSIX descriptors the handle out-parameter is an int;
        // the pool belongs to this device and was created exportable.
        unsafe {
            sys::cuMemPoolExportToShareableHandle(
                (&mut raw as *mut libc::c_int).cast(),
                pool,
                sys::CUmemAllocationHandleType::CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
                0,
            )
        }
        .result()
        .map_err(|e| driver_error(e, "exporting dlbridge's memory pool"))?;
        // SAFETY: the driver returned a new descriptor that nothing else owns;
        // close-on-exec keeps it out of programs this process runs.
        let fd = unsafe {
            libc::fcntl(raw, libc::F_SETFD, libc::FD_CLOEXEC);
            OwnedFd::from_raw_fd(raw)
        };
        // A random id (with the pid mixed in) names this pool to importers,
        // which keep the pools they import by it.
        let id = (fastrand::u128(..) ^ ((std::process::id() as u128) << 96)).to_le_bytes();
        Ok(self.pool_export.get_or_init(|| PoolExport { fd, id }))
    }

    /// The id of this device's pool, if it has been exported.
    pub fn exported_pool_id(&self) -> Option<[u8; 16]> {
        self.pool_export.get().map(|e| e.id)
    }

    /// What another process needs to open the allocation at `ptr` (from
    /// [`Gpu::alloc`], with the pool exportable).
    pub fn export_pointer(&self, ptr: sys::CUdeviceptr) -> Result<[u8; 64]> {
        let _ctx = self.bind()?;
        // SAFETY: all-zero is a valid export record, which the driver fills in.
        let mut data: sys::CUmemPoolPtrExportData = unsafe { std::mem::zeroed() };
        // SAFETY: ptr is a live allocation of this device's pool.
        unsafe { sys::cuMemPoolExportPointer(&mut data, ptr) }
            .result()
            .map_err(|e| driver_error(e, "exporting an allocation of dlbridge's pool"))?;
        Ok(data.reserved)
    }

    /// Opens an allocation another process exported from its pool `pool_id`
    /// (whose descriptor is `fd`) on this device, and checks that it holds
    /// at least `len` bytes. The imported pool is kept for the process's life.
    pub fn import_pointer(
        &self,
        pool_id: [u8; 16],
        fd: RawFd,
        data: &[u8; 64],
        len: usize,
    ) -> Result<sys::CUdeviceptr> {
        let _ctx = self.bind()?;
        let pool = self.imported_pool(pool_id, fd)?;
        let mut record = sys::CUmemPoolPtrExportData { reserved: *data };
        let mut ptr: sys::CUdeviceptr = 0;
        // SAFETY: pool is an imported pool; record is the exporter's 64-byte
        // record, which the driver validates; ptr is a valid out-pointer.
        unsafe { sys::cuMemPoolImportPointer(&mut ptr, pool.0, &mut record) }
            .result()
            .map_err(|e| driver_error(e, "opening a CUDA allocation of another process"))?;
        let (mut base, mut size): (sys::CUdeviceptr, usize) = (0, 0);
        // SAFETY: valid out-pointers; ptr is a live allocation in this context.
        let range = unsafe { sys::cuMemGetAddressRange_v2(&mut base, &mut size, ptr) }.result();
        if range.is_err() || base != ptr || size < len {
            self.free_imported(ptr);
            return Err(crate::err!(
                InvalidTensor,
                "invalid CUDA IPC handle: the allocation holds {size} bytes, not the {len} its handle claims"
            ));
        }
        Ok(ptr)
    }

    /// The pool `pool_id` of another process, imported once from `fd`.
    fn imported_pool(&self, pool_id: [u8; 16], fd: RawFd) -> Result<ImportedPool> {
        static IMPORTED: Mutex<Vec<([u8; 16], ImportedPool)>> = Mutex::new(Vec::new());
        let mut imported = IMPORTED.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, pool)) = imported.iter().find(|(id, _)| *id == pool_id) {
            return Ok(*pool);
        }
        let mut pool: sys::CUmemoryPool = std::ptr::null_mut();
        // SAFETY: for POSIX descriptors the handle is the descriptor's value;
        // the driver duplicates what it keeps, so fd stays the caller's.
        unsafe {
            sys::cuMemPoolImportFromShareableHandle(
                &mut pool,
                fd as usize as *mut c_void,
                sys::CUmemAllocationHandleType::CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
                0,
            )
        }
        .result()
        .map_err(|e| driver_error(e, "importing another process's memory pool"))?;
        let mut location = sys::CUmemLocation {
            type_: sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE,
            id: self.ordinal as i32,
        };
        let mut flags = sys::CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_NONE;
        // SAFETY: valid out- and in-pointers; pool was just imported.
        let readable = unsafe { sys::cuMemPoolGetAccess(&mut flags, pool, &mut location) }
            .result()
            .is_ok_and(|()| flags == sys::CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
        if !readable {
            let access = sys::CUmemAccessDesc {
                location,
                flags: sys::CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
            };
            // SAFETY: one valid access descriptor for this device.
            let granted = unsafe { sys::cuMemPoolSetAccess(pool, &access, 1) }.result();
            if let Err(e) = granted {
                // SAFETY: the pool was imported above and nothing uses it yet.
                let _ = unsafe { sys::cuMemPoolDestroy(pool) };
                return Err(driver_error(
                    e,
                    "granting this device access to an imported pool",
                ));
            }
        }
        let pool = ImportedPool(pool);
        imported.push((pool_id, pool));
        Ok(pool)
    }

    /// Frees an allocation opened with [`Gpu::import_pointer`], after
    /// dlbridge's work on this device (its exporter may reuse it at once).
    pub fn free_imported(&self, ptr: sys::CUdeviceptr) {
        let Ok(_ctx) = self.bind() else {
            return;
        };
        // SAFETY: ptr was imported on this device and is freed exactly once
        // (its owner's Drop), after every use queued on STREAM has finished.
        unsafe {
            let _ = cu::stream::synchronize(STREAM);
            let _ = cu::free_sync(ptr);
        }
    }

    /// What NVRTC builds for this device (see [`compile::target_for`]).
    fn target(&self) -> Result<&str> {
        self.target
            .get_or_init(|| compile::target_for(self.cc))
            .as_deref()
            .map_err(Error::clone)
    }

    /// The kernel `name` from `file` (compiled for dtype `tag` when the file
    /// is compiled per dtype), loading and compiling it on first use.
    pub fn function(
        &self,
        file: &'static KernelFile,
        tag: &'static str,
        name: &str,
    ) -> Result<sys::CUfunction> {
        if let Some(&f) = self.functions.lock().unwrap().get(name) {
            return Ok(f);
        }
        let module_tag = if file.per_dtype { tag } else { "all" };
        let module = {
            let mut modules = self.modules.lock().unwrap();
            match modules.get(&(file.name, module_tag)) {
                Some(&m) => m,
                None => {
                    let only = file.per_dtype.then_some(tag);
                    let image = compile::compile_cached(file, only, self.target()?)?;
                    let mut bytes = image.bytes().to_vec();
                    bytes.push(0); // PTX must end in NUL; harmless after a cubin
                    let _ctx = self.bind()?;
                    // SAFETY: bytes is a complete cubin or NUL-terminated PTX image.
                    let m = unsafe { cu::module::load_data(bytes.as_ptr().cast::<c_void>()) }
                        .map_err(|e| driver_error(e, &format!("loading kernels/{}", file.name)))?;
                    modules.insert((file.name, module_tag), m);
                    m
                }
            }
        };
        let cname = CString::new(name).expect("kernel names have no NUL");
        // SAFETY: module is loaded and never unloaded.
        let f = unsafe { cu::module::get_function(module, cname) }.map_err(|e| {
            driver_error(
                e,
                &format!("finding kernel {name} in kernels/{}", file.name),
            )
        })?;
        self.functions.lock().unwrap().insert(name.to_string(), f);
        Ok(f)
    }

    /// Launches `f` on [`STREAM`] with `blocks` blocks of `threads` threads.
    ///
    /// # Safety
    /// `params` must match the kernel's parameter list, and every pointer in
    /// them must stay valid until the stream reaches the kernel.
    pub unsafe fn launch(
        &self,
        f: sys::CUfunction,
        name: &str,
        (blocks, threads): (u32, u32),
        params: &mut [*mut c_void],
    ) -> Result<()> {
        let _ctx = self.bind()?;
        // SAFETY: forwarded from the caller.
        unsafe { cu::launch_kernel(f, (blocks.max(1), 1, 1), (threads, 1, 1), 0, STREAM, params) }
            .map_err(|e| driver_error(e, &format!("launching kernel {name}")))
    }

    /// Blocks of 256 threads for `units` work items of one thread each, at
    /// most 32 per SM (the reductions' passes loop beyond that).
    pub fn blocks_for(&self, units: usize) -> u32 {
        let wanted = units.div_ceil(256).max(1);
        wanted.min(self.sm_count as usize * 32) as u32
    }

    /// Returns the pool's cached free memory to the driver (so other
    /// libraries can use it), after dlbridge's queued work finishes.
    pub fn empty_cache(&self) -> Result<()> {
        self.synchronize()?;
        if let Some(pool) = self.pool {
            // SAFETY: pool belongs to this device and outlives the call.
            unsafe { cu::mem_pool::trim_to(pool, 0) }
                .map_err(|e| driver_error(e, "trimming the memory pool"))?;
        }
        Ok(())
    }

    /// Waits for everything dlbridge enqueued on this device.
    pub fn synchronize(&self) -> Result<()> {
        let _ctx = self.bind()?;
        // SAFETY: the context is current.
        unsafe { cu::stream::synchronize(STREAM) }
            .map_err(|e| driver_error(e, "synchronizing the stream"))
    }
}

/// dlbridge's pool of one device, exported: the descriptor other processes
/// import it from, and the id they know it by.
pub struct PoolExport {
    pub fd: OwnedFd,
    pub id: [u8; 16],
}

impl PoolExport {
    pub fn fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

/// A pool imported from another process (kept for the process's life).
#[derive(Clone, Copy)]
struct ImportedPool(sys::CUmemoryPool);

// SAFETY: a pool handle is a process-wide driver object usable from any thread.
unsafe impl Send for ImportedPool {}

/// The device whose UUID is `uuid` (trying ordinal `hint` first), if this
/// process can see it.
pub fn gpu_with_uuid(uuid: [u8; 16], hint: u32) -> Result<&'static Gpu> {
    let count = device_count() as u32;
    let order = std::iter::once(hint).chain((0..count).filter(|&i| i != hint));
    for ordinal in order.filter(|&i| i < count) {
        let gpu = gpu(ordinal)?;
        if gpu.uuid()? == uuid {
            return Ok(gpu);
        }
    }
    if count == 0 {
        return Err(Error::no_cuda(Device::cuda(Some(hint))));
    }
    Err(crate::err!(
        InvalidDevice,
        "the GPU this CUDA tensor lives on (cuda:{hint} in the process that sent it) is not visible in \
         this process (check CUDA_VISIBLE_DEVICES)"
    ))
}

fn create_pool(ordinal: u32, exportable: bool) -> Result<sys::CUmemoryPool> {
    // SAFETY: an all-zero CUmemPoolProps is its documented default; the
    // fields that matter are set below.
    let mut props: sys::CUmemPoolProps = unsafe { std::mem::zeroed() };
    props.allocType = sys::CUmemAllocationType::CU_MEM_ALLOCATION_TYPE_PINNED;
    props.handleTypes = if exportable {
        sys::CUmemAllocationHandleType::CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
    } else {
        sys::CUmemAllocationHandleType::CU_MEM_HANDLE_TYPE_NONE
    };
    props.location.type_ = sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = ordinal as i32;
    // SAFETY: props is fully initialised.
    let pool = unsafe { cu::mem_pool::create(&props) }
        .map_err(|e| driver_error(e, "creating dlbridge's memory pool"))?;
    // Keep freed memory cached in the pool (as PyTorch's allocator does);
    // an allocation that fails trims it and retries.
    let mut threshold: u64 = u64::MAX;
    // SAFETY: the attribute takes a u64.
    unsafe {
        let _ = cu::mem_pool::set_attribute(
            pool,
            sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
            (&mut threshold as *mut u64).cast(),
        );
    }
    Ok(pool)
}
