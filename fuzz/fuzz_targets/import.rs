//! Fuzzes foreign-tensor validation and import through the C ABI: every
//! field of a `DLManagedTensorVersioned` (or a legacy `DLManagedTensor`)
//! comes from the input. Whatever it holds, the import must return a status
//! (never crash), and the producer's deleter must run exactly once, after
//! every dlbridge owner (the handle, an export taken from it) is gone.
//!
//! `make fuzz` runs it for a bounded time from the checked-in corpus.
#![no_main]

use dlbridge::capi::*;
use dlpark::ffi::{
    DLDataType, DLDataTypeCode, DLDevice, DLDeviceType, DLManagedTensor, DLManagedTensorVersioned,
    DLPackVersion, DLTensor,
};
use libfuzzer_sys::fuzz_target;
use std::cell::Cell;

thread_local! {
    static DELETES: Cell<u32> = const { Cell::new(0) };
}

unsafe extern "C" fn count_versioned(_: *mut DLManagedTensorVersioned) {
    DELETES.with(|d| d.set(d.get() + 1));
}

unsafe extern "C" fn count_legacy(_: *mut DLManagedTensor) {
    DELETES.with(|d| d.set(d.get() + 1));
}

/// Reads little-endian integers from the input, then zeros.
struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn take<const N: usize>(&mut self) -> [u8; N] {
        let mut out = [0u8; N];
        let n = N.min(self.0.len());
        out[..n].copy_from_slice(&self.0[..n]);
        self.0 = &self.0[n..];
        out
    }
    fn u8(&mut self) -> u8 {
        self.take::<1>()[0]
    }
    fn u16(&mut self) -> u16 {
        u16::from_le_bytes(self.take())
    }
    fn u32(&mut self) -> u32 {
        u32::from_le_bytes(self.take())
    }
    fn i32(&mut self) -> i32 {
        i32::from_le_bytes(self.take())
    }
    fn i64(&mut self) -> i64 {
        i64::from_le_bytes(self.take())
    }
    fn u64(&mut self) -> u64 {
        u64::from_le_bytes(self.take())
    }
}

/// Backing memory the tensor may point into (never read through by the
/// target: a foreign tensor's memory is the producer's promise).
static mut BUFFER: [u64; 64] = [0; 64];

fuzz_target!(|input: &[u8]| {
    let mut r = Reader(input);
    let flags_byte = r.u8();
    let legacy = flags_byte & 1 == 1;
    let null_data = flags_byte & 2 == 2;
    let null_shape = flags_byte & 4 == 4;
    let null_strides = flags_byte & 8 == 8;
    let version = DLPackVersion {
        major: r.u32() % 4,
        minor: r.u32() % 8,
    };
    // Mostly small ranks, sometimes anything.
    let raw_ndim = r.i32();
    let ndim = if flags_byte & 16 == 16 { raw_ndim } else { raw_ndim.rem_euclid(6) };
    // A producer keeps its own promise: shape and strides hold ndim values
    // whenever ndim is a rank dlbridge would read (0..=64). Other ranks get
    // a short array, which dlbridge must refuse before reading.
    let dims = if (0..=64).contains(&ndim) { ndim as usize } else { 2 };
    let mut shape: Vec<i64> = (0..dims).map(|_| r.i64() % 1024).collect();
    let mut strides: Vec<i64> = (0..dims).map(|_| r.i64()).collect();
    if flags_byte & 32 == 32 {
        shape.iter_mut().for_each(|s| *s = r.i64()); // any size, overflow included
    } else {
        strides.iter_mut().for_each(|s| *s %= 4096);
    }
    let dtype = DLDataType {
        code: DLDataTypeCode(r.u8() % 20),
        bits: r.u8(),
        lanes: r.u16() % 3,
    };
    let device = DLDevice {
        device_type: DLDeviceType(r.u32() % 20),
        device_id: r.i32() % 4,
    };
    let byte_offset = r.u64() % 512;
    let dl_flags = r.u64() & 7;
    // Only the address is taken; the target never reads the bytes.
    let data = if null_data {
        std::ptr::null_mut()
    } else {
        std::ptr::addr_of_mut!(BUFFER) as *mut std::ffi::c_void
    };
    let dl_tensor = DLTensor {
        data,
        device,
        ndim,
        dtype,
        shape: if null_shape { std::ptr::null_mut() } else { shape.as_mut_ptr() },
        strides: if null_strides { std::ptr::null_mut() } else { strides.as_mut_ptr() },
        byte_offset,
    };
    DELETES.with(|d| d.set(0));
    let mut out: *mut dlb_tensor = std::ptr::null_mut();
    let status = if legacy {
        let mut m = DLManagedTensor {
            dl_tensor,
            manager_ctx: std::ptr::null_mut(),
            deleter: Some(count_legacy),
        };
        // SAFETY: m lives until after the deleter check below.
        let s = unsafe { dlb_import_legacy(&mut m, &mut out) };
        finish(s, out);
        s
    } else {
        let mut m = DLManagedTensorVersioned {
            version,
            manager_ctx: std::ptr::null_mut(),
            deleter: Some(count_versioned),
            flags: dlpark::DlpackFlags::from_bits_retain(dl_flags),
            dl_tensor,
        };
        // SAFETY: as above.
        let s = unsafe { dlb_import_versioned(&mut m, &mut out) };
        finish(s, out);
        s
    };
    let deletes = DELETES.with(|d| d.get());
    assert_eq!(deletes, 1, "deleter ran {deletes} times (status {status:?})");
});

/// On success: describe, export, then release everything; the producer's
/// deleter must not run before the last owner goes.
fn finish(status: dlb_status, out: *mut dlb_tensor) {
    if status != dlb_status::DLB_OK {
        assert!(out.is_null(), "out written on failure");
        return;
    }
    // SAFETY: out is a live handle; the view and the export are released below.
    unsafe {
        let mut view = std::mem::zeroed::<DLTensor>();
        assert_eq!(dlb_describe(out, &mut view), dlb_status::DLB_OK);
        let mut exported: *mut DLManagedTensorVersioned = std::ptr::null_mut();
        let export_status = dlb_export(out, &mut exported);
        dlb_free(out);
        assert_eq!(DELETES.with(|d| d.get()), u32::from(export_status != dlb_status::DLB_OK));
        if export_status == dlb_status::DLB_OK {
            ((*exported).deleter.unwrap())(exported);
        }
    }
}
