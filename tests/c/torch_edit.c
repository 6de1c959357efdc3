/*
 * A tiny C consumer of DLPack tensors, built as a shared library linked to
 * libdlbridge.so and driven from Python (tests/python/test_capi.py) with
 * tensors PyTorch produced:
 *
 *   cc -shared -fPIC -std=c11 -Wall -Wextra -Werror -Iinclude tests/c/torch_edit.c \
 *      -Ltarget/debug -ldlbridge -Wl,-rpath,$PWD/target/debug -o libtorch_edit.so
 *
 * Every function takes ownership of `m` (as dlb_import_versioned does):
 * the producer's deleter has run, or will run when dlbridge lets go, by the
 * time it returns.
 */
#include "dlbridge.h"

#if defined(_WIN32)
#define EXPORT __declspec(dllexport)
#else
#define EXPORT __attribute__((visibility("default")))
#endif

/* Imports `m`, doubles every element in place (`t *= 2`, in the producer's
 * memory), releases it, and returns the dlb_status (0 on success). */
EXPORT int double_in_place(DLManagedTensorVersioned *m) {
  dlb_tensor *t = NULL;
  dlb_status s = dlb_import_versioned(m, &t);
  if (s != DLB_OK) return (int)s;
  s = dlb_binary_scalar_i64_(t, 2, DLB_MUL);
  dlb_free(t);
  return (int)s;
}

/* Imports `m` and releases it at once: the import's status. */
EXPORT int import_status(DLManagedTensorVersioned *m) {
  dlb_tensor *t = NULL;
  dlb_status s = dlb_import_versioned(m, &t);
  dlb_free(t);
  return (int)s;
}

/* The calling thread's last dlbridge error, for the Python side's messages. */
EXPORT const char *torch_edit_last_error(void) { return dlb_last_error(); }
