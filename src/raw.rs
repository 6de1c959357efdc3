//! Reading C arrays handed over by foreign code.

/// `ptr[..len]` as a slice. C producers may pass NULL for an empty array
/// (NumPy does for a 0-d array's shape and strides), which
/// `slice::from_raw_parts` does not allow, so `len == 0` never reads `ptr`.
///
/// # Safety
/// When `len > 0`, `ptr` must point to `len` initialised values that stay
/// alive and unmodified for `'a`.
pub(crate) unsafe fn c_array<'a, T>(ptr: *const T, len: usize) -> &'a [T] {
    if len == 0 {
        &[]
    } else {
        // SAFETY: the caller's contract for len > 0.
        unsafe { std::slice::from_raw_parts(ptr, len) }
    }
}

#[cfg(test)]
mod tests {
    use super::c_array;

    #[test]
    fn empty_arrays_may_be_null() {
        // SAFETY: len 0 never reads the pointer.
        let empty: &[i64] = unsafe { c_array(std::ptr::null(), 0) };
        assert!(empty.is_empty());
        let values = [3i64, 4];
        // SAFETY: values holds two live i64.
        assert_eq!(unsafe { c_array(values.as_ptr(), 2) }, &values);
    }
}
