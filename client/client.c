/* client.c - libwaveclient: the connection, the one request/reply exchange,
 * and the reduce, status and packs calls.
 *
 * A wave_client is one nng REQ socket dialed (lazily, in the background) to
 * one URL.  Every call opens its own nng_ctx on that socket: REQ contexts
 * keep their own request/reply state, so any number of threads can share a
 * client and each gets exactly its own reply.  The Request envelope carries
 * a fresh id per call; the reply must echo it (nng already matches replies
 * to contexts, the id check guards against a confused peer).
 *
 * Message bodies are packed straight into the nng message and unpacked from
 * it: input chunks are referenced, never copied, on the way out.
 *
 * Whom we trust on ipc: the socket file must belong to root, to us, to the
 * system service's user `wavedd` or to the uid in WAVE_DAEMON_UID (checked when opening, when the file is
 * there), and so must the process that answers each reply (the pipe's
 * NNG_OPT_IPC_PEER_UID, which the kernel vouches for).  So another user
 * who got hold of the socket path cannot answer our requests.
 */
#include <assert.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <nng/nng.h>
#include <nng/protocol/reqrep0/req.h>

#include "client/client_int.h"
#include "core/base.h"
#include "proto/frame.h"
#include "core/sockdir.h"
#include "wave/client.h"

/* ---- connection ------------------------------------------------------- */

static uint64_t cl_random64(void)
{
  uint64_t v = 0;
  if (getrandom(&v, sizeof v, GRND_NONBLOCK) == (ssize_t)sizeof v && v != 0)
    return v;
  /* No entropy yet (early boot): time and pid still differ per client. */
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  v = ((uint64_t)ts.tv_sec * 1000000007u) ^ (uint64_t)ts.tv_nsec ^
      ((uint64_t)getpid() << 40) ^ (uint64_t)(uintptr_t)&v;
  return v ? v : 1;
}

static uint64_t cl_now_ms(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* WAVE_DAEMON_UID: a uid we trust besides root and ourselves; -1 none,
 * -2 malformed. */
static long cl_trust_uid(void)
{
  const char *v = getenv("WAVE_DAEMON_UID");
  if (v == NULL || v[0] == '\0')
    return -1;
  char *end;
  errno = 0;
  long u = strtol(v, &end, 10);
  if (errno != 0 || *end != '\0' || u < 0 || u > 0x7fffffffL)
    return -2;
  return u;
}

/* The system service's account (systemd/wavedd.sysusers): its socket is
 * /run/wavedd/wavedd.sock, owned by that user. */
static long cl_service_uid(void)
{
  struct passwd pw, *res = NULL;
  char buf[1024];
  if (getpwnam_r("wavedd", &pw, buf, sizeof buf, &res) != 0 || res == NULL)
    return -1;
  return (long)pw.pw_uid;
}

static int cl_trusted(const wave_client *c, long uid)
{
  return uid == 0 || uid == (long)getuid() || uid == (long)geteuid() ||
         (c->trust_uid >= 0 && uid == c->trust_uid) ||
         (c->service_uid >= 0 && uid == c->service_uid);
}

static int cl_untrusted(const wave_client *c, const char *what, long uid,
                        wave_error *err)
{
  return wv_seterr(err, WAVE_EIO, "%s: %s belongs to uid %ld, not to root, "
                   "the wavedd service user or you (uid %ld): not trusting "
                   "it (set "
                   "WAVE_DAEMON_UID=%ld, or wavectl --daemon-uid, to trust "
                   "that user's daemon)", c->url, what, uid, (long)getuid(),
                   uid);
}

int wv_client_check_peer(const wave_client *c, nng_msg *msg, wave_error *err)
{
  if (!c->ipc)
    return 0;
  uint64_t uid = 0;
  nng_pipe p = nng_msg_get_pipe(msg);
  if (nng_pipe_get_uint64(p, NNG_OPT_IPC_PEER_UID, &uid) != 0)
    return wv_seterr(err, WAVE_EIO, "%s: cannot tell who answered (no peer "
                     "credentials)", c->url);
  if (uid > 0x7fffffffu || !cl_trusted(c, (long)uid))
    return cl_untrusted(c, "the process that answered", (long)uid, err);
  return 0;
}

static int cl_open(wave_client **out, const char *url,
                   const wave_client_options *opts, int now,
                   wave_error *err)
{
  int rv;
  char def[160];
  if (out == NULL)
    return wv_seterr(err, WAVE_EARG, "wave_client_open: out is NULL");
  *out = NULL;
  if (url == NULL || url[0] == '\0')
    url = getenv("WAVE_URL");
  if (url == NULL || url[0] == '\0')
    url = wv_default_url(def, sizeof def, 1);

  wave_client *c = calloc(1, sizeof *c);
  if (c == NULL || (c->url = strdup(url)) == NULL) {
    free(c);
    return wv_seterr(err, WAVE_ENOMEM, NULL);
  }
  pthread_mutex_init(&c->names_mu, NULL);
  c->ipc = strncmp(url, "ipc://", 6) == 0;
  c->trust_uid = cl_trust_uid();
  c->service_uid = c->ipc ? cl_service_uid() : -1;
  struct stat st;
  int code = 0;
  if (c->trust_uid == -2)
    code = wv_seterr(err, WAVE_EARG, "WAVE_DAEMON_UID='%s' is not a uid",
                     getenv("WAVE_DAEMON_UID"));
  else if (c->ipc && stat(url + 6, &st) == 0 && !cl_trusted(c, st.st_uid))
    code = cl_untrusted(c, "the socket file", (long)st.st_uid, err);
  if (code != 0) {
    pthread_mutex_destroy(&c->names_mu);
    free(c->url);
    free(c);
    return code;
  }
  atomic_init(&c->timeout_ms, opts != NULL && opts->timeout_ms > 0
                                  ? opts->timeout_ms
                                  : WV_CLIENT_TIMEOUT_MS);
  /* Ids start at a random point so that a restarted client does not reuse
   * the (client tag, id) pairs the daemon may still remember. */
  atomic_init(&c->next_id, cl_random64() >> 1);
  c->tag = cl_random64();

  if ((rv = nng_req0_open(&c->sock)) != 0) {
    pthread_mutex_destroy(&c->names_mu);
    free(c->url);
    free(c);
    return wv_seterr(err, WAVE_EIO, "cannot open an nng req socket: %s",
                     nng_strerror(rv));
  }
  /* The daemon is trusted: replies (want_outputs) may be large. */
  nng_socket_set_size(c->sock, NNG_OPT_RECVMAXSZ, 0);
  /* The token, then the dial (access.c): non-blocking unless now, so a
   * client may be opened before the daemon is up; nng redials in the
   * background either way. */
  code = wv_client_access(c, url, opts, now, err);
  if (code != 0) {
    wave_client_close(c);
    return code;
  }
  *out = c;
  return 0;
}

int wave_client_open(wave_client **out, const char *url, wave_error *err)
{
  return cl_open(out, url, NULL, 0, err);
}

int wave_client_dial(wave_client **out, const char *url, wave_error *err)
{
  return cl_open(out, url, NULL, 1, err);
}

int wave_client_open_with(wave_client **out, const char *url,
                          const wave_client_options *opts, wave_error *err)
{
  return cl_open(out, url, opts, opts != NULL && opts->dial, err);
}

void wave_client_close(wave_client *c)
{
  if (c == NULL)
    return;
  nng_close(c->sock);
  wv_client_access_fini(c);
  if (c->token != NULL)
    memset(c->token, 0, strlen(c->token));
  free(c->token);
  free(c->url);
  for (struct wv_name *n = c->names, *next; n != NULL; n = next) {
    next = n->next;
    free(n);
  }
  pthread_mutex_destroy(&c->names_mu);
  free(c);
}

void wave_client_set_timeout(wave_client *c, int timeout_ms)
{
  if (c != NULL)
    atomic_store(&c->timeout_ms, timeout_ms > 0 ? timeout_ms : 1);
}

const char *wave_client_url(const wave_client *c)
{
  return c ? c->url : NULL;
}

/* ---- the names results point at, and result blocks -------------------- */

int wv_client_name(wave_client *c, const char *s, const char **out,
                   wave_error *err)
{
  if (s == NULL || s[0] == '\0') {
    *out = "";
    return 0;
  }
  /* A handful of names in practice (a daemon's devices, packs and
   * exchanges): a list is fast enough, and pointers handed out stay put. */
  int code = 0;
  pthread_mutex_lock(&c->names_mu);
  struct wv_name *n = c->names;
  while (n != NULL && strcmp(n->s, s) != 0)
    n = n->next;
  if (n == NULL) {
    size_t len = strlen(s) + 1;
    if (c->n_names >= WAVE_CLIENT_NAMES_MAX)
      code = wv_seterr(err, WAVE_EIO, "%s: the daemon sent more than %d "
                       "distinct names", c->url, WAVE_CLIENT_NAMES_MAX);
    else if ((n = malloc(sizeof *n + len)) == NULL)
      code = wv_seterr(err, WAVE_ENOMEM, NULL);
    else {
      memcpy(n->s, s, len);
      n->next = c->names;
      c->names = n;
      c->n_names++;
    }
  }
  pthread_mutex_unlock(&c->names_mu);
  *out = code == 0 ? n->s : "";
  return code;
}

#define WV_BLK_ALIGN _Alignof(max_align_t)

size_t wv_blk_size(const char *s)
{
  return strlen(s ? s : "") + 1;
}

void *wv_blk_take(wv_blk *b, size_t n)
{
  size_t pad = (WV_BLK_ALIGN - (uintptr_t)b->at % WV_BLK_ALIGN) %
               WV_BLK_ALIGN;
  assert(pad + n <= (size_t)(b->end - b->at));
  void *p = b->at + pad;
  memset(p, 0, n);
  b->at += pad + n;
  return p;
}

const char *wv_blk_str(wv_blk *b, const char *s)
{
  size_t n = wv_blk_size(s);
  assert(n <= (size_t)(b->end - b->at));
  char *p = b->at;
  memcpy(p, s ? s : "", n);
  b->at += n;
  return p;
}

void wv_client_copy(char *dst, size_t n, const char *src)
{
  if (n == 0)
    return;
  if (src == NULL)
    src = "";
  size_t len = strlen(src);
  if (len >= n)
    len = n - 1;
  memcpy(dst, src, len);
  dst[len] = '\0';
}

/* ---- the exchange ----------------------------------------------------- */

static int cl_nngerr(const wave_client *c, int rv, unsigned ms,
                     wave_error *err)
{
  if (rv == NNG_ETIMEDOUT)
    return wv_seterr(err, WAVE_ETIMEDOUT,
                     "no reply from %s within %u ms (is wavedd running?)",
                     c->url, ms);
  if (rv == NNG_ENOMEM)
    return wv_seterr(err, WAVE_ENOMEM, "%s: %s", c->url, nng_strerror(rv));
  return wv_seterr(err, WAVE_EIO, "%s: %s", c->url, nng_strerror(rv));
}

int wv_client_msg(wave_client *c, Wave__V1__Request *req, size_t payload,
                  nng_msg **out, uint8_t **data, wave_error *err)
{
  int rv;
  nng_msg *msg;
  req->version = 2;
  req->id = atomic_fetch_add(&c->next_id, 1);
  if (c->token != NULL)
    req->token = c->token;  /* the daemon's auth.tokens (access.c) */
  size_t len = protobuf_c_message_get_packed_size(&req->base);
  if (len > UINT32_MAX)
    return wv_seterr(err, WAVE_EARG, "request too large");
  /* a frame: prefix, header, zero padding to 8, payload (proto/frame.h) */
  size_t pre = data != NULL ? WV_FRAME_PREFIX : 0;
  size_t head = data != NULL ? wv_frame_payload_at(len) : len;
  if (payload > SIZE_MAX - head)
    return wv_seterr(err, WAVE_EARG, "request too large");
  if ((rv = nng_msg_alloc(&msg, head + payload)) != 0)
    return wv_seterr(err, WAVE_ENOMEM, "request of %zu bytes: %s",
                     head + payload, nng_strerror(rv));
  uint8_t *b = nng_msg_body(msg);
  if (data != NULL) {
    wv_frame_prefix(b, (uint32_t)len);
    memset(b + pre + len, 0, head - pre - len);
    *data = b + head;
  }
  protobuf_c_message_pack(&req->base, b + pre);
  *out = msg;
  return 0;
}

int wv_client_call(wave_client *c, Wave__V1__Request *req, int want,
                   unsigned extra_ms, Wave__V1__Response **resp,
                   wave_error *err)
{
  nng_msg *msg;
  *resp = NULL;
  int rv = wv_client_msg(c, req, 0, &msg, NULL, err);
  if (rv != 0)
    return rv;
  return wv_client_call_msg(c, msg, req->id, want, extra_ms, resp, err);
}

int wv_client_call_msg(wave_client *c, nng_msg *msg, uint64_t id, int want,
                       unsigned extra_ms, Wave__V1__Response **resp,
                       wave_error *err)
{
  int rv, code = 0;
  nng_ctx ctx;
  nng_aio *aio = NULL;
  *resp = NULL;

  uint64_t sum = (uint64_t)atomic_load(&c->timeout_ms) + extra_ms;
  unsigned total = sum > INT32_MAX ? INT32_MAX : (unsigned)sum;
  uint64_t deadline = cl_now_ms() + total;

  if ((rv = nng_ctx_open(&ctx, c->sock)) != 0) {
    nng_msg_free(msg);
    return cl_nngerr(c, rv, total, err);
  }
  /* nng resends a request whose reply is late; a resent reduction would
   * run twice, so only a reconnect (which always resends) may do that. */
  nng_ctx_set_ms(ctx, NNG_OPT_REQ_RESENDTIME, (nng_duration)total);
  if ((rv = nng_aio_alloc(&aio, NULL, NULL)) != 0) {
    nng_msg_free(msg);
    nng_ctx_close(ctx);
    return wv_seterr(err, WAVE_ENOMEM, "%s", nng_strerror(rv));
  }

  nng_aio_set_msg(aio, msg);
  nng_aio_set_timeout(aio, (nng_duration)total);
  nng_ctx_send(ctx, aio);
  nng_aio_wait(aio);
  if ((rv = nng_aio_result(aio)) != 0) {
    nng_msg_free(nng_aio_get_msg(aio)); /* still ours when the send failed */
    code = cl_nngerr(c, rv, total, err);
    goto out;
  }

  /* One deadline for the whole exchange: the send may have waited for the
   * connection already. */
  uint64_t now = cl_now_ms();
  nng_aio_set_timeout(aio, now >= deadline ? 1 : (nng_duration)(deadline - now));
  nng_ctx_recv(ctx, aio);
  nng_aio_wait(aio);
  if ((rv = nng_aio_result(aio)) != 0) {
    code = cl_nngerr(c, rv, total, err);
    goto out;
  }
  code = wv_client_reply(c, nng_aio_get_msg(aio), id, want, resp, err);
out:
  nng_aio_free(aio);
  nng_ctx_close(ctx);
  return code;
}

int wv_client_reply(wave_client *c, nng_msg *msg, uint64_t id, int want,
                    Wave__V1__Response **resp, wave_error *err)
{
  int code = 0;
  *resp = NULL;
  if ((code = wv_client_check_peer(c, msg, err)) != 0) {
    nng_msg_free(msg);
    return code;
  }
  Wave__V1__Response *r =
      wave__v1__response__unpack(NULL, nng_msg_len(msg), nng_msg_body(msg));
  nng_msg_free(msg);
  if (r == NULL)
    return wv_seterr(err, WAVE_EIO, "%s: malformed reply", c->url);
  if (r->body_case == WAVE__V1__RESPONSE__BODY_ERROR && r->error != NULL) {
    /* An error reply may carry id 0 when the daemon could not decode the
     * request; the code and message are still the answer to this call. */
    code = r->error->code != 0 ? (int)r->error->code : WAVE_EINTERNAL;
    if (r->error->message != NULL && r->error->message[0] != '\0')
      wv_seterr(err, code, "%s", r->error->message);
    else
      wv_seterr(err, code, NULL);
    wave__v1__response__free_unpacked(r, NULL);
    return code;
  }
  if (r->id != id) {
    code = wv_seterr(err, WAVE_EIO,
                     "%s: reply id %llu does not match request id %llu",
                     c->url, (unsigned long long)r->id,
                     (unsigned long long)id);
    wave__v1__response__free_unpacked(r, NULL);
    return code;
  }
  if ((int)r->body_case != want) {
    code = wv_seterr(err, WAVE_EIO, "%s: unexpected reply kind %d (want %d)",
                     c->url, (int)r->body_case, want);
    wave__v1__response__free_unpacked(r, NULL);
    return code;
  }
  *resp = r;
  return 0;
}

/* ---- reduce ------------------------------------------------------------ */

int wave_reduce(wave_client *c, const wave_reduce_request *req,
                wave_reduce_result *res, wave_error *err)
{
  if (c == NULL || req == NULL || res == NULL)
    return wv_seterr(err, WAVE_EARG, "wave_reduce: NULL argument");
  if ((req->n_input > 0 && req->input == NULL) ||
      (req->has_mask && req->n_mask > 0 && req->mask == NULL))
    return wv_seterr(err, WAVE_EARG, "wave_reduce: chunk array is NULL");
  size_t n_mask = req->has_mask ? req->n_mask : 0;
  /* The chunk array below holds n_input + n_mask + 1 entries: a sum that
   * wraps would size it too small for the loops that fill it. */
  const size_t max_chunks = SIZE_MAX / sizeof(ProtobufCBinaryData) - 1;
  if (n_mask > max_chunks || req->n_input > max_chunks - n_mask)
    return wv_seterr(err, WAVE_EARG, "wave_reduce: %zu + %zu chunks is too "
                     "many", req->n_input, n_mask);
  /* A chunk without data but with a length would go out as an empty chunk
   * and the daemon would reduce fewer rows than the caller meant. */
  for (size_t i = 0; i < req->n_input + n_mask; i++) {
    const wave_chunk *ch = i < req->n_input ? &req->input[i]
                                            : &req->mask[i - req->n_input];
    if (ch->data == NULL && ch->bytes != 0)
      return wv_seterr(err, WAVE_EARG, "wave_reduce: %s chunk %zu has %zu "
                       "bytes but no data", i < req->n_input ? "input" : "mask",
                       i < req->n_input ? i : i - req->n_input, ch->bytes);
  }

  /* Everything else (dtype, op, lengths) is the daemon's to judge: it is
   * the one authority on what a valid job is. */
  size_t total = 0;
  for (size_t i = 0; i < req->n_input + n_mask; i++) {
    size_t b = i < req->n_input ? req->input[i].bytes
                                : req->mask[i - req->n_input].bytes;
    if (b > SIZE_MAX - total)
      return wv_seterr(err, WAVE_EARG, "wave_reduce: chunk sizes overflow");
    total += b;
  }
  /* Big inputs go in pieces (any transport): no message above a bound,
   * and TOOBIG/JOBSIZE come back before any row travels. */
  size_t n_all = req->n_input + n_mask;
  /* WAVE_CLIENT_STREAM=1 sends every job as a stream: for the tests that
   * check that each path gives the same answer (docs/cli.md). */
  const char *force = getenv("WAVE_CLIENT_STREAM");
  if ((force != NULL && strcmp(force, "1") == 0) ||
      total > WV_CLIENT_FRAME_MAX || n_all > WV_CLIENT_FRAME_MAX / 32 ||
      total + 32 * n_all + 256 > WV_CLIENT_FRAME_MAX)
    return wv_client_stream_reduce(c, req, res, err);

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

  Wave__V1__Request r = WAVE__V1__REQUEST__INIT;
  r.body_case = WAVE__V1__REQUEST__BODY_REDUCE;
  r.reduce = &rr;
  nng_msg *msg;
  uint8_t *data;
  int rv = wv_client_msg(c, &r, off, &msg, &data, err);
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
    return wv_client_stream_reduce(c, req, res, err);
  if (rv != 0)
    return rv;
  return wv_client_reduce_result(c, resp, res, err);
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

int wv_client_reduce_result(wave_client *c, Wave__V1__Response *resp,
                            wave_reduce_result *res, wave_error *err)
{
  const Wave__V1__ReduceResult *rs = resp->reduce;
  memset(res, 0, sizeof *res);
  if (rs == NULL || rs->n_bits < 1 || rs->n_bits > 2) {
    wave__v1__response__free_unpacked(resp, NULL);
    return wv_seterr(err, WAVE_EIO, "%s: reduce reply without 1 or 2 values",
                     c->url);
  }
  res->dtype = (wave_dtype)rs->dtype;
  res->op = (wave_op)rs->op;
  res->n_values = (unsigned)rs->n_bits;
  for (size_t i = 0; i < rs->n_bits; i++)
    res->bits[i] = rs->bits[i];
  res->count = rs->count;
  res->rows = rs->rows;
  res->seconds = rs->seconds;
  res->finite = (int)rs->finite;
  int rv = wv_client_name(c, rs->device, &res->device, err);
  wave__v1__response__free_unpacked(resp, NULL);
  return rv;
}

/* ---- status ------------------------------------------------------------ */

/* The bytes of the block that holds a StatusReply's devices, their pack
 * checks, the listen URLs and every string (cl_status_fill's order). */
static size_t cl_status_size(const Wave__V1__StatusReply *st)
{
  size_t n = WV_BLK_ROOM(sizeof(wave_status));
  if (st == NULL)
    return n + wv_blk_size(NULL);
  n += WV_BLK_ROOM(st->n_devices * sizeof(wave_device_status));
  n += WV_BLK_ROOM((st->n_listen + 1) * sizeof(char *));
  n += wv_blk_size(st->version);
  for (size_t i = 0; i < st->n_listen; i++)
    n += wv_blk_size(st->listen[i]);
  for (size_t i = 0; i < st->n_devices; i++) {
    const Wave__V1__DeviceStatus *d = st->devices[i];
    if (d == NULL)
      continue;
    n += wv_blk_size(d->name) + wv_blk_size(d->backend) +
         wv_blk_size(d->description) + wv_blk_size(d->fault) +
         wv_blk_size(d->exchange) + wv_blk_size(d->exchange_reason);
    n += WV_BLK_ROOM(d->n_packs * sizeof(wave_pack_check));
    for (size_t k = 0; k < d->n_packs; k++)
      if (d->packs[k] != NULL)
        n += wv_blk_size(d->packs[k]->pack) + wv_blk_size(d->packs[k]->state) +
             wv_blk_size(d->packs[k]->detail);
  }
  return n;
}

static void cl_device(wv_blk *b, wave_device_status *d,
                      const Wave__V1__DeviceStatus *s)
{
  d->name = wv_blk_str(b, s->name);
  d->backend = wv_blk_str(b, s->backend);
  d->description = wv_blk_str(b, s->description);
  d->queue_depth = s->queue_depth;
  d->queue_capacity = s->queue_capacity;
  d->jobs_done = s->jobs_done;
  d->jobs_failed = s->jobs_failed;
  d->faulted = s->faulted != 0;
  d->running = s->running != 0;
  d->fault = wv_blk_str(b, s->fault);
  d->wave_width = s->wave_width;
  d->exchange = wv_blk_str(b, s->exchange);
  d->exchange_reason = wv_blk_str(b, s->exchange_reason);
  d->packs = wv_blk_take(b, s->n_packs * sizeof *d->packs);
  d->n_packs = 0;
  for (size_t i = 0; i < s->n_packs; i++) {
    const Wave__V1__PackCheck *pc = s->packs[i];
    if (pc == NULL)
      continue;
    wave_pack_check *dst = &d->packs[d->n_packs++];
    dst->pack = wv_blk_str(b, pc->pack);
    dst->ok = pc->ok != 0;
    dst->state = wv_blk_str(b, pc->state);
    dst->detail = wv_blk_str(b, pc->detail);
    dst->hash_rate = pc->hash_rate;
  }
}

int wave_status_get(wave_client *c, wave_status **out, wave_error *err)
{
  if (c == NULL || out == NULL)
    return wv_seterr(err, WAVE_EARG, "wave_status_get: NULL argument");
  *out = NULL;
  Wave__V1__StatusRequest sr = WAVE__V1__STATUS_REQUEST__INIT;
  Wave__V1__Request r = WAVE__V1__REQUEST__INIT;
  r.body_case = WAVE__V1__REQUEST__BODY_STATUS;
  r.status = &sr;

  Wave__V1__Response *resp;
  int rv = wv_client_call(c, &r, WAVE__V1__RESPONSE__BODY_STATUS, 0, &resp,
                          err);
  if (rv != 0)
    return rv;
  const Wave__V1__StatusReply *st = resp->status;
  /* One block: the devices, their packs, the listen pointers and every
   * string follow the header, so one free() releases it. */
  size_t bytes = cl_status_size(st);
  wv_blk b = {malloc(bytes), NULL};
  if (b.at == NULL) {
    wave__v1__response__free_unpacked(resp, NULL);
    return wv_seterr(err, WAVE_ENOMEM, NULL);
  }
  b.end = b.at + bytes;
  wave_status *s = wv_blk_take(&b, sizeof *s);
  if (st == NULL) {
    s->version = wv_blk_str(&b, NULL);
  } else {
    s->devices = wv_blk_take(&b, st->n_devices * sizeof *s->devices);
    s->listen = wv_blk_take(&b, (st->n_listen + 1) * sizeof *s->listen);
    s->version = wv_blk_str(&b, st->version);
    for (size_t i = 0; i < st->n_listen; i++)
      s->listen[s->n_listen++] = (char *)wv_blk_str(&b, st->listen[i]);
    s->uptime_ms = st->uptime_ms;
    s->jobs_served = st->jobs_served;
    s->jobs_failed = st->jobs_failed;
    s->instance = st->instance;
    s->ready = st->ready;
    s->max_files = st->max_files;
    for (size_t i = 0; i < st->n_devices; i++)
      if (st->devices[i] != NULL)
        cl_device(&b, &s->devices[s->n_devices++], st->devices[i]);
  }
  wave__v1__response__free_unpacked(resp, NULL);
  *out = s;
  return 0;
}

void wave_status_free(wave_status *s)
{
  free(s);
}

/* ---- packs ------------------------------------------------------------- */

/* The bytes of the block that holds the pack array, each pack's devices
 * and every string (wave_packs_get's order). */
static size_t cl_packs_size(const Wave__V1__PacksReply *pl, size_t n)
{
  size_t bytes = WV_BLK_ROOM((n ? n : 1) * sizeof(wave_pack_info));
  for (size_t i = 0; i < n; i++) {
    const Wave__V1__PackInfo *pi = pl->packs[i];
    if (pi == NULL)
      continue;
    bytes += wv_blk_size(pi->name) + wv_blk_size(pi->description);
    bytes += WV_BLK_ROOM(pi->n_devices * sizeof(wave_pack_device));
    for (size_t j = 0; j < pi->n_devices; j++)
      if (pi->devices[j] != NULL)
        bytes += wv_blk_size(pi->devices[j]->device) +
                 wv_blk_size(pi->devices[j]->state) +
                 wv_blk_size(pi->devices[j]->detail);
  }
  return bytes;
}

static void cl_pack(wv_blk *b, wave_pack_info *d, const Wave__V1__PackInfo *pi)
{
  d->name = wv_blk_str(b, pi->name);
  d->version = pi->version;
  d->dataset_bytes = pi->dataset_bytes;
  d->description = wv_blk_str(b, pi->description);
  d->devices = wv_blk_take(b, pi->n_devices * sizeof *d->devices);
  for (size_t j = 0; j < pi->n_devices; j++) {
    const Wave__V1__PackCheck *pc = pi->devices[j];
    if (pc == NULL)
      continue;
    wave_pack_device *pd = &d->devices[d->n_devices++];
    pd->device = wv_blk_str(b, pc->device);
    pd->ok = pc->ok != 0;
    pd->state = wv_blk_str(b, pc->state);
    pd->detail = wv_blk_str(b, pc->detail);
  }
}

int wave_packs_get(wave_client *c, wave_pack_info **packs, size_t *n_packs,
                   wave_error *err)
{
  if (c == NULL || packs == NULL || n_packs == NULL)
    return wv_seterr(err, WAVE_EARG, "wave_packs_get: NULL argument");
  *packs = NULL;
  *n_packs = 0;
  Wave__V1__PacksRequest pr = WAVE__V1__PACKS_REQUEST__INIT;
  Wave__V1__Request r = WAVE__V1__REQUEST__INIT;
  r.body_case = WAVE__V1__REQUEST__BODY_PACKS;
  r.packs = &pr;

  Wave__V1__Response *resp;
  int rv = wv_client_call(c, &r, WAVE__V1__RESPONSE__BODY_PACKS, 0, &resp,
                          err);
  if (rv != 0)
    return rv;
  const Wave__V1__PacksReply *pl = resp->packs;
  size_t n = pl ? pl->n_packs : 0;
  /* The array comes first in the block, so wave_packs_free(array) frees
   * the devices and strings with it. */
  size_t bytes = cl_packs_size(pl, n);
  wv_blk b = {malloc(bytes), NULL};
  if (b.at == NULL) {
    wave__v1__response__free_unpacked(resp, NULL);
    return wv_seterr(err, WAVE_ENOMEM, NULL);
  }
  b.end = b.at + bytes;
  wave_pack_info *p = wv_blk_take(&b, (n ? n : 1) * sizeof *p);
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    if (pl->packs[i] != NULL)
      cl_pack(&b, &p[k++], pl->packs[i]);
  wave__v1__response__free_unpacked(resp, NULL);
  *packs = p;
  *n_packs = k;
  return 0;
}

void wave_packs_free(wave_pack_info *packs)
{
  free(packs);
}
