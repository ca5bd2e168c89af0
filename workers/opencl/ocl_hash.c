/* ocl_hash.c - the lottery hash on an OpenCL device (docs/hash.md).
 *
 * hash_prepare: the pack's cache (built once on the host,
 * wv_pack_cache_get) is uploaded, the dataset generated on the device
 * (hash_dataset, one item per work-item) and spot-checked against the
 * CPU's wv_item_from_cache (first and last items and pseudo-random blocks);
 * then the hash kernel is built for the pack: hash.cl behind a header of
 * #defines holding the pack's constants and its program as straight-line
 * step macros (wv_ocl_hash_header).  The exchange is the one open() chose
 * (ocl_open.c); on the shuffle path the pack's own kernel is asked for its
 * sub-group size again, and a kernel whose sub-group is not 32 goes back to
 * local memory (exchange auto) or refuses the pack (exchange shuffle).
 * Up to WV_OCL_PACKS packs stay prepared per device.
 *
 * Nonces are hashed in pieces cut at absolute multiples of the piece size
 * (2^24 nonces on a GPU, 2^20 on a CPU device: at least the largest
 * segment, so no segment straddles two pieces); every touched unit is
 * computed in full and only the requested nonces are stored.
 *
 * hash_batch folds each piece on the device (hashbase.cl): per block of
 * 4096 outputs a winner count and a best; the host sums the counts (exact,
 * whatever wins) and picks the blocks that hold the first max_winners
 * winners, whose winners a second kernel writes in nonce order; one
 * work-item per segment computes its FNV-1a-64.  Only these small arrays
 * come back, plus the outputs when b->outputs asks for them.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ocl.h"
#include "core/base.h"
#include "workers/hash/hash.h"
#include "workers/hash/pack.h"

#define WV_OCL_PACKS 8

typedef struct oh_pack {
  const wv_pack *pack;
  cl_program prog;
  cl_kernel k;
  cl_mem dataset;       /* memory packs */
  int exchange;         /* 0 local, 1 khr, 2 intel */
  unsigned units;       /* units per work-group */
} oh_pack;

typedef struct oh_state {
  oh_pack packs[WV_OCL_PACKS];
  size_t n;
  wv_ocl_buf out, cnt, best, first, win, seg, fp;
} oh_state;

static uint64_t oh_piece(const wv_device *d)
{
  return d->gpu ? 1ull << 24 : 1ull << 20;
}

/* ---- the kernel's header ------------------------------------------------- */

char *wv_ocl_hash_header(const wv_pack *p, int ex, unsigned units)
{
  size_t cap = 16384;
  char *h = malloc(cap);
  if (h == NULL)
    return NULL;
  size_t n = (size_t)snprintf(h, cap,
      "#define WV_EXCHANGE %d\n#define WV_UNITS %u\n#define WV_R %u\n"
      "#define WV_ROUNDS %u\n#define WV_CLOSED %d\n"
      "#define WV_SEED 0x%016" PRIx64 "ul\n#define WV_ITEM_MASK 0x%016"
      PRIx64 "ul\n#define WV_CLOSED_KEY 0x%016" PRIx64 "ul\n"
      "#define WV_PROGRAM \\\n", ex, units, p->registers, p->rounds,
      p->closed ? 1 : 0, p->seed, p->item_mask, p->closed_key);
  unsigned xk = 0;
  for (unsigned i = 0; i < WV_PROGRAM_LEN && n < cap - 200; i++) {
    const wv_insn *in = &p->program[i];
    static const char *const nm[] = {"ADD", "SUB", "XOR", "MUL", "ROTL",
                                     "XSHR", "ADDI", "MULI", "LOAD", "XCHG"};
    int w;
    switch (in->op) {
    case WV_OP_ADDI: case WV_OP_MULI:
      w = snprintf(h + n, cap - n, "  S_%s(%u, %u, 0x%016" PRIx64 "ul) \\\n",
                   nm[in->op], in->dst, in->a, in->imm);
      break;
    case WV_OP_LOAD:
      w = snprintf(h + n, cap - n, "  S_LOAD(%u, %u) \\\n", in->dst, in->a);
      break;
    case WV_OP_XCHG:   /* parity of the exchange number: same every round */
      w = snprintf(h + n, cap - n, "  S_XCHG(%u, %u, %u, %u) \\\n", in->dst,
                   in->a, in->b, xk++ & 1u);
      break;
    default:
      w = snprintf(h + n, cap - n, "  S_%s(%u, %u, %u) \\\n",
                   nm[in->op < WV_OP_COUNT_ ? in->op : 0], in->dst, in->a,
                   in->b);
      break;
    }
    n += (size_t)w;
  }
  snprintf(h + n, cap - n, "\n");
  return h;
}

/* ---- prepare ------------------------------------------------------------- */

static oh_state *oh_state_get(wv_device *d, wave_error *err)
{
  if (d->hash_state == NULL) {
    d->hash_state = calloc(1, sizeof(oh_state));
    if (d->hash_state == NULL)
      wv_seterr(err, WAVE_ENOMEM, NULL);
  }
  return d->hash_state;
}

static void oh_pack_free(oh_pack *hp)
{
  if (hp->k != NULL)
    clReleaseKernel(hp->k);
  if (hp->prog != NULL)
    clReleaseProgram(hp->prog);
  if (hp->dataset != NULL)
    clReleaseMemObject(hp->dataset);
  memset(hp, 0, sizeof *hp);
}

void wv_ocl_hash_free(wv_device *d)
{
  oh_state *s = d->hash_state;
  if (s == NULL)
    return;
  for (size_t i = 0; i < s->n; i++)
    oh_pack_free(&s->packs[i]);
  wv_ocl_buf_free(&s->out);
  wv_ocl_buf_free(&s->cnt);
  wv_ocl_buf_free(&s->best);
  wv_ocl_buf_free(&s->first);
  wv_ocl_buf_free(&s->win);
  wv_ocl_buf_free(&s->seg);
  wv_ocl_buf_free(&s->fp);
  free(s);
  d->hash_state = NULL;
}

/* Dataset on the device, then a spot check against the CPU. */
static int oh_dataset(wv_device *d, const wv_pack *p, oh_pack *hp,
                      wave_error *err)
{
  const uint64_t *cache;
  int rv = wv_pack_cache_get(p, &cache, err);
  if (rv != 0)
    return rv;
  size_t bytes = (size_t)p->dataset_items * 8;
  if (bytes > d->max_alloc)
    return wv_seterr(err, WAVE_ENOMEM, "opencl: %s: dataset of pack %s is "
                     "%zu bytes, the device allows %" PRIu64 " per buffer",
                     d->name, p->name, bytes, (uint64_t)d->max_alloc);
  cl_int e;
  cl_mem cm = clCreateBuffer(d->ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                             (size_t)p->cache_items * 8, (void *)cache, &e);
  if (cm == NULL)
    return wv_ocl_fail(err, e, "clCreateBuffer(cache)");
  hp->dataset = clCreateBuffer(d->ctx, CL_MEM_READ_WRITE, bytes, NULL, &e);
  if (hp->dataset == NULL) {
    clReleaseMemObject(cm);
    return wv_seterr(err, WAVE_ENOMEM, "opencl: %s: dataset of %zu bytes: %s",
                     d->name, bytes, wv_ocl_errname(e));
  }
  cl_kernel k = d->k[WV_OCL_DATASET];
  cl_ulong cmask = p->cache_items - 1, first = 0, n = p->dataset_items;
  cl_uint parents = p->parents;
  clSetKernelArg(k, 0, sizeof cm, &cm);
  clSetKernelArg(k, 1, sizeof cmask, &cmask);
  clSetKernelArg(k, 2, sizeof parents, &parents);
  clSetKernelArg(k, 3, sizeof first, &first);
  clSetKernelArg(k, 4, sizeof n, &n);
  clSetKernelArg(k, 5, sizeof hp->dataset, &hp->dataset);
  size_t global = (size_t)d->units * 256 * (d->gpu ? 16 : 1);
  if (global > n)
    global = (size_t)n;
  rv = wv_ocl_launch(d, k, global, 0, NULL, err);
  if (rv == 0 && (e = clFinish(d->q)) != CL_SUCCESS)
    rv = wv_ocl_fail(err, e, "clFinish(dataset)");
  clReleaseMemObject(cm);
  if (rv != 0)
    return rv;
  /* 66 blocks of 64 items: the first, the last, 64 pseudo-random ones. */
  uint64_t got[64], seed = p->seed;
  for (unsigned b = 0; b < 66; b++) {
    uint64_t at = b == 0 ? 0 : b == 1 ? p->dataset_items - 64
                : (wv_mix64(seed += WV_GAMMA) % (p->dataset_items / 64)) * 64;
    e = clEnqueueReadBuffer(d->q, hp->dataset, CL_TRUE, at * 8, sizeof got,
                            got, 0, NULL, NULL);
    if (e != CL_SUCCESS)
      return wv_ocl_fail(err, e, "clEnqueueReadBuffer(dataset)");
    for (unsigned i = 0; i < 64; i++) {
      uint64_t want = wv_item_from_cache(cache, p->cache_items, p->parents,
                                         at + i);
      if (got[i] != want)
        return wv_seterr(err, WAVE_ESELFCHECK, "opencl: %s: pack %s: dataset "
                         "item %" PRIu64 " is %016" PRIx64 ", CPU %016" PRIx64,
                         d->name, p->name, at + i, got[i], want);
    }
  }
  return 0;
}

static int oh_build(wv_device *d, const wv_pack *p, int ex, unsigned units,
                    oh_pack *hp, wave_error *err)
{
  char *hdr = wv_ocl_hash_header(p, ex, units);
  if (hdr == NULL)
    return wv_seterr(err, WAVE_ENOMEM, NULL);
  const char *src[2] = {hdr, wv_ocl_src_hash};
  char opts[64];
  snprintf(opts, sizeof opts, "-cl-std=CL%u.%u",
           ex == 1 ? d->c_major : 1, ex == 1 ? d->c_minor : 2);
  int rv = wv_ocl_build(d, src, 2, opts, &hp->prog, err);
  free(hdr);
  if (rv != 0)
    return rv;
  cl_int e;
  hp->k = clCreateKernel(hp->prog, "hash_units", &e);
  if (hp->k == NULL)
    return wv_ocl_fail(err, e, "clCreateKernel(hash_units)");
  hp->exchange = ex;
  hp->units = units;
  return 0;
}

static int oh_find(wv_device *d, const wv_pack *p, oh_pack **out,
                   wave_error *err)
{
  oh_state *s = oh_state_get(d, err);
  if (s == NULL)
    return WAVE_ENOMEM;
  for (size_t i = 0; i < s->n; i++)
    if (s->packs[i].pack == p) {
      *out = &s->packs[i];
      return 0;
    }
  *out = NULL;
  return 1;
}

int wv_ocl_hash_prepare(wv_device *d, const wv_pack *p, wave_error *err)
{
  if (d->hash_refused)
    return wv_seterr(err, WAVE_EUNSUPPORTED, "%s", d->exchange_reason);
  oh_pack *hp;
  int rv = oh_find(d, p, &hp, err);
  if (rv <= 0)
    return rv;
  oh_state *s = d->hash_state;
  if (s->n == WV_OCL_PACKS) {   /* forget the oldest */
    oh_pack_free(&s->packs[0]);
    memmove(&s->packs[0], &s->packs[1], (WV_OCL_PACKS - 1) * sizeof *hp);
    s->n--;
  }
  hp = &s->packs[s->n];
  memset(hp, 0, sizeof *hp);
  if (!p->closed && (rv = oh_dataset(d, p, hp, err)) != 0)
    goto fail;
  if ((rv = oh_build(d, p, d->hash_shuffle, d->hash_units, hp, err)) != 0)
    goto fail;
  if (d->hash_shuffle) {
    size_t sg = 0;
    const char *how = "";
    if (wv_ocl_kernel_subgroup(d, hp->k, 32, &sg, &how) == 0 && sg != 32) {
      if (d->want_shuffle) {
        rv = wv_seterr(err, WAVE_EUNSUPPORTED, "opencl: %s: pack %s: %s: "
                       "sub-group %zu != 32, and exchange shuffle is "
                       "configured", d->name, p->name, how, sg);
        goto fail;
      }
      clReleaseKernel(hp->k);
      clReleaseProgram(hp->prog);
      hp->k = NULL;
      hp->prog = NULL;
      if ((rv = oh_build(d, p, 0, d->gpu ? 2 : 1, hp, err)) != 0)
        goto fail;
      fprintf(stderr, "opencl: %s: pack %s: %s says sub-group %zu != 32: "
              "local memory for this pack\n", d->name, p->name, how, sg);
    }
  }
  hp->pack = p;
  s->n++;
  return 0;
fail:
  oh_pack_free(hp);
  return rv;
}

static int oh_get(wv_device *d, const wv_pack *p, oh_pack **hp,
                  wave_error *err)
{
  int rv = oh_find(d, p, hp, err);
  if (rv > 0) {
    if ((rv = wv_ocl_hash_prepare(d, p, err)) != 0)
      return rv;
    rv = oh_find(d, p, hp, err);
  }
  return rv;
}

/* ---- hashing ------------------------------------------------------------- */

/* Enqueue the outputs of nonces [lo, lo + n) (n <= the piece size) into
 * s->out[0 .. n). */
static int oh_launch(wv_device *d, oh_pack *hp, uint64_t lo, uint64_t n,
                     cl_event *ev, wave_error *err)
{
  oh_state *s = d->hash_state;
  int rv = wv_ocl_buf_reserve(d, &s->out, (size_t)oh_piece(d) * 8, err);
  if (rv != 0)
    return rv;
  cl_ulong u0 = lo >> 5, ul = (lo + (n - 1)) >> 5, clo = lo, cn = n;
  uint64_t units = ul - u0 + 1;
  uint64_t groups = (units + hp->units - 1) / hp->units;
  cl_mem ds = hp->dataset != NULL ? hp->dataset : s->out.mem;
  clSetKernelArg(hp->k, 0, sizeof ds, &ds);
  clSetKernelArg(hp->k, 1, sizeof u0, &u0);
  clSetKernelArg(hp->k, 2, sizeof ul, &ul);
  clSetKernelArg(hp->k, 3, sizeof clo, &clo);
  clSetKernelArg(hp->k, 4, sizeof cn, &cn);
  clSetKernelArg(hp->k, 5, sizeof s->out.mem, &s->out.mem);
  return wv_ocl_launch(d, hp->k, (size_t)groups * 32 * hp->units,
                       32 * hp->units, ev, err);
}

/* Length of the piece that starts at nonce, at most left. */
static uint64_t oh_piece_len(const wv_device *d, uint64_t nonce,
                             uint64_t left)
{
  uint64_t P = oh_piece(d);
  uint64_t to_edge = P - (nonce & (P - 1));
  return to_edge < left ? to_edge : left;
}

int wv_ocl_hash(wv_device *d, const wv_pack *p, uint64_t nonce,
                uint64_t count, uint64_t *out, wave_error *err)
{
  if (count == 0)
    return 0;
  if (nonce + (count - 1) < nonce)
    return wv_seterr(err, WAVE_ERANGE, "nonces beyond 2^64");
  oh_pack *hp;
  int rv = oh_get(d, p, &hp, err);
  if (rv != 0)
    return rv;
  oh_state *s = d->hash_state;
  for (uint64_t done = 0; done < count;) {
    uint64_t n = oh_piece_len(d, nonce + done, count - done);
    if ((rv = oh_launch(d, hp, nonce + done, n, NULL, err)) != 0)
      return rv;
    cl_int e = clEnqueueReadBuffer(d->q, s->out.mem, CL_TRUE, 0,
                                   (size_t)n * 8, out + done, 0, NULL, NULL);
    if (e != CL_SUCCESS)
      return wv_ocl_fail(err, e, "clEnqueueReadBuffer(outputs)");
    done += n;
  }
  return 0;
}

/* ---- the device fold ----------------------------------------------------- */

/* The host's part of a fold: the best over the blocks' bests, the winner
 * count, and first[i], block i's first winner slot; [*b0, *b1) are the
 * blocks with winners that still fit.  Returns the piece's winner count
 * (also added to b->winner_count). */
static uint64_t oh_fold_best(wv_hash_batch *b, uint64_t lo, uint64_t n,
                             cl_uint nb, const uint32_t *cnt,
                             const uint64_t *best, uint32_t *first,
                             cl_uint *b0, cl_uint *b1)
{
  uint64_t wc = 0;
  *b0 = nb;
  *b1 = 0;
  for (cl_uint i = 0; i < nb; i++) {
    uint64_t o = best[2 * i], idx = best[2 * i + 1];
    if (idx < n && (o < b->best_output ||
                    (o == b->best_output && lo + idx < b->best_nonce))) {
      b->best_output = o;
      b->best_nonce = lo + idx;
    }
    uint64_t at = b->n_winners + wc;
    first[i] = at < b->max_winners ? (uint32_t)at : (uint32_t)b->max_winners;
    if (cnt[i] > 0 && at < b->max_winners) {
      if (*b0 == nb)
        *b0 = i;
      *b1 = i + 1;
    }
    wc += cnt[i];
  }
  b->winner_count += wc;
  return wc;
}

/* The winners of blocks [b0, b1) of the piece [lo, lo + n) in s->out,
 * collected on the device into their slots and appended to b (wc: the
 * piece's winner count). */
static int oh_fold_winners(wv_device *d, wv_hash_batch *b, uint64_t lo,
                           uint64_t n, cl_uint nb, const uint32_t *first,
                           cl_uint b0, cl_uint b1, uint64_t wc,
                           wave_error *err)
{
  oh_state *s = d->hash_state;
  cl_uint cn = (cl_uint)n;
  cl_ulong tg = b->target;
  cl_uint mw = (cl_uint)b->max_winners;
  int rv;
  if ((rv = wv_ocl_buf_reserve(d, &s->win, b->max_winners * 16, err)) != 0)
    return rv;
  cl_int e = clEnqueueWriteBuffer(d->q, s->first.mem, CL_FALSE, 0,
                                  (size_t)nb * 4, first, 0, NULL, NULL);
  if (e != CL_SUCCESS)
    return wv_ocl_fail(err, e, "clEnqueueWriteBuffer(first)");
  cl_kernel kw = d->k[WV_OCL_FOLD_WINNERS];
  clSetKernelArg(kw, 0, sizeof s->out.mem, &s->out.mem);
  clSetKernelArg(kw, 1, sizeof cn, &cn);
  clSetKernelArg(kw, 2, sizeof tg, &tg);
  clSetKernelArg(kw, 3, sizeof b0, &b0);
  clSetKernelArg(kw, 4, sizeof s->first.mem, &s->first.mem);
  clSetKernelArg(kw, 5, sizeof mw, &mw);
  clSetKernelArg(kw, 6, sizeof s->win.mem, &s->win.mem);
  if ((rv = wv_ocl_launch(d, kw, (size_t)(b1 - b0) * 256, 256, NULL, err)))
    return rv;
  uint64_t nw = b->n_winners + wc < b->max_winners ? wc
                                                   : b->max_winners - b->n_winners;
  uint64_t *w = malloc((size_t)nw * 16);
  if (w == NULL)
    return wv_seterr(err, WAVE_ENOMEM, NULL);
  e = clEnqueueReadBuffer(d->q, s->win.mem, CL_TRUE, b->n_winners * 16,
                          (size_t)nw * 16, w, 0, NULL, NULL);
  if (e != CL_SUCCESS) {
    free(w);
    return wv_ocl_fail(err, e, "clEnqueueReadBuffer(winners)");
  }
  for (uint64_t i = 0; i < nw; i++) {
    b->winners[b->n_winners].nonce = lo + w[2 * i];
    b->winners[b->n_winners].output = w[2 * i + 1];
    b->n_winners++;
  }
  free(w);
  return 0;
}

/* Fold the piece [lo, lo + n) now in s->out into b; *k is the next
 * segment slot. */
static int oh_fold(wv_device *d, wv_hash_batch *b, uint64_t lo, uint64_t n,
                   uint64_t *k, wave_error *err)
{
  oh_state *s = d->hash_state;
  const cl_uint nb = (cl_uint)((n + WV_OCL_FOLD_BLOCK - 1) / WV_OCL_FOLD_BLOCK);
  int rv;
  if ((rv = wv_ocl_buf_reserve(d, &s->cnt, (size_t)nb * 4, err)) != 0 ||
      (rv = wv_ocl_buf_reserve(d, &s->best, (size_t)nb * 16, err)) != 0 ||
      (rv = wv_ocl_buf_reserve(d, &s->first, (size_t)nb * 4, err)) != 0)
    return rv;
  /* Segments of the piece: cut at absolute multiples of 2^s. */
  const unsigned sl = b->seg_log2;
  uint64_t nseg = wv_seg_count(lo, n, sl);
  uint32_t *seg = malloc((size_t)nseg * 8 + (size_t)nb * 24);
  if (seg == NULL)
    return wv_seterr(err, WAVE_ENOMEM, NULL);
  uint32_t *cnt = seg + 2 * nseg, *first = cnt + nb;
  /* seg: 8 nseg bytes, cnt and first 8 nb more: best stays 8-aligned. */
  uint64_t *best = (uint64_t *)(void *)(first + nb);
  for (uint64_t i = 0, j = 0; i < n; j++) {
    uint64_t x = lo + i;
    uint64_t left = (((x >> sl) + 1) << sl) - x;
    uint64_t len = n - i;
    if (left != 0 && left < len)
      len = left;
    seg[2 * j] = (uint32_t)i;
    seg[2 * j + 1] = (uint32_t)len;
    i += len;
  }
  cl_int e;
  cl_uint cn = (cl_uint)n, ns = (cl_uint)nseg;
  cl_ulong tg = b->target;
  cl_kernel kc = d->k[WV_OCL_FOLD_COUNT];
  clSetKernelArg(kc, 0, sizeof s->out.mem, &s->out.mem);
  clSetKernelArg(kc, 1, sizeof cn, &cn);
  clSetKernelArg(kc, 2, sizeof tg, &tg);
  clSetKernelArg(kc, 3, sizeof s->cnt.mem, &s->cnt.mem);
  clSetKernelArg(kc, 4, sizeof s->best.mem, &s->best.mem);
  if ((rv = wv_ocl_buf_reserve(d, &s->seg, (size_t)nseg * 8, err)) != 0 ||
      (rv = wv_ocl_buf_reserve(d, &s->fp, (size_t)nseg * 8, err)) != 0 ||
      (rv = wv_ocl_launch(d, kc, (size_t)nb * 256, 256, NULL, err)) != 0)
    goto out;
  e = clEnqueueWriteBuffer(d->q, s->seg.mem, CL_FALSE, 0, (size_t)nseg * 8,
                           seg, 0, NULL, NULL);
  if (e != CL_SUCCESS) {
    rv = wv_ocl_fail(err, e, "clEnqueueWriteBuffer(segments)");
    goto out;
  }
  cl_kernel ks = d->k[WV_OCL_FOLD_SEGMENTS];
  clSetKernelArg(ks, 0, sizeof s->out.mem, &s->out.mem);
  clSetKernelArg(ks, 1, sizeof s->seg.mem, &s->seg.mem);
  clSetKernelArg(ks, 2, sizeof ns, &ns);
  clSetKernelArg(ks, 3, sizeof s->fp.mem, &s->fp.mem);
  size_t sgl = ((size_t)nseg + 63) / 64 * 64;
  if ((rv = wv_ocl_launch(d, ks, sgl, 64, NULL, err)) != 0)
    goto out;
  if ((e = clEnqueueReadBuffer(d->q, s->cnt.mem, CL_FALSE, 0, (size_t)nb * 4,
                               cnt, 0, NULL, NULL)) != CL_SUCCESS ||
      (e = clEnqueueReadBuffer(d->q, s->best.mem, CL_FALSE, 0,
                               (size_t)nb * 16, best, 0, NULL, NULL)) !=
        CL_SUCCESS ||
      (e = clEnqueueReadBuffer(d->q, s->fp.mem, CL_TRUE, 0, (size_t)nseg * 8,
                               b->seg_fp + *k, 0, NULL, NULL)) != CL_SUCCESS) {
    rv = wv_ocl_fail(err, e, "clEnqueueReadBuffer(fold)");
    goto out;
  }
  *k += nseg;
  /* Best and counts; winners' blocks. */
  cl_uint b0, b1;
  uint64_t wc = oh_fold_best(b, lo, n, nb, cnt, best, first, &b0, &b1);
  if (b0 < b1)
    rv = oh_fold_winners(d, b, lo, n, nb, first, b0, b1, wc, err);
out:
  if (rv != 0)
    clFinish(d->q);   /* nothing may still read seg[] */
  free(seg);
  return rv;
}

int wv_ocl_hash_batch(wv_device *d, const wv_pack *p, wv_hash_batch *b,
                      wave_error *err)
{
  b->n_winners = 0;
  b->winner_count = 0;
  b->best_output = UINT64_MAX;
  b->best_nonce = b->nonce;
  if (b->count == 0 || b->nonce + (b->count - 1) < b->nonce)
    return wv_seterr(err, WAVE_ERANGE, "nonce range [%" PRIu64 ", +%" PRIu64
                     ") is empty or beyond 2^64", b->nonce, b->count);
  if (b->seg_log2 < WV_SEG_LOG2_MIN || b->seg_log2 > WV_SEG_LOG2_MAX)
    return wv_seterr(err, WAVE_EARG, "segment log2 %u", b->seg_log2);
  oh_pack *hp;
  int rv = oh_get(d, p, &hp, err);
  if (rv != 0)
    return rv;
  oh_state *s = d->hash_state;
  uint64_t k = 0;
  for (uint64_t done = 0; done < b->count;) {
    uint64_t lo = b->nonce + done;
    uint64_t n = oh_piece_len(d, lo, b->count - done);
    if ((rv = oh_launch(d, hp, lo, n, NULL, err)) != 0)
      return rv;
    if (b->outputs != NULL) {
      cl_int e = clEnqueueReadBuffer(d->q, s->out.mem, CL_FALSE, 0,
                                     (size_t)n * 8, b->outputs + done, 0,
                                     NULL, NULL);
      if (e != CL_SUCCESS)
        return wv_ocl_fail(err, e, "clEnqueueReadBuffer(outputs)");
    }
    if ((rv = oh_fold(d, b, lo, n, &k, err)) != 0)
      return rv;
    done += n;
  }
  return 0;
}

/* ---- bench --------------------------------------------------------------- */

int wv_ocl_hash_resident(wv_device *d, const wv_pack *p, uint64_t count,
                         double *seconds, wave_error *err)
{
  oh_pack *hp;
  int rv = oh_get(d, p, &hp, err);
  if (rv != 0)
    return rv;
  cl_event e0 = NULL, e1 = NULL;
  for (uint64_t done = 0; done < count && rv == 0;) {
    uint64_t n = oh_piece_len(d, done, count - done);
    cl_event ev = NULL;
    rv = oh_launch(d, hp, done, n, &ev, err);
    if (e0 == NULL) {
      e0 = ev;
    } else {
      if (e1 != NULL)
        clReleaseEvent(e1);
      e1 = ev;
    }
    done += n;
  }
  if (rv == 0) {
    cl_event last = e1 != NULL ? e1 : e0;
    cl_int e = clWaitForEvents(1, &last);
    if (e != CL_SUCCESS) {
      rv = wv_ocl_fail(err, e, "clWaitForEvents(hash)");
    } else {
      cl_ulong t0 = 0, t1 = 0;
      clGetEventProfilingInfo(e0, CL_PROFILING_COMMAND_START, sizeof t0, &t0,
                              NULL);
      clGetEventProfilingInfo(last, CL_PROFILING_COMMAND_END, sizeof t1, &t1,
                              NULL);
      *seconds = (double)(t1 - t0) * 1e-9;
    }
  }
  if (e0 != NULL)
    clReleaseEvent(e0);
  if (e1 != NULL)
    clReleaseEvent(e1);
  return rv;
}
