/* mkcorpus.c - writes the request seeds of fuzz/corpus/request/ (run by
 * hand after a protocol change: `build-fuzz/fuzz/wf-mkcorpus
 * fuzz/corpus/request`; the files are committed).  One file per kind of
 * request the daemon serves, valid and not: every reduction dtype/op,
 * masked, empty chunks, a framed request with its payload, hash jobs on
 * both packs, polls, cancels, job lists, streams, a region refused,
 * versions 0, 1 and 3, truncated and garbage bytes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/frame.h"
#include "proto/wave.pb-c.h"

static const char *mk_dir;
/* the rows of the reductions, the framed payload and the stream put */
static const uint32_t mk_rows[5] = {3, 0x7fc00000u, 0xffffffffu, 1,
                                    0x80000000u};

static void mk_write(const char *name, const void *buf, size_t n)
{
  char path[512];
  snprintf(path, sizeof path, "%s/%s", mk_dir, name);
  FILE *f = fopen(path, "wb");
  if (f == NULL || fwrite(buf, 1, n, f) != n || fclose(f) != 0) {
    perror(path);
    exit(1);
  }
}

static void mk_req(const char *name, Wave__V1__Request *rq)
{
  size_t n = wave__v1__request__get_packed_size(rq);
  uint8_t *buf = malloc(n + 1);
  wave__v1__request__pack(rq, buf);
  mk_write(name, buf, n);
  free(buf);
}

/* status (in every version), packs, jobs */
static void mk_status(Wave__V1__Request *rq)
{
  Wave__V1__StatusRequest st = WAVE__V1__STATUS_REQUEST__INIT;
  rq->body_case = WAVE__V1__REQUEST__BODY_STATUS;
  rq->status = &st;
  mk_req("status", rq);
  rq->version = 1;
  mk_req("status-v1", rq);
  rq->version = 3;
  mk_req("status-v3", rq);
  rq->version = 0;
  mk_req("status-v0", rq);
  rq->version = 2;

  Wave__V1__PacksRequest pk = WAVE__V1__PACKS_REQUEST__INIT;
  rq->body_case = WAVE__V1__REQUEST__BODY_PACKS;
  rq->packs = &pk;
  mk_req("packs", rq);
  Wave__V1__JobsRequest js = WAVE__V1__JOBS_REQUEST__INIT;
  rq->body_case = WAVE__V1__REQUEST__BODY_JOBS;
  rq->jobs = &js;
  mk_req("jobs", rq);
}

/* reductions: every dtype and op, 5 rows, a chunk boundary, an empty
 * chunk, with and without a mask; a device named, bad lengths and dtypes */
static void mk_reduce(Wave__V1__Request *rq)
{
  static const uint32_t mask[5] = {1, 0, 1, 1, 0};
  ProtobufCBinaryData in[3] = {{8, (uint8_t *)mk_rows}, {0, NULL},
                               {12, (uint8_t *)(mk_rows + 2)}};
  ProtobufCBinaryData mk[2] = {{12, (uint8_t *)mask}, {8, (uint8_t *)(mask + 3)}};
  Wave__V1__ReduceRequest rd = WAVE__V1__REDUCE_REQUEST__INIT;
  rq->body_case = WAVE__V1__REQUEST__BODY_REDUCE;
  rq->reduce = &rd;
  rd.n_input = 3;
  rd.input = in;
  for (int dt = 1; dt <= 3; dt++)
    for (int op = 1; op <= 7; op++) {
      char name[64];
      rd.dtype = dt;
      rd.op = op;
      rd.masked = 0;
      rd.n_mask = 0;
      snprintf(name, sizeof name, "reduce-d%d-o%d", dt, op);
      mk_req(name, rq);
      rd.masked = 1;
      rd.n_mask = 2;
      rd.mask = mk;
      snprintf(name, sizeof name, "reduce-d%d-o%d-masked", dt, op);
      mk_req(name, rq);
    }
  rd.dtype = 1;
  rd.op = 1;
  rd.masked = 0;
  rd.n_mask = 0;
  rd.device = (char *)"cpu0";
  mk_req("reduce-device", rq);
  rd.device = (char *)"gpu9";
  mk_req("reduce-nodev", rq);
  rd.device = NULL;
  in[0].len = 7;  /* not whole rows */
  mk_req("reduce-length", rq);
  in[0].len = 8;
  rd.dtype = 99;
  mk_req("reduce-dtype", rq);
  rd.dtype = 1;
}

/* framed: rows as the payload, chunks as extents into it */
static void mk_framed(void)
{
  Wave__V1__Extent e0 = WAVE__V1__EXTENT__INIT, e1 = WAVE__V1__EXTENT__INIT;
  e0.offset = 0;
  e0.bytes = 8;
  e1.offset = 8;
  e1.bytes = 12;
  Wave__V1__Extent *ex[2] = {&e0, &e1};
  Wave__V1__ReduceRequest fr = WAVE__V1__REDUCE_REQUEST__INIT;
  fr.dtype = 1;
  fr.op = 1;
  fr.n_input_at = 2;
  fr.input_at = ex;
  Wave__V1__Request frq = WAVE__V1__REQUEST__INIT;
  frq.version = 2;
  frq.id = 8;
  frq.body_case = WAVE__V1__REQUEST__BODY_REDUCE;
  frq.reduce = &fr;
  size_t h = wave__v1__request__get_packed_size(&frq);
  size_t at = wv_frame_payload_at(h);
  uint8_t *buf = calloc(1, at + sizeof mk_rows);
  wv_frame_prefix(buf, (uint32_t)h);
  wave__v1__request__pack(&frq, buf + WV_FRAME_PREFIX);
  memcpy(buf + at, mk_rows, sizeof mk_rows);
  mk_write("framed-reduce", buf, at + sizeof mk_rows);
  mk_write("framed-truncated", buf, at - 1);
  free(buf);
}

/* hash jobs, polls, cancels */
static void mk_hash(Wave__V1__Request *rq)
{
  Wave__V1__HashRequest hq = WAVE__V1__HASH_REQUEST__INIT;
  rq->body_case = WAVE__V1__REQUEST__BODY_HASH;
  rq->hash = &hq;
  hq.pack = (char *)"closed";
  hq.count = 4096;
  hq.target = 1ull << 58;
  hq.max_winners = 4;
  hq.client = 0x1234;
  mk_req("hash-closed", rq);
  hq.pack = (char *)"small";
  hq.nonce = 100;
  hq.count = 300;
  hq.want_outputs = 1;
  hq.segment_log2 = 5;
  hq.want_segments = 1;
  mk_req("hash-small-outputs", rq);
  hq.pack = (char *)"nosuch";
  mk_req("hash-nopack", rq);
  hq.pack = (char *)"closed";
  hq.want_outputs = 0;
  hq.nonce = 0;
  hq.count = ~0ull;
  mk_req("hash-huge", rq);
  rq->version = 1;
  hq.count = 64;
  mk_req("hash-v1", rq);
  rq->version = 2;

  Wave__V1__JobRequest jq = WAVE__V1__JOB_REQUEST__INIT;
  rq->body_case = WAVE__V1__REQUEST__BODY_JOB;
  rq->job = &jq;
  jq.job_id = 1;
  jq.wait_ms = 10;
  mk_req("job-poll", rq);
  jq.segment_offset = 3;
  jq.segment_limit = 2;
  mk_req("job-segments", rq);
  Wave__V1__CancelRequest cq = WAVE__V1__CANCEL_REQUEST__INIT;
  rq->body_case = WAVE__V1__REQUEST__BODY_CANCEL;
  rq->cancel = &cq;
  cq.job_id = 1;
  mk_req("cancel", rq);
}

/* streams and regions */
static void mk_bulk(Wave__V1__Request *rq)
{
  Wave__V1__StreamOpenRequest so = WAVE__V1__STREAM_OPEN_REQUEST__INIT;
  rq->body_case = WAVE__V1__REQUEST__BODY_STREAM_OPEN;
  rq->stream_open = &so;
  so.dtype = 1;
  so.op = 1;
  so.input_bytes = 20;
  mk_req("stream-open", rq);
  Wave__V1__StreamPutRequest sp = WAVE__V1__STREAM_PUT_REQUEST__INIT;
  rq->body_case = WAVE__V1__REQUEST__BODY_STREAM_PUT;
  rq->stream_put = &sp;
  sp.stream_id = 1;
  sp.data = (ProtobufCBinaryData){12, (uint8_t *)(mk_rows + 2)};
  mk_req("stream-put", rq);
  Wave__V1__Extent from = WAVE__V1__EXTENT__INIT;  /* a piece by place */
  from.region = 1;
  from.bytes = 12;
  sp.data = (ProtobufCBinaryData){0, NULL};
  sp.from = &from;
  mk_req("stream-put-from", rq);
  sp.from = NULL;
  Wave__V1__StreamCommitRequest sc = WAVE__V1__STREAM_COMMIT_REQUEST__INIT;
  rq->body_case = WAVE__V1__REQUEST__BODY_STREAM_COMMIT;
  rq->stream_commit = &sc;
  sc.stream_id = 1;
  mk_req("stream-commit", rq);
  Wave__V1__RegionRegisterRequest rr = WAVE__V1__REGION_REGISTER_REQUEST__INIT;
  rq->body_case = WAVE__V1__REQUEST__BODY_REGION_REGISTER;
  rq->region_register = &rr;
  rr.path = (char *)"/proc/self/fd/0";
  rr.copy = 1;
  mk_req("region-register", rq);
}

/* not requests */
static void mk_raw(void)
{
  static const uint8_t future[] = {0x08, 0x02, 0x10, 0x05, 0x9a, 0x06, 0x00};
  mk_write("unknown-body", future, sizeof future);
  static const uint8_t wide[] = {0x08, 0x81, 0x80, 0x80, 0x80, 0x10, 0x10,
                                 0x01, 0x5a, 0x00};
  mk_write("version-2p32", wide, sizeof wide);
  static const uint8_t junk[] = {0xff, 0xff, 0xff, 0xff, 0x0f, 0x12};
  mk_write("garbage", junk, sizeof junk);
  mk_write("empty", "", 0);
}

int main(int argc, char **argv)
{
  if (argc != 2) {
    fprintf(stderr, "usage: wf-mkcorpus DIR\n");
    return 2;
  }
  mk_dir = argv[1];
  Wave__V1__Request rq = WAVE__V1__REQUEST__INIT;
  rq.version = 2;
  rq.id = 7;
  mk_status(&rq);
  mk_reduce(&rq);
  mk_framed();
  mk_hash(&rq);
  mk_bulk(&rq);
  mk_raw();
  return 0;
}
