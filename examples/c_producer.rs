//! A Rust program between two C-style DLPack libraries: it imports a tensor
//! from a producer (a `DLManagedTensorVersioned` built by hand, as a C
//! library builds one, with a deleter that counts its calls), computes on
//! it in place and out of place, hands the result to a consumer that calls
//! its deleter, and checks that the producer's deleter ran exactly once.
//!
//! `cargo run --example c_producer` (part of `make test`) exits non-zero if
//! any check fails.

use dlbridge::ffi::{
    DLDataType, DLDataTypeCode, DLDevice, DLDeviceType, DLManagedTensorVersioned, DLPackVersion,
    DLTensor, DlpackFlags,
};
use dlbridge::{DType, Tensor};
use std::sync::atomic::{AtomicUsize, Ordering};

/// How many times the producer's deleter has run.
static PRODUCER_DELETES: AtomicUsize = AtomicUsize::new(0);

/// The producer's allocation: header, shape and data in one block, as a C
/// library would `malloc` it (here a `Box`).
#[repr(C)]
struct ProducerBlock {
    header: DLManagedTensorVersioned,
    shape: [i64; 2],
    data: [f32; 6],
}

/// The producer's deleter (`void deleter(DLManagedTensorVersioned*)` in C).
unsafe extern "C" fn producer_deleter(managed: *mut DLManagedTensorVersioned) {
    PRODUCER_DELETES.fetch_add(1, Ordering::SeqCst);
    // SAFETY: `managed` is the first field of a ProducerBlock made by
    // `produce` with Box::into_raw, and the deleter runs once.
    drop(unsafe { Box::from_raw(managed.cast::<ProducerBlock>()) });
}

/// What a C producer returns: a 2x3 float32 host tensor it owns until the
/// consumer calls the deleter.
fn produce() -> *mut DLManagedTensorVersioned {
    let block = Box::into_raw(Box::new(ProducerBlock {
        header: DLManagedTensorVersioned {
            version: DLPackVersion { major: 1, minor: 0 },
            manager_ctx: std::ptr::null_mut(),
            deleter: Some(producer_deleter),
            flags: DlpackFlags::empty(),
            dl_tensor: DLTensor {
                data: std::ptr::null_mut(),
                device: DLDevice {
                    device_type: DLDeviceType::CPU,
                    device_id: 0,
                },
                ndim: 2,
                dtype: DLDataType {
                    code: DLDataTypeCode::FLOAT,
                    bits: 32,
                    lanes: 1,
                },
                shape: std::ptr::null_mut(),
                strides: std::ptr::null_mut(), // NULL: C-contiguous
                byte_offset: 0,
            },
        },
        shape: [2, 3],
        data: [1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
    }));
    // SAFETY: `block` is a live allocation that only this function sees yet.
    unsafe {
        (*block).header.dl_tensor.data = (&raw mut (*block).data).cast();
        (*block).header.dl_tensor.shape = (&raw mut (*block).shape).cast();
    }
    block.cast()
}

/// What a C consumer does with a tensor it is handed: reads it, then calls
/// its deleter exactly once. Returns the values it read.
fn consume(managed: *mut DLManagedTensorVersioned) -> Vec<f32> {
    // SAFETY: `managed` is a live export that this consumer now owns: its
    // shape holds `ndim` values and its data the elements they describe.
    unsafe {
        let dl = &(*managed).dl_tensor;
        assert_eq!(dl.device.device_type, DLDeviceType::CPU);
        assert_eq!((dl.dtype.code, dl.dtype.bits), (DLDataTypeCode::FLOAT, 32));
        let shape = std::slice::from_raw_parts(dl.shape, dl.ndim as usize);
        let n: i64 = shape.iter().product();
        let base = dl
            .data
            .cast::<u8>()
            .add(dl.byte_offset as usize)
            .cast::<f32>();
        let values = std::slice::from_raw_parts(base, n as usize).to_vec();
        ((*managed).deleter.expect("dlbridge always sets a deleter"))(managed);
        values
    }
}

fn run() -> dlbridge::Result<()> {
    // SAFETY: `produce` returns a valid managed tensor that we own, and hand
    // over here exactly once; its memory stays valid until its deleter.
    let mut x = unsafe { Tensor::from_raw_versioned(produce()) }?;
    println!("imported {:?} (zero-copy)", x);

    // In place, through typed access (we hold the only handle): x[0, 0] = 10.
    x.as_slice_mut::<f32>()?[0] = 10.0;
    // In place, through an op: x *= 2.
    x.mul_(2.0)?;
    // Out of place: the producer's memory is read, fresh memory written.
    let row_sums = x.sum_dims(&[1], false, None)?;
    println!("row sums: {:?}", row_sums.to_vec::<f32>()?);
    assert_eq!(row_sums.to_vec::<f32>()?, vec![30.0, 30.0]);
    assert_eq!(x.as_array::<f32>()?[[1, 2]], 12.0);
    assert_eq!(x.dtype(), DType::F32);

    // Hand the edited tensor (still the producer's memory) to the consumer.
    let out = x.into_raw_versioned()?;
    assert_eq!(
        PRODUCER_DELETES.load(Ordering::SeqCst),
        0,
        "the export keeps the producer's memory alive"
    );
    let seen = consume(out);
    println!("the consumer read {seen:?}");
    assert_eq!(seen, vec![20.0, 4.0, 6.0, 8.0, 10.0, 12.0]);
    Ok(())
}

fn main() {
    if let Err(e) = run() {
        eprintln!("error ({:?}): {e}", e.kind());
        std::process::exit(1);
    }
    let deletes = PRODUCER_DELETES.load(Ordering::SeqCst);
    if deletes != 1 {
        eprintln!("the producer's deleter ran {deletes} times, not once");
        std::process::exit(1);
    }
    println!("the producer's deleter ran exactly once");
}
