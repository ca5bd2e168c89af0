/* gpu_wide_host.cu - reduction jobs whose rows are in host memory,
 * through the device's double-buffered staging (gpu_device.cu's
 * gather and submit); gpu_reducer.cu's decode_plan decodes the result.
 *
 * One gather per kind of job, for both reducers (gpu_device.cu's
 * dev_reduce: 32-bit rows; reduce_wide_job: 64-bit rows, argmin/argmax):
 *
 *  - reduce_stream, every order-free op (fsum too: gpu_xsum.cu) and
 *    argmin/argmax: slices of
 *    consecutive logical rows, 2^24 of 4 bytes or 2^23 of 8 (one staging
 *    buffer), chunk boundaries ignored; each slice's kernel (k_int, k_w64
 *    or k_arg) folds into the job's result, argmin/argmax with the slice's
 *    first logical row as its index base (the index is the logical row,
 *    docs/reduction.md).
 *  - reduce_tree, the float sums: each chunk is cut into pieces at
 *    multiples of piece_rows rows of its own (float32: 2^24, a level-3
 *    value; float64: 65536, one tile, one level-2 value), packed into
 *    slices at 4-row-aligned offsets with tile and piece tables;
 *    k_tfinish folds the pieces of each chunk by the levels from there on,
 *    then the chunk values.  A cut at a multiple of 256^2 rows of the chunk
 *    keeps the tree (docs/reduction.md, "Groups start at the chunk's first
 *    row"; gpu_internal.h).
 *  - the mask (4-byte rows, chunked on its own) is gathered by logical row
 *    into the staging buffer's mask region, parallel to the rows.
 */
#include <string.h>

#include "workers/cuda/gpu_xsum.h"

namespace WVG_NS {

#define CK(call)                                                               \
  do {                                                                         \
    cudaError_t e_ = (call);                                                   \
    if (e_ != cudaSuccess)                                                     \
      return dev_fail(err, #call, e_);                                         \
  } while (0)

int reduce_stream(gdev *g, const wv_reduce_job *job, const wv_op_plan *p,
                  wave_error *err)
{
  const int kop = kernel_op(p), key = p->key;
  const bool arg = p->path == WV_PATH_ARG, w64 = !arg && p->row_bytes == 8;
  const bool xs = p->path == WV_PATH_XSUM;
  const wave_dtype dt = p->dtype;
  const unsigned rsz = p->row_bytes;
  const uint64_t slice = (uint64_t)WVG_SLICE_ROWS * 4 / rsz;
  cursor in = {job->input, job->n_input, 0, 0, {}, rsz};
  cursor mk = {job->mask, job->n_mask, 0, 0, {}, 4};
  in.pinned.assign(job->n_input, -1);
  mk.pinned.assign(job->n_mask, -1);
  std::vector<seg> segs;
  reducer *r = &g->red;
  wreducer *w = g->wide;    /* NULL for the 32-bit reducer's jobs */
  xreducer *xr = g->xs;     /* fsum's (gpu_xsum.cu) */
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
      if (xs)
        return launch_xsum(xr, dt, dp, m, n, first, st);
      if (arg)
        return launch_arg(w, p, dp, m, n, r0, first, st);
      if (w64)
        return launch_w64(w, kop, key, dp, m, n, first, st);
      return launch_int(r, kop, key, dp, m, n, first, st);
    }, err);
    if (rv != 0)
      return rv;
  }
  return 0;
}

/* After a float sum's last slice: where there is more than one piece,
 * k_tfinish folds the pieces into chunk values (seg_first: each chunk's
 * first piece, sent to the device) and those into the result. */
template <typename T, typename R>
static int tree_finish(gdev *g, tree_bufs<T> *tb, R *res,
                       const std::vector<uint32_t> &seg_first,
                       uint32_t nchunks, uint64_t total_pieces,
                       wave_error *err)
{
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
    memcpy(g->h_seg, seg_first.data(), (size_t)nchunks * 4);
    g->h_seg[nchunks] = (uint32_t)total_pieces;
    CK(cudaMemcpyAsync(tb->seg, g->h_seg, ((size_t)nchunks + 1) * 4,
                       cudaMemcpyHostToDevice, g->compute));
    dseg = tb->seg;
  }
  CK(launch_tree_finish(tb, res, dseg, dseg ? nchunks : 1,
                        (uint32_t)total_pieces, g->compute));
  return 0;
}

template <typename T, typename R>
int reduce_tree(gdev *g, const wv_reduce_job *job, tree_bufs<T> *tb, R *res,
                uint32_t piece_rows, wave_error *err)
{
  const uint64_t rsz = sizeof(T);
  const uint64_t cap = (uint64_t)WVG_SLICE_ROWS * 4 / rsz;  /* per slice */
  /* Pieces per chunk, and the chunks that have rows. */
  uint64_t total_pieces = 0;
  uint32_t nchunks = 0;
  for (size_t c = 0; c < job->n_input; c++)
    if (job->input[c].rows > 0) {
      total_pieces += (job->input[c].rows + piece_rows - 1) / piece_rows;
      nchunks++;
    }
  CK(tree_reserve(tb, WVG_MAX_TILES, WVG_MAX_PIECES, total_pieces, nchunks));
  if (job->has_mask)
    CK(cudaMemsetAsync(&res->count, 0, sizeof res->count, g->compute));
  T *pieces_out = total_pieces == 1 ? (T *)&res->a : tb->pieces;

  cursor mk = {job->mask, job->n_mask, 0, 0, {}};
  mk.pinned.assign(job->n_mask, -1);
  std::vector<signed char> in_pinned(job->n_input, -1);
  std::vector<seg> segs;
  std::vector<uint32_t> seg_first;     /* chunk -> first piece */
  unsigned k = 0;
  uint32_t b = 0, ntiles = 0, npieces = 0;
  uint64_t piece_no = 0;

  /* Tables are built on the host first, then placed into staging by submit
   * (the staging buffer may still be in use by the previous copy). */
  std::vector<tile_desc> tiles;
  std::vector<piece_desc> pieces;
  auto send = [&](bool final) -> int {
    if (npieces == 0)
      return 0;
    slot *s = &g->slots[k & 1];
    CK(cudaEventSynchronize(s->copied));
    memcpy(s->h + WVG_TILES_OFF, tiles.data(), tiles.size() * sizeof(tile_desc));
    memcpy(s->h + WVG_PIECES_OFF, pieces.data(),
           pieces.size() * sizeof(piece_desc));
    size_t table_bytes = WVG_PIECES_OFF - WVG_TILES_OFF +
                         pieces.size() * sizeof(piece_desc);
    int has_mask = job->has_mask;
    uint32_t nt = ntiles;
    cudaStream_t st = g->compute;
    int rv = submit(g, k, segs, table_bytes, final && k == 0,
                    [=](unsigned char *d) {
      return launch_tree(tb, res, (const T *)d,
                         has_mask ? (const uint32_t *)(d + WVG_MASK_OFF) : NULL,
                         0, (const tile_desc *)(d + WVG_TILES_OFF), nt,
                         (const piece_desc *)(d + WVG_PIECES_OFF), pieces_out,
                         st);
    }, err);
    k++;
    b = ntiles = npieces = 0;
    segs.clear();
    tiles.clear();
    pieces.clear();
    return rv;
  };

  int rv;
  for (size_t c = 0; c < job->n_input; c++) {
    const wv_span *ch = &job->input[c];
    if (ch->rows == 0)
      continue;
    seg_first.push_back((uint32_t)piece_no);
    if (in_pinned[c] < 0)
      in_pinned[c] = (signed char)span_pinned(ch->data, ch->rows * rsz);
    for (uint64_t off = 0; off < ch->rows; off += piece_rows) {
      uint32_t len = (uint32_t)(ch->rows - off < piece_rows
                                    ? ch->rows - off : piece_rows);
      uint32_t nt = (len + WVG_TILE_ROWS - 1) / WVG_TILE_ROWS;
      uint32_t at = (b + 3) & ~3u;
      if ((uint64_t)at + len > cap || npieces == WVG_MAX_PIECES ||
          ntiles + nt > WVG_MAX_TILES) {
        if ((rv = send(false)) != 0)
          return rv;
        at = 0;
      }
      add_seg(&segs, (size_t)(at * rsz), (const char *)ch->data + off * rsz,
              (size_t)(len * rsz), in_pinned[c]);
      if (job->has_mask)
        gather(&mk, len, WVG_MASK_OFF + (size_t)at * 4, &segs);
      piece_desc pd = {ntiles, nt, (uint32_t)piece_no, 0};
      for (uint32_t t = 0; t < nt; t++) {
        uint32_t tr = len - t * WVG_TILE_ROWS;
        tile_desc td = {at + t * WVG_TILE_ROWS,
                        tr < WVG_TILE_ROWS ? tr : WVG_TILE_ROWS, npieces, 0};
        tiles.push_back(td);
      }
      pieces.push_back(pd);
      ntiles += nt;
      npieces++;
      piece_no++;
      b = at + len;
    }
  }
  if ((rv = send(true)) != 0)
    return rv;
  return tree_finish(g, tb, res, seg_first, nchunks, total_pieces, err);
}

template int reduce_tree(gdev *, const wv_reduce_job *, tree_bufs<float> *,
                         result *, uint32_t, wave_error *);
template int reduce_tree(gdev *, const wv_reduce_job *, tree_bufs<double> *,
                         wresult *, uint32_t, wave_error *);

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
  /* The float64 sum's pieces are one tile each. */
  rv = p->path == WV_PATH_FSUM
           ? reduce_tree(g, job, &g->wide->tree, g->wide->res, WVG_TILE_ROWS,
                         err)
           : reduce_stream(g, job, p, err);
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
