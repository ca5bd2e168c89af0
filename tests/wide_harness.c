/* wide_harness.c - see wide_harness.h. */
#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bulk_harness.h"
#include "core/base.h"
#include "wide_harness.h"

const char *const ww_way_names[WW_N] = {
  [WW_MSG] = "message(tcp)", [WW_FRAMED_IPC] = "framed(ipc)",
  [WW_FRAMED_TCP] = "framed(tcp)", [WW_STREAM_IPC] = "stream(ipc)",
  [WW_STREAM_TCP] = "stream(tcp)", [WW_MEMFD] = "memfd region",
  [WW_COPY] = "copy region", [WW_FILE] = "file region",
  [WW_FLEET] = "fleet",
};

void ww_start(td_daemon *d, int fake, unsigned max_request_bytes)
{
  td_prepare(d, NULL);
  d->fake = fake;
  char text[2048];
  snprintf(text, sizeof text,
           "listen: [\"%s\", \"%s\"]\n"
           "ipc_mode: 0600\n"
           "log_level: info\n"
           "allow_client_shm: true\n"
           "limits:\n"
           "  max_request_bytes: %u\n"
           "  max_job_rows: 4194304\n"
           "packs:\n"
           "  load: []\n"
           "auth: none\n"
           "devices:\n%s"
           "  - {name: cpu0, backend: cpu, threads: 2, "
           "reduce_slice_rows: 65536}\n"
           "  - {name: cpu1, backend: cpu, threads: 1, "
           "reduce_slice_rows: 65536}\n",
           d->ipc, d->tcp, max_request_bytes,
           fake ? "  - {name: fake0, backend: fake, threads: 1, "
                  "device: \"lacks=fsum\"}\n" : "");
  td_write(d->cfg, text);
  if (td_start(d) != 0) {
    fprintf(stderr, "wavedd did not start:\n%s\n", td_stderr(d));
    ck_abort_msg("wavedd did not start");
  }
}

void ww_open(ww_ctx *x, const td_daemon *a, const char *fleet_url)
{
  memset(x, 0, sizeof *x);
  x->ipc = bh_client(a->ipc);
  x->tcp = bh_client(a->tcp);
  x->raw = td_dial(a->tcp);
  snprintf(x->dir, sizeof x->dir, "%s", a->dir);
  const char *urls[2] = {a->ipc, fleet_url};
  wave_error e = {0};
  ck_assert_msg(wave_fleet_open(&x->fleet, urls, 2, &e) == 0, "%s",
                e.message);
  wave_fleet_set_timeout(x->fleet, 60000);
  x->next_id = 1000;
}

void ww_close(ww_ctx *x)
{
  wave_fleet_close(x->fleet);
  nng_close(x->raw);
  wave_client_close(x->ipc);
  wave_client_close(x->tcp);
}

/* The job's chunks as client chunks, and its byte sizes. */
static void ww_chunks(const ww_job *j, wave_chunk *cin, wave_chunk *cmk,
                      size_t *in_bytes, size_t *mask_bytes)
{
  unsigned z = wv_dtype_size(j->dt);
  size_t off = 0;
  ck_assert_uint_le(j->n_in, WW_CHUNKS);
  ck_assert_uint_le(j->n_mask, WW_CHUNKS);
  for (size_t i = 0; i < j->n_in; i++) {
    cin[i] = (wave_chunk){(const uint8_t *)j->in + off,
                          j->in_bytes ? j->in_bytes[i] : j->in_rows[i] * z};
    off += cin[i].bytes;
  }
  *in_bytes = off;
  off = 0;
  for (size_t i = 0; i < j->n_mask; i++) {
    cmk[i] = (wave_chunk){(const uint8_t *)j->mask + off,
                          j->mask_rows[i] * 4};
    off += cmk[i].bytes;
  }
  *mask_bytes = off;
}

/* The raw ReduceResult (or Error) as libwaveclient would give it. */
static int ww_raw_result(Wave__V1__Response *rp, wave_reduce_result *r,
                         wave_error *e)
{
  int rc = 0;
  memset(r, 0, sizeof *r);
  if (rp->body_case == WAVE__V1__RESPONSE__BODY_ERROR) {
    rc = (int)rp->error->code;
    snprintf(e->message, sizeof e->message, "%s", rp->error->message);
    e->code = rc;
  } else {
    ck_assert_int_eq(rp->body_case, WAVE__V1__RESPONSE__BODY_REDUCE);
    const Wave__V1__ReduceResult *rs = rp->reduce;
    int wide = wv_dtype_size((wave_dtype)rs->dtype) == 8;
    /* the 64-bit dtypes in bits64 only, the others in bits only */
    ck_assert_uint_eq(wide ? rs->n_bits : rs->n_bits64, 0);
    r->n_values = (unsigned)(wide ? rs->n_bits64 : rs->n_bits);
    for (unsigned v = 0; v < r->n_values && v < 2; v++)
      r->bits[v] = wide ? rs->bits64[v] : rs->bits[v];
    r->dtype = (wave_dtype)rs->dtype;
    r->op = (wave_op)rs->op;
    r->index = rs->index;
    r->count = rs->count;
    r->rows = rs->rows;
    r->finite = (int)rs->finite;
    /* fsum's exact partial as the daemon sent it (unchecked: the test
     * compares it with the reference's) */
    ck_assert_uint_le(rs->exact.len, WAVE_EXACT_MAX_BYTES);
    if (rs->exact.len > 0)
      memcpy(r->exact, rs->exact.data, rs->exact.len);
    r->exact_bytes = (uint32_t)rs->exact.len;
    r->exact_flags = rs->exact_flags;
    r->device = "";
  }
  wave__v1__response__free_unpacked(rp, NULL);
  return rc;
}

static int ww_message(ww_ctx *x, const ww_job *j, const wave_chunk *cin,
                      const wave_chunk *cmk, wave_reduce_result *r,
                      wave_error *e)
{
  td_chunk tin[WW_CHUNKS], tmk[WW_CHUNKS];
  for (size_t i = 0; i < j->n_in; i++)
    tin[i] = (td_chunk){cin[i].data, cin[i].bytes};
  for (size_t i = 0; i < j->n_mask; i++)
    tmk[i] = (td_chunk){cmk[i].data, cmk[i].bytes};
  Wave__V1__Response *rp =
      td_reduce(x->raw, x->next_id++, (int)j->dt, (int)j->op, tin, j->n_in,
                j->has_mask ? tmk : NULL, j->has_mask ? j->n_mask : 0,
                j->device);
  return ww_raw_result(rp, r, e);
}

/* A file in x->dir holding `pad` bytes of 0xee and then p: its open fd. */
static int ww_file(const ww_ctx *x, const char *name, const void *p,
                   size_t bytes, size_t pad)
{
  char path[300];
  snprintf(path, sizeof path, "%s/%s", x->dir, name);
  int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
  ck_assert_int_ge(fd, 0);
  uint8_t junk[8];
  memset(junk, 0xee, sizeof junk);
  ck_assert_uint_le(pad, sizeof junk);
  ck_assert_int_eq(write(fd, junk, pad), (ssize_t)pad);
  ck_assert_int_eq(write(fd, p, bytes), (ssize_t)bytes);
  ck_assert_int_eq(lseek(fd, 0, SEEK_SET), 0);
  return fd;
}

/* A memfd region holding `pad` junk bytes and then p, registered. */
static wave_region *ww_memfd(ww_ctx *x, const void *p, size_t bytes,
                             size_t pad)
{
  wave_region *r;
  wave_error e = {0};
  ck_assert_int_eq(wave_region_create(&r, bytes + pad + 8, "ww", &e), 0);
  memset(wave_region_data(r), 0xee, pad);
  if (bytes > 0)
    memcpy((uint8_t *)wave_region_data(r) + pad, p, bytes);
  ck_assert_msg(wave_region_register(x->ipc, r, &e) == 0, "%s", e.message);
  return r;
}

static int ww_region(ww_ctx *x, ww_way w, const ww_job *j,
                     const wave_chunk *cin, const wave_chunk *cmk,
                     size_t in_bytes, size_t mask_bytes,
                     wave_reduce_result *r, wave_error *e)
{
  wave_region *ri = NULL, *rm = NULL;
  wave_error e2 = {0};
  const size_t pad = 8;  /* extents start after junk bytes */
  if (w == WW_MEMFD) {
    ri = ww_memfd(x, j->in, in_bytes, pad);
  } else {
    int fd = ww_file(x, "in.raw", j->in, in_bytes, pad);
    int rc = w == WW_COPY ? wave_region_copy_fd(x->ipc, fd, 0, "in", &ri, &e2)
                          : wave_region_file_fd(x->ipc, fd, 0, "in", &ri, &e2);
    ck_assert_msg(rc == 0, "%s", e2.message);
    close(fd);
  }
  if (w == WW_FILE) {
    int fd = ww_file(x, "mask.raw", j->mask, mask_bytes, 4);
    ck_assert_msg(wave_region_file_fd(x->ipc, fd, 0, "mask", &rm, &e2) == 0,
                  "%s", e2.message);
    close(fd);
  } else {
    rm = ww_memfd(x, j->mask, mask_bytes, 4);
  }
  wave_extent xin[WW_CHUNKS], xmk[WW_CHUNKS];
  size_t off = pad;
  for (size_t i = 0; i < j->n_in; i++, off += cin[i - 1].bytes)
    xin[i] = (wave_extent){ri, off, cin[i].bytes};
  off = 4;
  for (size_t i = 0; i < j->n_mask; i++, off += cmk[i - 1].bytes)
    xmk[i] = (wave_extent){rm, off, cmk[i].bytes};
  wave_region_reduce q = {.dtype = j->dt, .op = j->op, .input = xin,
                          .n_input = j->n_in, .mask = xmk,
                          .n_mask = j->has_mask ? j->n_mask : 0,
                          .has_mask = j->has_mask, .device = j->device};
  int rc = wave_reduce_region(x->ipc, &q, r, e);
  ck_assert_int_eq(wave_region_unregister(x->ipc, ri, &e2), 0);
  ck_assert_int_eq(wave_region_unregister(x->ipc, rm, &e2), 0);
  wave_region_close(ri);
  wave_region_close(rm);
  return rc;
}

int ww_run(ww_ctx *x, ww_way w, const ww_job *j, wave_reduce_result *r,
           wave_error *e)
{
  wave_chunk cin[WW_CHUNKS], cmk[WW_CHUNKS];
  size_t in_bytes, mask_bytes;
  ww_chunks(j, cin, cmk, &in_bytes, &mask_bytes);
  memset(r, 0, sizeof *r);
  memset(e, 0, sizeof *e);
  wave_reduce_request q = {.dtype = j->dt, .op = j->op, .input = cin,
                           .n_input = j->n_in, .mask = cmk,
                           .n_mask = j->has_mask ? j->n_mask : 0,
                           .has_mask = j->has_mask, .device = j->device};
  int rc;
  switch (w) {
  case WW_MSG:
    return ww_message(x, j, cin, cmk, r, e);
  case WW_FRAMED_IPC:
  case WW_FRAMED_TCP:
    return wave_reduce(w == WW_FRAMED_IPC ? x->ipc : x->tcp, &q, r, e);
  case WW_STREAM_IPC:
  case WW_STREAM_TCP:
    setenv("WAVE_CLIENT_STREAM", "1", 1);
    rc = wave_reduce(w == WW_STREAM_IPC ? x->ipc : x->tcp, &q, r, e);
    unsetenv("WAVE_CLIENT_STREAM");
    return rc;
  case WW_MEMFD:
  case WW_COPY:
  case WW_FILE:
    return ww_region(x, w, j, cin, cmk, in_bytes, mask_bytes, r, e);
  case WW_FLEET: {
    wave_fleet_options o = {.piece = 65536};
    wave_fleet_reduce_result fr;
    rc = wave_fleet_reduce(x->fleet, &q, &o, &fr, e);
    *r = fr.value;
    wave_fleet_reduce_result_free(&fr);
    return rc;
  }
  default:
    ck_abort_msg("no way %d", (int)w);
    return -1;
  }
}
