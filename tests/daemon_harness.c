/* daemon_harness.c - see daemon_harness.h. */
#include <check.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <nng/nng.h>
#include <nng/protocol/reqrep0/req.h>
#include <nng/supplemental/http/http.h>

#include "daemon_harness.h"
#include "wave/error.h"

#define TD_START_TRIES 1200  /* x 100 ms: generous for ASan builds */

/* ---- processes ------------------------------------------------------------ */

const char *td_wavedd(void)
{
  static char path[512];
  const char *bin = getenv("WAVE_BINARY_DIR");
  if (bin != NULL)
    snprintf(path, sizeof path, "%s/wavedd", bin);
  else
    snprintf(path, sizeof path, "%s", WAVEDD_PATH);
  return path;
}

const char *td_wavedd_test(void)
{
  static char path[520];
  snprintf(path, sizeof path, "%s-test", td_wavedd());
  return path;
}

/* A loopback port nothing is bound to, below the kernel's ephemeral range
 * (32768 and up by default): a port the kernel hands out (bind to 0) is
 * one every outgoing connection may take as its own before the daemon
 * under test binds it. */
int td_free_port(void)
{
  static unsigned seed;
  if (seed == 0)
    seed = (unsigned)getpid() * 2654435761u ^ (unsigned)time(NULL);
  for (int tries = 0; tries < 1000; tries++) {
    int port = 20000 + (int)(rand_r(&seed) % 12000);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
      abort();  /* test harness bug: no sockets */
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int bound = bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0;
    close(fd);
    if (bound)
      return port;
  }
  abort();  /* test harness bug: no loopback, or every port taken */
}

void td_write(const char *path, const char *text)
{
  FILE *f = fopen(path, "w");
  if (f == NULL || fputs(text, f) < 0 || fclose(f) != 0)
    abort();
}

/* A fresh folder with a config; extra is appended to the limits section. */
void td_prepare(td_daemon *d, const char *limits)
{
  memset(d, 0, sizeof *d);
  snprintf(d->dir, sizeof d->dir, "/tmp/wave-daemon.XXXXXX");
  if (mkdtemp(d->dir) == NULL)
    abort();
  snprintf(d->cfg, sizeof d->cfg, "%s/wavedd.yaml", d->dir);
  snprintf(d->ipc, sizeof d->ipc, "ipc://%s/w.sock", d->dir);
  snprintf(d->tcp, sizeof d->tcp, "tcp://127.0.0.1:%d", td_free_port());
  snprintf(d->err_path, sizeof d->err_path, "%s/stderr.log", d->dir);
  snprintf(d->notify, sizeof d->notify, "%.80s/notify", d->dir);
  const char *src = getenv("WAVE_SOURCE_DIR");
  char text[2048];
  snprintf(text, sizeof text,
           "listen: [\"%s\", \"%s\"]\n"
           "ipc_mode: 0600\n"
           "log_level: info\n"
           "limits:\n"
           "  max_request_bytes: 65536\n"
           "  max_job_rows: 8192\n"
           "  contexts: 16\n"
           "%s"
           "packs:\n"
           "  dir: %s/config/packs\n"
           "  load: [closed, small]\n"
           "devices:\n"
           "  - {name: cpu0, backend: cpu, threads: 1}\n"
           "  - {name: cpu1, backend: cpu, threads: 1, queue_depth: 8}\n"
           "auth: none\n",  /* the tcp listener is open (test_access) */
           d->ipc, d->tcp, limits ? limits : "", src ? src : ".");
  td_write(d->cfg, text);
}

/* Run wavedd with args; with wait_ready, until it says READY=1 (returns 0)
 * or exits (returns -1, d->status set). */
int td_spawn(td_daemon *d, const char *const *args, int wait_ready)
{
  int ns = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  snprintf(sa.sun_path, sizeof sa.sun_path, "%s", d->notify);
  unlink(d->notify);
  if (ns < 0 || bind(ns, (struct sockaddr *)&sa, sizeof sa) != 0)
    abort();
  pid_t pid = fork();
  if (pid < 0)
    abort();
  if (pid == 0) {
    setenv("NOTIFY_SOCKET", d->notify, 1);
    int fd = open(d->err_path, O_WRONLY | O_CREAT | O_APPEND, 0600);
    if (fd >= 0) {
      dup2(fd, STDERR_FILENO);
      dup2(fd, STDOUT_FILENO);
    }
    const char *argv[16] = {d->fake ? td_wavedd_test() : td_wavedd()};
    for (int i = 0; args[i] != NULL && i < 14; i++)
      argv[i + 1] = args[i];
    execv(argv[0], (char *const *)argv);
    _exit(127);
  }
  d->pid = pid;
  int rc = -1;
  for (int i = 0; wait_ready == 2 && i < TD_START_TRIES; i++) {
    /* listening, whether or not it is ready: its log says so */
    char *log = td_stderr(d);
    if (strstr(log, " listening: ") != NULL) {
      rc = 0;
      break;
    }
    if (waitpid(pid, &d->status, WNOHANG) == pid) {
      d->pid = 0;
      break;
    }
    poll(NULL, 0, 100);
  }
  for (int i = 0; wait_ready == 1 && i < TD_START_TRIES; i++) {
    struct pollfd p = {.fd = ns, .events = POLLIN};
    if (poll(&p, 1, 100) == 1) {
      char buf[128] = {0};
      ssize_t n = recv(ns, buf, sizeof buf - 1, 0);
      if (n > 0 && strstr(buf, "READY=1") != NULL) {
        rc = 0;
        break;
      }
    }
    if (waitpid(pid, &d->status, WNOHANG) == pid) {
      d->pid = 0;
      break;
    }
  }
  close(ns);
  if (!wait_ready) {
    waitpid(pid, &d->status, 0);
    d->pid = 0;
  }
  return rc;
}

int td_start_listening(td_daemon *d)
{
  const char *args[] = {"--config", d->cfg, "--foreground", NULL};
  return td_spawn(d, args, 2);
}

int td_start(td_daemon *d)
{
  const char *args[] = {"--config", d->cfg, "--foreground", NULL};
  return td_spawn(d, args, 1);
}

/* SIGTERM; the exit status (or -1 if it did not exit normally). */
int td_stop(td_daemon *d)
{
  if (d->pid <= 0)
    return -1;
  kill(d->pid, SIGTERM);
  waitpid(d->pid, &d->status, 0);
  d->pid = 0;
  return WIFEXITED(d->status) ? WEXITSTATUS(d->status) : -1;
}

void td_stop_ok(td_daemon *d)
{
  int rc = td_stop(d);
  if (rc != 0)
    fprintf(stderr, "wavedd exit %d:\n%s\n", rc, td_stderr(d));
  td_cleanup(d);
  ck_assert_int_eq(rc, 0);
}

char *td_stderr(const td_daemon *d)
{
  static char buf[1 << 16];
  buf[0] = '\0';
  FILE *f = fopen(d->err_path, "r");
  if (f != NULL) {
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
  }
  return buf;
}

void td_cleanup(td_daemon *d)
{
  if (d->pid > 0) {
    kill(d->pid, SIGKILL);
    waitpid(d->pid, NULL, 0);
    d->pid = 0;
  }
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", d->dir);
  if (d->dir[0] != '\0' && system(cmd) != 0)
    fprintf(stderr, "could not remove %s\n", d->dir);
}

/* ---- the wire --------------------------------------------------------------- */

nng_socket td_dial(const char *url)
{
  nng_socket s;
  ck_assert_int_eq(nng_req0_open(&s), 0);
  ck_assert_int_eq(nng_socket_set_ms(s, NNG_OPT_RECVTIMEO, 60000), 0);
  ck_assert_int_eq(nng_socket_set_size(s, NNG_OPT_RECVMAXSZ, 16u << 20), 0);
  ck_assert_int_eq(nng_dial(s, url, NULL, 0), 0);
  return s;
}

/* One exchange of raw bytes on ctx (its own REQ context). */
Wave__V1__Response *td_call_raw_ctx(nng_ctx ctx, const void *buf,
                                           size_t len)
{
  nng_aio *aio;
  nng_msg *m;
  ck_assert_int_eq(nng_aio_alloc(&aio, NULL, NULL), 0);
  nng_aio_set_timeout(aio, 60000);
  ck_assert_int_eq(nng_msg_alloc(&m, 0), 0);
  ck_assert_int_eq(nng_msg_append(m, buf, len), 0);
  nng_aio_set_msg(aio, m);
  nng_ctx_send(ctx, aio);
  nng_aio_wait(aio);
  ck_assert_int_eq(nng_aio_result(aio), 0);
  nng_ctx_recv(ctx, aio);
  nng_aio_wait(aio);
  ck_assert_msg(nng_aio_result(aio) == 0, "no reply: %s",
                nng_strerror(nng_aio_result(aio)));
  m = nng_aio_get_msg(aio);
  Wave__V1__Response *r =
      wave__v1__response__unpack(NULL, nng_msg_len(m), nng_msg_body(m));
  nng_msg_free(m);
  nng_aio_free(aio);
  ck_assert_ptr_nonnull(r);
  ck_assert_msg(r->version == 1 || r->version == 2, "version %u", r->version);
  return r;
}

Wave__V1__Response *td_call_raw(nng_socket s, const void *buf,
                                       size_t len)
{
  nng_ctx ctx;
  ck_assert_int_eq(nng_ctx_open(&ctx, s), 0);
  Wave__V1__Response *r = td_call_raw_ctx(ctx, buf, len);
  nng_ctx_close(ctx);
  return r;
}

Wave__V1__Response *td_call_ctx(nng_ctx ctx, Wave__V1__Request *rq)
{
  size_t n = wave__v1__request__get_packed_size(rq);
  uint8_t *buf = malloc(n ? n : 1);
  ck_assert_ptr_nonnull(buf);
  wave__v1__request__pack(rq, buf);
  nng_ctx c = ctx;
  Wave__V1__Response *r = td_call_raw_ctx(c, buf, n);
  free(buf);
  if (r->body_case != WAVE__V1__RESPONSE__BODY_ERROR)
    ck_assert_uint_eq(r->id, rq->id);
  return r;
}

Wave__V1__Response *td_call(nng_socket s, Wave__V1__Request *rq)
{
  nng_ctx ctx;
  ck_assert_int_eq(nng_ctx_open(&ctx, s), 0);
  Wave__V1__Response *r = td_call_ctx(ctx, rq);
  nng_ctx_close(ctx);
  return r;
}

Wave__V1__Response *td_status(nng_socket s, uint64_t id)
{
  Wave__V1__StatusRequest st = WAVE__V1__STATUS_REQUEST__INIT;
  Wave__V1__Request rq = WAVE__V1__REQUEST__INIT;
  rq.version = 2;
  rq.id = id;
  rq.body_case = WAVE__V1__REQUEST__BODY_STATUS;
  rq.status = &st;
  Wave__V1__Response *r = td_call(s, &rq);
  ck_assert_int_eq(r->body_case, WAVE__V1__RESPONSE__BODY_STATUS);
  return r;
}

void td_expect_error(Wave__V1__Response *r, int code, uint64_t id)
{
  ck_assert_int_eq(r->body_case, WAVE__V1__RESPONSE__BODY_ERROR);
  ck_assert_msg((int)r->error->code == code, "got %s (%s), want %s",
                r->error->name, r->error->message, wave_errname(code));
  ck_assert_str_eq(r->error->name, wave_errname(code));
  ck_assert_uint_gt(strlen(r->error->message), 0);
  ck_assert_uint_eq(r->id, id);
  wave__v1__response__free_unpacked(r, NULL);
}

Wave__V1__Response *td_reduce(nng_socket s, uint64_t id, int dtype,
                                     int op, const td_chunk *in, size_t n_in,
                                     const td_chunk *mask, size_t n_mask,
                                     const char *device)
{
  ProtobufCBinaryData bin[16], bmask[16];
  ck_assert_uint_le(n_in, 16);
  ck_assert_uint_le(n_mask, 16);
  for (size_t i = 0; i < n_in; i++)
    bin[i] = (ProtobufCBinaryData){in[i].bytes, (uint8_t *)in[i].data};
  for (size_t i = 0; i < n_mask; i++)
    bmask[i] = (ProtobufCBinaryData){mask[i].bytes, (uint8_t *)mask[i].data};
  Wave__V1__ReduceRequest rr = WAVE__V1__REDUCE_REQUEST__INIT;
  rr.dtype = (Wave__V1__DType)dtype;
  rr.op = (Wave__V1__Op)op;
  rr.n_input = n_in;
  rr.input = bin;
  rr.n_mask = n_mask;
  rr.mask = bmask;
  rr.masked = mask != NULL;
  if (device != NULL)
    rr.device = (char *)device;
  Wave__V1__Request rq = WAVE__V1__REQUEST__INIT;
  rq.version = 2;
  rq.id = id;
  rq.body_case = WAVE__V1__REQUEST__BODY_REDUCE;
  rq.reduce = &rr;
  return td_call(s, &rq);
}

/* A good request after a bad one: 16 rows 1..16, sum 136. */
void td_good(nng_socket s)
{
  uint32_t v[16];
  for (int i = 0; i < 16; i++)
    v[i] = (uint32_t)i + 1;
  td_chunk c = {v, sizeof v};
  Wave__V1__Response *r =
      td_reduce(s, 99, WAVE__V1__DTYPE__U32, WAVE__V1__OP__SUM, &c, 1, NULL,
                0, NULL);
  ck_assert_int_eq(r->body_case, WAVE__V1__RESPONSE__BODY_REDUCE);
  ck_assert_uint_eq(r->reduce->n_bits, 1);
  ck_assert_uint_eq(r->reduce->bits[0], 136);
  ck_assert_uint_eq(r->reduce->count, 16);
  wave__v1__response__free_unpacked(r, NULL);
}


Wave__V1__Response *td_hash(nng_socket s, uint64_t id,
                                   const char *pack, uint64_t nonce,
                                   uint64_t count, uint64_t target,
                                   uint32_t max_winners, int outputs,
                                   uint64_t client, const char *device)
{
  Wave__V1__HashRequest hr = WAVE__V1__HASH_REQUEST__INIT;
  hr.pack = (char *)pack;
  hr.nonce = nonce;
  hr.count = count;
  hr.target = target;
  hr.max_winners = max_winners;
  hr.want_outputs = outputs;
  hr.client = client;
  if (device)
    hr.device = (char *)device;
  return td_hash_req(s, id, &hr);
}

Wave__V1__Response *td_hash_req(nng_socket s, uint64_t id,
                                Wave__V1__HashRequest *hr)
{
  Wave__V1__Request rq = WAVE__V1__REQUEST__INIT;
  rq.version = 2;
  rq.id = id;
  rq.body_case = WAVE__V1__REQUEST__BODY_HASH;
  rq.hash = hr;
  return td_call(s, &rq);
}

Wave__V1__Response *td_job(nng_socket s, uint64_t job, unsigned wait,
                                  int cancel)
{
  Wave__V1__JobRequest jr = WAVE__V1__JOB_REQUEST__INIT;
  Wave__V1__CancelRequest cr = WAVE__V1__CANCEL_REQUEST__INIT;
  Wave__V1__Request rq = WAVE__V1__REQUEST__INIT;
  rq.version = 2;
  rq.id = 77;
  if (cancel) {
    cr.job_id = job;
    rq.body_case = WAVE__V1__REQUEST__BODY_CANCEL;
    rq.cancel = &cr;
  } else {
    jr.job_id = job;
    jr.wait_ms = wait;
    rq.body_case = WAVE__V1__REQUEST__BODY_JOB;
    rq.job = &jr;
  }
  return td_call(s, &rq);
}

/* Poll (waiting inside the daemon) until the job is no longer queued,
 * preparing or running; returns the final JobInfo response. */
Wave__V1__Response *td_wait_job(nng_socket s, uint64_t job)
{
  for (int i = 0; i < 600; i++) {
    Wave__V1__Response *r = td_job(s, job, 5000, 0);
    ck_assert_int_eq(r->body_case, WAVE__V1__RESPONSE__BODY_JOB);
    ck_assert_uint_eq(r->job->job_id, job);
    if (r->job->state != WAVE__V1__JOB_STATE__QUEUED &&
        r->job->state != WAVE__V1__JOB_STATE__RUNNING &&
        r->job->state != WAVE__V1__JOB_STATE__PREPARING)
      return r;
    wave__v1__response__free_unpacked(r, NULL);
  }
  ck_abort_msg("job %" PRIu64 " never ended", job);
  return NULL;
}

unsigned td_http_get(const char *url, const char **body, const char **type)
{
  static char text[1 << 18], ctype[200];
  nng_url *u = NULL;
  nng_http_client *cl = NULL;
  nng_http_req *req = NULL;
  nng_http_res *res = NULL;
  nng_aio *aio = NULL;
  ck_assert_int_eq(nng_url_parse(&u, url), 0);
  ck_assert_int_eq(nng_http_client_alloc(&cl, u), 0);
  ck_assert_int_eq(nng_http_req_alloc(&req, u), 0);
  ck_assert_int_eq(nng_http_res_alloc(&res), 0);
  ck_assert_int_eq(nng_aio_alloc(&aio, NULL, NULL), 0);
  nng_aio_set_timeout(aio, 10000);
  nng_http_client_transact(cl, req, res, aio);
  nng_aio_wait(aio);
  ck_assert_int_eq(nng_aio_result(aio), 0);
  unsigned status = nng_http_res_get_status(res);
  const char *ct = nng_http_res_get_header(res, "Content-Type");
  snprintf(ctype, sizeof ctype, "%s", ct != NULL ? ct : "");
  void *data;
  size_t len;
  nng_http_res_get_data(res, &data, &len);
  ck_assert_uint_lt(len, sizeof text);
  memcpy(text, data, len);
  text[len] = '\0';
  *body = text;
  if (type != NULL)
    *type = ctype;
  nng_aio_free(aio);
  nng_http_res_free(res);
  nng_http_req_free(req);
  nng_http_client_free(cl);
  nng_url_free(u);
  return status;
}
