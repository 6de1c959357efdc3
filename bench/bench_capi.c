/*
 * The C ABI's per-call cost: import (dlb_import_versioned + dlb_free) and
 * export (dlb_export + the consumer's deleter call), each O(1) in size.
 * Built and run by `make bench` (against the release static library).
 * Prints one line per row: name, ns per call for a 1-element and a 1 GiB
 * tensor, the ratio, and PASS/FAIL against the targets (< 200 ns; the two
 * sizes within 10% of each other, or within 10 ns).
 */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "dlbridge.h"

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int check(dlb_status s, const char* what) {
  if (s != DLB_OK) {
    fprintf(stderr, "%s failed: %s: %s\n", what, dlb_status_name((int)s), dlb_last_error());
    exit(2);
  }
  return 0;
}

/* A producer's tensor that lives for the whole run: its deleter does nothing. */
static int64_t g_shape[1];
static int64_t g_strides[1] = {1};
static void keep(DLManagedTensorVersioned* self) { (void)self; }

static DLManagedTensorVersioned producer(void* data, int64_t n) {
  DLManagedTensorVersioned m;
  g_shape[0] = n;
  m.version.major = 1;
  m.version.minor = 3;
  m.manager_ctx = NULL;
  m.deleter = keep;
  m.flags = 0;
  m.dl_tensor.data = data;
  m.dl_tensor.device.device_type = kDLCPU;
  m.dl_tensor.device.device_id = 0;
  m.dl_tensor.ndim = 1;
  m.dl_tensor.dtype.code = kDLFloat;
  m.dl_tensor.dtype.bits = 32;
  m.dl_tensor.dtype.lanes = 1;
  m.dl_tensor.shape = g_shape;
  m.dl_tensor.strides = g_strides; /* DLPack >= 1.2 requires strides */
  m.dl_tensor.byte_offset = 0;
  return m;
}

enum { SAMPLES = 31, LOOPS = 20000 };

static int cmp(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

/* Median ns per import of an n-element tensor (import then free). */
static double time_import(void* data, int64_t n) {
  double samples[SAMPLES];
  for (int s = 0; s < SAMPLES; s++) {
    double t0 = now_ns();
    for (int i = 0; i < LOOPS; i++) {
      DLManagedTensorVersioned m = producer(data, n);
      dlb_tensor* t;
      check(dlb_import_versioned(&m, &t), "dlb_import_versioned");
      dlb_free(t);
    }
    samples[s] = (now_ns() - t0) / LOOPS;
  }
  qsort(samples, SAMPLES, sizeof(double), cmp);
  return samples[SAMPLES / 2];
}

/* Median ns per export of a tensor (export then the consumer's deleter). */
static double time_export(dlb_tensor* t) {
  double samples[SAMPLES];
  for (int s = 0; s < SAMPLES; s++) {
    double t0 = now_ns();
    for (int i = 0; i < LOOPS; i++) {
      DLManagedTensorVersioned* m;
      check(dlb_export(t, &m), "dlb_export");
      m->deleter(m);
    }
    samples[s] = (now_ns() - t0) / LOOPS;
  }
  qsort(samples, SAMPLES, sizeof(double), cmp);
  return samples[SAMPLES / 2];
}

static int row(const char* name, double small, double big) {
  double ratio = big / small;
  int ok = small < 200.0 && big < 200.0 && ((ratio > 0.9 && ratio < 1.1) || (big - small < 10 && small - big < 10));
  printf("%-34s %9.1f ns %9.1f ns   %5.3f   %s\n", name, small, big, ratio, ok ? "PASS" : "FAIL");
  return ok;
}

int main(void) {
  const int64_t big_n = (int64_t)1 << 28; /* 1 GiB of float32 */
  float* small = calloc(1, sizeof(float));
  float* big = malloc((size_t)big_n * sizeof(float)); /* never touched: O(1) means it needn't be */
  if (!small || !big) return 2;
  printf("dlbridge %s C ABI, medians of %d samples x %d calls\n", dlb_version(), SAMPLES, LOOPS);
  printf("%-34s %12s %12s %7s\n", "row", "1 element", "1 GiB", "ratio");
  int ok = 1;
  ok &= row("import (dlb_import_versioned+free)", time_import(small, 1), time_import(big, big_n));
  dlb_tensor *ts, *tb;
  DLManagedTensorVersioned ms = producer(small, 1), mb = producer(big, big_n);
  check(dlb_import_versioned(&ms, &ts), "import");
  check(dlb_import_versioned(&mb, &tb), "import");
  ok &= row("export (dlb_export+deleter)", time_export(ts), time_export(tb));
  dlb_free(ts);
  dlb_free(tb);
  free(small);
  free(big);
  printf("%s\n", ok ? "all rows pass" : "some rows fail");
  return ok ? 0 : 1;
}
