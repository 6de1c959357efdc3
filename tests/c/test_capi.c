/*
 * The C ABI of dlbridge (include/dlbridge.h), tested from C.
 *
 * Every function of the header and every documented error is exercised, with
 * producers and free callbacks that count how often dlbridge calls them. No
 * test framework: CHECK* macros count checks and failures, print file:line,
 * the failed expression and dlb_last_error(), and main() exits 1 on any
 * failure ("N checks passed" otherwise).
 *
 * The file is C11 and also valid C++17 (tests/python/test_capi.py compiles
 * it both ways, to prove the header works from C++).
 *
 * Environment: DLB_TEST_HAVE_CUDA=0 requires every CUDA request to fail with
 * DLB_ERR_NO_CUDA ("No CUDA ..."); =1 requires CUDA to work; unset accepts
 * either (whatever the first CUDA request says).
 *
 * Build and run (tests/python/test_capi.py does all of these):
 *   cargo build -p dlbridge-capi
 *   cc -std=c11 -Wall -Wextra -Werror -g -fsanitize=address,undefined \
 *      -fno-omit-frame-pointer -Iinclude tests/c/test_capi.c \
 *      target/debug/libdlbridge.a -lpthread -ldl -lm -lrt -lutil -lgcc_s \
 *      -o test_capi_asan
 *   ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
 *      UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ./test_capi_asan
 *   cc -std=c11 -Wall -Wextra -Werror -g -Iinclude tests/c/test_capi.c \
 *      -Ltarget/debug -ldlbridge -Wl,-rpath,$PWD/target/debug -lpthread \
 *      -o test_capi
 *   valgrind --leak-check=full --errors-for-leak-kinds=definite,indirect \
 *      --error-exitcode=1 ./test_capi
 */
#include "dlbridge.h"

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------ */
/* Checks                                                                   */
/* ------------------------------------------------------------------------ */

static int g_checks;
static int g_failures;
static const char *g_test = "";

static void check_true(int ok, const char *expr, const char *file, int line) {
  g_checks++;
  if (!ok) {
    g_failures++;
    fprintf(stderr, "%s:%d: [%s] CHECK failed: %s\n    dlb_last_error(): \"%s\"\n", file, line, g_test,
            expr, dlb_last_error());
  }
}

/* `got` must be `want`; for an error, dlb_last_error() must also be non-empty. */
static int check_status(int got, int want, const char *expr, const char *file, int line) {
  const char *msg = dlb_last_error();
  int ok = got == want;
  if (ok && want != DLB_OK && (msg == NULL || msg[0] == '\0')) {
    ok = 0;
    fprintf(stderr, "%s:%d: [%s] %s failed with %s but dlb_last_error() is empty\n", file, line, g_test, expr,
            dlb_status_name(got));
  } else if (!ok) {
    fprintf(stderr, "%s:%d: [%s] %s\n    expected %s, got %s (%d)\n    dlb_last_error(): \"%s\"\n", file, line,
            g_test, expr, dlb_status_name(want), dlb_status_name(got), got, msg ? msg : "(NULL)");
  }
  g_checks++;
  if (!ok) g_failures++;
  return ok;
}

#define CHECK(cond) check_true((cond) ? 1 : 0, #cond, __FILE__, __LINE__)
#define CHECK_OK(expr) check_status((int)(expr), DLB_OK, #expr, __FILE__, __LINE__)
#define CHECK_ERR(expr, want) check_status((int)(expr), (int)(want), #expr, __FILE__, __LINE__)
/* The last error of this thread mentions `text`. */
#define CHECK_MSG(text) CHECK(strstr(dlb_last_error(), (text)) != NULL)

/* A value no dlbridge handle has: out-pointers must keep it on failure. */
#define SENTINEL ((dlb_tensor *)(uintptr_t)0x5e57)

/* ------------------------------------------------------------------------ */
/* Small constructors                                                       */
/* ------------------------------------------------------------------------ */

static DLDataType dt3(int code, int bits, int lanes) {
  DLDataType d;
  d.code = (uint8_t)code;
  d.bits = (uint8_t)bits;
  d.lanes = (uint16_t)lanes;
  return d;
}
static DLDataType dt(int code, int bits) { return dt3(code, bits, 1); }
static DLDevice dev(int type, int32_t id) {
  DLDevice d;
  d.device_type = (DLDeviceType)type;
  d.device_id = id;
  return d;
}
static int same_dtype(DLDataType a, DLDataType b) {
  return a.code == b.code && a.bits == b.bits && a.lanes == b.lanes;
}

#define F16 dt(kDLFloat, 16)
#define BF16 dt(kDLBfloat, 16)
#define F32 dt(kDLFloat, 32)
#define F64 dt(kDLFloat, 64)
#define I8 dt(kDLInt, 8)
#define I32 dt(kDLInt, 32)
#define I64 dt(kDLInt, 64)
#define U8 dt(kDLUInt, 8)
#define BOOL dt(kDLBool, 8)
#define C64 dt(kDLComplex, 64)
#define CPU dev(kDLCPU, 0)
#define CUDA0 dev(kDLCUDA, 0)

static int g_have_cuda = -1; /* -1 unknown, 0 no, 1 yes (DLB_TEST_HAVE_CUDA) */

/* A CUDA request's status: DLB_ERR_NO_CUDA with "No CUDA" when there is no
 * GPU, DLB_OK when there is one. Returns 1 when it succeeded. */
static int check_cuda_status(int got, const char *expr, const char *file, int line) {
  if (g_have_cuda == -1) {
    g_have_cuda = got == DLB_OK;
    printf("note: CUDA requests %s on this machine\n", g_have_cuda ? "succeed" : "fail");
  }
  if (g_have_cuda) return check_status(got, DLB_OK, expr, file, line);
  check_status(got, DLB_ERR_NO_CUDA, expr, file, line);
  check_true(strstr(dlb_last_error(), "No CUDA") != NULL, "dlb_last_error() contains \"No CUDA\"", file, line);
  return 0;
}
#define CHECK_CUDA(expr) check_cuda_status((int)(expr), #expr, __FILE__, __LINE__)

/* ------------------------------------------------------------------------ */
/* Reading tensors                                                          */
/* ------------------------------------------------------------------------ */

static int64_t numel_of(const DLTensor *d) {
  int64_t n = 1;
  for (int i = 0; i < d->ndim; i++) n *= d->shape[i];
  return n;
}

/* Whether `t` (any real dtype, any layout) holds exactly `want[0..n)` in
 * row-major order. Goes through dlb_cast + dlb_clone + dlb_describe. */
static int values_are(const dlb_tensor *t, const double *want, int64_t n) {
  dlb_tensor *f = NULL, *c = NULL;
  DLTensor d;
  int ok = dlb_cast(t, F64, &f) == DLB_OK && dlb_clone(f, &c) == DLB_OK && dlb_describe(c, &d) == DLB_OK;
  if (ok) ok = numel_of(&d) == n;
  for (int64_t i = 0; ok && i < n; i++) {
    double got = ((const double *)d.data)[i];
    if (!(got == want[i] || (isnan(got) && isnan(want[i])))) {
      fprintf(stderr, "    element %lld: got %g, want %g\n", (long long)i, got, want[i]);
      ok = 0;
    }
  }
  dlb_free(c);
  dlb_free(f);
  return ok;
}

static int shape_is(const dlb_tensor *t, int32_t ndim, const int64_t *shape) {
  DLTensor d;
  if (dlb_describe(t, &d) != DLB_OK || d.ndim != ndim) return 0;
  for (int i = 0; i < ndim; i++)
    if (d.shape[i] != shape[i]) return 0;
  return 1;
}

static int strides_are(const dlb_tensor *t, const int64_t *strides) {
  DLTensor d;
  if (dlb_describe(t, &d) != DLB_OK) return 0;
  for (int i = 0; i < d.ndim; i++)
    if (d.strides[i] != strides[i]) return 0;
  return 1;
}

static DLDataType dtype_of(const dlb_tensor *t) {
  DLTensor d;
  memset(&d, 0, sizeof d);
  dlb_describe(t, &d);
  return d.dtype;
}

static void *data_of(const dlb_tensor *t) {
  DLTensor d;
  memset(&d, 0, sizeof d);
  dlb_describe(t, &d);
  return d.data;
}

static double item(const dlb_tensor *t) {
  double v = NAN;
  dlb_item_f64(t, &v);
  return v;
}

/* Whether the sum of every element of `t` is `want`. */
static int sum_is(const dlb_tensor *t, double want) {
  dlb_tensor *s = NULL;
  int ok = dlb_sum(t, &s) == DLB_OK && item(s) == want;
  dlb_free(s);
  return ok;
}

/* ------------------------------------------------------------------------ */
/* A DLPack producer written in C, with a counting deleter                  */
/* ------------------------------------------------------------------------ */

#define MAX_DIMS 70

/* One producer tensor; the test owns it (usually on its stack) and the data.
 * The deleter only counts: the test checks the count, then reclaims. */
typedef struct producer {
  DLManagedTensorVersioned v;
  DLManagedTensor l;
  int64_t shape[MAX_DIMS];
  int64_t strides[MAX_DIMS];
  int calls; /* deleter calls for this tensor */
} producer;

static int g_deleter_calls; /* deleter calls in the current test (all producers) */

static void count_versioned(DLManagedTensorVersioned *self) {
  producer *p = (producer *)self->manager_ctx;
  p->calls++;
  g_deleter_calls++;
}

static void count_legacy(DLManagedTensor *self) {
  producer *p = (producer *)self->manager_ctx;
  p->calls++;
  g_deleter_calls++;
}

/* Fills `p` with a CPU tensor over `data` (strides NULL: none) and returns
 * its DLPack 1.3 versioned header; p->l is the same tensor, legacy. */
static DLManagedTensorVersioned *make_tensor(producer *p, void *data, DLDataType dtype, int32_t ndim,
                                             const int64_t *shape, const int64_t *strides) {
  DLTensor t;
  memset(p, 0, sizeof *p);
  memset(&t, 0, sizeof t);
  t.data = data;
  t.device = CPU;
  t.ndim = ndim;
  t.dtype = dtype;
  for (int i = 0; i < ndim && i < MAX_DIMS; i++) {
    p->shape[i] = shape ? shape[i] : 0;
    p->strides[i] = strides ? strides[i] : 0;
  }
  t.shape = ndim > 0 ? p->shape : NULL;
  t.strides = strides ? p->strides : NULL;
  t.byte_offset = 0;
  p->v.version.major = 1;
  p->v.version.minor = 3;
  p->v.manager_ctx = p;
  p->v.deleter = count_versioned;
  p->v.flags = 0;
  p->v.dl_tensor = t;
  p->l.dl_tensor = t;
  p->l.manager_ctx = p;
  p->l.deleter = count_legacy;
  return &p->v;
}

/* A legacy header for the same tensor, after any edit of p->v.dl_tensor. */
static DLManagedTensor *legacy_of(DLManagedTensorVersioned *m) {
  producer *p = (producer *)m->manager_ctx;
  p->l.dl_tensor = p->v.dl_tensor;
  return &p->l;
}

/* ------------------------------------------------------------------------ */
/* A host buffer with a counting free callback                              */
/* ------------------------------------------------------------------------ */

typedef struct host_buffer {
  void *data; /* malloc'd; freed (and set to NULL) by the callback */
  int calls;  /* callback calls */
} host_buffer;

static int g_host_frees; /* free callbacks in the current test */

static void host_free(void *ctx) {
  host_buffer *h = (host_buffer *)ctx;
  h->calls++;
  g_host_frees++;
  free(h->data);
  h->data = NULL;
}

static host_buffer new_floats(int n, float first) {
  host_buffer h;
  h.data = malloc((size_t)n * sizeof(float));
  h.calls = 0;
  for (int i = 0; i < n; i++) ((float *)h.data)[i] = first + (float)i;
  return h;
}

static void begin(const char *name) {
  g_test = name;
  g_deleter_calls = 0;
  g_host_frees = 0;
}

/* ------------------------------------------------------------------------ */
/* dlb_version, dlb_status_name, dlb_last_error                             */
/* ------------------------------------------------------------------------ */

static void test_version_and_status_names(void) {
  begin("version_and_status_names");
  const char *v = dlb_version();
  CHECK(v != NULL && strcmp(v, "0.1.0") == 0);
  CHECK(dlb_version() == v); /* static */

  static const char *const names[] = {
      "DLB_OK",
      "DLB_ERR_NULL_POINTER",
      "DLB_ERR_INVALID_ARGUMENT",
      "DLB_ERR_UNSUPPORTED_VERSION",
      "DLB_ERR_UNSUPPORTED_DTYPE",
      "DLB_ERR_UNSUPPORTED_DEVICE",
      "DLB_ERR_INVALID_TENSOR",
      "DLB_ERR_INVALID_OPERATION",
      "DLB_ERR_NO_CUDA",
      "DLB_ERR_OUT_OF_MEMORY",
      "DLB_ERR_RUNTIME",
      "DLB_ERR_INTERNAL",
  };
  static const int codes[] = {
      DLB_OK,
      DLB_ERR_NULL_POINTER,
      DLB_ERR_INVALID_ARGUMENT,
      DLB_ERR_UNSUPPORTED_VERSION,
      DLB_ERR_UNSUPPORTED_DTYPE,
      DLB_ERR_UNSUPPORTED_DEVICE,
      DLB_ERR_INVALID_TENSOR,
      DLB_ERR_INVALID_OPERATION,
      DLB_ERR_NO_CUDA,
      DLB_ERR_OUT_OF_MEMORY,
      DLB_ERR_RUNTIME,
      DLB_ERR_INTERNAL,
  };
  for (int i = 0; i < 12; i++) {
    CHECK(codes[i] == i);
    CHECK(strcmp(dlb_status_name(codes[i]), names[i]) == 0);
  }
  CHECK(strcmp(dlb_status_name(12), "unknown status") == 0);
  CHECK(strcmp(dlb_status_name(-1), "unknown status") == 0);
  CHECK(strcmp(dlb_status_name(INT32_MAX), "unknown status") == 0);
  CHECK(strcmp(dlb_status_name(INT32_MIN), "unknown status") == 0);
  CHECK(DLB_ADD == 0 && DLB_SUB == 1 && DLB_MUL == 2 && DLB_DIV == 3);
}

typedef struct thread_result {
  int initially_empty; /* the new thread's dlb_last_error() was "" */
  int status;          /* of the failing call it made */
  int own_message;     /* its message is its own error's */
  int still_own;       /* ... and still is after the main thread failed again */
} thread_result;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cond = PTHREAD_COND_INITIALIZER;
static int g_phase;

static void wait_phase(int phase) {
  pthread_mutex_lock(&g_lock);
  while (g_phase < phase) pthread_cond_wait(&g_cond, &g_lock);
  pthread_mutex_unlock(&g_lock);
}

static void set_phase(int phase) {
  pthread_mutex_lock(&g_lock);
  g_phase = phase;
  pthread_cond_broadcast(&g_cond);
  pthread_mutex_unlock(&g_lock);
}

static void *error_thread(void *arg) {
  thread_result *r = (thread_result *)arg;
  r->initially_empty = strcmp(dlb_last_error(), "") == 0;
  dlb_tensor *a = NULL, *out = NULL;
  int64_t shape[1] = {2};
  dlb_zeros(1, shape, F32, CPU, &a);
  r->status = dlb_binary(a, a, 7, &out); /* unknown operator */
  r->own_message = strstr(dlb_last_error(), "unknown operator 7") != NULL;
  set_phase(1);
  wait_phase(2); /* the main thread fails meanwhile */
  r->still_own = strstr(dlb_last_error(), "unknown operator 7") != NULL;
  dlb_free(a);
  return NULL;
}

/* A handle made on one thread, freed on another: the producer's deleter runs
 * on the thread that releases the last owner. */
static void *free_thread(void *arg) {
  dlb_free((dlb_tensor *)arg);
  return NULL;
}

static void test_last_error_per_thread(void) {
  begin("last_error_per_thread");
  /* main() calls this first: nothing has failed on this thread yet. */
  CHECK(dlb_last_error() != NULL && strcmp(dlb_last_error(), "") == 0);

  CHECK_ERR(dlb_clone(NULL, NULL), DLB_ERR_NULL_POINTER);
  CHECK(strcmp(dlb_last_error(), "tensor is NULL") == 0);
  const char *first = dlb_last_error();
  CHECK(first == dlb_last_error()); /* stable until the next failure */

  thread_result r;
  memset(&r, 0, sizeof r);
  pthread_t th;
  g_phase = 0;
  CHECK(pthread_create(&th, NULL, error_thread, &r) == 0);
  wait_phase(1);
  /* The other thread failed: this thread's message is unchanged. */
  CHECK(strcmp(dlb_last_error(), "tensor is NULL") == 0);
  int64_t neg[1] = {-1};
  dlb_tensor *out = SENTINEL;
  CHECK_ERR(dlb_zeros(1, neg, F32, CPU, &out), DLB_ERR_INVALID_ARGUMENT);
  CHECK_MSG("negative size -1");
  set_phase(2);
  pthread_join(th, NULL);
  CHECK(r.initially_empty);
  CHECK(r.status == DLB_ERR_INVALID_ARGUMENT);
  CHECK(r.own_message);
  CHECK(r.still_own);
  CHECK_MSG("negative size -1");
  CHECK(out == SENTINEL);
  /* A success does not clear the message. */
  dlb_tensor *z = NULL;
  int64_t shape[1] = {1};
  CHECK_OK(dlb_zeros(1, shape, F32, CPU, &z));
  CHECK_MSG("negative size -1");
  dlb_free(z);

  /* Import on this thread, release on another: the deleter runs once. */
  producer p;
  float data[3] = {1, 2, 3};
  int64_t s3[1] = {3}, st[1] = {1};
  dlb_tensor *t = NULL;
  CHECK_OK(dlb_import_versioned(make_tensor(&p, data, F32, 1, s3, st), &t));
  CHECK(pthread_create(&th, NULL, free_thread, t) == 0);
  pthread_join(th, NULL);
  CHECK(p.calls == 1);
}

/* ------------------------------------------------------------------------ */
/* dlb_import_versioned / dlb_import_legacy: successes                      */
/* ------------------------------------------------------------------------ */

static void test_import_lifetimes(void) {
  begin("import_lifetimes");
  float data[6] = {0, 1, 2, 3, 4, 5};
  int64_t shape[2] = {2, 3}, strides[2] = {3, 1};
  producer p;

  /* Handle only: the deleter runs at dlb_free, once. */
  dlb_tensor *t = SENTINEL;
  CHECK_OK(dlb_import_versioned(make_tensor(&p, data, F32, 2, shape, strides), &t));
  CHECK(t != SENTINEL && t != NULL);
  CHECK(p.calls == 0);
  CHECK(!dlb_is_read_only(t));
  DLTensor d;
  CHECK_OK(dlb_describe(t, &d));
  CHECK(d.data == (void *)data); /* zero-copy */
  CHECK(d.device.device_type == kDLCPU && d.device.device_id == 0);
  CHECK(d.ndim == 2 && same_dtype(d.dtype, F32) && d.byte_offset == 0);
  CHECK(d.shape[0] == 2 && d.shape[1] == 3 && d.strides[0] == 3 && d.strides[1] == 1);
  /* describe's arrays point into the handle, not into the producer's. */
  CHECK(d.shape != p.shape && d.strides != p.strides);
  {
    double want[6] = {0, 1, 2, 3, 4, 5};
    CHECK(values_are(t, want, 6));
  }
  dlb_free(t);
  CHECK(p.calls == 1);
  CHECK(g_deleter_calls == 1);

  /* Handle and export: the deleter waits for the export's deleter. */
  CHECK_OK(dlb_import_versioned(make_tensor(&p, data, F32, 2, shape, strides), &t));
  DLManagedTensorVersioned *e = NULL;
  CHECK_OK(dlb_export(t, &e));
  CHECK(e->dl_tensor.data == (void *)data);
  dlb_free(t);
  CHECK(p.calls == 0);
  CHECK(((float *)e->dl_tensor.data)[5] == 5.0f);
  e->deleter(e);
  CHECK(p.calls == 1);

  /* Export released first, handle last. */
  CHECK_OK(dlb_import_versioned(make_tensor(&p, data, F32, 2, shape, strides), &t));
  CHECK_OK(dlb_export(t, &e));
  e->deleter(e);
  CHECK(p.calls == 0);
  CHECK(sum_is(t, 15.0)); /* still readable */
  dlb_free(t);
  CHECK(p.calls == 1);

  /* Operations and handles derived from the import share its owner. */
  CHECK_OK(dlb_import_versioned(make_tensor(&p, data, F32, 2, shape, strides), &t));
  dlb_tensor *same = NULL, *same_dtype_cast = NULL, *copy = NULL;
  CHECK_OK(dlb_to_device(t, CPU, &same));
  CHECK_OK(dlb_cast(t, F32, &same_dtype_cast));
  CHECK_OK(dlb_clone(t, &copy));
  dlb_free(t);
  dlb_free(copy); /* new memory: not an owner */
  CHECK(p.calls == 0);
  dlb_free(same);
  CHECK(p.calls == 0);
  dlb_free(same_dtype_cast);
  CHECK(p.calls == 1);

  /* Legacy: the same, and never read-only. */
  CHECK_OK(dlb_import_legacy(legacy_of(make_tensor(&p, data, F32, 2, shape, strides)), &t));
  CHECK(!dlb_is_read_only(t));
  CHECK(data_of(t) == (void *)data);
  CHECK_OK(dlb_export(t, &e));
  CHECK(e->flags == 0);
  dlb_free(t);
  CHECK(p.calls == 0);
  CHECK(((float *)e->dl_tensor.data)[4] == 4.0f);
  e->deleter(e);
  CHECK(p.calls == 1);
  CHECK(g_deleter_calls == 5);

  /* A NULL deleter (the producer keeps ownership) is never called. */
  make_tensor(&p, data, F32, 2, shape, strides);
  p.v.deleter = NULL;
  CHECK_OK(dlb_import_versioned(&p.v, &t));
  dlb_free(t);
  make_tensor(&p, data, F32, 2, shape, strides);
  p.l.deleter = NULL;
  CHECK_OK(dlb_import_legacy(&p.l, &t));
  dlb_free(t);
  CHECK(g_deleter_calls == 5);
}


static void test_import_zero_copy(void) {
  begin("import_zero_copy");
  int32_t data[8] = {100, 101, 0, 1, 2, 3, 4, 5};
  int64_t shape[2] = {2, 3}, strides[2] = {3, 1};
  producer p;
  DLManagedTensorVersioned *m = make_tensor(&p, data, I32, 2, shape, strides);
  m->dl_tensor.byte_offset = 2 * sizeof(int32_t);
  dlb_tensor *t = NULL;
  CHECK_OK(dlb_import_versioned(m, &t));
  DLTensor d;
  CHECK_OK(dlb_describe(t, &d));
  CHECK(d.data == (void *)((char *)data + 8)); /* data + byte_offset */
  CHECK(d.byte_offset == 0);
  CHECK(same_dtype(d.dtype, I32));
  {
    double want[6] = {0, 1, 2, 3, 4, 5};
    CHECK(values_are(t, want, 6));
  }
  /* Edits through dlbridge land in the producer's buffer. */
  CHECK_OK(dlb_binary_scalar_i64_(t, 10, DLB_ADD));
  CHECK(data[0] == 100 && data[1] == 101);
  for (int i = 0; i < 6; i++) CHECK(data[2 + i] == 10 + i);
  CHECK_OK(dlb_fill_i64_(t, -7));
  CHECK(data[0] == 100 && data[1] == 101 && data[2] == -7 && data[7] == -7);
  /* ... and the producer's edits are seen by dlbridge. */
  data[7] = 40;
  CHECK(sum_is(t, 5 * -7 + 40));
  /* An export points at the same element. */
  DLManagedTensorVersioned *e = NULL;
  CHECK_OK(dlb_export(t, &e));
  CHECK((char *)e->dl_tensor.data + e->dl_tensor.byte_offset == (char *)data + 8);
  e->deleter(e);
  dlb_free(t);
  CHECK(p.calls == 1);

  /* The same through the legacy header. */
  m = make_tensor(&p, data, I32, 2, shape, strides);
  m->dl_tensor.byte_offset = 4;
  CHECK_OK(dlb_import_legacy(legacy_of(&p.v), &t));
  CHECK(data_of(t) == (void *)(data + 1));
  CHECK_OK(dlb_fill_i64_(t, 3));
  CHECK(data[0] == 100 && data[1] == 3 && data[6] == 3 && data[7] == 40);
  dlb_free(t);
  CHECK(p.calls == 1);
}

static void test_import_strided(void) {
  begin("import_strided");
  /* A 2x3 row-major buffer imported as its 3x2 transpose. */
  double data[6] = {0, 1, 2, 3, 4, 5};
  int64_t shape[2] = {3, 2}, strides[2] = {1, 3};
  producer p;
  dlb_tensor *t = NULL;
  CHECK_OK(dlb_import_versioned(make_tensor(&p, data, F64, 2, shape, strides), &t));
  CHECK(data_of(t) == (void *)data);
  CHECK(shape_is(t, 2, shape));
  CHECK(strides_are(t, strides));
  {
    double want[6] = {0, 3, 1, 4, 2, 5};
    CHECK(values_are(t, want, 6));
  }
  /* A clone is compact. */
  dlb_tensor *c = NULL;
  CHECK_OK(dlb_clone(t, &c));
  {
    int64_t compact[2] = {2, 1};
    CHECK(strides_are(c, compact));
    CHECK(shape_is(c, 2, shape));
    CHECK(data_of(c) != (void *)data);
    double *cd = (double *)data_of(c);
    CHECK(cd[0] == 0 && cd[1] == 3 && cd[2] == 1 && cd[3] == 4 && cd[4] == 2 && cd[5] == 5);
  }
  /* In place through the transposed view: t += clone (i.e. t *= 2). */
  CHECK_OK(dlb_binary_(t, c, DLB_ADD));
  for (int i = 0; i < 6; i++) CHECK(data[i] == 2.0 * i);
  /* The export keeps the strides. */
  DLManagedTensorVersioned *e = NULL;
  CHECK_OK(dlb_export(t, &e));
  CHECK(e->dl_tensor.ndim == 2 && e->dl_tensor.strides[0] == 1 && e->dl_tensor.strides[1] == 3);
  CHECK(e->dl_tensor.shape[0] == 3 && e->dl_tensor.shape[1] == 2);
  e->deleter(e);
  dlb_free(c);
  dlb_free(t);
  CHECK(p.calls == 1);

  /* Negative strides: the reversed buffer, data pointing at its last element. */
  int64_t n4[1] = {4}, back[1] = {-1};
  float f[4] = {1, 2, 3, 4};
  CHECK_OK(dlb_import_versioned(make_tensor(&p, f + 3, F32, 1, n4, back), &t));
  CHECK(data_of(t) == (void *)(f + 3));
  {
    double want[4] = {4, 3, 2, 1};
    CHECK(values_are(t, want, 4));
  }
  CHECK_OK(dlb_binary_scalar_f64_(t, 0.5, DLB_MUL));
  CHECK(f[0] == 0.5f && f[3] == 2.0f);
  dlb_free(t);
  CHECK(p.calls == 1);

  /* Zero strides (a broadcast view of one element). */
  int64_t n3[1] = {3}, zero[1] = {0};
  float one = 7;
  CHECK_OK(dlb_import_versioned(make_tensor(&p, &one, F32, 1, n3, zero), &t));
  CHECK(sum_is(t, 21));
  dlb_free(t);
  CHECK(p.calls == 1);
  CHECK(g_deleter_calls == 3);
}

static void test_import_null_strides(void) {
  begin("import_null_strides");
  int16_t data[6] = {1, 2, 3, 4, 5, 6};
  int64_t shape[2] = {2, 3}, compact[2] = {3, 1};
  producer p;
  dlb_tensor *t = NULL;
  /* DLPack before 1.2 may leave strides NULL: compact row-major. */
  DLManagedTensorVersioned *m = make_tensor(&p, data, dt(kDLInt, 16), 2, shape, NULL);
  CHECK(m->dl_tensor.strides == NULL);
  m->version.minor = 0;
  CHECK_OK(dlb_import_versioned(m, &t));
  CHECK(shape_is(t, 2, shape));
  CHECK(strides_are(t, compact));
  CHECK(sum_is(t, 21));
  dlb_free(t);
  CHECK(p.calls == 1);

  make_tensor(&p, data, dt(kDLInt, 16), 2, shape, NULL)->version.minor = 1;
  CHECK_OK(dlb_import_versioned(&p.v, &t));
  CHECK(strides_are(t, compact));
  dlb_free(t);
  CHECK(p.calls == 1);

  /* The legacy ABI always allows it. */
  make_tensor(&p, data, dt(kDLInt, 16), 2, shape, NULL);
  CHECK_OK(dlb_import_legacy(legacy_of(&p.v), &t));
  CHECK(strides_are(t, compact));
  {
    double want[6] = {1, 2, 3, 4, 5, 6};
    CHECK(values_are(t, want, 6));
  }
  dlb_free(t);
  CHECK(p.calls == 1);

  /* DLPack 1.2+ asks producers for explicit strides; NULL ones still read as
     compact row-major, as NumPy and PyTorch read them. */
  make_tensor(&p, data, dt(kDLInt, 16), 2, shape, NULL);
  CHECK(p.v.version.minor == 3);
  CHECK_OK(dlb_import_versioned(&p.v, &t));
  CHECK(strides_are(t, compact));
  CHECK(sum_is(t, 21));
  dlb_free(t);
  CHECK(p.calls == 1);
}

static void test_import_0d_and_empty(void) {
  begin("import_0d_and_empty");
  producer p;
  dlb_tensor *t = NULL;
  /* 0-d: no shape, no strides, one element. */
  double x = 4.5;
  CHECK_OK(dlb_import_versioned(make_tensor(&p, &x, F64, 0, NULL, NULL), &t));
  DLTensor d;
  CHECK_OK(dlb_describe(t, &d));
  CHECK(d.ndim == 0 && d.data == (void *)&x);
  double v = 0;
  CHECK_OK(dlb_item_f64(t, &v));
  CHECK(v == 4.5);
  CHECK_OK(dlb_binary_scalar_f64_(t, 1.0, DLB_SUB));
  CHECK(x == 3.5);
  DLManagedTensorVersioned *e = NULL;
  CHECK_OK(dlb_export(t, &e));
  CHECK(e->dl_tensor.ndim == 0 && e->dl_tensor.data == (void *)&x);
  dlb_free(t);
  CHECK(p.calls == 0);
  e->deleter(e);
  CHECK(p.calls == 1);

  /* Legacy 0-d. */
  CHECK_OK(dlb_import_legacy(legacy_of(make_tensor(&p, &x, F64, 0, NULL, NULL)), &t));
  CHECK(item(t) == 3.5);
  dlb_free(t);
  CHECK(p.calls == 1);

  /* Zero-size, with and without a data pointer. */
  int64_t shape[2] = {0, 3}, strides[2] = {3, 1};
  float f[1] = {0};
  void *datas[2] = {f, NULL};
  for (int i = 0; i < 2; i++) {
    CHECK_OK(dlb_import_versioned(make_tensor(&p, datas[i], F32, 2, shape, strides), &t));
    CHECK(shape_is(t, 2, shape));
    CHECK(sum_is(t, 0));
    CHECK_ERR(dlb_item_f64(t, &v), DLB_ERR_INVALID_OPERATION);
    CHECK_OK(dlb_fill_f64_(t, 1.0)); /* nothing to write */
    dlb_tensor *c = NULL;
    CHECK_OK(dlb_clone(t, &c));
    CHECK(shape_is(c, 2, shape));
    CHECK_OK(dlb_export(t, &e));
    CHECK(e->dl_tensor.ndim == 2 && e->dl_tensor.shape[0] == 0 && e->dl_tensor.shape[1] == 3);
    dlb_free(c);
    dlb_free(t);
    CHECK(p.calls == 0);
    e->deleter(e);
    CHECK(p.calls == 1);
  }
  CHECK(f[0] == 0);
  CHECK(g_deleter_calls == 4);
}

static void test_import_read_only(void) {
  begin("import_read_only");
  int64_t data[4] = {1, 2, 3, 4};
  int64_t shape[1] = {4}, strides[1] = {1};
  producer p;
  dlb_tensor *t = NULL, *other = NULL, *out = NULL;
  make_tensor(&p, data, I64, 1, shape, strides)->flags = DLPACK_FLAG_BITMASK_READ_ONLY;
  CHECK_OK(dlb_import_versioned(&p.v, &t));
  CHECK(dlb_is_read_only(t));
  CHECK_OK(dlb_zeros(1, shape, I64, CPU, &other));
  CHECK(!dlb_is_read_only(other));

  /* Every write is refused and leaves the data alone. */
  CHECK_ERR(dlb_binary_scalar_i64_(t, 2, DLB_MUL), DLB_ERR_INVALID_OPERATION);
  CHECK_MSG("read-only");
  CHECK_ERR(dlb_binary_scalar_f64_(t, 2.0, DLB_MUL), DLB_ERR_INVALID_OPERATION);
  CHECK_ERR(dlb_binary_(t, other, DLB_ADD), DLB_ERR_INVALID_OPERATION);
  CHECK_ERR(dlb_fill_i64_(t, 0), DLB_ERR_INVALID_OPERATION);
  CHECK_ERR(dlb_fill_f64_(t, 0.0), DLB_ERR_INVALID_OPERATION);
  CHECK_ERR(dlb_copy_(t, other), DLB_ERR_INVALID_OPERATION);
  CHECK(data[0] == 1 && data[1] == 2 && data[2] == 3 && data[3] == 4);

  /* Reading it is fine, and results are writable new tensors. */
  CHECK_OK(dlb_binary(t, t, DLB_ADD, &out));
  CHECK(!dlb_is_read_only(out));
  {
    double want[4] = {2, 4, 6, 8};
    CHECK(values_are(out, want, 4));
  }
  CHECK_OK(dlb_copy_(other, t)); /* as a source */
  CHECK(sum_is(other, 10));
  dlb_tensor *c = NULL, *same = NULL;
  CHECK_OK(dlb_clone(t, &c));
  CHECK(!dlb_is_read_only(c));
  CHECK_OK(dlb_fill_i64_(c, 9));
  /* Views of the same memory stay read-only. */
  CHECK_OK(dlb_to_device(t, CPU, &same));
  CHECK(dlb_is_read_only(same));
  dlb_free(same);

  /* The export says READ_ONLY. */
  DLManagedTensorVersioned *e = NULL;
  CHECK_OK(dlb_export(t, &e));
  CHECK((e->flags & DLPACK_FLAG_BITMASK_READ_ONLY) != 0);
  e->deleter(e);
  dlb_free(c);
  dlb_free(out);
  dlb_free(other);
  dlb_free(t);
  CHECK(p.calls == 1);

  /* Other flags do not make it read-only. */
  make_tensor(&p, data, I64, 1, shape, strides)->flags = DLPACK_FLAG_BITMASK_IS_COPIED;
  CHECK_OK(dlb_import_versioned(&p.v, &t));
  CHECK(!dlb_is_read_only(t));
  CHECK_OK(dlb_fill_i64_(t, 5));
  CHECK(data[0] == 5 && data[3] == 5);
  dlb_free(t);
  CHECK(p.calls == 1);
}

/* ------------------------------------------------------------------------ */
/* dlb_import_versioned / dlb_import_legacy: failures                       */
/* ------------------------------------------------------------------------ */

/* Imports p (versioned or legacy) and checks the documented failure: the
 * status, a message, the deleter run exactly once before the return, and
 * `out` left alone. */
static void expect_import_failure(producer *p, int legacy, int want, const char *what, int line) {
  dlb_tensor *out = SENTINEL;
  int before = g_deleter_calls;
  int got = (int)(legacy ? dlb_import_legacy(legacy_of(&p->v), &out) : dlb_import_versioned(&p->v, &out));
  char expr[160];
  snprintf(expr, sizeof expr, "%s import: %s", legacy ? "legacy" : "versioned", what);
  check_status(got, want, expr, __FILE__, line);
  check_true(p->calls == 1, "deleter called exactly once", __FILE__, line);
  check_true(g_deleter_calls == before + 1, "no other deleter called", __FILE__, line);
  check_true(out == SENTINEL, "out left unchanged", __FILE__, line);
  if (got == DLB_OK && out != SENTINEL) dlb_free(out); /* a bug: do not leak */
}

static void test_import_errors(void) {
  begin("import_errors");
  float data[6] = {0, 1, 2, 3, 4, 5};
  int64_t shape[2] = {2, 3}, strides[2] = {3, 1};
  producer p;
  dlb_tensor *out = SENTINEL;

  /* NULL managed: nothing to release. */
  CHECK_ERR(dlb_import_versioned(NULL, &out), DLB_ERR_NULL_POINTER);
  CHECK_MSG("managed is NULL");
  CHECK_ERR(dlb_import_legacy(NULL, &out), DLB_ERR_NULL_POINTER);
  CHECK_ERR(dlb_import_versioned(NULL, NULL), DLB_ERR_NULL_POINTER);
  CHECK_ERR(dlb_import_legacy(NULL, NULL), DLB_ERR_NULL_POINTER);
  CHECK(out == SENTINEL);
  CHECK(g_deleter_calls == 0);

  /* NULL out: the tensor is dlbridge's anyway, so it is released. */
  make_tensor(&p, data, F32, 2, shape, strides);
  CHECK_ERR(dlb_import_versioned(&p.v, NULL), DLB_ERR_NULL_POINTER);
  CHECK_MSG("out is NULL");
  CHECK(p.calls == 1);
  make_tensor(&p, data, F32, 2, shape, strides);
  CHECK_ERR(dlb_import_legacy(legacy_of(&p.v), NULL), DLB_ERR_NULL_POINTER);
  CHECK(p.calls == 1);
  /* ... even when the version is wrong too. */
  make_tensor(&p, data, F32, 2, shape, strides)->version.major = 2;
  CHECK_ERR(dlb_import_versioned(&p.v, NULL), DLB_ERR_UNSUPPORTED_VERSION);
  CHECK(p.calls == 1);

  /* Major versions other than 1. */
  make_tensor(&p, data, F32, 2, shape, strides)->version.major = 2;
  expect_import_failure(&p, 0, DLB_ERR_UNSUPPORTED_VERSION, "major version 2", __LINE__);
  make_tensor(&p, data, F32, 2, shape, strides)->version.major = 0;
  expect_import_failure(&p, 0, DLB_ERR_UNSUPPORTED_VERSION, "major version 0", __LINE__);
  /* A newer minor version is compatible. */
  make_tensor(&p, data, F32, 2, shape, strides)->version.minor = 99;
  CHECK_OK(dlb_import_versioned(&p.v, &out));
  dlb_free(out);
  out = SENTINEL;
  CHECK(p.calls == 1);

  for (int legacy = 0; legacy < 2; legacy++) {
    DLManagedTensorVersioned *m;

    m = make_tensor(&p, data, F32, 2, shape, strides);
    m->dl_tensor.ndim = -1;
    expect_import_failure(&p, legacy, DLB_ERR_INVALID_TENSOR, "negative ndim", __LINE__);

    m = make_tensor(&p, data, F32, 2, shape, strides);
    m->dl_tensor.shape = NULL;
    expect_import_failure(&p, legacy, DLB_ERR_INVALID_TENSOR, "NULL shape with ndim 2", __LINE__);

    m = make_tensor(&p, data, F32, 2, shape, strides);
    m->dl_tensor.byte_offset = 2; /* float32: a multiple of 4 is required */
    expect_import_failure(&p, legacy, DLB_ERR_INVALID_TENSOR, "byte_offset 2 for float32", __LINE__);
    CHECK_MSG("byte_offset");

    m = make_tensor(&p, data, F32, 2, shape, strides);
    m->dl_tensor.byte_offset = 6;
    expect_import_failure(&p, legacy, DLB_ERR_INVALID_TENSOR, "byte_offset 6 for float32", __LINE__);

    {
      int64_t big[2] = {2, INT64_MAX / 2}; /* stride * itemsize overflows */
      make_tensor(&p, data, F32, 2, shape, big);
      expect_import_failure(&p, legacy, DLB_ERR_INVALID_TENSOR, "stride overflowing in bytes", __LINE__);
    }
    {
      int64_t four[2] = {4, 1}, st[2] = {INT64_MAX / 8, 1}; /* 3 * stride * 4 bytes overflows */
      make_tensor(&p, data, F32, 2, four, st);
      expect_import_failure(&p, legacy, DLB_ERR_INVALID_TENSOR, "byte extent overflowing int64", __LINE__);
      int64_t neg_st[2] = {-(INT64_MAX / 8), 1}; /* the same, downwards */
      make_tensor(&p, data, F32, 2, four, neg_st);
      expect_import_failure(&p, legacy, DLB_ERR_INVALID_TENSOR, "negative extent overflowing", __LINE__);
    }
    {
      int64_t huge[2] = {(int64_t)1 << 32, (int64_t)1 << 31}, st[2] = {(int64_t)1 << 31, 1};
      make_tensor(&p, data, F32, 2, huge, st); /* 2^63 elements: the byte count overflows */
      expect_import_failure(&p, legacy, DLB_ERR_INVALID_TENSOR, "byte count overflowing", __LINE__);
    }
    {
      int64_t huge[2] = {(int64_t)1 << 40, (int64_t)1 << 40};
      make_tensor(&p, data, F32, 2, huge, NULL)->version.minor = 0; /* element count overflows */
      expect_import_failure(&p, legacy, DLB_ERR_INVALID_TENSOR, "element count overflowing", __LINE__);
      int64_t zero_st[2] = {0, 0}; /* a tiny extent, but 2^80 elements: refused all the same */
      make_tensor(&p, data, F32, 2, huge, zero_st);
      expect_import_failure(&p, legacy, DLB_ERR_INVALID_TENSOR, "element count overflowing, zero strides", __LINE__);
      CHECK_MSG("numel: integer multiplication overflow");
    }
    {
      int64_t neg[2] = {2, -3};
      make_tensor(&p, data, F32, 2, neg, strides);
      expect_import_failure(&p, legacy, DLB_ERR_INVALID_TENSOR, "negative size", __LINE__);
      int64_t negz[2] = {0, -3};
      make_tensor(&p, data, F32, 2, negz, strides);
      expect_import_failure(&p, legacy, DLB_ERR_INVALID_TENSOR, "negative size in a zero-size shape", __LINE__);
    }
    {
      int64_t ones[MAX_DIMS], st[MAX_DIMS];
      for (int i = 0; i < MAX_DIMS; i++) ones[i] = st[i] = 1;
      make_tensor(&p, data, F32, 65, ones, st);
      expect_import_failure(&p, legacy, DLB_ERR_INVALID_TENSOR, "ndim 65", __LINE__);
      make_tensor(&p, data, F32, 64, ones, st); /* the limit itself is fine */
      CHECK_OK(legacy ? dlb_import_legacy(legacy_of(&p.v), &out) : dlb_import_versioned(&p.v, &out));
      CHECK(sum_is(out, 0));
      dlb_free(out);
      out = SENTINEL;
      CHECK(p.calls == 1);
    }

    make_tensor(&p, data, dt(9, 32), 2, shape, strides); /* no such code */
    expect_import_failure(&p, legacy, DLB_ERR_UNSUPPORTED_DTYPE, "dtype code 9", __LINE__);
    CHECK_MSG("unsupported DLPack dtype");
    make_tensor(&p, data, dt(kDLOpaqueHandle, 64), 2, shape, strides);
    expect_import_failure(&p, legacy, DLB_ERR_UNSUPPORTED_DTYPE, "opaque handle dtype", __LINE__);
    make_tensor(&p, data, dt(kDLFloat, 24), 2, shape, strides);
    expect_import_failure(&p, legacy, DLB_ERR_UNSUPPORTED_DTYPE, "float24", __LINE__);
    make_tensor(&p, data, dt(kDLInt, 4), 2, shape, strides);
    expect_import_failure(&p, legacy, DLB_ERR_UNSUPPORTED_DTYPE, "int4", __LINE__);
    make_tensor(&p, data, dt(kDLBool, 1), 2, shape, strides);
    expect_import_failure(&p, legacy, DLB_ERR_UNSUPPORTED_DTYPE, "1-bit bool", __LINE__);
    make_tensor(&p, data, dt3(kDLFloat, 32, 4), 2, shape, strides);
    expect_import_failure(&p, legacy, DLB_ERR_UNSUPPORTED_DTYPE, "4 lanes", __LINE__);
    {
      /* bits 0 and lanes 0 are malformed (the status may be either). */
      make_tensor(&p, data, dt(kDLFloat, 0), 2, shape, strides);
      dlb_tensor *o = SENTINEL;
      int s = (int)(legacy ? dlb_import_legacy(legacy_of(&p.v), &o) : dlb_import_versioned(&p.v, &o));
      CHECK(s == DLB_ERR_INVALID_TENSOR || s == DLB_ERR_UNSUPPORTED_DTYPE);
      CHECK(p.calls == 1 && o == SENTINEL);
      make_tensor(&p, data, dt3(kDLFloat, 32, 0), 2, shape, strides);
      s = (int)(legacy ? dlb_import_legacy(legacy_of(&p.v), &o) : dlb_import_versioned(&p.v, &o));
      CHECK(s == DLB_ERR_INVALID_TENSOR || s == DLB_ERR_UNSUPPORTED_DTYPE);
      CHECK(p.calls == 1 && o == SENTINEL);
    }

    make_tensor(&p, data, F32, 2, shape, strides)->dl_tensor.device = dev(99, 0);
    expect_import_failure(&p, legacy, DLB_ERR_UNSUPPORTED_DEVICE, "device type 99", __LINE__);
    CHECK_MSG("unsupported DLPack device");
    make_tensor(&p, data, F32, 2, shape, strides)->dl_tensor.device = dev(kDLOpenCL, 0);
    expect_import_failure(&p, legacy, DLB_ERR_UNSUPPORTED_DEVICE, "OpenCL device", __LINE__);
    make_tensor(&p, data, F32, 2, shape, strides)->dl_tensor.device = dev(kDLCUDA, -1);
    expect_import_failure(&p, legacy, DLB_ERR_UNSUPPORTED_DEVICE, "CUDA device id -1", __LINE__);

    /* NULL data with elements: see test_null_data_and_extreme_extents. */
  }
  /* Pinned host memory is host memory. */
  make_tensor(&p, data, F32, 2, shape, strides)->dl_tensor.device = dev(kDLCUDAHost, 0);
  CHECK_OK(dlb_import_versioned(&p.v, &out));
  {
    DLTensor d;
    CHECK_OK(dlb_describe(out, &d));
    CHECK(d.device.device_type == kDLCPU && d.data == (void *)data);
  }
  dlb_free(out);
  CHECK(p.calls == 1);
}

/* ------------------------------------------------------------------------ */
/* dlb_export                                                               */
/* ------------------------------------------------------------------------ */

static void test_export(void) {
  begin("export");
  int64_t shape[2] = {2, 3};
  dlb_tensor *t = NULL;
  CHECK_OK(dlb_zeros(2, shape, I64, CPU, &t));
  int64_t *src = (int64_t *)data_of(t);
  for (int i = 0; i < 6; i++) src[i] = 10 * i;

  DLManagedTensorVersioned *e = NULL;
  CHECK_OK(dlb_export(t, &e));
  CHECK(e != NULL);
  CHECK(e->version.major == 1 && e->version.minor == 3);
  CHECK(e->flags == 0);
  CHECK(e->deleter != NULL);
  CHECK(e->dl_tensor.data == (void *)src && e->dl_tensor.byte_offset == 0);
  CHECK(e->dl_tensor.device.device_type == kDLCPU && e->dl_tensor.device.device_id == 0);
  CHECK(e->dl_tensor.ndim == 2 && same_dtype(e->dl_tensor.dtype, I64));
  CHECK(e->dl_tensor.shape != NULL && e->dl_tensor.strides != NULL);
  CHECK(e->dl_tensor.shape[0] == 2 && e->dl_tensor.shape[1] == 3);
  CHECK(e->dl_tensor.strides[0] == 3 && e->dl_tensor.strides[1] == 1);
  /* A second export is independent. */
  DLManagedTensorVersioned *e2 = NULL;
  CHECK_OK(dlb_export(t, &e2));
  CHECK(e2 != e && e2->dl_tensor.data == e->dl_tensor.data);

  /* The memory outlives the handle. */
  dlb_free(t);
  const int64_t *v = (const int64_t *)e->dl_tensor.data;
  for (int i = 0; i < 6; i++) CHECK(v[i] == 10 * i);
  e2->deleter(e2);
  for (int i = 0; i < 6; i++) CHECK(v[i] == 10 * i);
  CHECK(e->dl_tensor.shape[1] == 3);
  e->deleter(e); /* exactly once, by us */

  /* An export is importable again (even by dlbridge): the same memory. */
  CHECK_OK(dlb_zeros(2, shape, F32, CPU, &t));
  CHECK_OK(dlb_fill_f64_(t, 1.5));
  CHECK_OK(dlb_export(t, &e));
  dlb_tensor *back = NULL;
  CHECK_OK(dlb_import_versioned(e, &back)); /* back owns e now */
  CHECK(data_of(back) == data_of(t));
  dlb_free(t);
  CHECK(sum_is(back, 9.0));
  dlb_free(back); /* runs e's deleter */

  /* 0-d and zero-size exports. */
  CHECK_OK(dlb_zeros(0, NULL, F64, CPU, &t));
  CHECK_OK(dlb_fill_f64_(t, 2.5));
  CHECK_OK(dlb_export(t, &e));
  CHECK(e->dl_tensor.ndim == 0 && *(double *)e->dl_tensor.data == 2.5);
  dlb_free(t);
  CHECK(*(double *)e->dl_tensor.data == 2.5);
  e->deleter(e);
  int64_t empty[2] = {3, 0};
  CHECK_OK(dlb_empty(2, empty, F32, CPU, &t));
  CHECK_OK(dlb_export(t, &e));
  CHECK(e->dl_tensor.ndim == 2 && e->dl_tensor.shape[0] == 3 && e->dl_tensor.shape[1] == 0);
  e->deleter(e);
  dlb_free(t);

  /* An export of a host buffer keeps the buffer until its deleter runs. */
  host_buffer h = new_floats(4, 1.0f);
  int64_t n4[1] = {4};
  CHECK_OK(dlb_from_host_buffer(h.data, 1, n4, NULL, F32, host_free, &h, &t));
  CHECK_OK(dlb_export(t, &e));
  dlb_free(t);
  CHECK(h.calls == 0);
  CHECK(((float *)e->dl_tensor.data)[3] == 4.0f);
  e->deleter(e);
  CHECK(h.calls == 1 && h.data == NULL);
}

/* ------------------------------------------------------------------------ */
/* dlb_export_legacy                                                        */
/* ------------------------------------------------------------------------ */

static void test_export_legacy(void) {
  begin("export_legacy");
  int64_t shape[2] = {2, 3};
  dlb_tensor *t = NULL;
  CHECK_OK(dlb_zeros(2, shape, I64, CPU, &t));
  int64_t *src = (int64_t *)data_of(t);
  for (int i = 0; i < 6; i++) src[i] = 10 * i;

  DLManagedTensor *e = NULL, *e2 = NULL;
  CHECK_OK(dlb_export_legacy(t, &e));
  CHECK(e != NULL && e->deleter != NULL);
  CHECK(e->dl_tensor.data == (void *)src && e->dl_tensor.byte_offset == 0);
  CHECK(e->dl_tensor.device.device_type == kDLCPU && e->dl_tensor.device.device_id == 0);
  CHECK(e->dl_tensor.ndim == 2 && same_dtype(e->dl_tensor.dtype, I64));
  CHECK(e->dl_tensor.shape != NULL && e->dl_tensor.strides != NULL);
  CHECK(e->dl_tensor.shape[0] == 2 && e->dl_tensor.shape[1] == 3);
  CHECK(e->dl_tensor.strides[0] == 3 && e->dl_tensor.strides[1] == 1);
  /* A second export is independent, and the memory outlives the handle. */
  CHECK_OK(dlb_export_legacy(t, &e2));
  CHECK(e2 != e && e2->dl_tensor.data == e->dl_tensor.data);
  dlb_free(t);
  e2->deleter(e2);
  for (int i = 0; i < 6; i++) CHECK(((const int64_t *)e->dl_tensor.data)[i] == 10 * i);
  CHECK(e->dl_tensor.shape[1] == 3);
  e->deleter(e); /* exactly once, by us */

  /* A legacy export is importable again (the same memory, writable). */
  CHECK_OK(dlb_zeros(2, shape, F32, CPU, &t));
  CHECK_OK(dlb_fill_f64_(t, 1.5));
  CHECK_OK(dlb_export_legacy(t, &e));
  dlb_tensor *back = NULL;
  CHECK_OK(dlb_import_legacy(e, &back)); /* back owns e now */
  CHECK(data_of(back) == data_of(t) && !dlb_is_read_only(back));
  dlb_free(t);
  CHECK_OK(dlb_fill_f64_(back, 2.0));
  CHECK(sum_is(back, 12.0));
  dlb_free(back); /* runs e's deleter */

  /* 0-d: no shape or strides to point to. */
  CHECK_OK(dlb_zeros(0, NULL, F64, CPU, &t));
  CHECK_OK(dlb_fill_f64_(t, 2.5));
  CHECK_OK(dlb_export_legacy(t, &e));
  CHECK(e->dl_tensor.ndim == 0 && *(double *)e->dl_tensor.data == 2.5);
  dlb_free(t);
  e->deleter(e);

  /* An export of a host buffer keeps the buffer until its deleter runs. */
  host_buffer h = new_floats(4, 1.0f);
  int64_t n4[1] = {4};
  CHECK_OK(dlb_from_host_buffer(h.data, 1, n4, NULL, F32, host_free, &h, &t));
  CHECK_OK(dlb_export_legacy(t, &e));
  dlb_free(t);
  CHECK(h.calls == 0);
  CHECK(((float *)e->dl_tensor.data)[3] == 4.0f);
  e->deleter(e);
  CHECK(h.calls == 1 && h.data == NULL);

  /* A read-only tensor is refused (the legacy struct cannot say read-only),
   * as NumPy refuses it; dlb_export and a clone are the ways out. */
  int64_t data[4] = {1, 2, 3, 4};
  int64_t s4[1] = {4}, st[1] = {1};
  producer p;
  make_tensor(&p, data, I64, 1, s4, st)->flags = DLPACK_FLAG_BITMASK_READ_ONLY;
  CHECK_OK(dlb_import_versioned(&p.v, &t));
  e = (DLManagedTensor *)(uintptr_t)0x5e57;
  CHECK_ERR(dlb_export_legacy(t, &e), DLB_ERR_INVALID_TENSOR);
  CHECK_MSG("read-only");
  CHECK_MSG("dlb_export");
  CHECK(e == (DLManagedTensor *)(uintptr_t)0x5e57); /* out left alone */
  DLManagedTensorVersioned *v = NULL;
  CHECK_OK(dlb_export(t, &v));
  CHECK((v->flags & DLPACK_FLAG_BITMASK_READ_ONLY) != 0);
  v->deleter(v);
  dlb_tensor *c = NULL;
  CHECK_OK(dlb_clone(t, &c));
  CHECK_OK(dlb_export_legacy(c, &e));
  CHECK(e->dl_tensor.data != (void *)data && ((int64_t *)e->dl_tensor.data)[3] == 4);
  e->deleter(e);
  dlb_free(c);
  dlb_free(t);
  CHECK(p.calls == 1 && g_deleter_calls == 1);
  CHECK(data[0] == 1 && data[3] == 4);

  /* A CUDA tensor exports with its device. */
  CHECK_OK(dlb_zeros(1, n4, F32, CPU, &t));
  dlb_tensor *g = SENTINEL;
  if (CHECK_CUDA(dlb_to_device(t, CUDA0, &g))) {
    CHECK_OK(dlb_export_legacy(g, &e));
    CHECK(e->dl_tensor.device.device_type == kDLCUDA && e->dl_tensor.data == data_of(g));
    dlb_free(g);
    e->deleter(e);
  } else {
    CHECK(g == SENTINEL);
  }
  dlb_free(t);

  CHECK_ERR(dlb_export_legacy(NULL, &e), DLB_ERR_NULL_POINTER);
  CHECK_MSG("tensor is NULL");
}

/* ------------------------------------------------------------------------ */
/* dlb_empty, dlb_zeros                                                     */
/* ------------------------------------------------------------------------ */

static void test_empty_and_zeros(void) {
  begin("empty_and_zeros");
  static const int all[][3] = {
      /* code, bits, itemsize */
      {kDLBool, 8, 1},     {kDLUInt, 8, 1},    {kDLInt, 8, 1},     {kDLInt, 16, 2},   {kDLInt, 32, 4},
      {kDLInt, 64, 8},     {kDLUInt, 16, 2},   {kDLUInt, 32, 4},   {kDLUInt, 64, 8},  {kDLFloat, 16, 2},
      {kDLBfloat, 16, 2},  {kDLFloat, 32, 4},  {kDLFloat, 64, 8},  {kDLComplex, 64, 8}, {kDLComplex, 128, 16},
  };
  int64_t shape[3] = {2, 3, 4}, strides[3] = {12, 4, 1};
  for (int i = 0; i < 15; i++) {
    DLDataType want = dt(all[i][0], all[i][1]);
    for (int zeroed = 0; zeroed < 2; zeroed++) {
      dlb_tensor *t = SENTINEL;
      if (zeroed)
        CHECK_OK(dlb_zeros(3, shape, want, CPU, &t));
      else
        CHECK_OK(dlb_empty(3, shape, want, CPU, &t));
      if (t == SENTINEL) continue;
      DLTensor d;
      CHECK_OK(dlb_describe(t, &d));
      CHECK(same_dtype(d.dtype, want));
      CHECK(d.ndim == 3 && d.device.device_type == kDLCPU && d.data != NULL);
      CHECK(shape_is(t, 3, shape) && strides_are(t, strides));
      CHECK(!dlb_is_read_only(t));
      if (zeroed) {
        const unsigned char *b = (const unsigned char *)d.data;
        int nonzero = 0;
        for (int k = 0; k < 24 * all[i][2]; k++) nonzero |= b[k];
        CHECK(nonzero == 0);
        if (all[i][0] != kDLComplex) CHECK(sum_is(t, 0));
      } else {
        /* Writable to the last byte. */
        memset(d.data, 0, (size_t)(24 * all[i][2]));
      }
      dlb_free(t);
    }
  }

  dlb_tensor *t = NULL;
  /* float16, bfloat16, bool and complex64 hold what is written. */
  int64_t n2[1] = {2};
  CHECK_OK(dlb_zeros(1, n2, F16, CPU, &t));
  CHECK_OK(dlb_fill_f64_(t, 1.5));
  CHECK(((uint16_t *)data_of(t))[1] == 0x3E00); /* 1.5 in IEEE half */
  CHECK(sum_is(t, 3.0));
  dlb_free(t);
  CHECK_OK(dlb_zeros(1, n2, BF16, CPU, &t));
  CHECK_OK(dlb_fill_f64_(t, 1.5));
  CHECK(((uint16_t *)data_of(t))[0] == 0x3FC0); /* 1.5 in bfloat16 */
  dlb_free(t);
  CHECK_OK(dlb_zeros(1, n2, BOOL, CPU, &t));
  CHECK_OK(dlb_fill_i64_(t, 1));
  CHECK(((uint8_t *)data_of(t))[1] == 1);
  dlb_free(t);
  CHECK_OK(dlb_zeros(1, n2, C64, CPU, &t));
  CHECK_OK(dlb_fill_f64_(t, 2.0));
  CHECK(((float *)data_of(t))[0] == 2.0f && ((float *)data_of(t))[1] == 0.0f);
  dlb_free(t);

  /* 0-d (shape may be NULL), zero-size, the 64-dimension limit, pinned host. */
  CHECK_OK(dlb_zeros(0, NULL, F64, CPU, &t));
  CHECK(item(t) == 0.0);
  dlb_free(t);
  int64_t z[2] = {0, 5};
  CHECK_OK(dlb_empty(2, z, F32, CPU, &t));
  CHECK(shape_is(t, 2, z));
  dlb_free(t);
  int64_t ones[65];
  for (int i = 0; i < 65; i++) ones[i] = 1;
  CHECK_OK(dlb_zeros(64, ones, I8, CPU, &t));
  dlb_free(t);
  CHECK_OK(dlb_zeros(1, n2, F32, dev(kDLCUDAHost, 0), &t));
  {
    DLTensor d;
    CHECK_OK(dlb_describe(t, &d));
    CHECK(d.device.device_type == kDLCPU);
  }
  dlb_free(t);

  /* Errors, for both functions; out is never written. */
  for (int zeroed = 0; zeroed < 2; zeroed++) {
    dlb_status (*make)(int32_t, const int64_t *, DLDataType, DLDevice, dlb_tensor **) =
        zeroed ? dlb_zeros : dlb_empty;
    dlb_tensor *out = SENTINEL;
    CHECK_ERR(make(-1, shape, F32, CPU, &out), DLB_ERR_INVALID_ARGUMENT);
    CHECK_MSG("ndim");
    CHECK_ERR(make(65, ones, F32, CPU, &out), DLB_ERR_INVALID_ARGUMENT);
    CHECK_ERR(make(INT32_MIN, shape, F32, CPU, &out), DLB_ERR_INVALID_ARGUMENT);
    CHECK_ERR(make(2, NULL, F32, CPU, &out), DLB_ERR_NULL_POINTER);
    CHECK_MSG("shape is NULL");
    CHECK_ERR(make(2, shape, F32, CPU, NULL), DLB_ERR_NULL_POINTER);
    CHECK_MSG("out is NULL");
    {
      int64_t neg[2] = {3, -1};
      CHECK_ERR(make(2, neg, F32, CPU, &out), DLB_ERR_INVALID_ARGUMENT);
      CHECK_MSG("negative size");
      int64_t negz[2] = {0, -1};
      CHECK_ERR(make(2, negz, F32, CPU, &out), DLB_ERR_INVALID_ARGUMENT);
    }
    {
      int64_t big[2] = {(int64_t)1 << 40, (int64_t)1 << 40};
      CHECK_ERR(make(2, big, F32, CPU, &out), DLB_ERR_INVALID_ARGUMENT);
      int64_t big3[3] = {INT64_MAX, INT64_MAX, 0}; /* zero elements, but the product overflows first */
      CHECK_ERR(make(3, big3, F32, CPU, &out), DLB_ERR_INVALID_ARGUMENT);
      int64_t past_int64[2] = {(int64_t)1 << 62, 2}; /* 2^63 elements: past int64, as PyTorch counts */
      CHECK_ERR(make(2, past_int64, dt(kDLUInt, 8), CPU, &out), DLB_ERR_INVALID_ARGUMENT);
    }
    CHECK_ERR(make(1, n2, dt(kDLFloat, 8), CPU, &out), DLB_ERR_UNSUPPORTED_DTYPE);
    CHECK_MSG("unsupported DLPack dtype");
    CHECK_ERR(make(1, n2, dt(kDLOpaqueHandle, 64), CPU, &out), DLB_ERR_UNSUPPORTED_DTYPE);
    CHECK_ERR(make(1, n2, dt(42, 32), CPU, &out), DLB_ERR_UNSUPPORTED_DTYPE);
    CHECK_ERR(make(1, n2, dt3(kDLFloat, 32, 2), CPU, &out), DLB_ERR_UNSUPPORTED_DTYPE);
    CHECK_ERR(make(1, n2, dt(kDLBool, 1), CPU, &out), DLB_ERR_UNSUPPORTED_DTYPE);
    CHECK_ERR(make(1, n2, F32, dev(99, 0), &out), DLB_ERR_UNSUPPORTED_DEVICE);
    CHECK_MSG("unsupported DLPack device");
    CHECK_ERR(make(1, n2, F32, dev(kDLVulkan, 0), &out), DLB_ERR_UNSUPPORTED_DEVICE);
    CHECK_ERR(make(1, n2, F32, dev(kDLCUDA, -1), &out), DLB_ERR_UNSUPPORTED_DEVICE);
    if (CHECK_CUDA(make(1, n2, F32, CUDA0, &out))) {
      dlb_free(out);
      out = SENTINEL;
    }
    CHECK(out == SENTINEL);
  }
}

/* ------------------------------------------------------------------------ */
/* dlb_from_host_buffer                                                     */
/* ------------------------------------------------------------------------ */

static void test_from_host_buffer(void) {
  begin("from_host_buffer");
  int64_t shape[2] = {2, 3};
  dlb_tensor *t = NULL;

  /* The callback runs when the handle goes, once. */
  host_buffer h = new_floats(6, 0.0f);
  void *raw = h.data;
  CHECK_OK(dlb_from_host_buffer(h.data, 2, shape, NULL, F32, host_free, &h, &t));
  CHECK(h.calls == 0);
  CHECK(data_of(t) == raw); /* zero-copy */
  CHECK(!dlb_is_read_only(t));
  {
    int64_t compact[2] = {3, 1};
    CHECK(strides_are(t, compact));
    double want[6] = {0, 1, 2, 3, 4, 5};
    CHECK(values_are(t, want, 6));
  }
  CHECK_OK(dlb_binary_scalar_i64_(t, 2, DLB_MUL));
  CHECK(((float *)raw)[5] == 10.0f); /* edits land in the caller's memory */
  dlb_free(t);
  CHECK(h.calls == 1 && h.data == NULL);

  /* ... or when the last export goes, even after the handle. */
  h = new_floats(6, 1.0f);
  CHECK_OK(dlb_from_host_buffer(h.data, 2, shape, NULL, F32, host_free, &h, &t));
  DLManagedTensorVersioned *e1 = NULL, *e2 = NULL;
  CHECK_OK(dlb_export(t, &e1));
  CHECK_OK(dlb_export(t, &e2));
  dlb_free(t);
  CHECK(h.calls == 0);
  e1->deleter(e1);
  CHECK(h.calls == 0);
  CHECK(((float *)e2->dl_tensor.data)[0] == 1.0f);
  e2->deleter(e2);
  CHECK(h.calls == 1);

  /* ... or when a handle sharing the memory goes. */
  h = new_floats(6, 1.0f);
  dlb_tensor *same = NULL;
  CHECK_OK(dlb_from_host_buffer(h.data, 2, shape, NULL, F32, host_free, &h, &t));
  CHECK_OK(dlb_to_device(t, CPU, &same));
  dlb_free(t);
  CHECK(h.calls == 0);
  CHECK(sum_is(same, 21));
  dlb_free(same);
  CHECK(h.calls == 1);

  /* A NULL free_fn: the caller keeps the memory. */
  double stack[6] = {1, 2, 3, 4, 5, 6};
  CHECK_OK(dlb_from_host_buffer(stack, 2, shape, NULL, F64, NULL, NULL, &t));
  CHECK(data_of(t) == (void *)stack);
  CHECK_OK(dlb_fill_f64_(t, 0.25));
  CHECK(stack[0] == 0.25 && stack[5] == 0.25);
  dlb_free(t);

  /* Element strides: the transpose of a 2x3 buffer. */
  h = new_floats(6, 0.0f);
  {
    int64_t tshape[2] = {3, 2}, tstrides[2] = {1, 3};
    CHECK_OK(dlb_from_host_buffer(h.data, 2, tshape, tstrides, F32, host_free, &h, &t));
    CHECK(strides_are(t, tstrides));
    CHECK(data_of(t) == h.data);
    double want[6] = {0, 3, 1, 4, 2, 5};
    CHECK(values_are(t, want, 6));
    dlb_free(t);
    CHECK(h.calls == 1);
  }
  /* Negative strides: data points at the first element in index order. */
  h = new_floats(4, 1.0f);
  {
    int64_t n4[1] = {4}, back[1] = {-1};
    float *last = (float *)h.data + 3;
    CHECK_OK(dlb_from_host_buffer(last, 1, n4, back, F32, host_free, &h, &t));
    CHECK(data_of(t) == (void *)last);
    double want[4] = {4, 3, 2, 1};
    CHECK(values_are(t, want, 4));
    dlb_free(t);
    CHECK(h.calls == 1);
  }
  /* 0-d, and zero-size with NULL data (free_fn still runs, once). */
  int64_t one_value = 42;
  CHECK_OK(dlb_from_host_buffer(&one_value, 0, NULL, NULL, I64, NULL, NULL, &t));
  CHECK(item(t) == 42.0);
  dlb_free(t);
  {
    host_buffer nothing;
    nothing.data = NULL;
    nothing.calls = 0;
    int64_t z[2] = {0, 3};
    CHECK_OK(dlb_from_host_buffer(NULL, 2, z, NULL, F32, host_free, &nothing, &t));
    CHECK(shape_is(t, 2, z));
    CHECK(sum_is(t, 0));
    dlb_free(t);
    CHECK(nothing.calls == 1);
  }
  CHECK(g_host_frees == 6);

  /* Failures take nothing: the callback is not called, out not written. */
  h = new_floats(6, 0.0f);
  dlb_tensor *out = SENTINEL;
  CHECK_ERR(dlb_from_host_buffer(NULL, 2, shape, NULL, F32, host_free, &h, &out), DLB_ERR_INVALID_TENSOR);
  CHECK_MSG("data is NULL");
  CHECK_ERR(dlb_from_host_buffer(NULL, 0, NULL, NULL, F32, host_free, &h, &out), DLB_ERR_INVALID_TENSOR);
  CHECK_ERR(dlb_from_host_buffer(h.data, 2, shape, NULL, F32, host_free, &h, NULL), DLB_ERR_NULL_POINTER);
  CHECK_ERR(dlb_from_host_buffer(h.data, 2, NULL, NULL, F32, host_free, &h, &out), DLB_ERR_NULL_POINTER);
  CHECK_ERR(dlb_from_host_buffer(h.data, -1, shape, NULL, F32, host_free, &h, &out), DLB_ERR_INVALID_ARGUMENT);
  CHECK_ERR(dlb_from_host_buffer(h.data, 65, shape, NULL, F32, host_free, &h, &out), DLB_ERR_INVALID_ARGUMENT);
  {
    int64_t neg[2] = {2, -3};
    CHECK_ERR(dlb_from_host_buffer(h.data, 2, neg, NULL, F32, host_free, &h, &out), DLB_ERR_INVALID_ARGUMENT);
    int64_t big[2] = {(int64_t)1 << 40, (int64_t)1 << 40};
    CHECK_ERR(dlb_from_host_buffer(h.data, 2, big, NULL, F32, host_free, &h, &out), DLB_ERR_INVALID_ARGUMENT);
  }
  CHECK_ERR(dlb_from_host_buffer(h.data, 2, shape, NULL, dt(kDLFloat, 8), host_free, &h, &out),
            DLB_ERR_UNSUPPORTED_DTYPE);
  CHECK_ERR(dlb_from_host_buffer(h.data, 2, shape, NULL, dt3(kDLInt, 32, 4), host_free, &h, &out),
            DLB_ERR_UNSUPPORTED_DTYPE);
  {
    int64_t n2[1] = {2}, huge[1] = {INT64_MAX / 2}; /* stride * 4 bytes overflows */
    CHECK_ERR(dlb_from_host_buffer(h.data, 1, n2, huge, F32, host_free, &h, &out), DLB_ERR_INVALID_TENSOR);
    CHECK_MSG("overflow");
    int64_t n5[1] = {5}, big[1] = {(int64_t)1 << 61}; /* 4 * 2^61 bytes of extent overflows */
    CHECK_ERR(dlb_from_host_buffer(h.data, 1, n5, big, dt(kDLUInt, 8), host_free, &h, &out),
              DLB_ERR_INVALID_TENSOR);
    /* The same extent downwards: see test_null_data_and_extreme_extents. */
  }
  CHECK(out == SENTINEL);
  CHECK(h.calls == 0 && g_host_frees == 6);
  free(h.data);
}

/* ------------------------------------------------------------------------ */
/* dlb_describe, dlb_is_read_only, dlb_to_device, dlb_clone, dlb_cast,      */
/* dlb_copy_                                                                */
/* ------------------------------------------------------------------------ */

/* A new float64 tensor of `shape` holding `values` (row-major). */
static dlb_tensor *f64_tensor(int32_t ndim, const int64_t *shape, const double *values) {
  dlb_tensor *t = NULL;
  if (dlb_empty(ndim, shape, F64, CPU, &t) != DLB_OK) return NULL;
  DLTensor d;
  dlb_describe(t, &d);
  memcpy(d.data, values, (size_t)numel_of(&d) * sizeof(double));
  return t;
}

/* `t` converted to `dtype` (or NULL). */
static dlb_tensor *as(dlb_tensor *t, DLDataType dtype) {
  dlb_tensor *r = NULL;
  if (dlb_cast(t, dtype, &r) != DLB_OK) r = NULL;
  dlb_free(t);
  return r;
}

static void test_describe(void) {
  begin("describe");
  int64_t shape[3] = {2, 3, 4};
  dlb_tensor *t = NULL;
  CHECK_OK(dlb_zeros(3, shape, I32, CPU, &t));
  DLTensor d, d2;
  memset(&d, 0xAB, sizeof d);
  CHECK_OK(dlb_describe(t, &d));
  CHECK(d.ndim == 3 && same_dtype(d.dtype, I32) && d.byte_offset == 0);
  CHECK(d.device.device_type == kDLCPU && d.device.device_id == 0);
  CHECK(d.shape[0] == 2 && d.shape[1] == 3 && d.shape[2] == 4);
  CHECK(d.strides[0] == 12 && d.strides[1] == 4 && d.strides[2] == 1);
  /* Stable: a second call describes the same arrays. */
  CHECK_OK(dlb_describe(t, &d2));
  CHECK(d2.shape == d.shape && d2.strides == d.strides && d2.data == d.data);
  DLTensor untouched;
  memset(&untouched, 0xCD, sizeof untouched);
  DLTensor copy = untouched;
  CHECK_ERR(dlb_describe(NULL, &copy), DLB_ERR_NULL_POINTER);
  CHECK(memcmp(&copy, &untouched, sizeof copy) == 0);
  CHECK_ERR(dlb_describe(t, NULL), DLB_ERR_NULL_POINTER);
  CHECK(!dlb_is_read_only(t));
  CHECK(!dlb_is_read_only(NULL));
  dlb_free(t);
  /* 0-d: NULL shape and strides. */
  CHECK_OK(dlb_zeros(0, NULL, F32, CPU, &t));
  CHECK_OK(dlb_describe(t, &d));
  CHECK(d.ndim == 0 && d.shape == NULL && d.strides == NULL && d.data != NULL);
  dlb_free(t);
  dlb_free(NULL); /* a no-op */
}

static void test_to_device(void) {
  begin("to_device");
  double values[4] = {1, 2, 3, 4};
  int64_t n4[1] = {4};
  dlb_tensor *t = f64_tensor(1, n4, values), *u = SENTINEL;
  /* CPU -> CPU: a new handle, the same memory. */
  CHECK_OK(dlb_to_device(t, CPU, &u));
  CHECK(u != SENTINEL && u != t);
  CHECK(data_of(u) == data_of(t));
  CHECK_OK(dlb_fill_f64_(u, 8.0));
  CHECK(sum_is(t, 32));
  dlb_free(t);
  CHECK(sum_is(u, 32)); /* the memory lives on */
  /* Pinned host memory is the CPU too. */
  dlb_tensor *w = NULL;
  CHECK_OK(dlb_to_device(u, dev(kDLCUDAHost, 0), &w));
  CHECK(data_of(w) == data_of(u));
  dlb_free(w);

  /* CPU -> CUDA. */
  w = SENTINEL;
  if (CHECK_CUDA(dlb_to_device(u, CUDA0, &w))) {
    DLTensor d;
    CHECK_OK(dlb_describe(w, &d));
    CHECK(d.device.device_type == kDLCUDA);
    dlb_tensor *back = NULL;
    CHECK_OK(dlb_to_device(w, CPU, &back));
    CHECK(sum_is(back, 32));
    dlb_free(back);
    dlb_free(w);
  } else {
    CHECK(w == SENTINEL);
  }
  w = SENTINEL;
  CHECK_ERR(dlb_to_device(u, dev(99, 0), &w), DLB_ERR_UNSUPPORTED_DEVICE);
  CHECK_MSG("unsupported DLPack device");
  CHECK_ERR(dlb_to_device(u, dev(kDLMetal, 0), &w), DLB_ERR_UNSUPPORTED_DEVICE);
  CHECK_ERR(dlb_to_device(u, dev(kDLCUDA, -3), &w), DLB_ERR_UNSUPPORTED_DEVICE);
  CHECK_ERR(dlb_to_device(NULL, CPU, &w), DLB_ERR_NULL_POINTER);
  CHECK_ERR(dlb_to_device(u, CPU, NULL), DLB_ERR_NULL_POINTER);
  CHECK(w == SENTINEL);
  dlb_free(u);
}

static void test_clone(void) {
  begin("clone");
  double values[6] = {1, 2, 3, 4, 5, 6};
  int64_t shape[2] = {2, 3};
  dlb_tensor *t = f64_tensor(2, shape, values), *c = SENTINEL;
  CHECK_OK(dlb_clone(t, &c));
  CHECK(c != SENTINEL && data_of(c) != data_of(t)); /* new memory */
  CHECK(same_dtype(dtype_of(c), F64) && shape_is(c, 2, shape));
  CHECK(values_are(c, values, 6));
  CHECK_OK(dlb_fill_f64_(c, 0.0));
  CHECK(values_are(t, values, 6)); /* the source is untouched */
  dlb_free(t);
  CHECK(sum_is(c, 0.0));
  dlb_free(c);
  c = SENTINEL;
  CHECK_ERR(dlb_clone(NULL, &c), DLB_ERR_NULL_POINTER);
  CHECK(c == SENTINEL);
  t = f64_tensor(2, shape, values);
  CHECK_ERR(dlb_clone(t, NULL), DLB_ERR_NULL_POINTER);
  CHECK_MSG("out is NULL");
  dlb_free(t);
}

static void test_cast(void) {
  begin("cast");
  double values[4] = {2.7, -2.7, 0.5, 100.0};
  int64_t n4[1] = {4};
  dlb_tensor *t = f64_tensor(1, n4, values), *c = SENTINEL;
  CHECK_OK(dlb_cast(t, I32, &c));
  CHECK(same_dtype(dtype_of(c), I32));
  CHECK(data_of(c) != data_of(t));
  {
    const int32_t *v = (const int32_t *)data_of(c);
    CHECK(v[0] == 2 && v[1] == -2 && v[2] == 0 && v[3] == 100); /* truncation, as C and PyTorch */
  }
  dlb_free(c);
  CHECK_OK(dlb_cast(t, F16, &c));
  {
    double want[4] = {2.69921875, -2.69921875, 0.5, 100.0}; /* nearest halves */
    CHECK(values_are(c, want, 4));
  }
  dlb_free(c);
  CHECK_OK(dlb_cast(t, BOOL, &c));
  CHECK(same_dtype(dtype_of(c), BOOL));
  {
    double want[4] = {1, 1, 1, 1};
    CHECK(values_are(c, want, 4));
  }
  dlb_free(c);
  CHECK_OK(dlb_cast(t, C64, &c));
  CHECK(((float *)data_of(c))[4] == 0.5f && ((float *)data_of(c))[5] == 0.0f); /* (re, im) of [2] */
  dlb_free(c);
  /* The same dtype: the same data. */
  CHECK_OK(dlb_cast(t, F64, &c));
  CHECK(data_of(c) == data_of(t));
  dlb_free(c);
  CHECK(values_are(t, values, 4)); /* the source is unchanged */

  c = SENTINEL;
  CHECK_ERR(dlb_cast(t, dt(kDLFloat, 8), &c), DLB_ERR_UNSUPPORTED_DTYPE); /* float8 has its own codes */
  CHECK_MSG("unsupported DLPack dtype");
  CHECK_ERR(dlb_cast(t, dt3(kDLFloat, 64, 2), &c), DLB_ERR_UNSUPPORTED_DTYPE);
  CHECK_ERR(dlb_cast(t, dt(kDLOpaqueHandle, 64), &c), DLB_ERR_UNSUPPORTED_DTYPE);
  CHECK_ERR(dlb_cast(NULL, I32, &c), DLB_ERR_NULL_POINTER);
  CHECK_ERR(dlb_cast(t, I32, NULL), DLB_ERR_NULL_POINTER);
  CHECK(c == SENTINEL);
  dlb_free(t);
}

/* The DLPack 1.3 narrow dtypes: casts bit for bit as PyTorch, padded sub-byte
 * exports flagged, arithmetic refused. */
static void test_export_max_version(void) {
  begin("export max_version");
  double values[2] = {1.5, -2.0};
  int64_t n2[1] = {2};
  dlb_tensor *t = f64_tensor(1, n2, values), *c = NULL;
  DLManagedTensorVersioned *const unset = (DLManagedTensorVersioned *)(uintptr_t)0x5e57, *e = unset;
  /* Stamped with the older of the consumer's version and 1.3. */
  const uint32_t asked[5][2] = {{1, 0}, {1, 1}, {1, 2}, {1, 3}, {1, 9}};
  const uint32_t got[5] = {0, 1, 2, 3, 3};
  for (int i = 0; i < 5; i++) {
    e = NULL;
    CHECK_OK(dlb_export_max_version(t, asked[i][0], asked[i][1], &e));
    CHECK(e != NULL && e->version.major == 1 && e->version.minor == got[i]);
    CHECK(e->dl_tensor.data == data_of(t) && e->flags == 0);
    e->deleter(e);
  }
  /* A later major version reads 1.x too: 1.3. */
  CHECK_OK(dlb_export_max_version(t, 2, 0, &e));
  CHECK(e->version.major == 1 && e->version.minor == 3);
  e->deleter(e);
  /* Major 0 has no versioned struct. */
  e = unset;
  CHECK_ERR(dlb_export_max_version(t, 0, 8, &e), DLB_ERR_UNSUPPORTED_VERSION);
  CHECK_MSG("dlb_export_legacy");
  CHECK(e == unset);
  CHECK_ERR(dlb_export_max_version(NULL, 1, 0, &e), DLB_ERR_NULL_POINTER);
  CHECK_ERR(dlb_export_max_version(t, 1, 0, NULL), DLB_ERR_NULL_POINTER);

  /* float8 came with DLPack 1.1: a 1.0 consumer cannot read its code. */
  CHECK_OK(dlb_cast(t, dt(kDLFloat8_e4m3fn, 8), &c));
  CHECK_ERR(dlb_export_max_version(c, 1, 0, &e), DLB_ERR_INVALID_TENSOR);
  CHECK_MSG("DLPack 1.1");
  CHECK(e == unset);
  CHECK_OK(dlb_export_max_version(c, 1, 1, &e));
  CHECK(e->version.minor == 1 && (int)e->dl_tensor.dtype.code == (int)kDLFloat8_e4m3fn);
  e->deleter(e);
  dlb_free(c);
  /* So did the padded sub-byte flag (float4, one value per byte). */
  CHECK_OK(dlb_cast(t, dt(kDLFloat4_e2m1fn, 4), &c));
  e = unset;
  CHECK_ERR(dlb_export_max_version(c, 1, 0, &e), DLB_ERR_INVALID_TENSOR);
  CHECK(e == unset);
  CHECK_OK(dlb_export_max_version(c, 1, 1, &e));
  CHECK((e->flags & DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED) != 0);
  e->deleter(e);
  dlb_free(c);
  /* Every 1.0 dtype exports as 1.0 (bool, bfloat16, complex). */
  const DLDataType old[3] = {dt(kDLBool, 8), dt(kDLBfloat, 16), dt(kDLComplex, 128)};
  for (int i = 0; i < 3; i++) {
    CHECK_OK(dlb_cast(t, old[i], &c));
    CHECK_OK(dlb_export_max_version(c, 1, 0, &e));
    CHECK(e->version.minor == 0 && same_dtype(e->dl_tensor.dtype, old[i]));
    e->deleter(e);
    dlb_free(c);
  }
  dlb_free(t);
}

static void test_narrow_dtypes(void) {
  begin("narrow dtypes");
  double values[4] = {1.5, -2.0, 0.3, 1000.0};
  int64_t n4[1] = {4};
  dlb_tensor *t = f64_tensor(1, n4, values), *c = SENTINEL, *s = SENTINEL;
  DLDataType e4m3fn = dt(10, 8), f4 = dt(17, 4), c32 = dt(kDLComplex, 32);
  CHECK_OK(dlb_cast(t, e4m3fn, &c));
  CHECK(same_dtype(dtype_of(c), e4m3fn));
  {
    const uint8_t *code = (const uint8_t *)data_of(c);
    /* 0.3 rounds to 0.3125 (0x2a); 1000 saturates to 448 (0x7e), as PyTorch does. */
    CHECK(code[0] == 0x3c && code[1] == 0xc0 && code[2] == 0x2a && code[3] == 0x7e);
    double want[4] = {1.5, -2.0, 0.3125, 448.0};
    CHECK(values_are(c, want, 4));
  }
  CHECK_ERR(dlb_sum(c, &s), DLB_ERR_INVALID_OPERATION);
  CHECK_MSG("not implemented for 'Float8_e4m3fn'");
  CHECK(s == SENTINEL);
  dlb_free(c);

  CHECK_OK(dlb_cast(t, f4, &c)); /* one float4 value per byte */
  {
    DLManagedTensorVersioned *m = NULL;
    CHECK_OK(dlb_export(c, &m));
    CHECK(m != NULL && (m->flags & DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED) != 0);
    CHECK(same_dtype(m->dl_tensor.dtype, f4));
    const uint8_t *code = (const uint8_t *)m->dl_tensor.data;
    CHECK(code[0] == 0x3 && code[1] == 0xc && code[3] == 0x7); /* 1.5, -2, and 6 (saturated) */
    m->deleter(m);
    DLManagedTensor *legacy = NULL;
    CHECK_ERR(dlb_export_legacy(c, &legacy), DLB_ERR_UNSUPPORTED_DTYPE);
    CHECK_MSG("padded");
  }
  dlb_free(c);

  CHECK_OK(dlb_cast(t, c32, &c)); /* complex32: two float16 */
  CHECK(same_dtype(dtype_of(c), c32));
  {
    double want[4] = {1.5, -2.0, 0.300048828125, 1000.0};
    CHECK(values_are(c, want, 4));
  }
  dlb_free(c);
  dlb_free(t);
}

static void test_copy(void) {
  begin("copy_");
  int64_t shape[2] = {2, 3}, n3[1] = {3}, n2[1] = {2};
  dlb_tensor *dst = NULL, *src = NULL, *bad = NULL;
  CHECK_OK(dlb_zeros(2, shape, F64, CPU, &dst));
  CHECK_OK(dlb_zeros(1, n3, I32, CPU, &src));
  int32_t *s = (int32_t *)data_of(src);
  s[0] = 1;
  s[1] = -2;
  s[2] = 3;
  void *before = data_of(dst);
  /* (3,) int32 broadcast into (2, 3) float64. */
  CHECK_OK(dlb_copy_(dst, src));
  CHECK(data_of(dst) == before);
  {
    double want[6] = {1, -2, 3, 1, -2, 3};
    CHECK(values_are(dst, want, 6));
  }
  /* ... and back, with a cast. */
  double half[6] = {0.5, 1.5, 2.5, 3.5, 4.5, 5.5};
  dlb_tensor *h = f64_tensor(2, shape, half), *hi = NULL;
  CHECK_OK(dlb_zeros(2, shape, I64, CPU, &hi));
  CHECK_OK(dlb_copy_(hi, h));
  {
    double want[6] = {0, 1, 2, 3, 4, 5};
    CHECK(values_are(hi, want, 6));
  }
  /* A 0-d source fills everything. */
  dlb_tensor *scalar = NULL;
  CHECK_OK(dlb_zeros(0, NULL, F32, CPU, &scalar));
  CHECK_OK(dlb_fill_f64_(scalar, 7));
  CHECK_OK(dlb_copy_(dst, scalar));
  CHECK(sum_is(dst, 42));
  /* Itself. */
  CHECK_OK(dlb_copy_(dst, dst));
  CHECK(sum_is(dst, 42));

  /* Shapes that do not broadcast to dst's. */
  CHECK_OK(dlb_zeros(1, n2, F64, CPU, &bad));
  CHECK_ERR(dlb_copy_(dst, bad), DLB_ERR_INVALID_OPERATION);
  CHECK_ERR(dlb_copy_(src, dst), DLB_ERR_INVALID_OPERATION); /* (2, 3) into (3,) */
  CHECK_MSG("doesn't match the broadcast shape");
  CHECK(sum_is(dst, 42) && sum_is(src, 2));
  CHECK_ERR(dlb_copy_(NULL, src), DLB_ERR_NULL_POINTER);
  CHECK_MSG("dst is NULL");
  CHECK_ERR(dlb_copy_(dst, NULL), DLB_ERR_NULL_POINTER);
  CHECK_MSG("src is NULL");
  dlb_free(scalar);
  dlb_free(bad);
  dlb_free(hi);
  dlb_free(h);
  dlb_free(src);
  dlb_free(dst);
}

/* ------------------------------------------------------------------------ */
/* Arithmetic                                                               */
/* ------------------------------------------------------------------------ */

static void test_binary(void) {
  begin("binary");
  int64_t s31[2] = {3, 1}, s4[1] = {4}, s34[2] = {3, 4}, s3[1] = {3};
  double av[3] = {1, 2, 3}, bv[4] = {10, 20, 30, 40};
  dlb_tensor *a = as(f64_tensor(2, s31, av), F32), *b = as(f64_tensor(1, s4, bv), F32), *out = SENTINEL;

  /* (3, 1) op (4,) -> (3, 4). */
  static const uint32_t ops[4] = {DLB_ADD, DLB_SUB, DLB_MUL, DLB_DIV};
  for (int k = 0; k < 4; k++) {
    out = SENTINEL;
    CHECK_OK(dlb_binary(a, b, ops[k], &out));
    if (out == SENTINEL) continue;
    CHECK(shape_is(out, 2, s34));
    CHECK(same_dtype(dtype_of(out), F32));
    double want[12];
    for (int i = 0; i < 3; i++)
      for (int j = 0; j < 4; j++) {
        float x = (float)av[i], y = (float)bv[j];
        want[i * 4 + j] = k == 0 ? x + y : k == 1 ? x - y : k == 2 ? x * y : (double)(x / y);
      }
    CHECK(values_are(out, want, 12));
    dlb_free(out);
  }
  /* The operands are untouched. */
  CHECK(values_are(a, av, 3) && values_are(b, bv, 4));

  /* Promotion: int / int is float32 true division; int32 + float64 is float64;
   * int32 + int64 is int64. */
  double iv[3] = {1, 2, 3}, twos[3] = {2, 2, 2};
  dlb_tensor *i32 = as(f64_tensor(1, s3, iv), I32), *two = as(f64_tensor(1, s3, twos), I32);
  CHECK_OK(dlb_binary(i32, two, DLB_DIV, &out));
  CHECK(same_dtype(dtype_of(out), F32));
  {
    double want[3] = {0.5, 1.0, 1.5};
    CHECK(values_are(out, want, 3));
  }
  dlb_free(out);
  CHECK_OK(dlb_binary(i32, two, DLB_MUL, &out));
  CHECK(same_dtype(dtype_of(out), I32));
  dlb_free(out);
  dlb_tensor *f64 = f64_tensor(1, s3, twos), *i64 = as(f64_tensor(1, s3, twos), I64);
  CHECK_OK(dlb_binary(i32, f64, DLB_ADD, &out));
  CHECK(same_dtype(dtype_of(out), F64));
  dlb_free(out);
  CHECK_OK(dlb_binary(i32, i64, DLB_SUB, &out));
  CHECK(same_dtype(dtype_of(out), I64));
  {
    double want[3] = {-1, 0, 1};
    CHECK(values_are(out, want, 3));
  }
  dlb_free(out);

  /* Errors; out is never written. */
  /* (3, 1) op (3,) -> (3, 3), with promotion. */
  CHECK_OK(dlb_binary(a, i32, DLB_MUL, &out));
  {
    int64_t s33[2] = {3, 3};
    double want[9] = {1, 2, 3, 2, 4, 6, 3, 6, 9};
    CHECK(shape_is(out, 2, s33) && same_dtype(dtype_of(out), F32));
    CHECK(values_are(out, want, 9));
  }
  dlb_free(out);
  out = SENTINEL;
  CHECK_ERR(dlb_binary(b, i32, DLB_ADD, &out), DLB_ERR_INVALID_OPERATION); /* (4,) + (3,) */
  CHECK_MSG("must match");
  CHECK_ERR(dlb_binary(a, b, 7, &out), DLB_ERR_INVALID_ARGUMENT);
  CHECK_MSG("unknown operator 7");
  CHECK_ERR(dlb_binary(a, b, 4, &out), DLB_ERR_INVALID_ARGUMENT);
  CHECK_ERR(dlb_binary(a, b, UINT32_MAX, &out), DLB_ERR_INVALID_ARGUMENT);
  dlb_tensor *flags = NULL;
  CHECK_OK(dlb_zeros(1, s3, BOOL, CPU, &flags));
  CHECK_ERR(dlb_binary(flags, flags, DLB_SUB, &out), DLB_ERR_INVALID_OPERATION);
  CHECK_MSG("Subtraction");
  CHECK_ERR(dlb_binary(i32, flags, DLB_SUB, &out), DLB_ERR_INVALID_OPERATION);
  CHECK_ERR(dlb_binary(NULL, b, DLB_ADD, &out), DLB_ERR_NULL_POINTER);
  CHECK_MSG("a is NULL");
  CHECK_ERR(dlb_binary(a, NULL, DLB_ADD, &out), DLB_ERR_NULL_POINTER);
  CHECK_MSG("b is NULL");
  CHECK_ERR(dlb_binary(a, b, DLB_ADD, NULL), DLB_ERR_NULL_POINTER);
  CHECK(out == SENTINEL);
  /* bool + bool is allowed (logical or, bool). */
  CHECK_OK(dlb_binary(flags, flags, DLB_ADD, &out));
  CHECK(same_dtype(dtype_of(out), BOOL));
  dlb_free(out);
  dlb_free(flags);
  dlb_free(i64);
  dlb_free(f64);
  dlb_free(two);
  dlb_free(i32);
  dlb_free(b);
  dlb_free(a);
}

static void test_binary_scalar(void) {
  begin("binary_scalar");
  int64_t s3[1] = {3};
  double iv[3] = {1, 2, 3};
  dlb_tensor *i32 = as(f64_tensor(1, s3, iv), I32), *out = SENTINEL;
  /* An int keeps the tensor's dtype. */
  CHECK_OK(dlb_binary_scalar_i64(i32, 2, DLB_ADD, &out));
  CHECK(same_dtype(dtype_of(out), I32));
  {
    double want[3] = {3, 4, 5};
    CHECK(values_are(out, want, 3));
  }
  dlb_free(out);
  CHECK_OK(dlb_binary_scalar_i64(i32, 3, DLB_MUL, &out));
  CHECK(same_dtype(dtype_of(out), I32));
  {
    double want[3] = {3, 6, 9};
    CHECK(values_are(out, want, 3));
  }
  dlb_free(out);
  CHECK_OK(dlb_binary_scalar_i64(i32, 1, DLB_SUB, &out));
  {
    double want[3] = {0, 1, 2};
    CHECK(values_are(out, want, 3));
  }
  dlb_free(out);
  /* ... except true division. */
  CHECK_OK(dlb_binary_scalar_i64(i32, 2, DLB_DIV, &out));
  CHECK(same_dtype(dtype_of(out), F32));
  {
    double want[3] = {0.5, 1, 1.5};
    CHECK(values_are(out, want, 3));
  }
  dlb_free(out);
  /* A float makes an int tensor float32. */
  CHECK_OK(dlb_binary_scalar_f64(i32, 2.5, DLB_ADD, &out));
  CHECK(same_dtype(dtype_of(out), F32));
  {
    double want[3] = {3.5, 4.5, 5.5};
    CHECK(values_are(out, want, 3));
  }
  dlb_free(out);
  /* ... and keeps a float tensor's dtype. */
  dlb_tensor *f64 = f64_tensor(1, s3, iv), *f16 = as(f64_tensor(1, s3, iv), F16);
  CHECK_OK(dlb_binary_scalar_f64(f64, 0.25, DLB_MUL, &out));
  CHECK(same_dtype(dtype_of(out), F64));
  {
    double want[3] = {0.25, 0.5, 0.75};
    CHECK(values_are(out, want, 3));
  }
  dlb_free(out);
  CHECK_OK(dlb_binary_scalar_f64(f16, 0.5, DLB_SUB, &out));
  CHECK(same_dtype(dtype_of(out), F16));
  dlb_free(out);
  CHECK_OK(dlb_binary_scalar_i64(f64, 4, DLB_DIV, &out));
  CHECK(same_dtype(dtype_of(out), F64));
  {
    double want[3] = {0.25, 0.5, 0.75};
    CHECK(values_are(out, want, 3));
  }
  dlb_free(out);

  out = SENTINEL;
  CHECK_ERR(dlb_binary_scalar_i64(i32, 1, 7, &out), DLB_ERR_INVALID_ARGUMENT);
  CHECK_MSG("unknown operator 7");
  CHECK_ERR(dlb_binary_scalar_f64(i32, 1.0, 7, &out), DLB_ERR_INVALID_ARGUMENT);
  dlb_tensor *flags = NULL;
  CHECK_OK(dlb_zeros(1, s3, BOOL, CPU, &flags));
  CHECK_ERR(dlb_binary_scalar_i64(flags, 1, DLB_SUB, &out), DLB_ERR_INVALID_OPERATION);
  CHECK_ERR(dlb_binary_scalar_i64(NULL, 1, DLB_ADD, &out), DLB_ERR_NULL_POINTER);
  CHECK_ERR(dlb_binary_scalar_f64(NULL, 1.0, DLB_ADD, &out), DLB_ERR_NULL_POINTER);
  CHECK_ERR(dlb_binary_scalar_i64(i32, 1, DLB_ADD, NULL), DLB_ERR_NULL_POINTER);
  CHECK_ERR(dlb_binary_scalar_f64(i32, 1.0, DLB_ADD, NULL), DLB_ERR_NULL_POINTER);
  CHECK(out == SENTINEL);
  dlb_free(flags);
  dlb_free(f16);
  dlb_free(f64);
  dlb_free(i32);
}

static void test_in_place(void) {
  begin("in_place");
  int64_t s34[2] = {3, 4}, s4[1] = {4}, s3[1] = {3};
  double bv[4] = {1, 2, 3, 4};
  dlb_tensor *dst = NULL, *b = as(f64_tensor(1, s4, bv), F32);
  CHECK_OK(dlb_zeros(2, s34, F32, CPU, &dst));
  void *mem = data_of(dst);
  /* dst (3, 4) += b (4,): b broadcasts. */
  CHECK_OK(dlb_binary_(dst, b, DLB_ADD));
  CHECK_OK(dlb_binary_(dst, b, DLB_MUL));
  CHECK(data_of(dst) == mem);
  {
    double want[12] = {1, 4, 9, 16, 1, 4, 9, 16, 1, 4, 9, 16};
    CHECK(values_are(dst, want, 12));
  }
  CHECK_OK(dlb_binary_(dst, b, DLB_DIV));
  CHECK_OK(dlb_binary_(dst, b, DLB_SUB));
  CHECK(sum_is(dst, 0));
  /* An int tensor into a float one is cast. */
  double iv[4] = {1, 1, 1, 1};
  dlb_tensor *ints = as(f64_tensor(1, s4, iv), I64);
  CHECK_OK(dlb_binary_(dst, ints, DLB_ADD));
  CHECK(sum_is(dst, 12));

  /* Scalars. */
  CHECK_OK(dlb_binary_scalar_f64_(dst, 0.5, DLB_MUL));
  CHECK(sum_is(dst, 6));
  CHECK_OK(dlb_binary_scalar_i64_(dst, 2, DLB_ADD));
  CHECK(sum_is(dst, 30));
  CHECK_OK(dlb_binary_scalar_i64_(dst, 5, DLB_DIV));
  CHECK_OK(dlb_binary_scalar_f64_(dst, 0.5, DLB_SUB));
  CHECK(sum_is(dst, 0));
  CHECK_OK(dlb_binary_scalar_i64_(ints, 1, DLB_ADD));
  CHECK_OK(dlb_binary_scalar_i64_(ints, 3, DLB_MUL));
  CHECK(sum_is(ints, 24));
  CHECK(same_dtype(dtype_of(ints), I64));

  /* The result must be castable to dst's dtype: int64 += 1.5 is refused. */
  CHECK_ERR(dlb_binary_scalar_f64_(ints, 1.5, DLB_ADD), DLB_ERR_INVALID_OPERATION);
  CHECK_MSG("result type Float can't be cast to the desired output type Long");
  CHECK_ERR(dlb_binary_scalar_i64_(ints, 2, DLB_DIV), DLB_ERR_INVALID_OPERATION); /* true division */
  CHECK_ERR(dlb_binary_(ints, b, DLB_ADD), DLB_ERR_INVALID_OPERATION);            /* float32 tensor */
  CHECK(sum_is(ints, 24));
  /* b must broadcast to dst's shape. */
  CHECK_ERR(dlb_binary_(b, dst, DLB_ADD), DLB_ERR_INVALID_OPERATION); /* (4,) += (3, 4) */
  CHECK_MSG("doesn't match the broadcast shape");
  dlb_tensor *three = NULL;
  CHECK_OK(dlb_zeros(1, s3, F32, CPU, &three));
  CHECK_ERR(dlb_binary_(dst, three, DLB_ADD), DLB_ERR_INVALID_OPERATION); /* (3, 4) += (3,) */
  CHECK(values_are(b, bv, 4));
  /* bool -= anything is refused. */
  dlb_tensor *flags = NULL;
  CHECK_OK(dlb_zeros(1, s4, BOOL, CPU, &flags));
  CHECK_ERR(dlb_binary_(flags, flags, DLB_SUB), DLB_ERR_INVALID_OPERATION);
  CHECK_OK(dlb_binary_(flags, flags, DLB_ADD));
  /* Unknown operators and NULLs. */
  CHECK_ERR(dlb_binary_(dst, b, 7), DLB_ERR_INVALID_ARGUMENT);
  CHECK_MSG("unknown operator 7");
  CHECK_ERR(dlb_binary_scalar_f64_(dst, 1.0, 7), DLB_ERR_INVALID_ARGUMENT);
  CHECK_ERR(dlb_binary_scalar_i64_(dst, 1, 7), DLB_ERR_INVALID_ARGUMENT);
  CHECK(sum_is(dst, 0));
  CHECK_ERR(dlb_binary_(NULL, b, DLB_ADD), DLB_ERR_NULL_POINTER);
  CHECK_MSG("dst is NULL");
  CHECK_ERR(dlb_binary_(dst, NULL, DLB_ADD), DLB_ERR_NULL_POINTER);
  CHECK_MSG("b is NULL");
  CHECK_ERR(dlb_binary_scalar_f64_(NULL, 1.0, DLB_ADD), DLB_ERR_NULL_POINTER);
  CHECK_ERR(dlb_binary_scalar_i64_(NULL, 1, DLB_ADD), DLB_ERR_NULL_POINTER);
  dlb_free(flags);
  dlb_free(three);
  dlb_free(ints);
  dlb_free(b);
  dlb_free(dst);
}

static void test_fill(void) {
  begin("fill");
  int64_t s3[1] = {3};
  dlb_tensor *u8 = NULL, *f32 = NULL, *i8 = NULL;
  CHECK_OK(dlb_zeros(1, s3, U8, CPU, &u8));
  CHECK_OK(dlb_fill_i64_(u8, 255));
  CHECK(((uint8_t *)data_of(u8))[2] == 255);
  CHECK_ERR(dlb_fill_i64_(u8, 300), DLB_ERR_INVALID_OPERATION);
  CHECK_MSG("overflow");
  CHECK_ERR(dlb_fill_i64_(u8, -1), DLB_ERR_INVALID_OPERATION);
  CHECK_ERR(dlb_fill_f64_(u8, 300.0), DLB_ERR_INVALID_OPERATION);
  CHECK_ERR(dlb_fill_f64_(u8, NAN), DLB_ERR_INVALID_OPERATION);
  CHECK(sum_is(u8, 765)); /* untouched */
  CHECK_OK(dlb_fill_f64_(u8, 7.9));
  CHECK(((uint8_t *)data_of(u8))[0] == 7);
  CHECK_OK(dlb_zeros(1, s3, I8, CPU, &i8));
  CHECK_ERR(dlb_fill_i64_(i8, -129), DLB_ERR_INVALID_OPERATION);
  CHECK_OK(dlb_fill_i64_(i8, -128));
  CHECK(sum_is(i8, -384));
  CHECK_OK(dlb_zeros(1, s3, F32, CPU, &f32));
  CHECK_OK(dlb_fill_f64_(f32, 1.25));
  CHECK(sum_is(f32, 3.75));
  CHECK_OK(dlb_fill_i64_(f32, -2));
  CHECK(sum_is(f32, -6));
  CHECK_OK(dlb_fill_f64_(f32, INFINITY)); /* floats take anything */
  CHECK(isinf(((float *)data_of(f32))[1]));
  CHECK_ERR(dlb_fill_f64_(NULL, 1.0), DLB_ERR_NULL_POINTER);
  CHECK_ERR(dlb_fill_i64_(NULL, 1), DLB_ERR_NULL_POINTER);
  dlb_free(f32);
  dlb_free(i8);
  dlb_free(u8);
}

static void test_neg_sum_item(void) {
  begin("neg_sum_item");
  int64_t s23[2] = {2, 3}, s3[1] = {3};
  double v[6] = {1, -2, 3, -4, 5, 6};
  dlb_tensor *i32 = as(f64_tensor(2, s23, v), I32), *out = SENTINEL;
  /* neg */
  CHECK_OK(dlb_neg(i32, &out));
  CHECK(same_dtype(dtype_of(out), I32) && shape_is(out, 2, s23));
  {
    double want[6] = {-1, 2, -3, 4, -5, -6};
    CHECK(values_are(out, want, 6));
  }
  dlb_free(out);
  dlb_tensor *flags = NULL;
  CHECK_OK(dlb_zeros(1, s3, BOOL, CPU, &flags));
  out = SENTINEL;
  CHECK_ERR(dlb_neg(flags, &out), DLB_ERR_INVALID_OPERATION);
  CHECK_ERR(dlb_neg(NULL, &out), DLB_ERR_NULL_POINTER);
  CHECK_MSG("a is NULL");
  CHECK_ERR(dlb_neg(i32, NULL), DLB_ERR_NULL_POINTER);
  CHECK(out == SENTINEL);

  /* sum: integers and bools sum to int64, as a 0-d tensor. */
  CHECK_OK(dlb_sum(i32, &out));
  {
    DLTensor d;
    CHECK_OK(dlb_describe(out, &d));
    CHECK(d.ndim == 0 && same_dtype(d.dtype, I64) && *(int64_t *)d.data == 9);
  }
  double x = 0;
  CHECK_OK(dlb_item_f64(out, &x));
  CHECK(x == 9.0);
  dlb_free(out);
  CHECK_OK(dlb_fill_i64_(flags, 1));
  CHECK_OK(dlb_sum(flags, &out));
  CHECK(same_dtype(dtype_of(out), I64) && item(out) == 3.0);
  dlb_free(out);
  dlb_tensor *f32 = as(f64_tensor(2, s23, v), F32);
  CHECK_OK(dlb_sum(f32, &out));
  CHECK(same_dtype(dtype_of(out), F32) && item(out) == 9.0);
  dlb_free(out);
  out = SENTINEL;
  CHECK_ERR(dlb_sum(NULL, &out), DLB_ERR_NULL_POINTER);
  CHECK_ERR(dlb_sum(f32, NULL), DLB_ERR_NULL_POINTER);
  CHECK(out == SENTINEL);

  /* item needs exactly one element. */
  x = 123;
  CHECK_ERR(dlb_item_f64(f32, &x), DLB_ERR_INVALID_OPERATION);
  CHECK_MSG("a Tensor with 6 elements cannot be converted to Scalar");
  CHECK(x == 123);
  int64_t s11[2] = {1, 1}, s0[1] = {0};
  dlb_tensor *one = NULL, *none = NULL;
  CHECK_OK(dlb_zeros(2, s11, I8, CPU, &one));
  CHECK_OK(dlb_fill_i64_(one, -5));
  CHECK_OK(dlb_item_f64(one, &x));
  CHECK(x == -5.0);
  CHECK_OK(dlb_zeros(1, s0, F32, CPU, &none));
  CHECK_ERR(dlb_item_f64(none, &x), DLB_ERR_INVALID_OPERATION);
  CHECK_ERR(dlb_item_f64(NULL, &x), DLB_ERR_NULL_POINTER);
  CHECK_ERR(dlb_item_f64(one, NULL), DLB_ERR_NULL_POINTER);
  dlb_free(none);
  dlb_free(one);
  dlb_free(f32);
  dlb_free(flags);
  dlb_free(i32);
}

/* Every NULL argument of every function, in one place (most are also
 * checked next to the function's other tests). */
static void test_ops_by_name(void) {
  begin("ops_by_name");
  int64_t s3[1] = {3};
  double v[3] = {1, 4, 9}, w[3] = {2, 2, 10};
  dlb_tensor *i32 = as(f64_tensor(1, s3, v), I32), *b = f64_tensor(1, s3, w), *out = SENTINEL;
  /* Any unary row by its name: integers promote to float32 for sqrt. */
  CHECK_OK(dlb_unary_op("sqrt", i32, &out));
  CHECK(same_dtype(dtype_of(out), F32) && shape_is(out, 1, s3));
  {
    double want[3] = {1, 2, 3};
    CHECK(values_are(out, want, 3));
  }
  dlb_free(out);
  /* Any binary row: promotion (int32 with float64 gives float64) and broadcasting rules of dlb_binary. */
  out = SENTINEL;
  CHECK_OK(dlb_binary_op("maximum", i32, b, &out));
  CHECK(same_dtype(dtype_of(out), F64));
  {
    double want[3] = {2, 4, 10};
    CHECK(values_are(out, want, 3));
  }
  dlb_free(out);
  /* The bitwise rows: integers and bools; a float operand is refused as PyTorch refuses it. */
  out = SENTINEL;
  CHECK_OK(dlb_binary_op("bitwise_xor", i32, i32, &out));
  CHECK(same_dtype(dtype_of(out), I32));
  {
    double want[3] = {0, 0, 0};
    CHECK(values_are(out, want, 3));
  }
  dlb_free(out);
  out = SENTINEL;
  CHECK_OK(dlb_unary_op("bitwise_not", i32, &out));
  {
    double want[3] = {-2, -5, -10};
    CHECK(values_are(out, want, 3));
  }
  dlb_free(out);
  out = SENTINEL;
  CHECK_ERR(dlb_binary_op("bitwise_and", i32, b, &out), DLB_ERR_INVALID_OPERATION);
  CHECK_MSG("\"bitwise_and_cpu\" not implemented for 'Double'");
  CHECK(out == SENTINEL);
  /* The rounding divisions and remainders, by PyTorch's function names; a zero
     integer divisor is refused before anything is computed. */
  out = SENTINEL;
  CHECK_OK(dlb_binary_op("floor_divide", i32, b, &out));
  CHECK(same_dtype(dtype_of(out), F64));
  dlb_free(out);
  dlb_tensor *zeros = NULL;
  CHECK_OK(dlb_binary_op("bitwise_xor", i32, i32, &zeros));
  out = SENTINEL;
  CHECK_OK(dlb_binary_op("remainder", zeros, i32, &out));
  CHECK(same_dtype(dtype_of(out), I32));
  {
    double want[3] = {0, 0, 0};
    CHECK(values_are(out, want, 3));
  }
  dlb_free(out);
  out = SENTINEL;
  CHECK_ERR(dlb_binary_op("fmod", i32, zeros, &out), DLB_ERR_INVALID_OPERATION);
  CHECK_MSG("ZeroDivisionError");
  CHECK(out == SENTINEL);
  CHECK_ERR(dlb_binary_op("div_floor", i32, i32, &out), DLB_ERR_INVALID_ARGUMENT); /* the kernel's name, not the op's */
  dlb_free(zeros);
  CHECK_ERR(dlb_unary_op("no_such_op", i32, &out), DLB_ERR_INVALID_ARGUMENT);
  CHECK_MSG("no elementwise op named");
  CHECK_ERR(dlb_binary_op("exp", i32, b, &out), DLB_ERR_INVALID_ARGUMENT);
  CHECK_ERR(dlb_unary_op(NULL, i32, &out), DLB_ERR_NULL_POINTER);
  CHECK_ERR(dlb_binary_op("maximum", NULL, b, &out), DLB_ERR_NULL_POINTER);
  CHECK_ERR(dlb_unary_op("exp", i32, NULL), DLB_ERR_NULL_POINTER);
  CHECK(out == SENTINEL);
  dlb_free(i32);
  dlb_free(b);
}

static void test_null_pointers(void) {
  begin("null_pointers");
  int64_t s2[1] = {2};
  dlb_tensor *t = NULL, *out = SENTINEL;
  CHECK_OK(dlb_zeros(1, s2, F32, CPU, &t));
  DLManagedTensorVersioned *e = NULL;
  DLTensor d;
  double x;
  producer p;
  float data[2] = {0, 0};
  int64_t st[1] = {1};

  CHECK_ERR(dlb_import_versioned(NULL, &out), DLB_ERR_NULL_POINTER);
  CHECK_ERR(dlb_import_legacy(NULL, &out), DLB_ERR_NULL_POINTER);
  CHECK_ERR(dlb_import_versioned(make_tensor(&p, data, F32, 1, s2, st), NULL), DLB_ERR_NULL_POINTER);
  CHECK(p.calls == 1);
  CHECK_ERR(dlb_import_legacy(legacy_of(make_tensor(&p, data, F32, 1, s2, st)), NULL), DLB_ERR_NULL_POINTER);
  CHECK(p.calls == 1);
  CHECK_ERR(dlb_export(NULL, &e), DLB_ERR_NULL_POINTER);
  CHECK_MSG("tensor is NULL");
  CHECK_ERR(dlb_export(t, NULL), DLB_ERR_NULL_POINTER);
  CHECK(e == NULL);
  DLManagedTensor *el = NULL;
  CHECK_ERR(dlb_export_legacy(NULL, &el), DLB_ERR_NULL_POINTER);
  CHECK_ERR(dlb_export_legacy(t, NULL), DLB_ERR_NULL_POINTER);
  CHECK(el == NULL);
  dlb_free(NULL);
  CHECK_ERR(dlb_empty(1, NULL, F32, CPU, &out), DLB_ERR_NULL_POINTER);
  CHECK_ERR(dlb_empty(1, s2, F32, CPU, NULL), DLB_ERR_NULL_POINTER);
  CHECK_ERR(dlb_zeros(1, NULL, F32, CPU, &out), DLB_ERR_NULL_POINTER);
  CHECK_ERR(dlb_zeros(1, s2, F32, CPU, NULL), DLB_ERR_NULL_POINTER);
  CHECK_ERR(dlb_from_host_buffer(data, 1, NULL, NULL, F32, NULL, NULL, &out), DLB_ERR_NULL_POINTER);
  CHECK_ERR(dlb_from_host_buffer(data, 1, s2, NULL, F32, NULL, NULL, NULL), DLB_ERR_NULL_POINTER);
  CHECK_ERR(dlb_describe(NULL, &d), DLB_ERR_NULL_POINTER);
  CHECK_ERR(dlb_describe(t, NULL), DLB_ERR_NULL_POINTER);
  CHECK(!dlb_is_read_only(NULL));
  CHECK_ERR(dlb_to_device(NULL, CPU, &out), DLB_ERR_NULL_POINTER);
  CHECK_ERR(dlb_to_device(t, CPU, NULL), DLB_ERR_NULL_POINTER);
  CHECK_ERR(dlb_clone(NULL, &out), DLB_ERR_NULL_POINTER);
  CHECK_ERR(dlb_clone(t, NULL), DLB_ERR_NULL_POINTER);
  CHECK_ERR(dlb_cast(NULL, F64, &out), DLB_ERR_NULL_POINTER);
  CHECK_ERR(dlb_cast(t, F64, NULL), DLB_ERR_NULL_POINTER);
  CHECK_ERR(dlb_copy_(NULL, t), DLB_ERR_NULL_POINTER);
  CHECK_ERR(dlb_copy_(t, NULL), DLB_ERR_NULL_POINTER);
  CHECK_ERR(dlb_binary(NULL, t, DLB_ADD, &out), DLB_ERR_NULL_POINTER);
  CHECK_ERR(dlb_binary(t, NULL, DLB_ADD, &out), DLB_ERR_NULL_POINTER);
  CHECK_ERR(dlb_binary(t, t, DLB_ADD, NULL), DLB_ERR_NULL_POINTER);
  CHECK_ERR(dlb_binary(NULL, NULL, 7, NULL), DLB_ERR_NULL_POINTER);
  CHECK_ERR(dlb_binary_scalar_f64(NULL, 1.0, DLB_ADD, &out), DLB_ERR_NULL_POINTER);
  CHECK_ERR(dlb_binary_scalar_f64(t, 1.0, DLB_ADD, NULL), DLB_ERR_NULL_POINTER);
  CHECK_ERR(dlb_binary_scalar_i64(NULL, 1, DLB_ADD, &out), DLB_ERR_NULL_POINTER);
  CHECK_ERR(dlb_binary_scalar_i64(t, 1, DLB_ADD, NULL), DLB_ERR_NULL_POINTER);
  CHECK_ERR(dlb_binary_(NULL, t, DLB_ADD), DLB_ERR_NULL_POINTER);
  CHECK_ERR(dlb_binary_(t, NULL, DLB_ADD), DLB_ERR_NULL_POINTER);
  CHECK_ERR(dlb_binary_scalar_f64_(NULL, 1.0, DLB_ADD), DLB_ERR_NULL_POINTER);
  CHECK_ERR(dlb_binary_scalar_i64_(NULL, 1, DLB_ADD), DLB_ERR_NULL_POINTER);
  CHECK_ERR(dlb_fill_f64_(NULL, 1.0), DLB_ERR_NULL_POINTER);
  CHECK_ERR(dlb_fill_i64_(NULL, 1), DLB_ERR_NULL_POINTER);
  CHECK_ERR(dlb_neg(NULL, &out), DLB_ERR_NULL_POINTER);
  CHECK_ERR(dlb_neg(t, NULL), DLB_ERR_NULL_POINTER);
  CHECK_ERR(dlb_sum(NULL, &out), DLB_ERR_NULL_POINTER);
  CHECK_ERR(dlb_sum(t, NULL), DLB_ERR_NULL_POINTER);
  CHECK_ERR(dlb_item_f64(NULL, &x), DLB_ERR_NULL_POINTER);
  CHECK_ERR(dlb_item_f64(t, NULL), DLB_ERR_NULL_POINTER);
  CHECK(out == SENTINEL);
  CHECK(sum_is(t, 0)); /* nothing wrote through t */
  dlb_free(t);
}

/* ------------------------------------------------------------------------ */
/* Edge cases that were bugs once (found by this suite, fixed in the same    */
/* change): NULL data with elements, and extents of exactly 2^63 bytes.      */
/* ------------------------------------------------------------------------ */

static void test_null_data_and_extreme_extents(void) {
  float data[6] = {0, 1, 2, 3, 4, 5};
  int64_t shape[2] = {2, 3}, strides[2] = {3, 1};
  producer p;
  for (int legacy = 0; legacy < 2; legacy++) {
    /* NULL data with elements is refused (it once imported, then every op
     * read through NULL). */
    begin("import of NULL data with elements");
    make_tensor(&p, NULL, F32, 2, shape, strides);
    expect_import_failure(&p, legacy, DLB_ERR_INVALID_TENSOR, "NULL data with 6 elements", __LINE__);
    make_tensor(&p, NULL, F64, 0, NULL, NULL);
    expect_import_failure(&p, legacy, DLB_ERR_INVALID_TENSOR, "NULL data, 0-d", __LINE__);

    /* A downward extent of exactly 2^63 bytes (lo == INT64_MIN) once
     * overflowed when negated. */
    begin("import of a 2^63-byte downward extent");
    {
      int64_t five[1] = {5}, st[1] = {-((int64_t)1 << 61)};
      make_tensor(&p, data, dt(kDLUInt, 8), 1, five, st);
      expect_import_failure(&p, legacy, DLB_ERR_INVALID_TENSOR, "extent of 2^63 bytes downwards", __LINE__);
      int64_t two[1] = {2}, st_min[1] = {INT64_MIN};
      make_tensor(&p, data, dt(kDLUInt, 8), 1, two, st_min);
      expect_import_failure(&p, legacy, DLB_ERR_INVALID_TENSOR, "stride INT64_MIN", __LINE__);
    }
  }

  /* The same extent in dlb_from_host_buffer: refused, and (as for every
   * failure) free_fn is not called, so the caller still owns data. */
  begin("from_host_buffer with a 2^63-byte downward extent");
  {
    int64_t sizes[2] = {5, 2}, steps[2] = {-((int64_t)1 << 61), INT64_MIN};
    for (int i = 0; i < 2; i++) {
      host_buffer h = new_floats(6, 0.0f);
      dlb_tensor *out = SENTINEL;
      CHECK_ERR(dlb_from_host_buffer(h.data, 1, &sizes[i], &steps[i], dt(kDLUInt, 8), host_free, &h, &out),
                DLB_ERR_INVALID_TENSOR);
      CHECK(h.calls == 0); /* on failure free_fn must not run */
      CHECK(out == SENTINEL);
      free(h.data);
      if (out != SENTINEL) dlb_free(out);
    }
  }
}

int main(void) {
  const char *cuda = getenv("DLB_TEST_HAVE_CUDA");
  if (cuda && (cuda[0] == '0' || cuda[0] == '1')) g_have_cuda = cuda[0] == '1';
  test_last_error_per_thread(); /* first: it checks the initial "" */
  test_version_and_status_names();
  test_import_lifetimes();
  test_import_zero_copy();
  test_import_strided();
  test_import_null_strides();
  test_import_0d_and_empty();
  test_import_read_only();
  test_import_errors();
  test_export();
  test_export_max_version();
  test_export_legacy();
  test_null_data_and_extreme_extents();
  test_empty_and_zeros();
  test_from_host_buffer();
  test_describe();
  test_to_device();
  test_clone();
  test_cast();
  test_narrow_dtypes();
  test_copy();
  test_binary();
  test_binary_scalar();
  test_in_place();
  test_fill();
  test_neg_sum_item();
  test_ops_by_name();
  test_null_pointers();

  if (g_failures) {
    printf("%d of %d checks failed\n", g_failures, g_checks);
    return 1;
  }
  printf("%d checks passed\n", g_checks);
  return 0;
}
