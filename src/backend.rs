//! The seam between PyTorch's semantics and the devices that compute.
//!
//! `Backend` (crate-internal) is everything a device must do, with one contract for every
//! device: the CPU (`cpu::Cpu`), CUDA ([`crate::cuda::Cuda`]) and
//! the stand-in a build without the `cuda` feature compiles in its place, so
//! the compiler checks all three against the same signatures. Promotion,
//! broadcasting, in-place rules and PyTorch's scalar rounding live once, in
//! `ops/` and `tensor.rs`, above this trait: a backend receives operands
//! already on its device, already of the dtype it computes in, with inputs
//! that broadcast to the output.
//!
//! [`Accelerator`] is what a device other than the host adds: finding
//! devices, synchronising, the DLPack stream protocol. CUDA and its stand-in
//! implement it.
//!
//! Adding an elementwise op: a row of [`binary_ops!`](crate::binary_ops) or [`unary_ops!`](crate::unary_ops), its
//! scalar function in `cpu/arith.rs` and its CUDA functor in
//! `kernels/elementwise.cu`; the CPU loops, the CUDA launch, the Python
//! method and function and the C entry follow from the row. Another
//! reduction: a variant of [`ReduceOp`], its arm in each backend, and one
//! function in `ops/reduce.rs`.
//!
//! The tables are data as well:
//!
//! ```
//! use dlbridge::{BinaryOp, Promotion, UnaryOp};
//! assert!(BinaryOp::ALL.contains(&BinaryOp::Maximum));
//! assert_eq!(BinaryOp::Div.promotion(), Promotion::IntToFloat);
//! assert_eq!(UnaryOp::Exp.name(), "exp");
//! ```

use crate::storage::Storage;
use crate::{DType, Device, DeviceKind, Result, Scalar, Tensor};
use std::sync::Arc;

/// How an elementwise op picks the dtype it computes and returns in from
/// its operands' promoted dtype ([`crate::ops`]'s `result_type`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Promotion {
    /// The promoted dtype itself (`add`, `maximum`).
    ResultType,
    /// Integers and bools become the default float dtype, as PyTorch's true
    /// division and `exp`, `log`, `sqrt` do.
    IntToFloat,
    /// The promoted dtype, which must be a bool or an integer: the bitwise
    /// ops, which PyTorch has for no float or complex dtype.
    Integral,
    /// The promoted dtype, which must be an integer or a real float: the
    /// rounding divisions and remainders, which PyTorch has for no bool or
    /// complex dtype.
    Real,
}

impl Promotion {
    /// The dtype an op with this rule computes in, from the promoted one.
    pub fn apply(self, promoted: crate::DType) -> crate::DType {
        use crate::Category;
        match (self, promoted.category()) {
            (Promotion::IntToFloat, Category::Bool | Category::Integral) => {
                crate::DType::DEFAULT_FLOAT
            }
            _ => promoted,
        }
    }

    /// Whether an op with this rule has a kernel for `dtype` (the dtype it
    /// computes in): no float or complex dtype for `Integral`, no bool or
    /// complex one for `Real`, every dtype otherwise.
    pub fn allows(self, dtype: crate::DType) -> bool {
        use crate::Category;
        match self {
            Promotion::Integral => matches!(dtype.category(), Category::Bool | Category::Integral),
            Promotion::Real => matches!(dtype.category(), Category::Integral | Category::Floating),
            Promotion::ResultType | Promotion::IntToFloat => true,
        }
    }
}

/// Every binary op, one row each:
/// `Variant, "name", function, promotion, generated Python entries[, in-place method];`.
/// The name is PyTorch's kernel's (in its errors: `"div_floor_cpu" not
/// implemented for 'Bool'`) and the CUDA kernels' stem
/// (`dlb_{name}_contig_f32` in `kernels/elementwise.cu`). The function is
/// PyTorch's function (`floor_divide`; for most rows the name again): the
/// method of `cpu::arith::Arith` every CPU loop is monomorphized over, the
/// Rust [`Tensor`](crate::Tensor) method and the C ABI's name for the op.
/// `generated`: the Python method `t.function(other)` and the function
/// `dlbridge.function(a, b)` come from the row (the older rows have
/// hand-written ones).
/// The in-place method (`add_`), where PyTorch has one: Rust's
/// [`Tensor`](crate::Tensor) method of that name comes from the row.
/// Call it with a macro that takes the rows (`binary_ops!(my_macro)`).
#[macro_export]
macro_rules! binary_ops {
    ($m:ident) => {
        $m! {
            Add, "add", add, ResultType, false, add_;
            Sub, "sub", sub, ResultType, false, sub_;
            Mul, "mul", mul, ResultType, false, mul_;
            Div, "div", div, IntToFloat, false, div_;
            /// `x ** y`: integers by repeated multiplication (wrapping; a negative
            /// exponent gives 0 unless the base is 1 or -1), floats with `pow`.
            Pow, "pow", pow, ResultType, false, pow_;
            /// `min(x, y)` elementwise: NaN wins, as PyTorch; integers plainly, bools `and`.
            Minimum, "minimum", minimum, ResultType, true;
            /// `max(x, y)` elementwise: NaN wins, as PyTorch; integers plainly, bools `or`.
            Maximum, "maximum", maximum, ResultType, true;
            /// `x & y`: integers bitwise, bools logically; no float or complex dtype.
            BitwiseAnd, "bitwise_and", bitwise_and, Integral, true, bitwise_and_;
            /// `x | y`, as `bitwise_and`.
            BitwiseOr, "bitwise_or", bitwise_or, Integral, true, bitwise_or_;
            /// `x ^ y`, as `bitwise_and`.
            BitwiseXor, "bitwise_xor", bitwise_xor, Integral, true, bitwise_xor_;
            /// `x // y`: the quotient rounded down (floats as PyTorch's
            /// `div_floor`, which keeps `(x - fmod(x, y)) / y` exact); a zero
            /// integer divisor is refused.
            DivFloor, "div_floor", floor_divide, Real, true, floor_divide_;
            /// The quotient rounded toward zero: `div(rounding_mode="trunc")`;
            /// a zero integer divisor is refused.
            DivTrunc, "div_trunc", div_trunc, Real, false;
            /// `x % y`: the remainder with the divisor's sign, as Python's; a
            /// zero integer divisor is refused.
            Remainder, "remainder", remainder, Real, true, remainder_;
            /// The remainder with the dividend's sign, as C's `fmod`; a zero
            /// integer divisor is refused.
            Fmod, "fmod", fmod, Real, true, fmod_;
        }
    };
}

/// Every unary op, one row each, as [`binary_ops!`]:
/// `Variant, "name", Arith method, promotion, generated[, in-place method];`
/// (generated: `t.name()`, `t.name_()` and `dlbridge.name(t)` come from the row).
#[macro_export]
macro_rules! unary_ops {
    ($m:ident) => {
        $m! {
            /// `-x`, wrapping for unsigned integers as in PyTorch.
            Neg, "neg", neg, ResultType, false;
            /// `|x|`: wrapping for the most negative integer, the magnitude (a real
            /// number, of the output's real dtype) for complex.
            Abs, "abs", abs, ResultType, false;
            /// `e^x`; integers and bools compute in the default float dtype.
            Exp, "exp", exp, IntToFloat, true, exp_;
            /// `√x` (NaN below 0, -0 for -0); integers and bools compute in the default float dtype.
            Sqrt, "sqrt", sqrt, IntToFloat, true, sqrt_;
            /// `ln x` (NaN below 0, -inf at 0); integers and bools compute in the default float dtype.
            Log, "log", log, IntToFloat, true, log_;
            /// `~x`: integers bitwise, bools logically; no float or complex dtype.
            BitwiseNot, "bitwise_not", bitwise_not, Integral, true, bitwise_not_;
        }
    };
}

/// The enum, names and promotion rules of an op table.
macro_rules! op_enum {
    ($(#[$doc:meta])* $Enum:ident; $($(#[$vdoc:meta])* $V:ident, $name:literal, $f:ident, $promo:ident, $gen:literal $(, $ip:ident)?;)*) => {
        $(#[$doc])*
        #[derive(Copy, Clone, Debug, PartialEq, Eq)]
        pub enum $Enum {
            $(#[doc = concat!("`", $name, "`.")] $(#[$vdoc])* $V,)*
        }

        impl $Enum {
            /// Every op of the table, in row order.
            pub const ALL: &'static [$Enum] = &[$($Enum::$V),*];

            /// PyTorch's name for the op, as its kernels are named (`"add"`).
            pub fn name(self) -> &'static str {
                match self {
                    $($Enum::$V => $name,)*
                }
            }

            /// PyTorch's function for the op (`"floor_divide"`; the name of
            /// most rows): its Python function and method, Rust method and
            /// C ABI name.
            pub fn function(self) -> &'static str {
                match self {
                    $($Enum::$V => stringify!($f),)*
                }
            }

            /// How the op picks its dtype from the promoted one.
            pub fn promotion(self) -> Promotion {
                match self {
                    $($Enum::$V => Promotion::$promo,)*
                }
            }

            /// Whether the Python entry points come from the row.
            pub fn generated(self) -> bool {
                match self {
                    $($Enum::$V => $gen,)*
                }
            }
        }
    };
}

macro_rules! binary_enum {
    ($($row:tt)*) => { op_enum! { /// The binary operators dlbridge implements.
        BinaryOp; $($row)* } };
}
binary_ops!(binary_enum);

macro_rules! unary_enum {
    ($($row:tt)*) => { op_enum! { /// Elementwise operators of one operand.
        UnaryOp; $($row)* } };
}
unary_ops!(unary_enum);

/// Elementwise comparisons; the result is a bool tensor.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum CompareOp {
    /// `==`.
    Eq,
    /// `!=`.
    Ne,
    /// `<`.
    Lt,
    /// `<=`.
    Le,
    /// `>`.
    Gt,
    /// `>=`.
    Ge,
}

impl CompareOp {
    /// PyTorch's name for the op (`"lt"`).
    pub fn name(self) -> &'static str {
        match self {
            CompareOp::Eq => "eq",
            CompareOp::Ne => "ne",
            CompareOp::Lt => "lt",
            CompareOp::Le => "le",
            CompareOp::Gt => "gt",
            CompareOp::Ge => "ge",
        }
    }

    /// Whether the op orders its operands (complex numbers have no order).
    pub fn orders(self) -> bool {
        !matches!(self, CompareOp::Eq | CompareOp::Ne)
    }
}

/// The right-hand side of a binary op.
#[derive(Copy, Clone, Debug)]
pub enum Rhs<'a> {
    /// A tensor of the output's dtype that broadcasts to the output and does
    /// not overlap it.
    Tensor(&'a Tensor),
    /// A Python number. It is applied in the dtype's compute type
    /// ([`DType::compute_dtype`](crate::DType::compute_dtype): float32 for float16 and bfloat16) exactly
    /// as given, so the result is rounded once; `ops/` has already rounded
    /// it where PyTorch does. `left`: the number is the left operand
    /// (`number - tensor`).
    Scalar {
        /// The number.
        value: Scalar,
        /// Whether the number is the left operand.
        left: bool,
    },
}

/// Reductions over some dimensions.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ReduceOp {
    /// The sum, accumulated in float64, complex128 or int64, then converted
    /// to the output dtype.
    Sum,
    /// The sum rounded to the output dtype, divided by the element count.
    Mean,
    /// The largest value; NaN wins. With indices: the first position of it.
    Max,
    /// The smallest value; NaN wins. With indices: the first position of it.
    Min,
}

/// What a device must do. Every method gets tensors on the backend's own
/// device; none checks what `ops/` already checked (devices, dtypes,
/// shapes, writability).
pub(crate) trait Backend: Sync {
    /// `bytes` of fresh memory on `device`, zeroed or left uninitialised.
    fn allocate(&self, device: Device, bytes: usize, zeroed: bool) -> Result<Storage>;

    /// `dst[...] = src[...]`: any layout to any layout, converting the dtype
    /// when the two differ (casts are copies between dtypes). `src` broadcasts
    /// to `dst` and does not overlap it.
    fn copy(&self, dst: &Tensor, src: &Tensor) -> Result<()>;

    /// Sets every element of `dst` to `value` (already range-checked).
    fn fill(&self, dst: &Tensor, value: Scalar) -> Result<()>;

    /// `out = lhs op rhs`, all of `out`'s dtype. `lhs` broadcasts to `out`
    /// and may be `out` itself (an in-place op); `rhs` never overlaps `out`.
    fn binary(&self, out: &Tensor, lhs: &Tensor, rhs: Rhs, op: BinaryOp) -> Result<()>;

    /// `lhs / rhs` (true division) of two integer tensors of one dtype, as
    /// a new tensor of the float dtype `dtype` they promote to, each
    /// element converted as it is read (as the cast converts it), where the
    /// backend has such a loop: one pass, where casting both operands first
    /// takes three. `None`: the caller casts first.
    fn divide_casting(&self, lhs: &Tensor, rhs: &Tensor, dtype: DType) -> Result<Option<Tensor>>;

    /// `out = lhs op rhs` into a fresh bool tensor `out`; `lhs` (and a
    /// tensor `rhs`) broadcast to it and share one dtype, which a number
    /// operand has already been rounded to. Ordering ops never get complex.
    fn compare(&self, out: &Tensor, lhs: &Tensor, rhs: Rhs, op: CompareOp) -> Result<()>;

    /// `out = op(src)`, one shape; `out` is fresh and of `src`'s dtype (for
    /// `Abs` of complex, of its real dtype).
    fn unary(&self, out: &Tensor, src: &Tensor, op: UnaryOp) -> Result<()>;

    /// Reduces `src` over `dims` (sorted, distinct; all of them for a full
    /// reduction) into the fresh contiguous `out`, which has `src`'s shape
    /// with those dimensions set to 1. `out`'s dtype is int64 for sums of
    /// integers and bools, else `src`'s. `indices` (int64, `out`'s shape)
    /// is only given for `Max` and `Min`. Every reduced dimension of `Max`
    /// and `Min` has elements, and none of their inputs is complex.
    fn reduce(
        &self,
        src: &Tensor,
        dims: &[usize],
        op: ReduceOp,
        out: &Tensor,
        indices: Option<&Tensor>,
    ) -> Result<()>;

    /// Fills a fresh contiguous floating or complex tensor with values
    /// uniform in [0, 1), from the generator `manual_seed` seeds.
    fn random(&self, dst: &Tensor) -> Result<()>;

    /// The most elements a block of an op's cast operands holds
    /// (`ops/blocks.rs`): what stays in cache between the cast and the op
    /// on a CPU, enough work a launch on a GPU.
    fn block_elements(&self) -> usize;

    /// Copies `src` into `dst`: a contiguous tensor of the same shape and
    /// dtype on another device, where one of the two devices is this
    /// backend's (the other may be the host). `to_device` passes fresh
    /// memory (`fresh`: allocated and never written); `copy_` the
    /// destination itself, so no temporary is made.
    fn transfer_into(&self, src: &Tensor, dst: &Tensor, fresh: bool) -> Result<()>;
}

/// What an accelerator adds to the crate-internal `Backend`: its devices and the DLPack
/// stream protocol. Every method of a build without the backend reports
/// that it is missing.
pub trait Accelerator {
    /// A driver and at least one device are present.
    fn is_available(&self) -> bool;
    /// Number of devices (0 without a driver).
    fn device_count(&self) -> usize;
    /// Why the accelerator cannot be used, if it cannot.
    fn unavailable_reason(&self) -> Option<String>;
    /// `cuda` (no index) as `cuda:0`, after checking the device exists.
    fn resolve(&self, device: Device) -> Result<Device>;
    /// Waits for dlbridge's work on device `index` (on every device used, for `None`).
    fn synchronize(&self, index: Option<u32>) -> Result<()>;
    /// Gives cached free device memory back to the driver.
    fn empty_cache(&self) -> Result<()>;
    /// The device's marketing name (opens no context).
    fn device_name(&self, index: u32) -> Result<String>;
    /// `(major, minor)` compute capability (opens no context).
    fn capability(&self, index: u32) -> Result<(i32, i32)>;
    /// Checks a DLPack `stream` argument for an export from this device.
    fn check_stream(&self, stream: i64) -> Result<()>;
    /// Makes a DLPack consumer's `stream` wait for dlbridge's queued work.
    fn order_before_consumer(&self, device: Device, stream: i64) -> Result<()>;
    /// Makes dlbridge's work wait for what a producer queued on `stream`.
    fn wait_for_producer(&self, device: Device, stream: i64) -> Result<()>;
    /// Extra places to look for the accelerator's libraries (Python
    /// packages that ship them).
    fn add_library_roots(&self, roots: Vec<std::path::PathBuf>);
    /// What another process needs to open `storage` (device memory from
    /// dlbridge's own pool; anything else is refused, naming `.clone()`).
    /// dlbridge's queued work on it is finished first.
    fn export_ipc(&self, storage: &Arc<Storage>) -> Result<CudaIpcHandle>;
    /// The storage an [`export_ipc`](Self::export_ipc) handle describes,
    /// opened in this process (or found, in the process that made it).
    fn import_ipc(&self, handle: &CudaIpcHandle, read_only: bool) -> Result<Arc<Storage>>;
}

/// Device memory of one process as another opens it (CUDA IPC through
/// dlbridge's exportable stream-ordered pool).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CudaIpcHandle {
    /// The exporting process's pool, as a descriptor of that process (it
    /// travels with `SCM_RIGHTS`; the receiver passes its own copy here).
    pub pool_fd: std::os::fd::RawFd,
    /// Names the exporting pool, so a receiver imports each pool once.
    pub pool_id: [u8; 16],
    /// The device's ordinal in the exporting process.
    pub device: u32,
    /// The device's UUID (ordinals differ between processes).
    pub uuid: [u8; 16],
    /// The driver's record of the allocation (`cuMemPoolExportPointer`).
    pub pointer: [u8; 64],
    /// The allocation's address in the exporting process.
    pub address: u64,
    /// Bytes of the storage.
    pub len: usize,
}

/// The backend that computes on `device`'s memory.
pub(crate) fn of(device: Device) -> &'static dyn Backend {
    match device.kind {
        DeviceKind::Cpu => &crate::cpu::Cpu,
        DeviceKind::Cuda => &crate::cuda::Cuda,
    }
}

/// `device` as tensors carry it: `cuda` without an index becomes `cuda:0`,
/// and a device that does not exist is an error.
pub fn resolve(device: Device) -> Result<Device> {
    match device.kind {
        DeviceKind::Cpu => Ok(Device::CPU),
        DeviceKind::Cuda => crate::cuda::Cuda.resolve(device),
    }
}
