/* reduce_harness.h - helpers shared by the reduction suites (test_reduce.c:
 * hand-worked cases; test_reduce_random.c: random jobs and the CPU device).
 * Expectations never come from the code under test: t_expect() is an
 * independent formulation (reduce_harness.c).
 */
#ifndef WAVE_TESTS_REDUCE_HARNESS_H
#define WAVE_TESTS_REDUCE_HARNESS_H

#include <stdint.h>
#include <string.h>

#include "core/base.h"
#include "core/reduce.h"
#include "workers/worker.h"

static inline uint32_t fbits(float f) { uint32_t b; memcpy(&b, &f, 4); return b; }
static inline float bitsf(uint32_t b) { float f; memcpy(&f, &b, 4); return f; }

/* A job over one concatenated buffer, cut into chunks.  Rows start one row
 * into the allocation, so the data is 4- but not 8-byte aligned. */
typedef struct tjob {
  uint32_t *alloc, *data;   /* data = alloc + 1 */
  uint32_t *malloc_, *mask; /* mask = malloc_ + 1, or NULL */
  size_t rows;
  wv_span *in, *mk;
  wv_reduce_job job;
} tjob;

/* Compare an out with the expectation, with a readable message. */
#define T_SAME(got, want, what)                                                \
  do {                                                                         \
    ck_assert_msg((got).n_values == (want).n_values &&                         \
                      (got).bits[0] == (want).bits[0] &&                       \
                      ((want).n_values < 2 || (got).bits[1] == (want).bits[1]) && \
                      (got).count == (want).count &&                           \
                      (got).index == (want).index,                             \
                  "%s: got %08llx %08llx count %llu index %lld, want %08llx "  \
                  "%08llx count %llu index %lld", what,                        \
                  (unsigned long long)(got).bits[0],                           \
                  (unsigned long long)(got).bits[1],                           \
                  (unsigned long long)(got).count, (long long)(got).index,     \
                  (unsigned long long)(want).bits[0],                          \
                  (unsigned long long)(want).bits[1],                          \
                  (unsigned long long)(want).count, (long long)(want).index);  \
  } while (0)

/* The "semantics" cases also run on this CPU device (test_reduce.c's
 * fixture), so every hand-worked expectation pins the backend as well. */
extern wv_device *t_dev;

/* Every dtype/op pair the reduction serves. */
typedef struct { wave_dtype d; wave_op op; } t_dtop;
extern const t_dtop t_pairs[];
extern const size_t t_n_pairs;
#define T_N_PAIRS t_n_pairs

uint64_t t_rng(uint64_t *s);   /* splitmix64 */
void t_cut(wv_span **out, size_t *n_out, const uint32_t *base,
           const size_t *sizes, size_t n);
/* rows of data (uninitialised, caller fills t->data / t->mask). */
void t_init(tjob *t, wave_dtype d, wave_op op, const size_t *in_sizes,
            size_t n_in, const size_t *mk_sizes, size_t n_mk, int has_mask);
void t_one(tjob *t, wave_dtype d, wave_op op, size_t rows, int masked);
void t_free(tjob *t);
int t_sel(const tjob *t, size_t i);
/* G(v) by folding halves: the pairwise tree over n values at stride s. */
float t_pair(const float *v, size_t o, size_t s, size_t n);
/* The independent expectation of t's job. */
void t_expect(const tjob *t, wv_reduce_out *o);
/* The reference's answer, checked against t_dev's when it is open. */
wv_reduce_out t_ref(const tjob *t);
/* Literal expectation for single-value results. */
void t_want(const tjob *t, uint32_t bits, uint64_t count);
void t_fill_floats(tjob *t, const float *v, size_t n);

#endif
