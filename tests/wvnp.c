/* wvnp.c - the reduction reference and the CPU backend over a file of raw
 * rows, for tests/numpy_check.py (the held-in NumPy cross-check of issue
 * 23: integer sums against NumPy's wrapping sums, argmin/argmax against
 * np.argmin/np.argmax).
 *
 *   wvnp DTYPE OP FILE [CHUNK_ROWS...]
 *
 * FILE holds little-endian rows of DTYPE; the optional CHUNK_ROWS cut it
 * into chunks (the rest is the last chunk).  Prints one line,
 * "bits0 bits1 count index" (hex, hex, decimal, decimal), when the
 * reference and a 3-thread CPU device agree; exits 1 with both answers
 * when they do not, 2 on bad arguments.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/base.h"
#include "core/reduce.h"
#include "workers/cpu/cpu.h"

#define NP_MAX_CHUNKS 64

static void np_print(FILE *f, const char *who, const wv_reduce_out *o)
{
  fprintf(f, "%s%s%" PRIx64 " %" PRIx64 " %" PRIu64 " %" PRId64 "\n", who,
          *who ? ": " : "", o->bits[0], o->bits[1], o->count, o->index);
}

int main(int argc, char **argv)
{
  if (argc < 4) {
    fprintf(stderr, "usage: wvnp DTYPE OP FILE [CHUNK_ROWS...]\n");
    return 2;
  }
  wave_dtype dt = wave_dtype_parse(argv[1]);
  wave_op op = wave_op_parse(argv[2]);
  if (wave_op_check(dt, op) != 0) {
    fprintf(stderr, "wvnp: %s %s: not a reduction\n", argv[1], argv[2]);
    return 2;
  }
  FILE *f = fopen(argv[3], "rb");
  if (f == NULL) {
    perror(argv[3]);
    return 2;
  }
  unsigned size = wv_dtype_size(dt);
  size_t cap = 1 << 20, len = 0;
  unsigned char *buf = malloc(cap);
  for (size_t got; buf != NULL && (got = fread(buf + len, 1, cap - len, f)) > 0;) {
    len += got;
    if (len == cap)
      buf = realloc(buf, cap *= 2);
  }
  fclose(f);
  if (buf == NULL || len % size != 0) {
    fprintf(stderr, "wvnp: %s: not whole %u-byte rows\n", argv[3], size);
    return 2;
  }
  uint64_t rows = len / size, off = 0;
  wv_span in[NP_MAX_CHUNKS];
  size_t n = 0;
  for (int i = 4; i < argc && n + 1 < NP_MAX_CHUNKS; i++) {
    uint64_t r = strtoull(argv[i], NULL, 10);
    if (r > rows - off)
      r = rows - off;
    in[n++] = (wv_span){r ? buf + size * off : NULL, r};
    off += r;
  }
  in[n++] = (wv_span){rows > off ? buf + size * off : NULL, rows - off};
  wv_reduce_job job = {.dtype = dt, .op = op, .input = in, .n_input = n,
                       .rows = rows};
  wv_reduce_out ref, cpu;
  wave_error e = {0};
  wv_device_config cfg = {.name = "cpu-np", .backend = "cpu", .threads = 3};
  wv_device *dev;
  if (wv_reduce_reference(&job, &ref, &e) != 0 ||
      wv_cpu_backend.open(&cfg, &dev, &e) != 0 ||
      wv_cpu_backend.reduce(dev, &job, &cpu, &e) != 0) {
    fprintf(stderr, "wvnp: %s\n", e.message);
    return 1;
  }
  wv_cpu_backend.close(dev);
  free(buf);
  if (memcmp(ref.bits, cpu.bits, sizeof ref.bits) != 0 ||
      ref.count != cpu.count || ref.index != cpu.index) {
    np_print(stderr, "reference", &ref);
    np_print(stderr, "cpu", &cpu);
    return 1;
  }
  np_print(stdout, "", &ref);
  return 0;
}
