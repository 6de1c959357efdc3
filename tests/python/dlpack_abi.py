"""The DLPack 1.3 ABI as ctypes structures, for tests that build or read
managed tensors and exchange tables by hand (one definition for all of them),
and the capsule accessor that reaches them."""

import ctypes


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32), ("dtype", DLDataType),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


class DLManagedTensorVersioned(ctypes.Structure):
    pass


class DLManagedTensor(ctypes.Structure):
    pass


# DLManagedTensorVersioned.flags
READ_ONLY, IS_COPIED = 1, 2

VERSIONED_DELETER = ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensorVersioned))
LEGACY_DELETER = ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensor))
DLManagedTensorVersioned._fields_ = [
    ("major", ctypes.c_uint32), ("minor", ctypes.c_uint32), ("manager_ctx", ctypes.c_void_p),
    ("deleter", VERSIONED_DELETER), ("flags", ctypes.c_uint64), ("dl_tensor", DLTensor)]
DLManagedTensor._fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", LEGACY_DELETER)]


class ExchangeAPIHeader(ctypes.Structure):
    pass


ExchangeAPIHeader._fields_ = [
    ("major", ctypes.c_uint32), ("minor", ctypes.c_uint32), ("prev_api", ctypes.POINTER(ExchangeAPIHeader))]


class ExchangeAPI(ctypes.Structure):
    """DLPackExchangeAPI (DLPack 1.3): the header, then five function pointers."""

    _fields_ = [("header", ExchangeAPIHeader), ("managed_tensor_allocator", ctypes.c_void_p),
                ("managed_tensor_from_py_object_no_sync", ctypes.c_void_p),
                ("managed_tensor_to_py_object_no_sync", ctypes.c_void_p),
                ("dltensor_from_py_object_no_sync", ctypes.c_void_p), ("current_work_stream", ctypes.c_void_p)]


# PyCapsule_GetPointer(capsule, name) as an address, with a private prototype so that the
# shared ctypes.pythonapi function keeps its settings. A wrong name raises ValueError.
capsule_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", ctypes.pythonapi))

# PyCapsule_New(pointer, name, NULL destructor), also with a private prototype: other
# libraries (Warp, say) give the shared ctypes.pythonapi function their own argtypes.
new_capsule = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p)(
    ("PyCapsule_New", ctypes.pythonapi))
