/*
 * The DLPack 1.x ABI types dlbridge.h uses, declared from the DLPack
 * specification (https://dmlc.github.io/dlpack/latest/c_api.html).
 *
 * If an official dlpack.h (any 1.x: 1.0 to 1.3) is included first, its
 * declarations are used and this file only fills what older 1.x headers
 * lack (the two describe the same ABI). Include the official header before
 * dlbridge.h, never after it: both declare the same types, so the second
 * declarations are redefinition errors. See docs/c-abi.md.
 */
#ifndef DLBRIDGE_DLPACK_H
#define DLBRIDGE_DLPACK_H

#if defined(DLPACK_DLPACK_H_) || defined(DLPACK_MAJOR_VERSION)

/* An official dlpack.h came first. */
#if !defined(DLPACK_MAJOR_VERSION)
#error "dlbridge.h needs DLPack 1.x: the dlpack.h included before it is older than 1.0 (no DLPACK_MAJOR_VERSION)"
#elif DLPACK_MAJOR_VERSION != 1
#error "dlbridge.h speaks DLPack 1.x: the dlpack.h included before it has another major version"
#endif

/* DLPack 1.0 and 1.1 declare `struct DLManagedTensorVersioned` without a
 * typedef (later headers have one, for the C exchange API types that use
 * it). dlbridge.h always writes the struct tag; C programs get the typedef
 * here too (in C++ the struct's name is already a type name). */
#if DLPACK_MINOR_VERSION < 2 && !defined(__cplusplus)
typedef struct DLManagedTensorVersioned DLManagedTensorVersioned;
#endif

/* DLPack 1.1 added this flag (the value is the specification's). */
#ifndef DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED
#define DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED (1UL << 2UL)
#endif

#else /* no official dlpack.h: declare the DLPack 1.3 types dlbridge.h uses */

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define DLPACK_MAJOR_VERSION 1
#define DLPACK_MINOR_VERSION 3

/* DLManagedTensorVersioned.flags */
#define DLPACK_FLAG_BITMASK_READ_ONLY (1UL << 0UL)
#define DLPACK_FLAG_BITMASK_IS_COPIED (1UL << 1UL)
#define DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED (1UL << 2UL)

typedef struct {
  uint32_t major;
  uint32_t minor;
} DLPackVersion;

typedef enum {
  kDLCPU = 1,
  kDLCUDA = 2,
  kDLCUDAHost = 3,
  kDLOpenCL = 4,
  kDLVulkan = 7,
  kDLMetal = 8,
  kDLVPI = 9,
  kDLROCM = 10,
  kDLROCMHost = 11,
  kDLExtDev = 12,
  kDLCUDAManaged = 13,
  kDLOneAPI = 14,
  kDLWebGPU = 15,
  kDLHexagon = 16,
  kDLMAIA = 17,
  kDLTrn = 18,
} DLDeviceType;

typedef struct {
  DLDeviceType device_type;
  int32_t device_id;
} DLDevice;

typedef enum {
  kDLInt = 0U,
  kDLUInt = 1U,
  kDLFloat = 2U,
  kDLOpaqueHandle = 3U,
  kDLBfloat = 4U,
  kDLComplex = 5U,
  kDLBool = 6U,
} DLDataTypeCode;

typedef struct {
  uint8_t code;   /* a DLDataTypeCode */
  uint8_t bits;
  uint16_t lanes;
} DLDataType;

typedef struct {
  void* data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t* shape;
  int64_t* strides;  /* in elements; NULL means compact row-major */
  uint64_t byte_offset;
} DLTensor;

typedef struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(struct DLManagedTensor* self);
} DLManagedTensor;

typedef struct DLManagedTensorVersioned {
  DLPackVersion version;
  void* manager_ctx;
  void (*deleter)(struct DLManagedTensorVersioned* self);
  uint64_t flags;
  DLTensor dl_tensor;
} DLManagedTensorVersioned;

#ifdef __cplusplus
}
#endif

#endif /* an official dlpack.h came first */
#endif /* DLBRIDGE_DLPACK_H */
