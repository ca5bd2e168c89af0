/* req.c - a received request on its decode thread: unpack it within a
 * memory budget, read the raw version, authenticate it, hand it to the
 * route's decode-thread side (rq/route.c through server.c's hook,
 * wd_front_up.decode: the gates and bodies of the rows run there, and a
 * reduction's extents, bulk/decode.c); and wd_req_clear, which frees what
 * a request holds once it is answered (the handler's half through the
 * hook server.c gives, wd_front_up; a big decoded request on a decode
 * thread).  net/front.c calls both: this file
 * calls nothing of front.c, so the two do not call each other.
 *
 * Versions: this daemon speaks protocol 2 (WD_PROTOCOL); what a version
 * means for a handler is rq/route.c's business.
 */
#include <inttypes.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "daemon/log.h"
#include "daemon/net/auth.h"
#include "daemon/net/level.h"
#include "daemon/net/front.h"
#include "daemon/net/req.h"
#include "daemon/stats.h"
#include "core/base.h"
#include "core/pages.h"
#include "proto/frame.h"

/* protobuf-c allocates while it decodes, and a request of many tiny chunks
 * decodes to many times its wire size (2 wire bytes per empty chunk, 16 in
 * the decoded array).  While it scans a message it also holds 32 bytes per
 * field, in slabs that double (so up to 64), and frees them before it
 * returns.  Each context decodes into an arena of its own (net/arena.h:
 * bump-allocated from a few blocks, no malloc per chunk, freed whole by a
 * handful of free() calls), which counts the bytes it holds (the big scan
 * slabs given back, the small ones kept) and refuses to go past
 * rx_pb_budget of them; what stays once decoded is checked against
 * rx_pb_kept. */
static void *rx_pb_alloc(void *data, size_t size)
{
  return wd_arena_alloc(data, size);
}

static void rx_pb_free(void *data, void *ptr)
{
  wd_arena_give(data, ptr);
}

/* A request of one-row chunks decodes to about 3.3 times its wire size,
 * empty chunks to 8 times; keeping 4 times plus room for the envelope
 * admits the first and refuses the second (docs/config.md).  While
 * decoding, the scan slabs come on top: one-row chunks peak below 15
 * times, so the budget of live bytes is 16 times (empty chunks reach it:
 * refused before they take more). */
static size_t rx_pb_kept(size_t len)
{
  return 4 * len + ((size_t)64 << 10);
}

static size_t rx_pb_budget(size_t len)
{
  return 16 * len + ((size_t)64 << 10);
}

/* A big request is freed on a decode thread, not the loop (issue 35:
 * freeing 4M one-row chunks, one by one, held the loop 0.1-0.3 s and every
 * other client with it; from the arena it is 15 free() calls, but giving
 * back their 130 MB of pages still takes about 20 ms).  Its arena leaves
 * its context, which serves on, with its spans and kept message; the free
 * costs that thread less than the decode did.  Bounded: while
 * RX_TRASH_MAX bytes wait to be freed, or once the front closes (its pool
 * stops), the loop frees as before. */
#define RX_TRASH_MIN ((size_t)256 << 10) /* decoded bytes: smaller, here */
#define RX_TRASH_MAX ((size_t)1 << 30)

typedef struct rx_trash {
  wd_pool_item item;
  wd_arena arena;           /* the decoded request's */
  wv_span *spans;
  nng_msg *keep;
  size_t bytes;
  _Atomic size_t *waiting;  /* the front's count of bytes to free */
} rx_trash;

static void rx_trash_cb(wd_pool_item *it)
{
  rx_trash *t = (rx_trash *)((char *)it - offsetof(rx_trash, item));
  wd_arena_free(&t->arena);  /* big blocks in steps (core/pages.h) */
  wv_free_big(t->spans);
  if (t->keep != NULL) {
    wv_pages_release(nng_msg_body(t->keep), nng_msg_len(t->keep));
    nng_msg_free(t->keep);
  }
  atomic_fetch_sub(t->waiting, t->bytes);
  free(t);
}

/* 1: c's request went to a decode thread to be freed (loop thread). */
static int rx_trash_req(wd_req *c)
{
  wd_front *s = c->fe;
  size_t bytes = c->arena.used + (c->bulk.keep ? nng_msg_len(c->bulk.keep) : 0);
  if (bytes < RX_TRASH_MIN || atomic_load(&s->closing) || s->pool == NULL ||
      atomic_load(&s->trash) + bytes > RX_TRASH_MAX)
    return 0;
  rx_trash *t = malloc(sizeof *t);
  if (t == NULL)
    return 0;
  *t = (rx_trash){.item.fn = rx_trash_cb, .item.big = 1, .arena = c->arena,
                  .spans = c->bulk.spans, .keep = c->bulk.keep,
                  .bytes = bytes, .waiting = &s->trash};
  wd_arena_init(&c->arena, 0);  /* moved: the struct holds no self-pointer */
  c->bulk.spans = NULL;  /* the array only: freed with the request */
  c->bulk.keep = NULL;
  c->req = NULL;
  atomic_fetch_add(&s->trash, bytes);
  wd_pool_push(s->pool, &t->item);
  return 1;
}

void wd_req_clear(wd_req *c)
{
  if (c->req == NULL || !rx_trash_req(c))
    wd_arena_free(&c->arena);  /* nothing, or what a refused decode left */
  c->req = NULL;
  if (c->fe->up.clear != NULL)  /* the handler's half */
    c->fe->up.clear(c);
  wd_bulk_clear(&c->bulk);
  c->dec_code = 0;
}

/* The raw value of Request.version (field 1, a varint), as sent: protobuf-c
 * keeps the low 32 bits of a uint32, so version 2^32 + 1 would read as 1.
 * The last occurrence counts, as in protobuf; 0 when absent or when the
 * bytes are not a message (protobuf-c then says so). */
static uint64_t rx_raw_version(const uint8_t *p, size_t len)
{
  uint64_t version = 0;
  size_t i = 0;
  while (i < len) {
    uint64_t key = 0, v = 0;
    for (unsigned sh = 0;; sh += 7) {  /* the tag */
      if (i >= len || sh > 63)
        return version;
      key |= (uint64_t)(p[i] & 0x7f) << sh;
      if (!(p[i++] & 0x80))
        break;
    }
    switch (key & 7) {
    case 0:  /* varint */
      for (unsigned sh = 0;; sh += 7) {
        if (i >= len || sh > 63)
          return version;
        v |= (uint64_t)(p[i] & 0x7f) << sh;
        if (!(p[i++] & 0x80))
          break;
      }
      if (key >> 3 == 1)
        version = v;
      break;
    case 1: i += 8; break;
    case 5: i += 4; break;
    case 2:
      for (unsigned sh = 0;; sh += 7) {
        if (i >= len || sh > 63)
          return version;
        v |= (uint64_t)(p[i] & 0x7f) << sh;
        if (!(p[i++] & 0x80))
          break;
      }
      if (v > len - i)
        return version;
      i += (size_t)v;
      break;
    default:
      return version;
    }
  }
  return version;
}

/* A request whose protobuf part is this long or longer may take the
 * decode thread milliseconds (one-row chunks decode at about 0.7 us each
 * on the 2-core VM: 16 KiB of them about 1.2 ms); a framed payload is not
 * decoded and does not count. */
#define RX_BIG ((size_t)16 << 10)

int wd_req_big(nng_msg *m)
{
  const uint8_t *body = nng_msg_body(m), *hdr = body, *payload = NULL;
  size_t len = nng_msg_len(m), hlen = len, plen = 0;
  if (wv_frame_split(body, len, &hdr, &hlen, &payload, &plen) < 0)
    return 0;  /* refused at once */
  return hlen >= RX_BIG;
}

/* Decode thread: unpack c->msg into c->req (or set dec_code), and handle
 * the request's bulk parts (daemon/bulk/decode.h).  Touches only c and what is
 * constant or locked (cfg, the bulk tables). */
void wd_req_decode(wd_req *c)
{
  wd_front *s = c->fe;
  nng_msg *m = c->msg;
  c->msg = NULL;
  uint32_t pipe;  /* c->pipe, which front.c has set from the same message */
  wd_peer_identify(m, &pipe, c->principal, sizeof c->principal);
  c->req_id = 0;
  c->version = 0;
  c->dec_code = 0;
  size_t len = nng_msg_len(m);
  if (len > s->cfg->limits.max_request_bytes) {
    nng_msg_free(m);
    c->dec_code = WAVE_ETOOBIG;
    snprintf(c->dec_msg, sizeof c->dec_msg, "request is %zu bytes; this "
             "daemon takes at most %" PRIu64 " (limits.max_request_bytes; "
             "larger jobs: streams or regions)", len,
             s->cfg->limits.max_request_bytes);
    return;
  }
  const uint8_t *body = nng_msg_body(m), *hdr = body, *payload = NULL;
  size_t hlen = len, plen = 0;
  int framed = wv_frame_split(body, len, &hdr, &hlen, &payload, &plen);
  if (framed < 0) {
    nng_msg_free(m);
    c->dec_code = WAVE_EBADREQUEST;
    snprintf(c->dec_msg, sizeof c->dec_msg, "framed request of %zu bytes "
             "whose header length runs past its end", len);
    return;
  }
  wd_arena_init(&c->arena, rx_pb_budget(hlen));  /* empty: cleared */
  c->pb = (ProtobufCAllocator){.alloc = rx_pb_alloc, .free = rx_pb_free,
                               .allocator_data = &c->arena};
  c->req = wave__v1__request__unpack(&c->pb, hlen, hdr);
  int refused = c->arena.refused;
  if (c->req != NULL && c->arena.used > rx_pb_kept(hlen)) {
    c->req = NULL;
    refused = 1;
  }
  if (c->req == NULL) {
    wd_arena_free(&c->arena);
    nng_msg_free(m);
    c->dec_code = refused ? WAVE_ETOOBIG : WAVE_EBADREQUEST;
    if (refused)
      snprintf(c->dec_msg, sizeof c->dec_msg, "request of %zu bytes takes "
               "more than %zu bytes to decode (too many chunks?)", len,
               rx_pb_kept(hlen));
    else
      snprintf(c->dec_msg, sizeof c->dec_msg, "%zu bytes that are not a "
               "wave.v1.Request", len);
    return;
  }
  c->req_id = c->req->id;
  uint64_t raw = rx_raw_version(hdr, hlen);
  if (raw > UINT32_MAX) {  /* not version raw & 0xffffffff */
    nng_msg_free(m);
    wd_arena_free(&c->arena);
    c->req = NULL;
    c->dec_code = WAVE_EVERSION;
    snprintf(c->dec_msg, sizeof c->dec_msg, "protocol version %" PRIu64
             "; this daemon speaks version %u (and version 1 without hash "
             "submits)", raw, WD_PROTOCOL);
    return;
  }
  /* tcp needs a token (auth.c): without one nothing else is looked at;
   * with one, "token:NAME" replaces the principal "pipe:N" */
  if ((c->dec_code = wd_auth_request(s->cfg, nng_msg_get_pipe(m),
                                     c->req->token, c->principal,
                                     sizeof c->principal, c->dec_msg,
                                     sizeof c->dec_msg)) != 0) {
    nng_msg_free(m);
    return;
  }
  /* the level asked for, the same rule for every way in (level.h); a
   * request of another version is the route's to answer (VERSION) */
  if ((c->req->version == 1 || c->req->version == WD_PROTOCOL) &&
      (c->dec_code = wd_level_gate(s->cfg, c->req, c->principal,
                                   nng_msg_get_pipe(m), c->dec_msg,
                                   sizeof c->dec_msg)) != 0) {
    nng_msg_free(m);
    return;
  }
  /* the version and the other gates are the route's; a framed payload
   * stays in the received message, used in place; a stream may keep the
   * message as its piece (m set to NULL) */
  wd_bulk_in in = {.rq = c->req, .who = c->principal, .msg = &m,
                   .payload = framed ? payload : NULL, .plen = plen};
  if (s->up.decode(c, &in) && c->bulk.ready && framed)
    c->bulk.keep = m;
  else if (m != NULL)
    nng_msg_free(m);
}

uint64_t wd_req_now_ns(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Seconds from stamp a to stamp b, or -1 when either is missing (a
 * request refused before that stage). */
static double rx_span(uint64_t a, uint64_t b)
{
  return a == 0 || b == 0 || b < a ? -1.0 : (double)(b - a) * 1e-9;
}

/* Milliseconds as text, "-" for a missing span. */
static const char *rx_ms(char *buf, size_t n, double s)
{
  if (s < 0)
    snprintf(buf, n, "-");
  else
    snprintf(buf, n, "%.3f", s * 1e3);
  return buf;
}

void wd_req_answered(const wd_req *c, unsigned slow_ms, uint64_t now_ns)
{
  const uint64_t *t = c->t_ns;
  if (t[WD_RQT_RECV] == 0)
    return;
  double st[WD_RS_N] = {
      [WD_RS_DECODE_WAIT] = rx_span(t[WD_RQT_RECV], t[WD_RQT_DECODE]),
      [WD_RS_DECODE] = rx_span(t[WD_RQT_DECODE], t[WD_RQT_DECODED]),
      [WD_RS_LOOP_WAIT] = rx_span(t[WD_RQT_DECODED], t[WD_RQT_LOOP]),
      [WD_RS_SERVE] = rx_span(t[WD_RQT_LOOP], now_ns - c->parked_ns),
      [WD_RS_TOTAL] = rx_span(t[WD_RQT_RECV], now_ns - c->parked_ns)};
  wd_stats_request(st);
  if (slow_ms == 0 || st[WD_RS_TOTAL] * 1e3 < (double)slow_ms)
    return;
  char pool[24], dec[24], loop[24], serve[24], job[320] = "";
  const double *j = c->job_t;  /* its reduction's, seconds */
  if (j[WD_JT_SUBMIT] > 0 && t[WD_RQT_LOOP] != 0) {
    char a[24], q[24], r[24], h[24], e[24];
    double loop_s = (double)t[WD_RQT_LOOP] * 1e-9;
    double end_s = (double)(now_ns - c->parked_ns) * 1e-9;
    int ran = j[WD_JT_START] > 0;
    snprintf(job, sizeof job,
             " (of it: %s before its job was queued, %s queued on the "
             "device, %s there, %s until the loop took its end, %s from "
             "then to its reply)",
             rx_ms(a, sizeof a, j[WD_JT_SUBMIT] - loop_s),
             rx_ms(q, sizeof q,
                   ran ? j[WD_JT_START] - j[WD_JT_SUBMIT] : -1.0),
             rx_ms(r, sizeof r, ran ? j[WD_JT_END] - j[WD_JT_START] : -1.0),
             rx_ms(h, sizeof h, j[WD_JT_TAKEN] - j[WD_JT_END]),
             rx_ms(e, sizeof e, end_s - j[WD_JT_TAKEN]));
  }
  wd_warn("slow request: %s %" PRIu64 " from %s on connection %u took %.3f "
          "ms (limits.slow_request_ms %u): %s ms waiting for a decode thread, "
          "%s decoding, %s waiting for the loop, %s served until its reply "
          "(its job included, a parked poll's wait not)%s; nng handed it "
          "over at %.6f s (CLOCK_MONOTONIC)",
          c->what ? c->what : "undecoded request", c->req_id,
          c->principal[0] ? c->principal : "?", c->pipe,
          st[WD_RS_TOTAL] * 1e3, slow_ms,
          rx_ms(pool, sizeof pool, st[WD_RS_DECODE_WAIT]),
          rx_ms(dec, sizeof dec, st[WD_RS_DECODE]),
          rx_ms(loop, sizeof loop, st[WD_RS_LOOP_WAIT]),
          rx_ms(serve, sizeof serve, st[WD_RS_SERVE]), job,
          (double)t[WD_RQT_RECV] * 1e-9);
}
