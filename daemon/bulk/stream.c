/* stream.c - the table of streamed reductions (see stream.h). */
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include <nng/nng.h>

#include "daemon/bulk/stream.h"
#include "core/base.h"
#include "core/queue.h"
#include "core/reduce.h"

struct wd_stream {
  wd_streams *t;
  wv_qnode link;            /* wd_streams.open, until committed */
  uint64_t id;
  uint32_t pipe;
  uint64_t key;             /* the principal's share (share.h) */
  wave_dtype dtype;
  wave_op op;
  int masked;
  char device[64];
  int level;                /* its open's priority and deadline */
  unsigned deadline_ms;
  uint64_t in_bytes, mask_bytes, piece;
  uint64_t n_in, n_mask;    /* pieces per section */
  uint8_t *buf;             /* input, then mask */
  uint8_t *have;            /* one byte per piece: input's, then mask's */
  uint64_t *chunks;         /* the input's chunk sizes */
  size_t n_chunks;
  /* Order-free ops (all but the float sum, whose bits depend on chunk
   * boundaries) keep each framed piece in its received message and reduce
   * the pieces as chunks of their own: no copy at all.  The float sum
   * needs its chunks contiguous: its pieces are copied into buf. */
  int inplace;
  /* An unmasked float sum of one chunk is reduced as its pieces arrive
   * (online): each piece's blocks of `block` rows (256^2, or 256 where
   * the piece's rows are no multiple of 256^2) to their values, in vals
   * (float or double, n_blocks of them), and the piece's message freed;
   * the job is then the levels over vals (stream.h). */
  int online;
  uint64_t block, n_blocks;
  void *vals;
  uint64_t held;            /* bytes taken from the share */
  nng_msg **msgs;           /* inplace: per piece, input's then mask's */
  const uint8_t **at;       /* ... and where its rows are */
  int committed;            /* under the table's mutex: no more puts */
  uint64_t received;        /* under the table's mutex */
  _Atomic unsigned refs;
};

struct wd_streams {
  pthread_mutex_t mu;
  wv_qnode open;            /* wd_stream.link, newest first */
  unsigned n;
  uint64_t next_id;
  uint64_t max_bytes, max_rows, piece;
  wd_shares *sh;            /* buffered bytes, with copy regions' */
};

#define ST_OF(n) WV_Q_ENTRY(n, wd_stream, link)

int wd_streams_new(const wd_limits *lim, wd_shares *sh, wd_streams **out,
                   wave_error *err)
{
  wd_streams *t = calloc(1, sizeof *t);
  if ((*out = t) == NULL)
    return wv_seterr(err, WAVE_ENOMEM, NULL);
  pthread_mutex_init(&t->mu, NULL);
  wv_q_init(&t->open);
  /* ids are not guessable across connections, and not reused */
  uint64_t r = 0;
  if (getrandom(&r, sizeof r, GRND_NONBLOCK) != (ssize_t)sizeof r)
    r = (uint64_t)(uintptr_t)t;
  t->next_id = (r >> 16) | 1;
  t->max_bytes = lim->max_stream_bytes;
  t->sh = sh;
  t->max_rows = lim->max_job_rows;
  /* a piece and its header fit any request limit (4096 at least) */
  uint64_t p = lim->max_request_bytes / 2;
  if (p > WD_STREAM_PIECE_MAX)
    p = WD_STREAM_PIECE_MAX;
  t->piece = p & ~(uint64_t)4095;
  if (t->piece == 0)
    t->piece = 2048;
  return 0;
}

static void st_free_pieces(wd_stream *s)
{
  if (s->msgs != NULL)
    for (uint64_t i = 0; i < s->n_in + s->n_mask; i++)
      if (s->msgs[i] != NULL)
        nng_msg_free(s->msgs[i]);
  free(s->msgs);
  free(s->at);
  s->msgs = NULL;
  s->at = NULL;
}

static void st_destroy(wd_stream *s)
{
  wd_streams *t = s->t;
  wd_share_give(t->sh, s->key, WD_SHARE_BUF, s->held);
  st_free_pieces(s);
  free(s->vals);
  free(s->buf);
  free(s->have);
  free(s->chunks);
  free(s);
}

void wd_stream_put(wd_stream *s)
{
  if (s != NULL && atomic_fetch_sub(&s->refs, 1) == 1)
    st_destroy(s);
}

void wd_streams_free(wd_streams *t)
{
  if (t == NULL)
    return;
  wv_qnode *n;
  while ((n = wv_q_pop(&t->open)) != NULL) {
    wd_stream *s = ST_OF(n);
    st_free_pieces(s);
    free(s->vals);
    free(s->buf);
    free(s->have);
    free(s->chunks);
    free(s);
  }
  pthread_mutex_destroy(&t->mu);
  free(t);
}

static void st_info(const wd_stream *s, wd_stream_info *info)
{
  info->stream_id = s->id;
  info->piece_bytes = s->piece;
  info->input_bytes = s->in_bytes;
  info->mask_bytes = s->mask_bytes;
  info->received_bytes = s->received;
}

/* A fresh stream with what the open said of the job; NULL: no memory. */
static wd_stream *st_new(const wd_stream_spec *rq)
{
  wd_stream *s = calloc(1, sizeof *s);
  if (s == NULL)
    return NULL;
  s->dtype = (wave_dtype)rq->dtype;
  s->op = (wave_op)rq->op;
  s->masked = rq->masked;
  snprintf(s->device, sizeof s->device, "%s", rq->device ? rq->device : "");
  s->level = rq->level;
  s->deadline_ms = rq->deadline_ms;
  s->in_bytes = rq->input_bytes;
  s->mask_bytes = rq->mask_bytes;
  return s;
}

/* s's buffers, as its kind wants (stream.h); nonzero: no memory. */
static int st_alloc(wd_stream *s, const wd_stream_spec *rq, uint64_t total)
{
  wave_dtype dt = s->dtype;
  /* a float sum sees its chunk boundaries: its rows go to one buffer */
  s->inplace = !((dt == WAVE_F32 || dt == WAVE_F64) && s->op == WAVE_SUM);
  if (s->online) {
    s->vals = malloc(s->n_blocks * wv_dtype_size(dt));
    s->buf = malloc(1);
  } else if (s->inplace) {
    s->msgs = calloc(s->n_in + s->n_mask + 1, sizeof *s->msgs);
    s->at = calloc(s->n_in + s->n_mask + 1, sizeof *s->at);
    s->buf = (s->msgs && s->at) ? malloc(1) : NULL;
  } else {
    s->buf = malloc(total ? total : 1);
  }
  s->have = calloc(s->n_in + s->n_mask + 1, 1);
  s->n_chunks = rq->n_input_chunks ? rq->n_input_chunks : 1;
  s->chunks = calloc(s->n_chunks, sizeof *s->chunks);
  if (s->chunks != NULL && rq->n_input_chunks)
    memcpy(s->chunks, rq->input_chunks, s->n_chunks * sizeof *s->chunks);
  else if (s->chunks != NULL)
    s->chunks[0] = s->in_bytes;
  return s->buf == NULL || s->have == NULL || s->chunks == NULL ||
         (s->online && s->vals == NULL);
}

int wd_streams_open(wd_streams *t, uint32_t pipe, uint64_t key,
                    const char *who,
                    const wd_stream_spec *rq, wd_stream_info *info,
                    wave_error *err)
{
  wave_dtype dt = (wave_dtype)rq->dtype;
  wave_op op = (wave_op)rq->op;
  switch (wave_op_check(dt, op)) {
  case 0:  /* the device's caps decide the 64-bit dtypes, argmin/argmax */
    break;
  case WAVE_EDTYPE:
    return wv_seterr(err, WAVE_EDTYPE, "unknown dtype %d", (int)rq->dtype);
  case WAVE_EOP:
    return wv_seterr(err, WAVE_EOP, "unknown reduction op %d", (int)rq->op);
  default:
    return wv_seterr(err, WAVE_EOPDTYPE, "op %s is not defined for dtype %s",
                     wave_op_name(op), wave_dtype_name(dt));
  }
  unsigned size = wv_dtype_size(dt);  /* input rows: 4 or 8 bytes */
  if (rq->input_bytes % size != 0 || rq->mask_bytes % 4 != 0)
    return wv_seterr(err, WAVE_ELENGTH, "stream of %" PRIu64 " input and %"
                     PRIu64 " mask bytes: not whole %u-byte input rows and "
                     "4-byte mask rows", rq->input_bytes, rq->mask_bytes,
                     size);
  uint64_t rows = rq->input_bytes / size;
  if (rows > t->max_rows)
    return wv_seterr(err, WAVE_EJOBSIZE, "%" PRIu64 " rows; this daemon takes "
                     "at most %" PRIu64 " (limits.max_job_rows)", rows,
                     t->max_rows);
  if (rq->masked ? rq->mask_bytes / 4 != rows : rq->mask_bytes != 0)
    return wv_seterr(err, WAVE_EMASKLEN, "stream of %" PRIu64 " input rows "
                     "with %" PRIu64 " mask rows%s", rows, rq->mask_bytes / 4,
                     rq->masked ? "" : " but not masked");
  if (rq->device != NULL && strlen(rq->device) >= sizeof ((wd_stream *)0)->device)
    return wv_seterr(err, WAVE_ENODEV, "no device named '%.64s...'",
                     rq->device);
  uint64_t sum = 0;
  for (size_t i = 0; i < rq->n_input_chunks; i++) {
    if (rq->input_chunks[i] % size != 0)
      return wv_seterr(err, WAVE_ELENGTH, "input chunk %zu is %" PRIu64
                       " bytes, not a multiple of %u", i, rq->input_chunks[i],
                       size);
    if (rq->input_chunks[i] > rq->input_bytes - sum)
      break;
    sum += rq->input_chunks[i];
  }
  if (rq->n_input_chunks > 0 && sum != rq->input_bytes)
    return wv_seterr(err, WAVE_ELENGTH, "the input's %zu chunk sizes do not "
                     "add up to input_bytes (%" PRIu64 ")", rq->n_input_chunks,
                     rq->input_bytes);
  uint64_t total = rq->input_bytes + rq->mask_bytes;
  /* a smaller piece asked: a ring of small slots is cheaper to make */
  uint64_t piece = t->piece;
  if (rq->piece_bytes != 0) {
    uint64_t ask = rq->piece_bytes < 4096 ? 4096
                                          : rq->piece_bytes & ~(uint64_t)4095;
    piece = ask < piece ? ask : piece;
  }
  /* online: one chunk (or none said), no mask, whole groups per piece */
  uint64_t prow = piece / size, block = prow % WV_BLOCK == 0 ? WV_BLOCK
                                                                 : WV_GROUP;
  int online = (dt == WAVE_F32 || dt == WAVE_F64) && op == WAVE_SUM &&
               !rq->masked && rq->n_input_chunks <= 1 && rows > 0 &&
               prow % WV_GROUP == 0;
  uint64_t n_blocks = online ? (rows + block - 1) / block : 0;
  uint64_t held = online ? n_blocks * size : total;
  if (held > t->max_bytes)
    return wv_seterr(err, WAVE_ETOOBIG, "a stream of %" PRIu64 " bytes "
                     "(%" PRIu64 " to hold); this daemon buffers at most %"
                     PRIu64 " (limits.max_stream_bytes)", total, held,
                     t->max_bytes);
  wd_stream *s = st_new(rq);
  if (s == NULL)
    return wv_seterr(err, WAVE_ENOMEM, NULL);
  s->t = t;
  s->pipe = pipe;
  s->key = key;
  s->piece = piece;
  s->online = online;
  s->block = block;
  s->n_blocks = n_blocks;
  s->held = held;
  s->n_in = (s->in_bytes + s->piece - 1) / s->piece;
  s->n_mask = (s->mask_bytes + s->piece - 1) / s->piece;
  atomic_init(&s->refs, 1);
  pthread_mutex_lock(&t->mu);
  unsigned mine = 0;
  wv_qnode *n;
  WV_Q_EACH(n, &t->open)
    mine += ST_OF(n)->pipe == pipe;
  /* the client's share and the total, copy regions counted (share.h);
   * under mu, so that racing opens of one connection count its streams */
  int rc = mine >= WD_STREAMS_PER_CLIENT ? WAVE_EBUSY
           : wd_share_take(t->sh, key, who, WD_SHARE_BUF, held, WAVE_EBUSY,
                           err);
  pthread_mutex_unlock(&t->mu);
  if (mine >= WD_STREAMS_PER_CLIENT) {
    free(s);
    return wv_seterr(err, WAVE_EBUSY, "this connection has %u open streams "
                     "(at most %u)", mine, WD_STREAMS_PER_CLIENT);
  }
  if (rc != 0) {
    free(s);
    return rc;
  }
  if (st_alloc(s, rq, total) != 0) {
    st_destroy(s);
    return wv_seterr(err, WAVE_ENOMEM, "no memory for a stream of %" PRIu64
                     " bytes", total);
  }
  pthread_mutex_lock(&t->mu);
  s->id = t->next_id++;
  wv_q_push_head(&t->open, &s->link);
  t->n++;
  st_info(s, info);
  pthread_mutex_unlock(&t->mu);
  return 0;
}

/* Under mu: the stream id of pipe, or NULL. */
static wd_stream *st_find(wd_streams *t, uint32_t pipe, uint64_t id)
{
  wv_qnode *n;
  WV_Q_EACH(n, &t->open)
    if (ST_OF(n)->id == id && ST_OF(n)->pipe == pipe)
      return ST_OF(n);
  return NULL;
}

/* An online stream's piece (offset, len: whole rows, checked): the values
 * of its blocks, rows [b0 * block, ...) of the chunk, in *vals (nb of
 * them, allocated).  Off the table's mutex: two puts reduce at once. */
static int st_blocks(const wd_stream *s, uint64_t offset, const uint8_t *data,
                     size_t len, void **vals, uint64_t *b0, uint64_t *nb,
                     wave_error *err)
{
  unsigned z = wv_dtype_size(s->dtype);
  uint64_t rows = len / z, n = (rows + s->block - 1) / s->block;
  *b0 = offset / z / s->block;  /* pieces hold whole blocks */
  *nb = n;
  if ((*vals = malloc((size_t)(n ? n * z : 1))) == NULL)
    return wv_seterr(err, WAVE_ENOMEM, NULL);
  for (uint64_t b = 0; b < n; b++) {
    uint64_t r = rows - b * s->block < s->block ? rows - b * s->block
                                                 : s->block;
    const uint8_t *p = data + b * s->block * z;
    if (z == 4) {
      float v = wv_f32_block(p, (size_t)r);
      memcpy((uint8_t *)*vals + b * z, &v, z);
    } else {
      double v = wv_f64_block(p, (size_t)r);
      memcpy((uint8_t *)*vals + b * z, &v, z);
    }
  }
  return 0;
}

int wd_streams_put(wd_streams *t, uint32_t pipe, uint64_t id, int mask,
                   uint64_t offset, const uint8_t *data, size_t len,
                   nng_msg **msg, wd_stream_info *info,
                   wave_error *err)
{
  pthread_mutex_lock(&t->mu);
  wd_stream *s = st_find(t, pipe, id);
  if (s != NULL)
    atomic_fetch_add(&s->refs, 1);
  pthread_mutex_unlock(&t->mu);
  if (s == NULL)
    return wv_seterr(err, WAVE_ENOJOB, "no open stream %" PRIu64 " on this "
                     "connection (committed, aborted, or never opened)", id);
  void *vals = NULL;  /* online: the piece's block values */
  uint64_t b0 = 0, nb = 0;
  const char *what = mask ? "mask" : "input";
  uint64_t size = mask ? s->mask_bytes : s->in_bytes;
  uint64_t n = mask ? s->n_mask : s->n_in;
  int rc = 0;
  if (offset % s->piece != 0 || offset >= size) {
    rc = wv_seterr(err, WAVE_ERANGE, "%s piece at offset %" PRIu64 ": pieces "
                   "start at multiples of %" PRIu64 " below %" PRIu64, what,
                   offset, s->piece, size);
    goto out;
  }
  uint64_t idx = offset / s->piece;
  uint64_t want = size - offset < s->piece ? size - offset : s->piece;
  if (len != want) {
    rc = wv_seterr(err, WAVE_ERANGE, "%s piece %" PRIu64 " of %" PRIu64
                   " (offset %" PRIu64 ") is %zu bytes; it must be %" PRIu64,
                   what, idx, n, offset, len, want);
    goto out;
  }
  uint64_t slot = (mask ? s->n_in : 0) + idx;
  nng_msg *keep = NULL;
  if (s->online) {
    if ((rc = st_blocks(s, offset, data, len, &vals, &b0, &nb, err)) != 0)
      goto out;
  } else if (!s->inplace) {
    memcpy(s->buf + (mask ? s->in_bytes : 0) + offset, data, len);
  } else if (msg != NULL && *msg != NULL) {
    keep = *msg;  /* the framed request itself: its payload is the piece */
    *msg = NULL;
  } else {
    /* rows by value live in the decoded request, freed with its reply:
     * they get a message of their own, freed like the others */
    if (nng_msg_alloc(&keep, len) != 0) {
      rc = wv_seterr(err, WAVE_ENOMEM, "no memory for a piece of %zu bytes",
                     len);
      goto out;
    }
    memcpy(nng_msg_body(keep), data, len);
    data = nng_msg_body(keep);
  }
  pthread_mutex_lock(&t->mu);
  if (s->committed) {
    pthread_mutex_unlock(&t->mu);
    if (keep != NULL)
      nng_msg_free(keep);
    rc = wv_seterr(err, WAVE_ENOJOB, "stream %" PRIu64 " is already "
                   "committed", id);
    goto out;
  }
  uint8_t *bit = &s->have[slot];
  if (!*bit) {
    *bit = 1;
    s->received += len;
    if (s->online) {
      unsigned z = wv_dtype_size(s->dtype);
      memcpy((uint8_t *)s->vals + b0 * z, vals, (size_t)(nb * z));
    } else if (s->inplace) {
      s->msgs[slot] = keep;
      s->at[slot] = data;
      keep = NULL;
    }
  }
  st_info(s, info);
  pthread_mutex_unlock(&t->mu);
  if (keep != NULL)  /* a piece sent twice: the first one stays */
    nng_msg_free(keep);
out:
  free(vals);
  wd_stream_put(s);
  return rc;
}

int wd_streams_commit(wd_streams *t, uint32_t pipe, uint64_t id, int abort,
                      wd_stream **out, wd_stream_info *info,
                      wave_error *err)
{
  *out = NULL;
  pthread_mutex_lock(&t->mu);
  wd_stream *s = st_find(t, pipe, id);
  if (s == NULL) {
    pthread_mutex_unlock(&t->mu);
    return wv_seterr(err, WAVE_ENOJOB, "no open stream %" PRIu64 " on this "
                     "connection (committed, aborted, or never opened)", id);
  }
  st_info(s, info);
  uint64_t miss = UINT64_MAX;
  if (!abort)
    for (uint64_t i = 0; i < s->n_in + s->n_mask && miss == UINT64_MAX; i++)
      if (!s->have[i])
        miss = i;
  if (miss != UINT64_MAX) {
    int m = miss >= s->n_in;
    uint64_t k = m ? miss - s->n_in : miss;
    uint64_t got = s->received, all = s->in_bytes + s->mask_bytes;
    pthread_mutex_unlock(&t->mu);
    return wv_seterr(err, WAVE_EINCOMPLETE, "stream %" PRIu64 ": %s piece %"
                     PRIu64 " of %" PRIu64 " (offset %" PRIu64 ") is missing; "
                     "%" PRIu64 " of %" PRIu64 " bytes received", id,
                     m ? "mask" : "input", k, m ? s->n_mask : s->n_in,
                     k * s->piece, got, all);
  }
  wv_q_remove(&s->link);
  t->n--;
  s->committed = 1;
  pthread_mutex_unlock(&t->mu);
  if (abort)
    wd_stream_put(s);
  else
    *out = s;
  return 0;
}

void wd_streams_drop_pipe(wd_streams *t, uint32_t pipe)
{
  wv_qnode drop, *n, *nx;
  wv_q_init(&drop);
  pthread_mutex_lock(&t->mu);
  WV_Q_EACH_SAFE(n, nx, &t->open)
    if (ST_OF(n)->pipe == pipe) {
      wv_q_remove(n);
      wv_q_push_head(&drop, n);
      t->n--;
    }
  pthread_mutex_unlock(&t->mu);
  while ((n = wv_q_pop(&drop)) != NULL)
    wd_stream_put(ST_OF(n));
}

unsigned wd_streams_held(wd_streams *t, uint32_t pipe)
{
  unsigned n = 0;
  pthread_mutex_lock(&t->mu);
  wv_qnode *q;
  WV_Q_EACH(q, &t->open)
    n += ST_OF(q)->pipe == pipe;
  pthread_mutex_unlock(&t->mu);
  return n;
}

void wd_stream_level(const wd_stream *s, int *level, unsigned *deadline_ms)
{
  *level = s->level;
  *deadline_ms = s->deadline_ms;
}

unsigned wd_streams_count(wd_streams *t)
{
  pthread_mutex_lock(&t->mu);
  unsigned n = t->n;
  pthread_mutex_unlock(&t->mu);
  return n;
}

int wd_stream_job(const wd_stream *s, wv_span **spans, size_t *n_input,
                  size_t *n_mask, wave_dtype *dtype, wave_op *op, int *masked,
                  const char **device)
{
  size_t ni = s->online ? 1 : s->inplace ? (size_t)s->n_in : s->n_chunks;
  size_t nm = s->inplace ? (size_t)s->n_mask : 1;
  wv_span *sp = calloc(ni + nm + 1, sizeof *sp);
  if ((*spans = sp) == NULL)
    return WAVE_ENOMEM;
  if (s->online) {
    /* the chunk's value is the levels over its blocks' values: a
     * one-chunk job of them has its bits (stream.h) */
    sp[0].data = s->vals;
    sp[0].rows = s->n_blocks;
  } else if (s->inplace) {
    /* every piece a chunk: the op does not see chunk boundaries */
    for (uint64_t i = 0; i < s->n_in + s->n_mask; i++) {
      int m = i >= s->n_in;
      uint64_t size = m ? s->mask_bytes : s->in_bytes;
      uint64_t off = (m ? i - s->n_in : i) * s->piece;
      sp[i].data = s->at[i];
      sp[i].rows = (size - off < s->piece ? size - off : s->piece) /
                   (m ? 4 : wv_dtype_size(s->dtype));
    }
  } else {
    uint64_t off = 0;
    for (size_t i = 0; i < s->n_chunks; i++) {
      sp[i].data = s->buf + off;
      sp[i].rows = s->chunks[i] / wv_dtype_size(s->dtype);
      off += s->chunks[i];
    }
    sp[s->n_chunks].data = s->buf + s->in_bytes;
    sp[s->n_chunks].rows = s->mask_bytes / 4;
  }
  *n_input = ni;
  *n_mask = s->mask_bytes ? nm : 0;  /* an online stream has no mask */
  *dtype = s->dtype;
  *op = s->op;
  *masked = s->masked;
  *device = s->device;
  return 0;
}

uint64_t wd_stream_stands_for(const wd_stream *s)
{
  return s->online ? s->in_bytes / wv_dtype_size(s->dtype) : 0;
}
