/* reduce.c - wave_reduce in libwaveclient: one framed message, or a stream
 * of pieces for big inputs and for a daemon that answers TOOBIG.
 *
 * Framed (docs/protocol.md "Framed requests"): the rows travel after the
 * ReduceRequest header, by place (Extent, region 0), copied once from the
 * caller's chunks into the nng message, so the daemon reduces them in the
 * buffer it received.
 *
 * Streams (docs/protocol.md "Streams"): StreamOpen announces the job and
 * learns the piece size; the pieces go as framed StreamPut messages,
 * WV_CLIENT_STREAM_DEPTH at a time on contexts of their own so that the
 * link stays busy; StreamCommit runs the job.  A failed piece aborts the
 * stream (the daemon drops it when the connection goes anyway).
 *
 * Rings (wave_reduce_ring): the same stream, but each piece is copied into
 * the next slot of a registered region and its StreamPut names the slot
 * (StreamPutRequest.from) instead of carrying the rows.  The daemon reads
 * the slot before it answers, so slot k is written again only after the
 * answer to the put that last used it: the slots are the contexts' own
 * (as many in flight as the ring has slots, at most the depth), and the
 * copy of piece k + 1 runs while the daemon reduces piece k.  That copy
 * writes around the cache (rdc_copy_ring): the slot it fills was read by
 * the daemon's core a round ago, and is read by it again next.
 */
#include <inttypes.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__)
#include <emmintrin.h>
#endif

#include <nng/nng.h>
#include <nng/protocol/reqrep0/req.h>

#include "client/client_int.h"
#include "core/base.h"
#include "core/xsum.h"
#include "wave/client.h"

/* ---- reduce ------------------------------------------------------------ */

/* The checks every way of sending a reduce_request makes before any byte
 * goes (fn names the caller in the message): the chunk arrays, their
 * count, and each chunk's data (their sum in *total_bytes).  Everything
 * else (dtype, op, lengths) is the daemon's to judge: it is the one
 * authority on what a valid job is. */
static int rdc_check(const char *fn, const wave_reduce_request *req,
                     size_t *total_bytes, wave_error *err)
{
  if ((req->n_input > 0 && req->input == NULL) ||
      (req->has_mask && req->n_mask > 0 && req->mask == NULL))
    return wv_seterr(err, WAVE_EARG, "%s: chunk array is NULL", fn);
  size_t n_mask = req->has_mask ? req->n_mask : 0;
  /* wave_reduce's chunk array holds n_input + n_mask + 1 entries: a sum
   * that wraps would size it too small for the loops that fill it. */
  const size_t max_chunks = SIZE_MAX / sizeof(ProtobufCBinaryData) - 1;
  if (n_mask > max_chunks || req->n_input > max_chunks - n_mask)
    return wv_seterr(err, WAVE_EARG, "%s: %zu + %zu chunks is too many", fn,
                     req->n_input, n_mask);
  /* A chunk without data but with a length would go out as an empty chunk
   * and the daemon would reduce fewer rows than the caller meant. */
  size_t total = 0;
  for (size_t i = 0; i < req->n_input + n_mask; i++) {
    const wave_chunk *ch = i < req->n_input ? &req->input[i]
                                            : &req->mask[i - req->n_input];
    if (ch->data == NULL && ch->bytes != 0)
      return wv_seterr(err, WAVE_EARG, "%s: %s chunk %zu has %zu bytes but "
                       "no data", fn, i < req->n_input ? "input" : "mask",
                       i < req->n_input ? i : i - req->n_input, ch->bytes);
    if (ch->bytes > SIZE_MAX - total)
      return wv_seterr(err, WAVE_EARG, "%s: chunk sizes overflow", fn);
    total += ch->bytes;
  }
  *total_bytes = total;
  return 0;
}

int wave_reduce(wave_client *c, const wave_reduce_request *req,
                wave_reduce_result *res, wave_error *err)
{
  if (c == NULL || req == NULL || res == NULL)
    return wv_seterr(err, WAVE_EARG, "wave_reduce: NULL argument");
  size_t total;
  int rv = rdc_check("wave_reduce", req, &total, err);
  if (rv != 0)
    return rv;
  size_t n_mask = req->has_mask ? req->n_mask : 0;
  /* Big inputs go in pieces (any transport): no message above a bound,
   * and TOOBIG/JOBSIZE come back before any row travels. */
  size_t n_all = req->n_input + n_mask;
  /* WAVE_CLIENT_STREAM=1 sends every job as a stream: for the tests that
   * check that each path gives the same answer (docs/cli.md). */
  const char *force = getenv("WAVE_CLIENT_STREAM");
  if ((force != NULL && strcmp(force, "1") == 0) ||
      total > WV_CLIENT_FRAME_MAX || n_all > WV_CLIENT_FRAME_MAX / 32 ||
      total + 32 * n_all + 256 > WV_CLIENT_FRAME_MAX)
    return wv_client_stream_reduce(c, req, NULL, res, err);

  /* One framed message: the rows travel after the header, by place
   * (Extent, region 0), so the daemon reduces them in the received buffer. */
  Wave__V1__Extent *ex = calloc(req->n_input + n_mask + 1, sizeof *ex);
  Wave__V1__Extent **exp = calloc(req->n_input + n_mask + 1, sizeof *exp);
  if (ex == NULL || exp == NULL) {
    free(ex);
    free(exp);
    return wv_seterr(err, WAVE_ENOMEM, NULL);
  }
  size_t off = 0;
  for (size_t i = 0; i < req->n_input + n_mask; i++) {
    const wave_chunk *ch = i < req->n_input ? &req->input[i]
                                            : &req->mask[i - req->n_input];
    wave__v1__extent__init(&ex[i]);
    ex[i].offset = off;
    ex[i].bytes = ch->data ? ch->bytes : 0;
    off += ex[i].bytes;
    exp[i] = &ex[i];
  }
  Wave__V1__ReduceRequest rr;
  wv_client_reduce_fill(&rr, req->dtype, req->op, req->has_mask, req->device,
                        exp, req->n_input, n_mask);
  WV_CLIENT_LEVEL(&rr, req);

  Wave__V1__Request r = WAVE__V1__REQUEST__INIT;
  r.body_case = WAVE__V1__REQUEST__BODY_REDUCE;
  r.reduce = &rr;
  nng_msg *msg;
  uint8_t *data;
  rv = wv_client_msg(c, &r, off, &msg, &data, err);
  if (rv == 0)
    for (size_t i = 0; i < req->n_input + n_mask; i++)
      if (ex[i].bytes) {
        const wave_chunk *ch = i < req->n_input ? &req->input[i]
                                                : &req->mask[i - req->n_input];
        memcpy(data + ex[i].offset, ch->data, ex[i].bytes);
      }
  free(ex);
  free(exp);
  if (rv != 0)
    return rv;
  Wave__V1__Response *resp;
  rv = wv_client_call_msg(c, msg, r.id, WAVE__V1__RESPONSE__BODY_REDUCE, 0,
                          &resp, err);
  if (rv == WAVE_ETOOBIG)  /* a daemon with a small request limit */
    return wv_client_stream_reduce(c, req, NULL, res, err);
  if (rv != 0)
    return rv;
  return wv_client_reduce_result(c, resp, res, err);
}

int wave_priority_parse(const char *name, wave_priority *out)
{
  static const char *const names[] = {"normal", "high", "low"};
  for (int i = 0; name != NULL && i < 3; i++)
    if (strcmp(name, names[i]) == 0) {
      *out = (wave_priority)i;
      return 0;
    }
  return -1;
}

void wv_client_reduce_fill(Wave__V1__ReduceRequest *rr, wave_dtype dtype,
                           wave_op op, int has_mask, const char *device,
                           Wave__V1__Extent **ex, size_t n_input,
                           size_t n_mask)
{
  wave__v1__reduce_request__init(rr);
  rr->dtype = (Wave__V1__DType)dtype;
  rr->op = (Wave__V1__Op)op;
  rr->n_input_at = n_input;
  rr->input_at = ex;
  rr->n_mask_at = n_mask;
  rr->mask_at = ex + n_input;
  rr->masked = has_mask != 0;
  rr->device = (char *)(device ? device : "");
}

_Static_assert(WAVE_EXACT_NAN == WV_XSUM_NAN &&
               WAVE_EXACT_PINF == WV_XSUM_PINF &&
               WAVE_EXACT_NINF == WV_XSUM_NINF &&
               WAVE_EXACT_NOT_NEGZERO == WV_XSUM_NOT_NEGZERO &&
               WAVE_EXACT_F64_BYTES == 8 * WV_XSUM_LIMBS &&
               WAVE_EXACT_F32_BYTES == 8 * WV_XSUM_F32_LIMBS &&
               WAVE_EXACT_MAX_BYTES == WAVE_EXACT_F64_BYTES,
               "wave/client.h's exact partial is core/xsum.h's");

/* fsum: the exact partial (ReduceResult.exact, exact_flags) checked and
 * copied; a daemon's answer whose accumulator is malformed, or whose value
 * is not its rounding, is the daemon's fault (EIO).  Every other op: none
 * may come. */
static int rdc_exact(wave_client *c, const Wave__V1__ReduceResult *rs,
                    wave_reduce_result *res, wave_error *err)
{
  if (rs->op != WAVE__V1__OP__FSUM) {
    if (rs->exact.len == 0 && rs->exact_flags == 0)
      return 0;
    return wv_seterr(err, WAVE_EIO, "%s: a %s reply with an exact partial "
                     "(only fsum has one)", c->url, wave_op_name(res->op));
  }
  wv_xsum x;
  wave_error e = {0};
  if (wv_xsum_unpack(&x, res->dtype, rs->exact.data, rs->exact.len,
                     rs->exact_flags, &e) != 0)
    return wv_seterr(err, WAVE_EIO, "%s: a malformed fsum reply: %s", c->url,
                     e.message);
  uint64_t want = wv_xsum_round(&x, res->count);
  if (res->n_values != 1 || res->bits[0] != want)
    return wv_seterr(err, WAVE_EIO, "%s: an fsum reply whose value 0x%llx is "
                     "not its exact partial's rounding 0x%llx", c->url,
                     (unsigned long long)res->bits[0],
                     (unsigned long long)want);
  memcpy(res->exact, rs->exact.data, rs->exact.len);
  res->exact_bytes = (uint32_t)rs->exact.len;
  res->exact_flags = rs->exact_flags;
  return 0;
}

int wv_client_reduce_result(wave_client *c, Wave__V1__Response *resp,
                            wave_reduce_result *res, wave_error *err)
{
  const Wave__V1__ReduceResult *rs = resp->reduce;
  memset(res, 0, sizeof *res);
  /* the 64-bit dtypes' values come in bits64, the others' in bits (also
   * from a daemon before bits64) */
  int wide = rs != NULL && wv_dtype_size((wave_dtype)rs->dtype) == 8;
  size_t n = rs == NULL ? 0 : wide ? rs->n_bits64 : rs->n_bits;
  if (rs == NULL || n < 1 || n > 2) {
    wave__v1__response__free_unpacked(resp, NULL);
    return wv_seterr(err, WAVE_EIO, "%s: reduce reply without 1 or 2 values",
                     c->url);
  }
  res->dtype = (wave_dtype)rs->dtype;
  res->op = (wave_op)rs->op;
  res->n_values = (unsigned)n;
  for (size_t i = 0; i < n; i++)
    res->bits[i] = wide ? rs->bits64[i] : rs->bits[i];
  /* argmin/argmax: the global row; a daemon before the field says 0 */
  res->index = rs->index;
  res->count = rs->count;
  res->rows = rs->rows;
  res->seconds = rs->seconds;
  res->finite = (int)rs->finite;
  int rv = rdc_exact(c, rs, res, err);
  if (rv == 0)
    rv = wv_client_name(c, rs->device, &res->device, err);
  wave__v1__response__free_unpacked(resp, NULL);
  return rv;
}

/* ---- streams ----------------------------------------------------------- */

typedef struct rdc_slot {
  nng_ctx ctx;
  nng_aio *aio;
  int open, busy;
  uint64_t id;
} rdc_slot;

/* Wait for slot's exchange (send done, then the reply). */
static int rdc_finish(wave_client *c, rdc_slot *s, wave_error *err)
{
  if (!s->busy)
    return 0;
  s->busy = 0;
  nng_aio_wait(s->aio);
  int rv = nng_aio_result(s->aio);
  if (rv != 0) {
    nng_msg_free(nng_aio_get_msg(s->aio));
    return wv_seterr(err, rv == NNG_ETIMEDOUT ? WAVE_ETIMEDOUT : WAVE_EIO,
                     "%s: stream piece not sent: %s", wave_client_url(c),
                     nng_strerror(rv));
  }
  nng_ctx_recv(s->ctx, s->aio);
  nng_aio_wait(s->aio);
  if ((rv = nng_aio_result(s->aio)) != 0)
    return wv_seterr(err, rv == NNG_ETIMEDOUT ? WAVE_ETIMEDOUT : WAVE_EIO,
                     "%s: no reply to a stream piece: %s", wave_client_url(c),
                     nng_strerror(rv));
  Wave__V1__Response *resp;
  int code = wv_client_reply(c, nng_aio_get_msg(s->aio), s->id,
                             WAVE__V1__RESPONSE__BODY_STREAM, &resp, err);
  if (code == 0)
    wave__v1__response__free_unpacked(resp, NULL);
  return code;
}

/* n bytes into a ring slot.  Ordinary stores would first fetch each line
 * for ownership from the daemon's core, which read it a round ago, and
 * leave the new line dirty in this core's cache for the daemon to fetch
 * back: on the 2-CPU development VM a 256 MiB pipeline of 4 MiB slots with
 * a reader on the other core took 27-31 ms by memcpy, 10-12 ms by
 * non-temporal stores (docs/performance.md).  SSE2's streaming stores are
 * in every x86-64; the fence makes them visible before the put that names
 * the slot is sent.  Elsewhere, and for small copies, memcpy. */
static void rdc_copy_ring(uint8_t *dst, const uint8_t *src, size_t n)
{
#if defined(__x86_64__)
  if (n >= 4096) {
    size_t head = (16 - ((uintptr_t)dst & 15u)) & 15u;
    memcpy(dst, src, head);
    dst += head;
    src += head;
    n -= head;
    size_t body = n & ~(size_t)63;
    for (size_t i = 0; i < body; i += 64) {
      __m128i a = _mm_loadu_si128((const __m128i *)(src + i));
      __m128i b = _mm_loadu_si128((const __m128i *)(src + i + 16));
      __m128i c = _mm_loadu_si128((const __m128i *)(src + i + 32));
      __m128i d = _mm_loadu_si128((const __m128i *)(src + i + 48));
      _mm_stream_si128((__m128i *)(dst + i), a);
      _mm_stream_si128((__m128i *)(dst + i + 16), b);
      _mm_stream_si128((__m128i *)(dst + i + 32), c);
      _mm_stream_si128((__m128i *)(dst + i + 48), d);
    }
    _mm_sfence();
    dst += body;
    src += body;
    n -= body;
  }
#endif
  memcpy(dst, src, n);
}

/* Copy `len` logical bytes starting at byte `off` of the chunk array
 * (into a ring's slot: ring). */
static void rdc_gather(const wave_chunk *ch, size_t n, size_t off,
                       uint8_t *dst, size_t len, int ring)
{
  size_t i = 0;
  while (i < n && off >= (ch[i].data ? ch[i].bytes : 0)) {
    off -= ch[i].data ? ch[i].bytes : 0;
    i++;
  }
  while (len > 0 && i < n) {
    size_t have = (ch[i].data ? ch[i].bytes : 0) - off;
    size_t take = have < len ? have : len;
    if (take && ring)
      rdc_copy_ring(dst, (const uint8_t *)ch[i].data + off, take);
    else if (take)
      memcpy(dst, (const uint8_t *)ch[i].data + off, take);
    dst += take;
    len -= take;
    off = 0;
    i++;
  }
}

/* Open slot s's context, once. */
static int rdc_open(wave_client *c, rdc_slot *s, wave_error *err)
{
  int rv;
  if (s->open)
    return 0;
  if ((rv = nng_ctx_open(&s->ctx, c->sock)) != 0)
    return wv_seterr(err, WAVE_EIO, "%s: %s", c->url, nng_strerror(rv));
  if ((rv = nng_aio_alloc(&s->aio, NULL, NULL)) != 0) {
    nng_ctx_close(s->ctx);
    return wv_seterr(err, WAVE_ENOMEM, "%s", nng_strerror(rv));
  }
  s->open = 1;
  int ms = atomic_load(&c->timeout_ms);
  /* no resend of a piece: a reconnect drops the stream anyway */
  nng_ctx_set_ms(s->ctx, NNG_OPT_REQ_RESENDTIME, ms);
  nng_aio_set_timeout(s->aio, ms);
  return 0;
}

/* A piece: `len` bytes from byte `off` of the chunks; with a ring, into
 * its slot at `at`, which the put names. */
typedef struct rdc_where {
  const wave_chunk *ch;
  size_t nch, off, len;
  wave_region *ring;
  uint64_t at;
} rdc_where;

/* The put pr (its StreamPutRequest filled but the rows) as a message:
 * the rows framed after it, or copied into the ring's slot and named. */
static int rdc_piece(wave_client *c, Wave__V1__Request *pr,
                     const rdc_where *w, nng_msg **msg, wave_error *err)
{
  uint8_t *data;
  if (w->ring == NULL) {
    int rv = wv_client_msg(c, pr, w->len, msg, &data, err);
    if (rv == 0)
      rdc_gather(w->ch, w->nch, w->off, data, w->len, 0);
    return rv;
  }
  Wave__V1__Extent from = WAVE__V1__EXTENT__INIT;
  from.region = wave_region_id(w->ring);
  from.offset = w->at;
  from.bytes = w->len;
  pr->stream_put->from = &from;
  rdc_gather(w->ch, w->nch, w->off,
             (uint8_t *)wave_region_data(w->ring) + w->at, w->len, 1);
  int rv = wv_client_msg(c, pr, 0, msg, NULL, err);  /* packed: from's */
  pr->stream_put->from = NULL;
  return rv;
}

static int rdc_simple(wave_client *c, Wave__V1__Request *r, int want,
                     Wave__V1__Response **resp, wave_error *err)
{
  return wv_client_call(c, r, want, 0, resp, err);
}

int wave_reduce_ring(wave_client *c, const wave_reduce_request *req,
                     wave_region *ring, wave_reduce_result *res,
                     wave_error *err)
{
  if (c == NULL || req == NULL || res == NULL || ring == NULL)
    return wv_seterr(err, WAVE_EARG, "wave_reduce_ring: NULL argument");
  if (wave_region_data(ring) == NULL || wave_region_id(ring) == 0)
    return wv_seterr(err, WAVE_EARG, "wave_reduce_ring: the ring is not a "
                     "mapped region registered with the client");
  size_t total;  /* the stream counts its own */
  int rv = rdc_check("wave_reduce_ring", req, &total, err);
  if (rv != 0)
    return rv;
  return wv_client_stream_reduce(c, req, ring, res, err);
}

int wv_client_stream_reduce(wave_client *c, const wave_reduce_request *req,
                            wave_region *ring, wave_reduce_result *res,
                            wave_error *err)
{
  size_t n_mask = req->has_mask ? req->n_mask : 0;
  uint64_t in_bytes = 0, mask_bytes = 0;
  uint64_t *sizes = calloc(req->n_input + 1, sizeof *sizes);
  if (sizes == NULL)
    return wv_seterr(err, WAVE_ENOMEM, NULL);
  for (size_t i = 0; i < req->n_input; i++) {
    sizes[i] = req->input[i].data ? req->input[i].bytes : 0;
    in_bytes += sizes[i];
  }
  for (size_t i = 0; i < n_mask; i++)
    mask_bytes += req->mask[i].data ? req->mask[i].bytes : 0;

  Wave__V1__StreamOpenRequest so = WAVE__V1__STREAM_OPEN_REQUEST__INIT;
  so.dtype = (Wave__V1__DType)req->dtype;
  so.op = (Wave__V1__Op)req->op;
  so.masked = req->has_mask != 0;
  so.device = (char *)(req->device ? req->device : "");
  WV_CLIENT_LEVEL(&so, req);
  so.input_bytes = in_bytes;
  so.mask_bytes = mask_bytes;
  so.n_input_chunks = req->n_input;
  so.input_chunks = sizes;
  /* A ring asks pieces of 1/WV_CLIENT_STREAM_DEPTH of it: as many slots
   * as contexts in flight, so a small ring (cheap to make: its pages are
   * fresh in both processes) still keeps the copy and the sum overlapped.
   * The daemon's own piece when that is smaller; a daemon before the
   * field answers its own, and a ring that holds none is refused below. */
  if (ring != NULL)
    so.piece_bytes = wave_region_size(ring) / WV_CLIENT_STREAM_DEPTH;
  Wave__V1__Request r = WAVE__V1__REQUEST__INIT;
  r.body_case = WAVE__V1__REQUEST__BODY_STREAM_OPEN;
  r.stream_open = &so;
  Wave__V1__Response *resp;
  int rv = rdc_simple(c, &r, WAVE__V1__RESPONSE__BODY_STREAM, &resp, err);
  free(sizes);
  if (rv != 0)
    return rv;
  uint64_t sid = resp->stream->stream_id;
  uint64_t piece = resp->stream->piece_bytes;
  wave__v1__response__free_unpacked(resp, NULL);
  if (piece == 0)
    return wv_seterr(err, WAVE_EIO, "%s: stream without a piece size",
                     c->url);

  rdc_slot slots[WV_CLIENT_STREAM_DEPTH];
  memset(slots, 0, sizeof slots);
  int code = 0;
  unsigned k = 0, depth = WV_CLIENT_STREAM_DEPTH;
  if (ring != NULL) {  /* a slot per context: its answer frees the slot */
    size_t n = wave_region_size(ring) / piece;
    if (n == 0)
      code = wv_seterr(err, WAVE_EARG, "wave_reduce_ring: a ring of %zu "
                       "bytes holds no piece of the daemon's %" PRIu64,
                       wave_region_size(ring), piece);
    depth = n == 0 ? 1 : n < depth ? (unsigned)n : depth;
  }
  for (int sec = 0; sec < 2 && code == 0; sec++) {
    const wave_chunk *ch = sec ? req->mask : req->input;
    size_t nch = sec ? n_mask : req->n_input;
    uint64_t size = sec ? mask_bytes : in_bytes;
    for (uint64_t off = 0; off < size && code == 0; off += piece, k++) {
      rdc_slot *s = &slots[k % depth];
      if ((code = rdc_finish(c, s, err)) != 0)
        break;
      if ((code = rdc_open(c, s, err)) != 0)
        break;
      size_t len = (size_t)(size - off < piece ? size - off : piece);
      Wave__V1__StreamPutRequest sp = WAVE__V1__STREAM_PUT_REQUEST__INIT;
      sp.stream_id = sid;
      sp.mask = sec == 1;
      sp.offset = off;
      Wave__V1__Request pr = WAVE__V1__REQUEST__INIT;
      pr.body_case = WAVE__V1__REQUEST__BODY_STREAM_PUT;
      pr.stream_put = &sp;
      nng_msg *msg;
      rdc_where at = {ch, nch, (size_t)off, len, ring,
                      (uint64_t)(k % depth) * piece};
      if ((code = rdc_piece(c, &pr, &at, &msg, err)) != 0)
        break;
      s->id = pr.id;
      s->busy = 1;
      nng_aio_set_msg(s->aio, msg);
      nng_ctx_send(s->ctx, s->aio);
    }
  }
  for (unsigned i = 0; i < WV_CLIENT_STREAM_DEPTH; i++) {
    wave_error e2;
    int rc2 = rdc_finish(c, &slots[i], code ? &e2 : err);
    if (code == 0)
      code = rc2;
    if (slots[i].open) {
      nng_aio_free(slots[i].aio);
      nng_ctx_close(slots[i].ctx);
    }
  }
  Wave__V1__StreamCommitRequest sc = WAVE__V1__STREAM_COMMIT_REQUEST__INIT;
  sc.stream_id = sid;
  sc.abort = code != 0;
  Wave__V1__Request cr = WAVE__V1__REQUEST__INIT;
  cr.body_case = WAVE__V1__REQUEST__BODY_STREAM_COMMIT;
  cr.stream_commit = &sc;
  if (code != 0) {
    wave_error e2;
    if (code != WAVE_ETIMEDOUT && code != WAVE_EIO &&
        rdc_simple(c, &cr, WAVE__V1__RESPONSE__BODY_STREAM, &resp, &e2) == 0)
      wave__v1__response__free_unpacked(resp, NULL);
    return code;
  }
  if ((rv = rdc_simple(c, &cr, WAVE__V1__RESPONSE__BODY_REDUCE, &resp,
                      err)) != 0)
    return rv;
  return wv_client_reduce_result(c, resp, res, err);
}
