/* gpu_wide_host.cu - 64-bit and argmin/argmax jobs whose rows are in host
 * memory, through the device's double-buffered staging (gpu_device.cu's
 * gather and submit); gpu_reducer.cu's decode_plan decodes the result.
 *
 *  - streaming ops (order-free 64-bit ops, argmin/argmax of any dtype):
 *    slices of consecutive logical rows, 2^24 of 4 bytes or 2^23 of 8
 *    (one staging buffer), chunk boundaries ignored; each slice's kernel
 *    folds into the job's result, argmin/argmax with the slice's first
 *    logical row as its index base (the index is the logical row,
 *    docs/reduction.md).
 *  - float64 sum: each chunk is cut at multiples of 65536 rows of its own
 *    (one tile, one level-2 value: a "piece" here), packed into slices at
 *    4-row-aligned offsets with tile and piece tables; k_dfinish folds the
 *    pieces of each chunk by the levels from level 3 on, then the chunk
 *    values.  A cut at a multiple of 256^2 rows of the chunk keeps the tree
 *    (docs/reduction.md, "Groups start at the chunk's first row").
 *  - the mask (4-byte rows, chunked on its own) is gathered by logical row
 *    into the staging buffer's mask region, parallel to the rows.
 */
#include <string.h>

#include "workers/cuda/gpu_wide.h"

namespace WVG_NS {

#define CK(call)                                                               \
  do {                                                                         \
    cudaError_t e_ = (call);                                                   \
    if (e_ != cudaSuccess)                                                     \
      return dev_fail(err, #call, e_);                                         \
  } while (0)

/* Rows of one 64-bit float sum piece: one tile. */
#define WVG_DPIECE_ROWS WVG_TILE_ROWS

static int wide_stream(gdev *g, const wv_reduce_job *job,
                       const wv_op_plan *p, wave_error *err)
{
  const int kop = kernel_op(p), key = p->key;
  const unsigned rsz = p->row_bytes;
  const uint64_t slice = (uint64_t)WVG_SLICE_ROWS * 4 / rsz;
  cursor in = {job->input, job->n_input, 0, 0, {}, rsz};
  cursor mk = {job->mask, job->n_mask, 0, 0, {}, 4};
  in.pinned.assign(job->n_input, -1);
  mk.pinned.assign(job->n_mask, -1);
  std::vector<seg> segs;
  wreducer *w = g->wide;
  unsigned k = 0;
  for (uint64_t r0 = 0; r0 < job->rows; r0 += slice, k++) {
    uint64_t n = job->rows - r0 < slice ? job->rows - r0 : slice;
    segs.clear();
    gather(&in, n, 0, &segs);
    if (job->has_mask)
      gather(&mk, n, WVG_MASK_OFF, &segs);
    int first = k == 0, has_mask = job->has_mask;
    cudaStream_t st = g->compute;
    bool direct = job->rows <= slice;
    int rv = submit(g, k, segs, 0, direct, [=](unsigned char *dp) {
      const uint32_t *m = has_mask ? (const uint32_t *)(dp + WVG_MASK_OFF)
                                   : NULL;
      if (kop == K_ARGMIN || kop == K_ARGMAX)
        return launch_arg(w, p, dp, m, n, r0, first, st);
      return launch_w64(w, kop, key, dp, m, n, first, st);
    }, err);
    if (rv != 0)
      return rv;
  }
  return 0;
}

/* The pieces of a float64 sum folded: per chunk (seg_first), then across
 * chunks, where there is more than one piece. */
static int dsum_finish(gdev *g, const std::vector<uint32_t> &seg_first,
                       uint32_t nchunks, uint64_t total_pieces,
                       wave_error *err)
{
  wreducer *w = g->wide;
  if (total_pieces <= 1)
    return 0;
  const uint32_t *dseg = NULL;
  if (nchunks > 1) {
    if (g->h_seg_cap < (size_t)nchunks + 1) {
      if (g->h_seg != NULL)
        (void)cudaFreeHost(g->h_seg);
      g->h_seg = NULL;
      g->h_seg_cap = 0;
      CK(cudaHostAlloc((void **)&g->h_seg, ((size_t)nchunks + 1) * 4,
                       cudaHostAllocDefault));
      g->h_seg_cap = (size_t)nchunks + 1;
    }
    /* The previous job's copy out of h_seg finished with that job. */
    memcpy(g->h_seg, seg_first.data(), (size_t)nchunks * 4);
    g->h_seg[nchunks] = (uint32_t)total_pieces;
    CK(cudaMemcpyAsync(w->tree.seg, g->h_seg, ((size_t)nchunks + 1) * 4,
                       cudaMemcpyHostToDevice, g->compute));
    dseg = w->tree.seg;
  }
  CK(launch_tree_finish(&w->tree, w->res, dseg,
                        dseg ? nchunks : 1, (uint32_t)total_pieces,
                    g->compute));
  return 0;
}

/* The slice under construction of a float64 sum. */
struct dslice {
  std::vector<seg> segs;
  std::vector<tile_desc> tiles;
  std::vector<piece_desc> pieces;
  uint32_t b;                 /* rows used */
  unsigned k;                 /* slices sent */
};

static int dsum_send(gdev *g, dslice *s, bool final, int has_mask,
                     double *pieces_out, wave_error *err)
{
  if (s->pieces.empty())
    return 0;
  slot *sl = &g->slots[s->k & 1];
  CK(cudaEventSynchronize(sl->copied));
  memcpy(sl->h + WVG_TILES_OFF, s->tiles.data(),
         s->tiles.size() * sizeof(tile_desc));
  memcpy(sl->h + WVG_PIECES_OFF, s->pieces.data(),
         s->pieces.size() * sizeof(piece_desc));
  size_t table_bytes = WVG_PIECES_OFF - WVG_TILES_OFF +
                       s->pieces.size() * sizeof(piece_desc);
  wreducer *w = g->wide;
  uint32_t nt = (uint32_t)s->tiles.size();
  cudaStream_t st = g->compute;
  int rv = submit(g, s->k, s->segs, table_bytes, final && s->k == 0,
                  [=](unsigned char *d) {
    return launch_tree(&w->tree, w->res, (const double *)d,
                       has_mask ? (const uint32_t *)(d + WVG_MASK_OFF) : NULL,
                       0, (const tile_desc *)(d + WVG_TILES_OFF), nt,
                       (const piece_desc *)(d + WVG_PIECES_OFF), pieces_out,
                       st);
  }, err);
  s->k++;
  s->b = 0;
  s->segs.clear();
  s->tiles.clear();
  s->pieces.clear();
  return rv;
}

static int wide_dsum(gdev *g, const wv_reduce_job *job, wave_error *err)
{
  const uint64_t cap = WVG_SLICE_ROWS / 2;  /* 8-byte rows per slice */
  uint64_t total_pieces = 0;
  uint32_t nchunks = 0;
  for (size_t c = 0; c < job->n_input; c++)
    if (job->input[c].rows > 0) {
      total_pieces += (job->input[c].rows + WVG_DPIECE_ROWS - 1) /
                      WVG_DPIECE_ROWS;
      nchunks++;
    }
  wreducer *w = g->wide;
  CK(wreducer_reserve(w, WVG_MAX_TILES, WVG_MAX_PIECES, total_pieces,
                      nchunks));
  if (job->has_mask)
    CK(cudaMemsetAsync(&w->res->count, 0, sizeof w->res->count, g->compute));
  double *pieces_out = total_pieces == 1 ? (double *)&w->res->a
                                          : w->tree.pieces;
  cursor mk = {job->mask, job->n_mask, 0, 0, {}, 4};
  mk.pinned.assign(job->n_mask, -1);
  std::vector<uint32_t> seg_first;
  dslice s;
  s.b = 0;
  s.k = 0;
  uint64_t piece_no = 0;
  int rv;
  for (size_t c = 0; c < job->n_input; c++) {
    const wv_span *ch = &job->input[c];
    if (ch->rows == 0)
      continue;
    seg_first.push_back((uint32_t)piece_no);
    int pinned = span_pinned(ch->data, ch->rows * 8);
    for (uint64_t off = 0; off < ch->rows; off += WVG_DPIECE_ROWS) {
      uint32_t len = (uint32_t)(ch->rows - off < WVG_DPIECE_ROWS
                                    ? ch->rows - off : WVG_DPIECE_ROWS);
      uint32_t at = (s.b + 3) & ~3u;
      if ((uint64_t)at + len > cap || s.pieces.size() == WVG_MAX_PIECES) {
        if ((rv = dsum_send(g, &s, false, job->has_mask, pieces_out, err)))
          return rv;
        at = 0;
      }
      add_seg(&s.segs, (size_t)at * 8, (const char *)ch->data + off * 8,
              (size_t)len * 8, pinned);
      if (job->has_mask)
        gather(&mk, len, WVG_MASK_OFF + (size_t)at * 4, &s.segs);
      uint32_t t = (uint32_t)s.tiles.size();
      piece_desc pd = {t, 1, (uint32_t)piece_no, 0};
      tile_desc td = {at, len, (uint32_t)s.pieces.size(), 0};
      s.tiles.push_back(td);
      s.pieces.push_back(pd);
      piece_no++;
      s.b = at + len;
    }
  }
  if ((rv = dsum_send(g, &s, true, job->has_mask, pieces_out, err)) != 0)
    return rv;
  return dsum_finish(g, seg_first, nchunks, total_pieces, err);
}

static int wide_open(gdev *g, wave_error *err)
{
  wreducer *w = (wreducer *)calloc(1, sizeof *w);
  if (w == NULL)
    return wv_seterr(err, WAVE_ENOMEM, NULL);
  cudaError_t e = wreducer_init(w);
  if (e == cudaSuccess)
    e = cudaHostAlloc((void **)&w->h_res, sizeof(wresult),
                      cudaHostAllocDefault);
  if (e != cudaSuccess) {
    wreducer_fini(w);
    free(w);
    return dev_fail(err, "wreducer_init", e);
  }
  g->wide = w;
  return 0;
}

int reduce_wide_job(gdev *g, const wv_reduce_job *job, wv_reduce_out *out,
                    wave_error *err)
{
  wresult zero = {0, 0, 0, WVG_NOIDX};
  if (job->rows == 0) {
    decode_wide(job->dtype, job->op, &zero, 0, out);
    return 0;
  }
  CK(cudaSetDevice(g->index));
  int rv;
  if (g->wide == NULL && (rv = wide_open(g, err)) != 0)
    return rv;
  const wv_op_plan *p = wv_op_plan_of(job->dtype, job->op);
  rv = p->path == WV_PATH_FSUM ? wide_dsum(g, job, err)
                               : wide_stream(g, job, p, err);
  if (rv != 0)
    return rv;
  wreducer *w = g->wide;
  CK(cudaMemcpyAsync(w->h_res, w->res, sizeof(wresult),
                     cudaMemcpyDeviceToHost, g->compute));
  CK(cudaStreamSynchronize(g->compute));
  CK(cudaGetLastError());
  uint64_t count = wide_counts(job->dtype, job->op, job->has_mask)
                       ? w->h_res->count : job->rows;
  decode_wide(job->dtype, job->op, w->h_res, count, out);
  return 0;
}

} /* namespace WVG_NS */
