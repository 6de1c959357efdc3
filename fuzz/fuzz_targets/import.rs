//! Fuzzes foreign-tensor validation and import through the C ABI: every
//! field of a `DLManagedTensorVersioned` (or a legacy `DLManagedTensor`)
//! comes from the input. Whatever it holds, the import must return a status
//! (never crash), and the producer's deleter must run exactly once, after
//! every dlbridge owner (the handle, an export taken from it) is gone; the
//! deleter poisons the tensor, so dlbridge touching it afterwards is an ASan
//! report.
//!
//! `make fuzz` runs it for a bounded time from the checked-in corpus.
#![no_main]

use dlbridge::capi::*;
use dlbridge_fuzz::{Foreign, Reader, deletes, unpoison};
use dlpark::ffi::{DLManagedTensorVersioned, DLTensor};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &[u8]| {
    let foreign = Foreign::read(&mut Reader(input));
    let mut out: *mut dlb_tensor = std::ptr::null_mut();
    let status = if foreign.legacy {
        let mut m = foreign.legacy();
        // SAFETY: m (and the arrays in `foreign`) live until after the deleter check below.
        let s = unsafe { dlb_import_legacy(&mut m, &mut out) };
        finish(s, out);
        unpoison(); // m is about to go
        s
    } else {
        let mut m = foreign.versioned();
        // SAFETY: as above.
        let s = unsafe { dlb_import_versioned(&mut m, &mut out) };
        finish(s, out);
        unpoison();
        s
    };
    let deletes = deletes();
    assert_eq!(
        deletes, 1,
        "deleter ran {deletes} times (status {status:?})"
    );
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
        assert_eq!(deletes(), u32::from(export_status != dlb_status::DLB_OK));
        if export_status == dlb_status::DLB_OK {
            ((*exported).deleter.unwrap())(exported);
        }
    }
}
