/* test_bulk_streams.c - test_bulk's streamed jobs against the real wavedd
 * (docs/protocol.md "Streams"): many pieces, out of order, missing and
 * malformed (raw nng + protobuf-c), through libwaveclient, and wavectl's
 * paths.  Its TCase "streams" joins test_bulk.c's suite.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nng/nng.h>
#include <nng/protocol/reqrep0/req.h>

#include "bulk_harness.h"
#include "daemon_harness.h"
#include "proto/frame.h"
#include "wave/client.h"
#include "core/reduce.h"

TCase *bts_streams_tcase(void);

/* ---- streams ------------------------------------------------------------ */

static Wave__V1__Response *bts_open(nng_socket s, uint64_t in, uint64_t mask,
                                   int op)
{
  Wave__V1__StreamOpenRequest so = WAVE__V1__STREAM_OPEN_REQUEST__INIT;
  so.dtype = WAVE__V1__DTYPE__U32;
  so.op = (Wave__V1__Op)op;
  so.input_bytes = in;
  so.mask_bytes = mask;
  so.masked = mask > 0;
  Wave__V1__Request rq = WAVE__V1__REQUEST__INIT;
  rq.version = 1;
  rq.id = 11;
  rq.body_case = WAVE__V1__REQUEST__BODY_STREAM_OPEN;
  rq.stream_open = &so;
  return td_call(s, &rq);
}

/* A piece, framed (payload) or by value (data). */
static Wave__V1__Response *bts_put(nng_socket s, uint64_t id, int mask,
                                  uint64_t off, const void *data, size_t len,
                                  int framed)
{
  Wave__V1__StreamPutRequest sp = WAVE__V1__STREAM_PUT_REQUEST__INIT;
  sp.stream_id = id;
  sp.mask = mask;
  sp.offset = off;
  if (!framed) {
    sp.data.data = (uint8_t *)data;
    sp.data.len = len;
  }
  Wave__V1__Request rq = WAVE__V1__REQUEST__INIT;
  rq.version = 1;
  rq.id = 12;
  rq.body_case = WAVE__V1__REQUEST__BODY_STREAM_PUT;
  rq.stream_put = &sp;
  if (!framed)
    return td_call(s, &rq);
  size_t h = wave__v1__request__get_packed_size(&rq);
  size_t at = wv_frame_payload_at(h);
  uint8_t *buf = calloc(1, at + len);
  wv_frame_prefix(buf, (uint32_t)h);
  wave__v1__request__pack(&rq, buf + WV_FRAME_PREFIX);
  memcpy(buf + at, data, len);
  Wave__V1__Response *r = td_call_raw(s, buf, at + len);
  free(buf);
  return r;
}

static Wave__V1__Response *bts_commit(nng_socket s, uint64_t id, int abort)
{
  Wave__V1__StreamCommitRequest sc = WAVE__V1__STREAM_COMMIT_REQUEST__INIT;
  sc.stream_id = id;
  sc.abort = abort;
  Wave__V1__Request rq = WAVE__V1__REQUEST__INIT;
  rq.version = 1;
  rq.id = 13;
  rq.body_case = WAVE__V1__REQUEST__BODY_STREAM_COMMIT;
  rq.stream_commit = &sc;
  return td_call(s, &rq);
}

static void bts_ok_stream(Wave__V1__Response *r)
{
  if (r->body_case != WAVE__V1__RESPONSE__BODY_STREAM)
    ck_abort_msg("not a StreamInfo: %s", r->body_case ==
                 WAVE__V1__RESPONSE__BODY_ERROR ? r->error->message : "?");
  wave__v1__response__free_unpacked(r, NULL);
}

/* ---- a float sum, reduced as its pieces arrive ------------------------- */

/* Rows whose sum depends on the order: signs, exponents over 40 binades,
 * some -0.0 and +0.0. */
static void bts_floats(void *rows, size_t n, int f64, uint32_t seed)
{
  uint64_t x = 0x9e3779b97f4a7c15u ^ seed;
  for (size_t i = 0; i < n; i++) {
    x = x * 6364136223846793005u + 1442695040888963407u;
    double v = (double)(x >> 40) / (double)(1u << 24) - 0.5;
    v = ldexp(v, (int)((x >> 8) % 41) - 20);
    if (x % 97 == 0)
      v = (x & 256) ? -0.0 : 0.0;
    if (f64)
      ((double *)rows)[i] = v;
    else
      ((float *)rows)[i] = (float)v;
  }
}

/* One stream of rows (n_mask 0: unmasked, one chunk: reduced as the pieces
 * arrive; else an all-ones mask: the buffered way), its pieces backwards,
 * the last one sent twice.  Returns the reply (a ReduceResult). */
static Wave__V1__Response *bts_float_stream(nng_socket s, int f64,
                                           const void *rows, size_t n,
                                           const uint32_t *ones,
                                           uint64_t *share)
{
  size_t z = f64 ? 8 : 4;
  Wave__V1__StreamOpenRequest so = WAVE__V1__STREAM_OPEN_REQUEST__INIT;
  so.dtype = f64 ? WAVE__V1__DTYPE__F64 : WAVE__V1__DTYPE__F32;
  so.op = WAVE__V1__OP__SUM;
  so.input_bytes = n * z;
  so.mask_bytes = ones ? n * 4 : 0;
  so.masked = ones != NULL;
  Wave__V1__Request rq = WAVE__V1__REQUEST__INIT;
  rq.version = 1;
  rq.id = 14;
  rq.body_case = WAVE__V1__REQUEST__BODY_STREAM_OPEN;
  rq.stream_open = &so;
  Wave__V1__Response *r = td_call(s, &rq);
  ck_assert_int_eq(r->body_case, WAVE__V1__RESPONSE__BODY_STREAM);
  uint64_t id = r->stream->stream_id, piece = r->stream->piece_bytes;
  wave__v1__response__free_unpacked(r, NULL);
  for (int sec = 0; sec < (ones ? 2 : 1); sec++) {
    const char *p = sec ? (const char *)ones : rows;
    uint64_t size = n * (sec ? 4 : z), np = (size + piece - 1) / piece;
    for (uint64_t k = np; k-- > 0;) {
      uint64_t off = k * piece, len = size - off < piece ? size - off : piece;
      bts_ok_stream(bts_put(s, id, sec, off, p + off, len, 1));
      if (k == np - 1)
        bts_ok_stream(bts_put(s, id, sec, off, p + off, len, 1));
    }
  }
  if (share != NULL) {  /* what the open stream holds (status, own share) */
    Wave__V1__Response *st = td_status(s, 15);
    *share = 0;
    for (size_t i = 0; i < st->status->n_shares; i++)
      *share += st->status->shares[i]->stream_bytes;
    wave__v1__response__free_unpacked(st, NULL);
  }
  return bts_commit(s, id, 0);
}

/* Each size as an online stream, as a buffered (masked, all ones) stream
 * and by the reference: one answer, bit for bit. */
static void bts_float_ways(nng_socket s, const size_t *sizes, size_t k)
{
  size_t most = 0;
  for (size_t i = 0; i < k; i++)
    most = sizes[i] > most ? sizes[i] : most;
  void *rows = malloc(most * 8);
  uint32_t *ones = malloc(most * 4);
  for (size_t i = 0; i < most; i++)
    ones[i] = 1;
  for (int f64 = 0; f64 < 2; f64++)
    for (size_t i = 0; i < k; i++) {
      size_t n = sizes[i];
      bts_floats(rows, n, f64, (uint32_t)(n * 2 + (size_t)f64));
      wv_span sp = {rows, n};
      wv_reduce_job job = {.dtype = f64 ? WAVE_F64 : WAVE_F32,
                           .op = WAVE_SUM, .input = &sp, .n_input = 1,
                           .rows = n};
      wv_reduce_out ref;
      ck_assert_int_eq(wv_reduce_reference(&job, &ref, NULL), 0);
      uint64_t held = 0;
      Wave__V1__Response *a = bts_float_stream(s, f64, rows, n, NULL, &held);
      Wave__V1__Response *b = bts_float_stream(s, f64, rows, n, ones, NULL);
      ck_assert_msg(a->body_case == WAVE__V1__RESPONSE__BODY_REDUCE &&
                    b->body_case == WAVE__V1__RESPONSE__BODY_REDUCE,
                    "f64 %d rows %zu: no ReduceResult", f64, n);
      uint64_t va = f64 ? a->reduce->bits64[0] : a->reduce->bits[0];
      uint64_t vb = f64 ? b->reduce->bits64[0] : b->reduce->bits[0];
      ck_assert_msg(va == ref.bits[0] && vb == ref.bits[0], "f64 %d rows "
                    "%zu: online 0x%llx, buffered 0x%llx, reference 0x%llx",
                    f64, n, (unsigned long long)va, (unsigned long long)vb,
                    (unsigned long long)ref.bits[0]);
      ck_assert_uint_eq(a->reduce->count, n);
      ck_assert_uint_eq(a->reduce->rows, n);
      ck_assert_uint_eq(b->reduce->count, n);
      /* the online stream held one value per block of 256 rows or more,
       * never its rows */
      ck_assert_msg(held <= (n + 255) / 256 * (f64 ? 8 : 4),
                    "f64 %d rows %zu: the open stream held %llu bytes", f64,
                    n, (unsigned long long)held);
      wave__v1__response__free_unpacked(a, NULL);
      wave__v1__response__free_unpacked(b, NULL);
    }
  free(rows);
  free(ones);
}

START_TEST(stream_pieces)
{
  td_daemon d;
  bh_start(&d, 0, NULL);
  nng_socket s = td_dial(d.tcp);
  size_t rows = 300000;  /* 1.2 MB: 37 pieces of 32 KiB, the last short */
  uint32_t *in = malloc(rows * 4), *mk = malloc(rows * 4);
  bh_fill(in, rows, 7, 0);
  uint32_t want = 0;
  uint64_t cnt = 0;
  for (size_t i = 0; i < rows; i++) {
    mk[i] = (uint32_t)(i % 3 == 0);
    if (mk[i]) {
      want += in[i];
      cnt++;
    }
  }
  Wave__V1__Response *r = bts_open(s, rows * 4, rows * 4, WAVE__V1__OP__SUM);
  ck_assert_int_eq(r->body_case, WAVE__V1__RESPONSE__BODY_STREAM);
  uint64_t id = r->stream->stream_id, piece = r->stream->piece_bytes;
  wave__v1__response__free_unpacked(r, NULL);
  ck_assert_uint_eq(piece, 32768);
  uint64_t n = (rows * 4 + piece - 1) / piece;
  ck_assert_uint_gt(n, 30);
  /* input pieces backwards, every other one framed; piece 5 held back */
  for (uint64_t k = n; k-- > 0;) {
    if (k == 5)
      continue;
    uint64_t off = k * piece, len = rows * 4 - off < piece ? rows * 4 - off
                                                            : piece;
    bts_ok_stream(bts_put(s, id, 0, off, (char *)in + off, len, k % 2));
  }
  /* mask pieces in order, one of them twice (a resend) */
  for (uint64_t k = 0; k < n; k++) {
    uint64_t off = k * piece, len = rows * 4 - off < piece ? rows * 4 - off
                                                            : piece;
    bts_ok_stream(bts_put(s, id, 1, off, (char *)mk + off, len, 1));
    if (k == 3)
      bts_ok_stream(bts_put(s, id, 1, off, (char *)mk + off, len, 0));
  }
  bh_expect(bts_commit(s, id, 0), WAVE_EINCOMPLETE, "input piece 5 of");
  /* malformed pieces */
  bh_expect(bts_put(s, id, 0, 100, in, 64, 1), WAVE_ERANGE, "multiples of");
  bh_expect(bts_put(s, id, 0, 5 * piece, in, 64, 1), WAVE_ERANGE,
            "it must be 32768");
  bh_expect(bts_put(s, id, 0, n * piece, in, 64, 1), WAVE_ERANGE,
            "multiples of");
  bh_expect(bts_put(s, id + 1, 0, 0, in, 64, 1), WAVE_ENOJOB, "no open stream");
  /* another connection cannot touch it */
  nng_socket s2 = td_dial(d.tcp);
  bh_expect(bts_put(s2, id, 0, 5 * piece, (char *)in + 5 * piece, piece, 1),
            WAVE_ENOJOB, "no open stream");
  nng_close(s2);
  bts_ok_stream(bts_put(s, id, 0, 5 * piece, (char *)in + 5 * piece, piece, 0));
  r = bts_commit(s, id, 0);
  ck_assert_int_eq(r->body_case, WAVE__V1__RESPONSE__BODY_REDUCE);
  ck_assert_uint_eq(r->reduce->bits[0], want);
  ck_assert_uint_eq(r->reduce->count, cnt);
  ck_assert_uint_eq(r->reduce->rows, rows);
  wave__v1__response__free_unpacked(r, NULL);
  /* committed: gone */
  bh_expect(bts_commit(s, id, 0), WAVE_ENOJOB, "no open stream");
  /* float sums: pieces of 8192 (4096) rows, blocks of 256 */
  size_t fs[] = {1, 2, 257, 8193, 65537, 300001};
  bts_float_ways(s, fs, sizeof fs / sizeof fs[0]);

  /* refusals at open, before any row travels */
  bh_expect(bts_open(s, (uint64_t)BH_ROWS_MAX * 4 + 4, 0, WAVE__V1__OP__SUM),
            WAVE_EJOBSIZE, "max_job_rows");
  bh_expect(bts_open(s, 4096, 4092, WAVE__V1__OP__SUM), WAVE_EMASKLEN,
            "mask rows");
  bh_expect(bts_open(s, 4098, 0, WAVE__V1__OP__SUM), WAVE_ELENGTH, "4-byte");
  bh_expect(bts_open(s, 16, 0, 99), WAVE_EOP, "unknown reduction op");
  /* abort drops it */
  r = bts_open(s, 64, 0, WAVE__V1__OP__MAX);
  id = r->stream->stream_id;
  wave__v1__response__free_unpacked(r, NULL);
  bts_ok_stream(bts_commit(s, id, 1));
  bh_expect(bts_put(s, id, 0, 0, in, 64, 1), WAVE_ENOJOB, "no open stream");
  /* an empty stream commits to the empty reduction */
  r = bts_open(s, 0, 0, WAVE__V1__OP__SUM);
  id = r->stream->stream_id;
  wave__v1__response__free_unpacked(r, NULL);
  r = bts_commit(s, id, 0);
  ck_assert_int_eq(r->body_case, WAVE__V1__RESPONSE__BODY_REDUCE);
  ck_assert_uint_eq(r->reduce->rows, 0);
  wave__v1__response__free_unpacked(r, NULL);
  /* streams left open are dropped with their connection */
  r = bts_open(s, 4096, 0, WAVE__V1__OP__SUM);
  wave__v1__response__free_unpacked(r, NULL);
  nng_close(s);
  s = td_dial(d.ipc);
  unsigned open_streams = 1;
  for (int i = 0; i < 500 && open_streams; i++) {
    Wave__V1__Response *st = td_status(s, 1);
    open_streams = st->status->streams;
    wave__v1__response__free_unpacked(st, NULL);
    if (open_streams)
      usleep(10000);
  }
  ck_assert_uint_eq(open_streams, 0);
  nng_close(s);
  free(in);
  free(mk);
  td_stop_ok(&d);
}
END_TEST

/* Pieces of 512 KiB (131,072 float32 rows, 65,536 float64): blocks of
 * 256^2 rows, the default pieces' way. */
START_TEST(stream_float_blocks)
{
  td_daemon d;
  bh_prepare(&d, 0, NULL);
  FILE *f = fopen(d.cfg, "r+");
  char text[4096];
  size_t m = fread(text, 1, sizeof text - 1, f);
  text[m] = '\0';
  char *at = strstr(text, "max_request_bytes: 65536");
  ck_assert_ptr_nonnull(at);
  fclose(f);
  char fixed[4096];
  snprintf(fixed, sizeof fixed, "%.*smax_request_bytes: 1048576%s",
           (int)(at - text), text, at + strlen("max_request_bytes: 65536"));
  td_write(d.cfg, fixed);
  ck_assert_msg(td_start(&d) == 0, "did not start:\n%s", td_stderr(&d));
  nng_socket s = td_dial(d.tcp);
  size_t fs[] = {1, 65535, 65537, 131073, 600001};
  bts_float_ways(s, fs, sizeof fs / sizeof fs[0]);
  /* the result rule through block values: all -0.0 stays -0.0; a NaN,
   * +inf with -inf, one infinity */
  size_t n = 200000;
  double *v = malloc(n * 8);
  for (int k = 0; k < 4; k++) {
    for (size_t i = 0; i < n; i++)
      v[i] = k == 0 ? -0.0 : (double)(i % 7) - 3.0;
    if (k == 1)
      v[150000] = NAN;
    if (k >= 2)
      v[70000] = INFINITY;
    if (k == 3)
      v[199999] = -INFINITY;
    wv_span sp = {v, n};
    wv_reduce_job job = {.dtype = WAVE_F64, .op = WAVE_SUM, .input = &sp,
                         .n_input = 1, .rows = n};
    wv_reduce_out ref;
    ck_assert_int_eq(wv_reduce_reference(&job, &ref, NULL), 0);
    Wave__V1__Response *r = bts_float_stream(s, 1, v, n, NULL, NULL);
    ck_assert_int_eq(r->body_case, WAVE__V1__RESPONSE__BODY_REDUCE);
    ck_assert_msg(r->reduce->bits64[0] == ref.bits[0], "case %d: 0x%llx, "
                  "reference 0x%llx", k,
                  (unsigned long long)r->reduce->bits64[0],
                  (unsigned long long)ref.bits[0]);
    wave__v1__response__free_unpacked(r, NULL);
  }
  free(v);
  nng_close(s);
  td_stop_ok(&d);
}
END_TEST

/* libwaveclient streams a big wave_reduce by itself, keeping the chunk
 * boundaries (a float sum depends on them): the bits of the reference. */
START_TEST(stream_by_library)
{
  td_daemon d;
  bh_start(&d, 0, NULL);
  wave_client *c = bh_client(d.tcp);
  size_t rows = BH_ROWS_MAX;  /* 16 MiB + a mask: a stream */
  uint32_t *in = malloc(rows * 4), *mk = malloc(rows * 4);
  bh_fill(in, rows, 3, 1);
  for (size_t i = 0; i < rows; i++)
    mk[i] = (uint32_t)(i % 5 != 1);
  size_t cut[] = {0, 1000, 1000, 3000000, rows};  /* chunks, one empty */
  wave_chunk ch[4];
  wv_span sp[4];
  for (int i = 0; i < 4; i++) {
    ch[i] = (wave_chunk){in + cut[i], (cut[i + 1] - cut[i]) * 4};
    sp[i] = (wv_span){in + cut[i], cut[i + 1] - cut[i]};
  }
  wave_chunk mch = {mk, rows * 4};
  wv_span msp = {mk, rows};
  wave_reduce_request q = {.dtype = WAVE_F32, .op = WAVE_SUM, .input = ch,
                           .n_input = 4, .mask = &mch, .n_mask = 1,
                           .has_mask = 1};
  wave_reduce_result res;
  wave_error e;
  ck_assert_int_eq(wave_reduce(c, &q, &res, &e), 0);
  wv_reduce_job job = {.dtype = WAVE_F32, .op = WAVE_SUM, .input = sp,
                       .n_input = 4, .mask = &msp, .n_mask = 1,
                       .has_mask = 1, .rows = rows};
  wv_reduce_out ref;
  ck_assert_int_eq(wv_reduce_reference(&job, &ref, NULL), 0);
  ck_assert_uint_eq(res.bits[0], ref.bits[0]);
  ck_assert_uint_eq(res.count, ref.count);
  /* a framed job above this daemon's 64 KiB limit: TOOBIG, resent as a
   * stream, the same bits as the reference */
  wave_chunk mid = {in, 512u << 10};
  wv_span mids = {in, (512u << 10) / 4};
  wave_reduce_request qm = {.dtype = WAVE_F32, .op = WAVE_SUM, .input = &mid,
                            .n_input = 1};
  ck_assert_int_eq(wave_reduce(c, &qm, &res, &e), 0);
  wv_reduce_job jm = {.dtype = WAVE_F32, .op = WAVE_SUM, .input = &mids,
                      .n_input = 1, .rows = mids.rows};
  ck_assert_int_eq(wv_reduce_reference(&jm, &ref, NULL), 0);
  ck_assert_uint_eq(res.bits[0], ref.bits[0]);
  /* too big for the daemon: refused at once, no timeout */
  wave_chunk big[2] = {{in, rows * 4}, {in, 4}};
  wave_reduce_request qb = {.dtype = WAVE_U32, .op = WAVE_SUM,
                            .input = big, .n_input = 2};
  wave_client_set_timeout(c, 5000);
  ck_assert_int_eq(wave_reduce(c, &qb, &res, &e), WAVE_EJOBSIZE);
  free(in);
  free(mk);
  wave_client_close(c);
  td_stop_ok(&d);
}
END_TEST

/* wavectl's paths (copy region, memfd, messages, stream) give one answer. */
static char *bts_wavectl(const char *url, const char *const *files, size_t n,
                        const char *extra)
{
  static char out[4096];
  char cmd[2048];
  const char *bin = getenv("WAVE_BINARY_DIR");
  int k = snprintf(cmd, sizeof cmd, "%s/wavectl --url %s submit reduce "
                   "--json --dtype f32 --op sum %s", bin ? bin : ".", url,
                   extra);
  for (size_t i = 0; i < n; i++)
    k += snprintf(cmd + k, sizeof cmd - (size_t)k, " --input %s", files[i]);
  FILE *f = popen(cmd, "r");
  ck_assert_ptr_nonnull(f);
  size_t m = fread(out, 1, sizeof out - 1, f);
  out[m] = '\0';
  int st = pclose(f);
  ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s: exit %d: %s",
                cmd, WEXITSTATUS(st), out);
  /* the answer without the timing */
  char *sec = strstr(out, "\"seconds\"");
  if (sec != NULL)
    *sec = '\0';
  return out;
}

START_TEST(wavectl_paths)
{
  td_daemon on, off;
  bh_start(&on, 1, NULL);
  bh_start(&off, 0, NULL);
  size_t rows = 600000;  /* 2.4 MB per file: over tcp, a stream */
  uint32_t *p = malloc(rows * 4);
  char f1[256], f2[256], f3[256];
  snprintf(f1, sizeof f1, "%s/a.raw", on.dir);
  snprintf(f2, sizeof f2, "%s/b.raw", on.dir);
  snprintf(f3, sizeof f3, "%s/c.txt", on.dir);
  bh_fill(p, rows, 11, 1);
  FILE *f = fopen(f1, "wb");
  fwrite(p, 4, rows, f);
  fclose(f);
  bh_fill(p, rows, 12, 1);
  f = fopen(f2, "wb");
  fwrite(p, 4, 1000, f);
  fclose(f);
  f = fopen(f3, "w");
  fprintf(f, "1.5 -2.25\n3e-3\n");
  fclose(f);
  const char *files[] = {f1, f2};
  char want[4096];
  snprintf(want, sizeof want, "%s", bts_wavectl(on.ipc, files, 2, ""));
  ck_assert_ptr_nonnull(strstr(want, "\"rows\": 601000"));
  ck_assert_str_eq(bts_wavectl(off.ipc, files, 2, ""), want);  /* memfd off */
  ck_assert_str_eq(bts_wavectl(on.tcp, files, 2, ""), want);   /* stream */
  const char *text[] = {f3};
  char *t = bts_wavectl(on.ipc, text, 1, "--format text");
  ck_assert_ptr_nonnull(strstr(t, "\"rows\": 3"));
  /* the daemon logged a file region (read by its job, daemon/bulk/filered.h) */
  ck_assert_ptr_nonnull(strstr(td_stderr(&on), "kept open, read by its jobs"));
  free(p);
  td_stop_ok(&off);
  td_stop_ok(&on);
}
END_TEST

TCase *bts_streams_tcase(void)
{
  TCase *st = tcase_create("streams");
  tcase_set_timeout(st, 300);
  tcase_add_test(st, stream_pieces);
  tcase_add_test(st, stream_float_blocks);
  tcase_add_test(st, stream_by_library);
  tcase_add_test(st, wavectl_paths);
  return st;
}
