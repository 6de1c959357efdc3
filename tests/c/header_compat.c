/*
 * include/dlbridge.h together with an official dlpack.h (DLPack 1.0 to 1.3),
 * in C11 and in C++17. tests/python/test_c_header_compat.py builds it once
 * for every dlpack.h that an installed package ships (TensorFlow, tvm-ffi,
 * PyTorch, ...), and once without one (dlbridge_dlpack.h's own declarations,
 * the reference for the layout line), in both include orders:
 *
 *   cc -std=c11 -Wall -Wextra -Wpedantic -Werror -Iinclude \
 *      -isystem DIR_OF_DLPACK_H '-DDLB_DLPACK_H=<dlpack.h>' \
 *      tests/c/header_compat.c -Ltarget/debug -ldlbridge \
 *      -Wl,-rpath,$PWD/target/debug -o header_compat && ./header_compat
 *
 * It includes the official header first, then dlbridge.h. With
 * DLB_DLPACK_H_AFTER defined it includes them the other way round: dlbridge.h
 * declares DLPack 1.3 under the official include guard, so the official
 * header is skipped and the program sees 1.3. Both orders must compile
 * without a warning and run.
 *
 * The program prints the DLPack version it compiled against and a line with
 * the layout of the DLPack types and the values of the enumerators and flags
 * that every 1.x header has (the test compares that line with the one built
 * from dlbridge's own declarations), then builds tensors with the official
 * types, imports them into dlbridge and exports them, versioned and legacy.
 * It ends with "N checks passed", or exits 1.
 */
#if defined(DLB_DLPACK_H) && !defined(DLB_DLPACK_H_AFTER)
#include DLB_DLPACK_H
#endif
#include "dlbridge.h"
#if defined(DLB_DLPACK_H) && defined(DLB_DLPACK_H_AFTER)
#include DLB_DLPACK_H
#endif

#include <stddef.h>
#include <stdio.h>
#include <string.h>

static int g_checks, g_failures;

static void check(int ok, const char *expr, int line) {
  g_checks++;
  if (!ok) {
    g_failures++;
    fprintf(stderr, "header_compat.c:%d: CHECK failed: %s\n    dlb_last_error(): \"%s\"\n", line, expr,
            dlb_last_error());
  }
}
#define CHECK(cond) check((cond) ? 1 : 0, #cond, __LINE__)

/* The layout of every DLPack 1.0 type and the values every 1.x header has. */
static void print_layout(void) {
  printf("layout:");
  printf(" DLPackVersion=%zu/%zu", sizeof(DLPackVersion), offsetof(DLPackVersion, minor));
  printf(" DLDeviceType=%zu DLDevice=%zu/%zu", sizeof(DLDeviceType), sizeof(DLDevice),
         offsetof(DLDevice, device_id));
  printf(" DLDataType=%zu/%zu/%zu", sizeof(DLDataType), offsetof(DLDataType, bits), offsetof(DLDataType, lanes));
  printf(" DLTensor=%zu/%zu/%zu/%zu/%zu/%zu/%zu", sizeof(DLTensor), offsetof(DLTensor, device),
         offsetof(DLTensor, ndim), offsetof(DLTensor, dtype), offsetof(DLTensor, shape),
         offsetof(DLTensor, strides), offsetof(DLTensor, byte_offset));
  printf(" DLManagedTensor=%zu/%zu/%zu", sizeof(DLManagedTensor), offsetof(DLManagedTensor, manager_ctx),
         offsetof(DLManagedTensor, deleter));
  printf(" DLManagedTensorVersioned=%zu/%zu/%zu/%zu/%zu", sizeof(struct DLManagedTensorVersioned),
         offsetof(struct DLManagedTensorVersioned, manager_ctx), offsetof(struct DLManagedTensorVersioned, deleter),
         offsetof(struct DLManagedTensorVersioned, flags), offsetof(struct DLManagedTensorVersioned, dl_tensor));
  printf(" devices=%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d", (int)kDLCPU, (int)kDLCUDA, (int)kDLCUDAHost,
         (int)kDLOpenCL, (int)kDLVulkan, (int)kDLMetal, (int)kDLVPI, (int)kDLROCM, (int)kDLROCMHost,
         (int)kDLExtDev, (int)kDLCUDAManaged, (int)kDLOneAPI, (int)kDLWebGPU, (int)kDLHexagon, (int)kDLMAIA);
  printf(" codes=%d,%d,%d,%d,%d,%d,%d", (int)kDLInt, (int)kDLUInt, (int)kDLFloat, (int)kDLOpaqueHandle,
         (int)kDLBfloat, (int)kDLComplex, (int)kDLBool);
  printf(" flags=%llu,%llu,%llu\n", (unsigned long long)DLPACK_FLAG_BITMASK_READ_ONLY,
         (unsigned long long)DLPACK_FLAG_BITMASK_IS_COPIED,
         (unsigned long long)DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED);
}

static int g_deletes;
static void delete_versioned(DLManagedTensorVersioned *self) {
  (void)self;
  g_deletes++;
}
static void delete_legacy(DLManagedTensor *self) {
  (void)self;
  g_deletes++;
}

int main(void) {
  printf("dlpack %d.%d\n", (int)DLPACK_MAJOR_VERSION, (int)DLPACK_MINOR_VERSION);
  print_layout();

  /* A producer's tensor, made with the official types and stamped with the
   * official header's version (explicit strides: DLPack >= 1.2 asks for
   * them). */
  double data[6] = {1, 2, 3, 4, 5, 6};
  int64_t shape[2] = {2, 3}, strides[2] = {3, 1};
  DLTensor dl;
  memset(&dl, 0, sizeof dl);
  dl.data = data;
  dl.device.device_type = kDLCPU;
  dl.device.device_id = 0;
  dl.ndim = 2;
  dl.dtype.code = (uint8_t)kDLFloat;
  dl.dtype.bits = 64;
  dl.dtype.lanes = 1;
  dl.shape = shape;
  dl.strides = strides;
  DLManagedTensorVersioned m; /* the typedef dlbridge provides for 1.0 and 1.1 in C */
  memset(&m, 0, sizeof m);
  m.version.major = DLPACK_MAJOR_VERSION;
  m.version.minor = DLPACK_MINOR_VERSION;
  m.deleter = delete_versioned;
  m.dl_tensor = dl;

  /* Import, edit in place, export both ways. */
  dlb_tensor *t = NULL, *s = NULL;
  CHECK(dlb_import_versioned(&m, &t) == DLB_OK);
  CHECK(!dlb_is_read_only(t));
  CHECK(dlb_binary_scalar_i64_(t, 10, DLB_ADD) == DLB_OK);
  CHECK(data[0] == 11 && data[5] == 16);
  CHECK(dlb_sum(t, &s) == DLB_OK);
  double total = 0;
  CHECK(dlb_item_f64(s, &total) == DLB_OK && total == 81);
  dlb_free(s);
  struct DLManagedTensorVersioned *e = NULL;
  CHECK(dlb_export(t, &e) == DLB_OK);
  CHECK(e->version.major == 1 && e->version.minor == 3 && e->flags == 0);
  CHECK(e->dl_tensor.data == (void *)data && e->dl_tensor.device.device_type == kDLCPU);
  CHECK(e->dl_tensor.ndim == 2 && e->dl_tensor.shape[1] == 3 && e->dl_tensor.strides[0] == 3);
  CHECK(e->dl_tensor.dtype.code == (uint8_t)kDLFloat && e->dl_tensor.dtype.bits == 64);
  DLManagedTensor *l = NULL;
  CHECK(dlb_export_legacy(t, &l) == DLB_OK);
  CHECK(l->dl_tensor.data == (void *)data && l->dl_tensor.shape[0] == 2 && l->dl_tensor.strides[1] == 1);
  dlb_free(t);
  CHECK(g_deletes == 0); /* the exports keep the producer's tensor */
  e->deleter(e);
  l->deleter(l);
  CHECK(g_deletes == 1);

  /* The legacy struct, imported. */
  DLManagedTensor lm;
  memset(&lm, 0, sizeof lm);
  lm.dl_tensor = dl;
  lm.deleter = delete_legacy;
  CHECK(dlb_import_legacy(&lm, &t) == DLB_OK);
  CHECK(dlb_fill_i64_(t, 7) == DLB_OK && data[3] == 7);
  dlb_free(t);
  CHECK(g_deletes == 2);

  /* READ_ONLY, as the official header spells it: kept by dlb_export,
   * refused by dlb_export_legacy. */
  m.flags = DLPACK_FLAG_BITMASK_READ_ONLY;
  CHECK(dlb_import_versioned(&m, &t) == DLB_OK);
  CHECK(dlb_is_read_only(t));
  CHECK(dlb_export(t, &e) == DLB_OK && (e->flags & DLPACK_FLAG_BITMASK_READ_ONLY) != 0);
  e->deleter(e);
  l = NULL;
  CHECK(dlb_export_legacy(t, &l) == DLB_ERR_INVALID_TENSOR && l == NULL);
  CHECK(strstr(dlb_last_error(), "read-only") != NULL);
  dlb_free(t);
  CHECK(g_deletes == 3);

#if DLPACK_MINOR_VERSION >= 1
  /* What the version macro promises is declared: float8 came with 1.1, and
   * dlbridge takes float8 spelled with its enumerator. */
  {
    DLDataType f8;
    DLDevice cpu;
    int64_t n = 2;
    f8.code = (uint8_t)kDLFloat8_e4m3fn;
    f8.bits = 8;
    f8.lanes = 1;
    cpu.device_type = kDLCPU;
    cpu.device_id = 0;
    t = NULL;
    CHECK(dlb_empty(1, &n, f8, cpu, &t) == DLB_OK && t != NULL);
    dlb_free(t);
    t = NULL;
  }
#endif
#if DLPACK_MINOR_VERSION >= 3
  /* So are DLPack 1.3's float6/float4 codes and C exchange API types. */
  CHECK((int)kDLFloat6_e2m3fn == 15 && (int)kDLFloat4_e2m1fn == 17 && (int)kDLTrn == 18);
  CHECK(sizeof(DLPackExchangeAPI) > sizeof(DLPackExchangeAPIHeader));
  printf("1.3 declarations used\n");
#endif
  /* An export for a consumer of this header's version (dlbridge may be newer). */
  {
    double one[1] = {1};
    int64_t n1[1] = {1};
    DLTensor d1 = dl;
    d1.data = one;
    d1.ndim = 1;
    d1.shape = n1;
    d1.strides = NULL;
    m.dl_tensor = d1;
    m.flags = 0;
    CHECK(dlb_import_versioned(&m, &t) == DLB_OK);
    e = NULL;
    CHECK(dlb_export_max_version(t, DLPACK_MAJOR_VERSION, DLPACK_MINOR_VERSION, &e) == DLB_OK);
    CHECK(e != NULL && e->version.major == 1 && e->version.minor == DLPACK_MINOR_VERSION);
    e->deleter(e);
    dlb_free(t);
    t = NULL;
    CHECK(g_deletes == 4);
  }

  if (g_failures) {
    printf("%d of %d checks failed\n", g_failures, g_checks);
    return 1;
  }
  printf("%d checks passed\n", g_checks);
  return 0;
}
