/*
 * The DLPack 1.x declarations dlbridge.h uses.
 *
 * If an official dlpack.h (any 1.x: 1.0 to 1.3) came first, its declarations
 * are used and this file only fills what older 1.x headers lack (the ABI is
 * the same). Otherwise it includes dlbridge_dlpack_v1_3.h: the official
 * DLPack 1.3 dlpack.h, unmodified (Apache-2.0, see LICENSE-dlpack), under the
 * official include guard DLPACK_DLPACK_H_, so an official dlpack.h included
 * after dlbridge.h is skipped and the program sees DLPack 1.3 (every 1.x
 * header declares a subset of it). Either include order works; see
 * docs/c-abi.md, "Which dlpack.h".
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

#else /* no dlpack.h yet: the official DLPack 1.3 header */

#include "dlbridge_dlpack_v1_3.h"

#endif /* an official dlpack.h came first */
#endif /* DLBRIDGE_DLPACK_H */
