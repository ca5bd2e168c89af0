/* test_bulk_ring.c - test_bulk's stream pieces by place (StreamPutRequest
 * .from, docs/protocol.md "Streams") against the real wavedd: the bits of
 * pieces with bytes and of the one-request reduction, through a ring of
 * three slots reused (raw nng + protobuf-c, then libwaveclient's
 * wave_reduce_ring), and every bad extent refused as a reduction's extent
 * is.  Its TCase "ring" joins test_bulk.c's suite; one daemon.
 */
#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <nng/nng.h>

#include "bulk_harness.h"
#include "daemon_harness.h"
#include "wave/client.h"
#include "core/reduce.h"

TCase *btr_ring_tcase(void);

#define BTR_PIECE 32768u  /* the daemon's pieces: max_request_bytes / 2 */
#define BTR_SLOTS 3u

/* A sealed memfd of n bytes, mapped read-write at *map. */
static int btr_memfd(size_t n, uint8_t **map)
{
  int fd = memfd_create("btr", MFD_ALLOW_SEALING | MFD_CLOEXEC);
  ck_assert_int_ge(fd, 0);
  ck_assert_int_eq(ftruncate(fd, (off_t)n), 0);
  ck_assert_int_eq(fallocate(fd, 0, 0, (off_t)n), 0);
  *map = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ck_assert_ptr_ne(*map, MAP_FAILED);
  ck_assert_int_eq(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW), 0);
  return fd;
}

static uint64_t btr_register(td_daemon *d, nng_socket s, int fd, int file)
{
  Wave__V1__Response *r = bh_register_fd(d->ipc, s, fd, 0, file, file);
  ck_assert_msg(r->body_case == WAVE__V1__RESPONSE__BODY_REGION, "%s",
                r->body_case == WAVE__V1__RESPONSE__BODY_ERROR
                    ? r->error->message : "?");
  uint64_t id = r->region->id;
  wave__v1__response__free_unpacked(r, NULL);
  return id;
}

static Wave__V1__Response *btr_call(nng_socket s, int body, void *msg)
{
  Wave__V1__Request rq = WAVE__V1__REQUEST__INIT;
  rq.version = 1;
  rq.id = 21;
  rq.body_case = body;
  if (body == WAVE__V1__REQUEST__BODY_STREAM_OPEN)
    rq.stream_open = msg;
  else if (body == WAVE__V1__REQUEST__BODY_STREAM_PUT)
    rq.stream_put = msg;
  else if (body == WAVE__V1__REQUEST__BODY_STREAM_COMMIT)
    rq.stream_commit = msg;
  else
    rq.reduce = msg;
  return td_call(s, &rq);
}

/* A stream open asking pieces of ask bytes (0: the daemon's), which must
 * get want. */
static uint64_t btr_open_asking(nng_socket s, int dtype, int op, uint64_t in,
                                uint64_t mask, uint64_t ask, uint64_t want)
{
  Wave__V1__StreamOpenRequest so = WAVE__V1__STREAM_OPEN_REQUEST__INIT;
  so.dtype = (Wave__V1__DType)dtype;
  so.op = (Wave__V1__Op)op;
  so.input_bytes = in;
  so.mask_bytes = mask;
  so.masked = mask > 0;
  so.piece_bytes = ask;
  Wave__V1__Response *r = btr_call(s, WAVE__V1__REQUEST__BODY_STREAM_OPEN,
                                   &so);
  ck_assert_int_eq(r->body_case, WAVE__V1__RESPONSE__BODY_STREAM);
  ck_assert_uint_eq(r->stream->piece_bytes, want);
  uint64_t id = r->stream->stream_id;
  wave__v1__response__free_unpacked(r, NULL);
  return id;
}

static uint64_t btr_open(nng_socket s, int dtype, int op, uint64_t in,
                         uint64_t mask)
{
  return btr_open_asking(s, dtype, op, in, mask, 0, BTR_PIECE);
}

/* A put of stream id naming (region, at, bytes); data: also by value. */
static Wave__V1__Response *btr_put(nng_socket s, uint64_t id, int mask,
                                   uint64_t off, uint64_t region, uint64_t at,
                                   uint64_t bytes, const void *data)
{
  Wave__V1__Extent e = WAVE__V1__EXTENT__INIT;
  e.region = region;
  e.offset = at;
  e.bytes = bytes;
  Wave__V1__StreamPutRequest sp = WAVE__V1__STREAM_PUT_REQUEST__INIT;
  sp.stream_id = id;
  sp.mask = mask;
  sp.offset = off;
  sp.from = &e;
  if (data != NULL) {
    sp.data.data = (uint8_t *)data;
    sp.data.len = bytes;
  }
  return btr_call(s, WAVE__V1__REQUEST__BODY_STREAM_PUT, &sp);
}

static void btr_ok(Wave__V1__Response *r)
{
  ck_assert_msg(r->body_case == WAVE__V1__RESPONSE__BODY_STREAM, "%s",
                r->body_case == WAVE__V1__RESPONSE__BODY_ERROR
                    ? r->error->message : "not a StreamInfo");
  wave__v1__response__free_unpacked(r, NULL);
}

/* One job streamed through the ring's slots (slot k mod 3 for piece k,
 * each written only after the answer to the put before that used it), in
 * pieces of piece bytes (BTR_PIECE: the daemon's; less: asked): its
 * ReduceResult's bits and count. */
static void btr_ring_job(nng_socket s, uint64_t ring, uint8_t *slots,
                         int dtype, int op, const void *rows, size_t in,
                         const uint32_t *mk, uint64_t piece, uint64_t out[2])
{
  uint64_t id = btr_open_asking(s, dtype, op, in,
                                mk ? in / (dtype == WAVE_F64 ? 2 : 1) : 0,
                                piece == BTR_PIECE ? 0 : piece, piece);
  unsigned k = 0;
  for (int sec = 0; sec < (mk ? 2 : 1); sec++) {
    const uint8_t *p = sec ? (const uint8_t *)mk : rows;
    uint64_t size = sec ? in / (dtype == WAVE_F64 ? 2 : 1) : in;
    for (uint64_t off = 0; off < size; off += piece, k++) {
      uint64_t len = size - off < piece ? size - off : piece;
      uint64_t at = (k % BTR_SLOTS) * piece;
      memcpy(slots + at, p + off, len);
      btr_ok(btr_put(s, id, sec, off, ring, at, len, NULL));
    }
  }
  Wave__V1__StreamCommitRequest sc = WAVE__V1__STREAM_COMMIT_REQUEST__INIT;
  sc.stream_id = id;
  Wave__V1__Response *r = btr_call(s, WAVE__V1__REQUEST__BODY_STREAM_COMMIT,
                                   &sc);
  ck_assert_msg(r->body_case == WAVE__V1__RESPONSE__BODY_REDUCE, "%s",
                r->body_case == WAVE__V1__RESPONSE__BODY_ERROR
                    ? r->error->message : "not a ReduceResult");
  out[0] = dtype == WAVE_F64 ? r->reduce->bits64[0] : r->reduce->bits[0];
  out[1] = r->reduce->count;
  wave__v1__response__free_unpacked(r, NULL);
}

/* The same job as one request naming the rows in the region whole (the
 * one-message way of a reduction by place). */
static void btr_whole(nng_socket s, uint64_t whole, int dtype, int op,
                      size_t in, uint64_t mask_at, int masked,
                      uint64_t out[2])
{
  Wave__V1__Extent e = WAVE__V1__EXTENT__INIT, m = WAVE__V1__EXTENT__INIT;
  Wave__V1__Extent *ep = &e, *mp = &m;
  e.region = m.region = whole;
  e.bytes = in;
  m.offset = mask_at;
  m.bytes = in / (dtype == WAVE_F64 ? 2 : 1);
  Wave__V1__ReduceRequest rr = WAVE__V1__REDUCE_REQUEST__INIT;
  rr.dtype = (Wave__V1__DType)dtype;
  rr.op = (Wave__V1__Op)op;
  rr.n_input_at = 1;
  rr.input_at = &ep;
  rr.masked = masked;
  rr.n_mask_at = masked ? 1 : 0;
  rr.mask_at = &mp;
  Wave__V1__Response *r = btr_call(s, WAVE__V1__REQUEST__BODY_REDUCE, &rr);
  ck_assert_int_eq(r->body_case, WAVE__V1__RESPONSE__BODY_REDUCE);
  out[0] = dtype == WAVE_F64 ? r->reduce->bits64[0] : r->reduce->bits[0];
  out[1] = r->reduce->count;
  wave__v1__response__free_unpacked(r, NULL);
}

/* libwaveclient's ring against the daemon d: the f64 sum of v[0..n) */
static void btr_client(td_daemon *d, double *v, size_t n)
{
  /* libwaveclient's ring: the bits of wave_reduce, many pieces reusing
   * the slots; refused unregistered, or too small for one piece */
  wave_client *c = bh_client(d->ipc);
  wave_region *rg, *tiny;
  wave_error e;
  wave_reduce_result res, want;
  ck_assert_int_eq(wave_region_create(&rg, BTR_SLOTS * BTR_PIECE, "ring", &e),
                   0);
  wave_chunk ch = {v, n * 8};
  wave_reduce_request q = {.dtype = WAVE_F64, .op = WAVE_SUM, .input = &ch,
                           .n_input = 1};
  ck_assert_int_eq(wave_reduce_ring(c, &q, rg, &res, &e), WAVE_EARG);
  ck_assert_int_eq(wave_region_register(c, rg, &e), 0);
  ck_assert_int_eq(wave_reduce(c, &q, &want, &e), 0);
  for (int k = 0; k < 2; k++) {
    ck_assert_msg(wave_reduce_ring(c, &q, rg, &res, &e) == 0, "%s",
                  e.message);
    ck_assert_uint_eq(res.bits[0], want.bits[0]);
    ck_assert_uint_eq(res.rows, n);
  }
  /* chunks that end inside a piece, at offsets that are not multiples of
   * 16 (the slot copy's streaming stores start at the next one), and a
   * chunk under 4096 bytes (copied plainly): wave_reduce's bits, as a
   * float sum and as an order-free op */
  ck_assert_uint_gt(n, 150003 + 5);
  wave_chunk parts[4] = {{v, 1001 * 8},
                         {v + 1001, 3 * 8},
                         {v + 1004, (150003 - 1004) * 8},
                         {v + 150003, (n - 150003) * 8}};
  const int ops[2][2] = {{WAVE_F64, WAVE_SUM}, {WAVE_U64, WAVE_XOR}};
  for (int k = 0; k < 2; k++) {
    wave_reduce_request qp = {.dtype = ops[k][0], .op = ops[k][1],
                              .input = parts, .n_input = 4};
    ck_assert_int_eq(wave_reduce(c, &qp, &want, &e), 0);
    ck_assert_msg(wave_reduce_ring(c, &qp, rg, &res, &e) == 0, "%s",
                  e.message);
    ck_assert_uint_eq(res.bits[0], want.bits[0]);
    ck_assert_uint_eq(res.rows, n);
  }
  ck_assert_int_eq(wave_reduce(c, &q, &want, &e), 0);
  /* the argument checks are wave_reduce's own (client/reduce.c
   * rdc_check): a chunk with bytes but no data is refused by both, in
   * the same words, before any byte goes */
  wave_chunk hole = {NULL, 64};
  wave_reduce_request qh = q;
  qh.input = &hole;
  ck_assert_int_eq(wave_reduce(c, &qh, &res, &e), WAVE_EARG);
  ck_assert_ptr_nonnull(strstr(e.message, "input chunk 0 has 64 bytes but "
                                          "no data"));
  ck_assert_int_eq(wave_reduce_ring(c, &qh, rg, &res, &e), WAVE_EARG);
  ck_assert_ptr_nonnull(strstr(e.message, "input chunk 0 has 64 bytes but "
                                          "no data"));
  qh.input = NULL;
  ck_assert_int_eq(wave_reduce_ring(c, &qh, rg, &res, &e), WAVE_EARG);
  ck_assert_ptr_nonnull(strstr(e.message, "chunk array is NULL"));
  /* a ring below the daemon's piece asks pieces of a quarter of it (7
   * slots of 4096 here: the bits still); one below 4096 holds none */
  ck_assert_int_eq(wave_region_create(&tiny, BTR_PIECE - 4096, "small", &e),
                   0);
  ck_assert_int_eq(wave_region_register(c, tiny, &e), 0);
  ck_assert_msg(wave_reduce_ring(c, &q, tiny, &res, &e) == 0, "%s",
                e.message);
  ck_assert_uint_eq(res.bits[0], want.bits[0]);
  wave_region_close(tiny);
  ck_assert_int_eq(wave_region_create(&tiny, 2048, "tiny", &e), 0);
  ck_assert_int_eq(wave_region_register(c, tiny, &e), 0);
  ck_assert_int_eq(wave_reduce_ring(c, &q, tiny, &res, &e), WAVE_EARG);
  ck_assert_ptr_nonnull(strstr(e.message, "holds no piece"));
  wave_region_close(tiny);
  wave_region_close(rg);
  wave_client_close(c);
}

START_TEST(ring_pieces)
{
  td_daemon d;
  bh_start(&d, 1, NULL);
  nng_socket s = td_dial(d.ipc);
  uint8_t *slots, *all;
  int rfd = btr_memfd(BTR_SLOTS * BTR_PIECE, &slots);
  size_t n = 300001;  /* float64 rows: 74 pieces, the last short */
  int wfd = btr_memfd(n * 8 + n * 4, &all);
  uint64_t ring = btr_register(&d, s, rfd, 0);
  double *v = (double *)all;
  uint32_t *mk = (uint32_t *)(all + n * 8);
  bh_fill((uint32_t *)v, n * 2, 5, 1);  /* finite float32 pairs */
  for (size_t i = 0; i < n; i++)
    v[i] = (double)((float *)v)[2 * i] * 1e-3 + (double)i;
  for (size_t i = 0; i < n; i++)
    mk[i] = (uint32_t)(i % 3 != 0);
  uint64_t whole = btr_register(&d, s, wfd, 0);
  /* three jobs, each through the same three slots: an online float sum,
   * a masked float sum (copied into its buffer), an order-free op (kept
   * as pieces of their own); each with the one-request way's bits */
  struct { int dtype, op, masked; size_t in; } jobs[] = {
    {WAVE_F64, WAVE_SUM, 0, n * 8},
    {WAVE_F32, WAVE_SUM, 1, n * 4},
    {WAVE_U32, WAVE_MAX, 0, n * 8},
  };
  for (int j = 0; j < 3; j++) {
    uint64_t a[2], b[2];
    btr_ring_job(s, ring, slots, jobs[j].dtype, jobs[j].op, all, jobs[j].in,
                 jobs[j].masked ? mk : NULL, BTR_PIECE, a);
    btr_whole(s, whole, jobs[j].dtype, jobs[j].op, jobs[j].in, n * 8,
              jobs[j].masked, b);
    ck_assert_msg(a[0] == b[0] && a[1] == b[1], "job %d: ring 0x%llx (%llu),"
                  " whole 0x%llx (%llu)", j, (unsigned long long)a[0],
                  (unsigned long long)a[1], (unsigned long long)b[0],
                  (unsigned long long)b[1]);
  }
  /* ... and the reference's (the bits a put with bytes gives: test
   * stream_pieces) */
  wv_span sp = {v, n};
  wv_reduce_job job = {.dtype = WAVE_F64, .op = WAVE_SUM, .input = &sp,
                       .n_input = 1, .rows = n};
  wv_reduce_out ref;
  uint64_t a[2];
  ck_assert_int_eq(wv_reduce_reference(&job, &ref, NULL), 0);
  btr_ring_job(s, ring, slots, WAVE_F64, WAVE_SUM, v, n * 8, NULL, BTR_PIECE,
               a);
  ck_assert_uint_eq(a[0], ref.bits[0]);
  /* a smaller piece asked (StreamOpenRequest.piece_bytes: a multiple of
   * 4096, at least 4096, at most the daemon's): the same bits, as the
   * online sum (1024 rows a piece) and as an order-free op */
  btr_ring_job(s, ring, slots, WAVE_F64, WAVE_SUM, v, n * 8, NULL, 8192, a);
  ck_assert_uint_eq(a[0], ref.bits[0]);
  uint64_t b2[2];
  btr_ring_job(s, ring, slots, WAVE_U32, WAVE_MAX, all, n * 8, NULL, 4096, a);
  btr_whole(s, whole, WAVE_U32, WAVE_MAX, n * 8, n * 8, 0, b2);
  ck_assert_uint_eq(a[0], b2[0]);
  ck_assert_uint_eq(a[1], b2[1]);
  uint64_t asks[][2] = {{1, 4096}, {8192 + 100, 8192}, {BTR_PIECE - 1,
                        BTR_PIECE - 4096}, {(uint64_t)1 << 40, BTR_PIECE}};
  for (int i = 0; i < 4; i++) {
    Wave__V1__StreamCommitRequest ab = WAVE__V1__STREAM_COMMIT_REQUEST__INIT;
    ab.stream_id = btr_open_asking(s, WAVE_F32, WAVE_SUM, 4 * BTR_PIECE, 0,
                                   asks[i][0], asks[i][1]);
    ab.abort = 1;
    btr_ok(btr_call(s, WAVE__V1__REQUEST__BODY_STREAM_COMMIT, &ab));
  }

  /* bad extents, refused as a reduction's are; the stream stays usable */
  uint64_t id = btr_open(s, WAVE_F64, WAVE_SUM, 2 * BTR_PIECE, 0);
  bh_expect(btr_put(s, id, 0, 0, ring + 100, 0, BTR_PIECE, NULL),
            WAVE_EREGION, "no region");
  bh_expect(btr_put(s, id, 0, 0, ring, 2 * BTR_PIECE + 4, BTR_PIECE, NULL),
            WAVE_ERANGE, "lie outside region");
  bh_expect(btr_put(s, id, 0, 0, ring, 2, BTR_PIECE, NULL), WAVE_ERANGE,
            "not a multiple of 4");
  bh_expect(btr_put(s, id, 0, 0, ring, 0, BTR_PIECE - 2, NULL), WAVE_ELENGTH,
            "not a multiple of 4");
  bh_expect(btr_put(s, id, 0, 0, ring, 0, BTR_PIECE - 8, NULL), WAVE_ERANGE,
            "it must be 32768");
  bh_expect(btr_put(s, id, 0, 0, 0, 0, BTR_PIECE, NULL), WAVE_EBADREQUEST,
            "names the payload");
  bh_expect(btr_put(s, id, 0, 0, ring, 0, 64, slots), WAVE_EBADREQUEST,
            "one of `data`");
  /* a file region is read by its jobs, not by a put */
  int ffd = btr_memfd(BTR_PIECE, &all);
  uint64_t file = btr_register(&d, s, ffd, 1);
  bh_expect(btr_put(s, id, 0, 0, file, 0, BTR_PIECE, NULL), WAVE_EREGION,
            "a file region");
  /* another connection's region, even of this principal */
  nng_socket s2 = td_dial(d.ipc);
  uint64_t theirs = btr_register(&d, s2, rfd, 0);
  bh_expect(btr_put(s, id, 0, 0, theirs, 0, BTR_PIECE, NULL), WAVE_EREGION,
            "no region");
  nng_close(s2);
  /* another principal's (a tcp connection: pipe:N, not uid:N) */
  nng_socket s3 = td_dial(d.tcp);
  uint64_t id3 = btr_open(s3, WAVE_F64, WAVE_SUM, BTR_PIECE, 0);
  bh_expect(btr_put(s3, id3, 0, 0, ring, 0, BTR_PIECE, NULL), WAVE_EREGION,
            "no region");
  nng_close(s3);
  btr_ok(btr_put(s, id, 0, 0, ring, 0, BTR_PIECE, NULL));
  btr_ok(btr_put(s, id, 0, BTR_PIECE, ring, BTR_PIECE, BTR_PIECE, NULL));
  nng_close(s);

  btr_client(&d, v, n);
  close(rfd);
  close(wfd);
  close(ffd);
  td_stop_ok(&d);
}
END_TEST

TCase *btr_ring_tcase(void)
{
  TCase *tc = tcase_create("ring");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, ring_pieces);
  return tc;
}
