/* client.c - libwaveclient: the connection, whom it trusts, and the one
 * request/reply exchange every call goes through; the names and blocks
 * results are made of.  The calls are in reduce.c, region.c, status.c and
 * job.c.
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
  wv_q_init(&c->names);
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
  for (wv_qnode *q; (q = wv_q_pop(&c->names)) != NULL;)
    free(WV_Q_ENTRY(q, struct wv_name, q));
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
  struct wv_name *n = NULL;
  wv_qnode *q;
  WV_Q_EACH(q, &c->names)
    if (strcmp(WV_Q_ENTRY(q, struct wv_name, q)->s, s) == 0) {
      n = WV_Q_ENTRY(q, struct wv_name, q);
      break;
    }
  if (n == NULL) {
    size_t len = strlen(s) + 1;
    if (c->n_names >= WAVE_CLIENT_NAMES_MAX)
      code = wv_seterr(err, WAVE_EIO, "%s: the daemon sent more than %d "
                       "distinct names", c->url, WAVE_CLIENT_NAMES_MAX);
    else if ((n = malloc(sizeof *n + len)) == NULL)
      code = wv_seterr(err, WAVE_ENOMEM, NULL);
    else {
      memcpy(n->s, s, len);
      wv_q_push_head(&c->names, &n->q);
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
  nng_msg *msg = NULL;
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
