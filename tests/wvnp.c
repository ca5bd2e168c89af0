/* wvnp.c - the reduction reference and the CPU backend over a file of raw
 * rows, for tests/numpy_check.py (the held-in NumPy cross-check of issue
 * 23: integer sums against NumPy's wrapping sums, argmin/argmax against
 * np.argmin/np.argmax).
 *
 *   wvnp DTYPE OP FILE [--mask=MASKFILE [--mask-cuts=R,R,...]]
 *        [CHUNK_ROWS...]
 *
 * FILE holds little-endian rows of DTYPE; the optional CHUNK_ROWS cut it
 * into chunks (the rest is the last chunk); MASKFILE, one uint32 row per
 * input row (nonzero selects), is the job's mask, in one chunk or cut
 * after the rows --mask-cuts lists (tests/fsum_ref.py, issue 39: fsum's
 * answer under any cut; fsum's exact partials must agree too).  Prints one line,
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

/* The whole of path, malloc'd, its length in *len; NULL when unreadable. */
static unsigned char *np_read(const char *path, size_t *len)
{
  FILE *f = fopen(path, "rb");
  if (f == NULL) {
    perror(path);
    return NULL;
  }
  size_t cap = 1 << 20;
  unsigned char *buf = malloc(cap);
  *len = 0;
  for (size_t got; buf != NULL && (got = fread(buf + *len, 1, cap - *len, f)) > 0;) {
    *len += got;
    if (*len == cap)
      buf = realloc(buf, cap *= 2);
  }
  fclose(f);
  return buf;
}

static void np_print(FILE *f, const char *who, const wv_reduce_out *o)
{
  fprintf(f, "%s%s%" PRIx64 " %" PRIx64 " %" PRIu64 " %" PRId64 "\n", who,
          *who ? ": " : "", o->bits[0], o->bits[1], o->count, o->index);
}

int main(int argc, char **argv)
{
  if (argc < 4) {
    fprintf(stderr, "usage: wvnp DTYPE OP FILE [--mask=MASKFILE] "
            "[CHUNK_ROWS...]\n");
    return 2;
  }
  wave_dtype dt = wave_dtype_parse(argv[1]);
  wave_op op = wave_op_parse(argv[2]);
  if (wave_op_check(dt, op) != 0) {
    fprintf(stderr, "wvnp: %s %s: not a reduction\n", argv[1], argv[2]);
    return 2;
  }
  unsigned size = wv_dtype_size(dt);
  size_t len, mlen = 0;
  unsigned char *buf = np_read(argv[3], &len), *mbuf = NULL;
  if (buf == NULL || len % size != 0) {
    fprintf(stderr, "wvnp: %s: not whole %u-byte rows\n", argv[3], size);
    return 2;
  }
  uint64_t rows = len / size, off = 0;
  int first = 4;
  if (argc > 4 && strncmp(argv[4], "--mask=", 7) == 0) {
    first = 5;
    if ((mbuf = np_read(argv[4] + 7, &mlen)) == NULL || mlen != rows * 4) {
      fprintf(stderr, "wvnp: %s: not %llu uint32 rows\n", argv[4] + 7,
              (unsigned long long)rows);
      return 2;
    }
  }
  wv_span mask[NP_MAX_CHUNKS];
  size_t nm = 0;
  uint64_t moff = 0;
  if (mbuf != NULL && argc > first &&
      strncmp(argv[first], "--mask-cuts=", 12) == 0) {
    for (const char *c = argv[first++] + 12; *c && nm + 1 < NP_MAX_CHUNKS;) {
      char *end;
      uint64_t r = strtoull(c, &end, 10);
      if (end == c)
        break;
      r = r > rows - moff ? rows - moff : r;
      mask[nm++] = (wv_span){r ? mbuf + 4 * moff : NULL, r};
      moff += r;
      c = *end == ',' ? end + 1 : end;
    }
  }
  mask[nm++] = (wv_span){rows > moff ? mbuf + 4 * moff : NULL, rows - moff};
  wv_span in[NP_MAX_CHUNKS];
  size_t n = 0;
  for (int i = first; i < argc && n + 1 < NP_MAX_CHUNKS; i++) {
    uint64_t r = strtoull(argv[i], NULL, 10);
    if (r > rows - off)
      r = rows - off;
    in[n++] = (wv_span){r ? buf + size * off : NULL, r};
    off += r;
  }
  in[n++] = (wv_span){rows > off ? buf + size * off : NULL, rows - off};
  wv_reduce_job job = {.dtype = dt, .op = op, .input = in, .n_input = n,
                       .mask = mask, .n_mask = mbuf != NULL ? nm : 0,
                       .has_mask = mbuf != NULL,
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
  free(mbuf);
  if (memcmp(ref.bits, cpu.bits, sizeof ref.bits) != 0 ||
      ref.count != cpu.count || ref.index != cpu.index ||
      memcmp(&ref.xsum, &cpu.xsum, sizeof ref.xsum) != 0) {
    np_print(stderr, "reference", &ref);
    np_print(stderr, "cpu", &cpu);
    return 1;
  }
  np_print(stdout, "", &ref);
  return 0;
}
