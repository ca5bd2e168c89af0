/* bench_cpu_reduce.c - CPU backend reduce throughput against a plain memory
 * read of the same bytes, measured in the same run.
 *
 * The baseline is the cheapest thing that touches every byte: each of the
 * device's threads sums its slice of the buffer(s) as 64-bit words (a loop
 * GCC vectorizes), on the same thread pool the reductions use.  A reduction
 * that keeps up with memory shows a ratio near 1.0.  Reps alternate
 * baseline and reduction so that drift on a shared machine hits both; the
 * median of the reps is reported.
 *
 * Then fsum (issue 39) against the plain float sum of the same dtype, over
 * the same bytes, same device, reps alternating the two: float32 (N rows)
 * and float64 (N / 2 rows), rows of a narrow range of exponents and rows
 * of every finite exponent, and a masked narrow case.  Beside the ratio
 * of throughputs (wall clock), the ratio of the process's CPU time per
 * call, sum's over fsum's (the pool's idle workers block, so this is the
 * work's): on a loaded machine wall-clock ratios swing with the
 * scheduler, CPU time much less.
 *
 *   bench_cpu_reduce [--rows N] [--threads T] [--reps R] [--fsum-only]
 *   (defaults: 2^26 rows = 256 MiB per buffer, all CPUs, 9 reps)
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/base.h"
#include "workers/cpu/cpu.h"
#include "core/reduce.h"

static double bc_now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

typedef struct bc_read {
  const unsigned char *buf[2];
  size_t bytes, n_bufs, parts;
  uint64_t sums[1024];
} bc_read;

static void bc_read_task(void *arg, size_t task, unsigned worker)
{
  (void)worker;
  bc_read *r = arg;
  size_t words = r->bytes / 8, per = (words + r->parts - 1) / r->parts;
  size_t lo = task * per, hi = lo + per < words ? lo + per : words;
  uint64_t s = 0;
  for (size_t b = 0; b < r->n_bufs; b++)
    for (size_t i = lo; i < hi; i++) {
      uint64_t w;
      memcpy(&w, r->buf[b] + 8 * i, 8);
      s += w;
    }
  r->sums[task] = s;
}

static double bc_time_read(wv_device *dev, bc_read *r)
{
  double t = bc_now();
  wv_cpu_pool_run(dev, r->parts, bc_read_task, r);
  return bc_now() - t;
}

static double bc_cpu_now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* The call's wall time; its process CPU time into *cpu. */
static double bc_time_reduce(wv_device *dev, const wv_reduce_job *job,
                             double *cpu)
{
  wv_reduce_out out;
  wave_error err;
  double c = bc_cpu_now(), t = bc_now();
  if (wv_cpu_reduce(dev, job, &out, &err) != 0) {
    fprintf(stderr, "bench_cpu_reduce: %s\n", err.message);
    exit(1);
  }
  t = bc_now() - t;
  *cpu = bc_cpu_now() - c;
  return t;
}

static int bc_cmp(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double bc_median(double *v, size_t n)
{
  qsort(v, n, sizeof *v, bc_cmp);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* fsum against sum: `bytes` of rows (float32 / float64, narrow / every
 * exponent), reps alternating the two, medians. */
static void bc_fsum(wv_device *dev, size_t bytes, unsigned reps,
                    const uint32_t *mask, double *ts, double *tf)
{
  size_t rows32 = bytes / 4;
  unsigned char *buf = malloc(bytes);
  if (buf == NULL) {
    fprintf(stderr, "bench_cpu_reduce: out of memory\n");
    exit(1);
  }
  double *cs = calloc(reps, sizeof *cs), *cf = calloc(reps, sizeof *cf);
  if (cs == NULL || cf == NULL) {
    fprintf(stderr, "bench_cpu_reduce: out of memory\n");
    exit(1);
  }
  printf("\n%-24s %12s %12s %8s %10s\n", "fsum vs sum (same bytes)",
         "sum GB/s", "fsum GB/s", "ratio", "cpu ratio");
  static const struct {
    const char *name;
    wave_dtype d;
    int full, masked;
  } cases[] = {
    {"f32 narrow", WAVE_F32, 0, 0}, {"f32 every exponent", WAVE_F32, 1, 0},
    {"f32 narrow masked", WAVE_F32, 0, 1},
    {"f64 narrow", WAVE_F64, 0, 0}, {"f64 every exponent", WAVE_F64, 1, 0},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    int f64 = cases[c].d == WAVE_F64;
    size_t rows = f64 ? rows32 / 2 : rows32;
    uint64_t s = 7 + c;
    for (size_t i = 0; i < rows; i++) {
      s = s * 6364136223846793005ull + 1442695040888963407ull;
      uint64_t r = s ^ (s >> 29), q = r >> 11;
      if (f64) {
        uint64_t e = cases[c].full ? q % 2047 : 1015 + q % 16;
        uint64_t x = (r & 0x800fffffffffffffu) | e << 52;
        memcpy(buf + 8 * i, &x, 8);
      } else {
        uint32_t e = cases[c].full ? (uint32_t)(q % 255) : 119u + q % 16u;
        uint32_t x = ((uint32_t)r & 0x807fffffu) | e << 23;
        memcpy(buf + 4 * i, &x, 4);
      }
    }
    wv_span sin = {buf, rows}, smk = {mask, rows};
    wv_reduce_job job = {.dtype = cases[c].d, .op = WAVE_SUM, .input = &sin,
                         .n_input = 1, .mask = &smk,
                         .n_mask = cases[c].masked,
                         .has_mask = cases[c].masked, .rows = rows};
    wv_reduce_job fj = job;
    fj.op = WAVE_FSUM;
    bc_time_reduce(dev, &job, &cs[0]);  /* warm-up */
    bc_time_reduce(dev, &fj, &cf[0]);
    for (unsigned k = 0; k < reps; k++) {
      ts[k] = bc_time_reduce(dev, &job, &cs[k]);
      tf[k] = bc_time_reduce(dev, &fj, &cf[k]);
    }
    double moved = (double)bytes + (cases[c].masked ? rows * 4.0 : 0);
    double gs = moved / bc_median(ts, reps) / 1e9;
    double gf = moved / bc_median(tf, reps) / 1e9;
    double cpu = bc_median(cs, reps) / bc_median(cf, reps);
    printf("%-24s %12.2f %12.2f %8.2f %10.2f\n", cases[c].name, gs, gf,
           gf / gs, cpu);
  }
  free(cs);
  free(cf);
  free(buf);
}

int main(int argc, char **argv)
{
  size_t rows = (size_t)1 << 26;
  unsigned threads = 0, reps = 9;
  int only_fsum = 0;
  for (int i = 1; i < argc; i += 2) {
    if (strcmp(argv[i], "--fsum-only") == 0) {
      only_fsum = 1;
      i--;
    } else if (i + 1 >= argc) {
      fprintf(stderr, "bench_cpu_reduce: %s needs a value\n", argv[i]);
      return 2;
    } else if (strcmp(argv[i], "--rows") == 0)
      rows = (size_t)strtoull(argv[i + 1], NULL, 0);
    else if (strcmp(argv[i], "--threads") == 0)
      threads = (unsigned)strtoul(argv[i + 1], NULL, 0);
    else if (strcmp(argv[i], "--reps") == 0)
      reps = (unsigned)strtoul(argv[i + 1], NULL, 0);
    else {
      fprintf(stderr, "usage: %s [--rows N] [--threads T] [--reps R] "
              "[--fsum-only]\n", argv[0]);
      return 2;
    }
  }
  if (reps < 1 || reps > 1000 || rows < 1024) {
    fprintf(stderr, "bench_cpu_reduce: need reps 1..1000, rows >= 1024\n");
    return 2;
  }

  wv_device_config cfg = {.name = "bench", .backend = "cpu",
                          .threads = threads};
  wv_device *dev = NULL;
  wave_error err;
  if (wv_cpu_backend.open(&cfg, &dev, &err) != 0) {
    fprintf(stderr, "bench_cpu_reduce: %s\n", err.message);
    return 1;
  }
  wv_caps caps;
  wv_cpu_backend.caps(dev, &caps);

  uint32_t *in = malloc(rows * 4), *mask = malloc(rows * 4);
  if (in == NULL || mask == NULL) {
    fprintf(stderr, "bench_cpu_reduce: out of memory\n");
    return 1;
  }
  uint64_t s = 1;
  for (size_t i = 0; i < rows; i++) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    uint32_t r = (uint32_t)(s >> 32);
    in[i] = (r & 0x807fffffu) | (120u + (r >> 23) % 16u) << 23;
    mask[i] = (r >> 7) & 1;
  }

  printf("bench_cpu_reduce: %s, %zu rows (%.0f MiB per buffer), %u reps, "
         "median\n", caps.description, rows, rows * 4.0 / (1 << 20), reps);
  printf("%-16s %12s %12s %8s\n", "case", "read GB/s", "reduce GB/s",
         "ratio");
  static const struct {
    const char *name;
    wave_dtype d;
    wave_op op;
    int masked;
  } cases[] = {
    {"u32 sum", WAVE_U32, WAVE_SUM, 0},
    {"u32 max", WAVE_U32, WAVE_MAX, 0},
    {"f32 sum", WAVE_F32, WAVE_SUM, 0},
    {"f32 sum masked", WAVE_F32, WAVE_SUM, 1},
  };
  double *tr = calloc(reps, sizeof *tr), *tx = calloc(reps, sizeof *tx);
  if (tr == NULL || tx == NULL)
    return 1;
  for (size_t c = 0; !only_fsum && c < sizeof cases / sizeof cases[0];
       c++) {
    wv_span sin = {in, rows}, smk = {mask, rows};
    wv_reduce_job job = {.dtype = cases[c].d, .op = cases[c].op,
                         .input = &sin, .n_input = 1, .mask = &smk,
                         .n_mask = cases[c].masked, .has_mask =
                         cases[c].masked, .rows = rows};
    bc_read r = {.buf = {(const unsigned char *)in,
                         (const unsigned char *)mask},
                 .bytes = rows * 4, .n_bufs = cases[c].masked ? 2 : 1,
                 .parts = dev->threads < 1024 ? dev->threads : 1024};
    size_t bytes = rows * 4 * r.n_bufs;
    wv_reduce_out out;
    wv_cpu_reduce(dev, &job, &out, &err);  /* warm-up: page faults */
    bc_time_read(dev, &r);
    for (unsigned k = 0; k < reps; k++) {
      tr[k] = bc_time_read(dev, &r);
      double t = bc_now();
      if (wv_cpu_reduce(dev, &job, &out, &err) != 0) {
        fprintf(stderr, "bench_cpu_reduce: %s\n", err.message);
        return 1;
      }
      tx[k] = bc_now() - t;
    }
    double read = bytes / bc_median(tr, reps) / 1e9;
    double red = bytes / bc_median(tx, reps) / 1e9;
    printf("%-16s %12.2f %12.2f %8.2f\n", cases[c].name, read, red,
           red / read);
  }
  bc_fsum(dev, rows * 4, reps, mask, tr, tx);
  free(tr);
  free(tx);
  free(in);
  free(mask);
  wv_cpu_backend.close(dev);
  return 0;
}
