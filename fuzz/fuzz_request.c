/* fuzz_request.c - libFuzzer target: the request path of wavedd in
 * process, decode -> validate -> dispatch -> reply, on a CPU device.
 *
 * The first input starts the daemon core (wvdcore, everything but main.c)
 * on a thread of its own, as main.c does: a config with one ipc listener,
 * one single-thread CPU device, the shipped closed and small packs and
 * small limits (fuzz/README.md), and waits until its status says ready.
 * Every input is then sent as one message over a REQ socket, as a client
 * would, and the reply awaited.  A reply that is not a wave.v1.Response,
 * an Error with a code outside the table, a lost reply (none within 10 s),
 * a crash or a sanitizer report is a finding.  The daemon is never
 * stopped: libFuzzer exits the process.  Leak detection stays off for this
 * target (-detect_leaks=0): the daemon's threads allocate between inputs.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <nng/nng.h>
#include <nng/protocol/reqrep0/req.h>
#include <uv.h>

#include "daemon/config.h"
#include "daemon/log.h"
#include "daemon/reload.h"
#include "daemon/server.h"
#include "daemon/stats.h"
#include "proto/wave.pb-c.h"
#include "wave/error.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static nng_socket wf_sock;
static uv_loop_t wf_loop;
static char wf_dir[] = "/tmp/wave-fuzz.XXXXXX";

static void wf_cleanup(void)  /* at exit: the folder, not the daemon */
{
  char p[160];
  snprintf(p, sizeof p, "%s/wavedd.yaml", wf_dir);
  unlink(p);
  snprintf(p, sizeof p, "%s/w.sock", wf_dir);
  unlink(p);
  rmdir(wf_dir);
}

static void *wf_serve(void *arg)
{
  (void)arg;
  uv_run(&wf_loop, UV_RUN_DEFAULT);
  return NULL;
}

static Wave__V1__Response *wf_call(const void *buf, size_t len)
{
  nng_msg *m;
  if (nng_msg_alloc(&m, len) != 0)
    abort();
  if (len)
    memcpy(nng_msg_body(m), buf, len);
  int rv = nng_sendmsg(wf_sock, m, 0);
  if (rv != 0) {
    fprintf(stderr, "fuzz_request: send: %s\n", nng_strerror(rv));
    abort();
  }
  if ((rv = nng_recvmsg(wf_sock, &m, 0)) != 0) {
    fprintf(stderr, "fuzz_request: no reply: %s\n", nng_strerror(rv));
    abort();  /* a lost reply */
  }
  Wave__V1__Response *r =
      wave__v1__response__unpack(NULL, nng_msg_len(m), nng_msg_body(m));
  nng_msg_free(m);
  if (r == NULL) {
    fprintf(stderr, "fuzz_request: the reply is not a Response\n");
    abort();
  }
  return r;
}

static void wf_start(void)
{
  char *dir = wf_dir;
  if (mkdtemp(dir) == NULL)
    abort();
  atexit(wf_cleanup);
  char cfgpath[128], text[2048];
  snprintf(cfgpath, sizeof cfgpath, "%s/wavedd.yaml", dir);
  snprintf(text, sizeof text,
           "listen: [\"ipc://%s/w.sock\"]\n"
           "log_level: error\n"
           "limits:\n"
           "  max_request_bytes: 1048576\n"
           "  max_job_rows: 65536\n"
           "  max_wait_ms: 20\n"
           "  max_outputs: 4096\n"
           "  max_segments: 4096\n"
           "  contexts: 8\n"
           "packs: {dir: %s, load: [closed, small]}\n"
           "devices:\n"
           "  - {name: cpu0, backend: cpu, threads: 1, batch: 4096}\n",
           dir, WAVE_FUZZ_PACKS);
  FILE *f = fopen(cfgpath, "w");
  if (f == NULL || fputs(text, f) < 0 || fclose(f) != 0)
    abort();
  wave_error err = {0};
  wd_config *cfg;
  static wv_packset *set;
  static wd_packs packs;
  wd_server *srv;
  const char *names[1] = {"cpu0"};
  wd_log_set_level(WD_LOG_ERROR);
  if (wd_config_load(cfgpath, &cfg, &err) != 0 ||
      wd_packs_load(cfg, &set, &packs, &err) != 0 ||
      wd_stats_init(names, 1) != 0 || uv_loop_init(&wf_loop) != 0 ||
      wd_server_init(&wf_loop, cfg, &packs, &srv, &err) != 0 ||
      wd_server_listen(srv, &err) != 0) {
    fprintf(stderr, "fuzz_request: cannot start: %s\n", err.message);
    abort();
  }
  wd_server_serving(srv);  /* no metrics or signals here: ready once prepared */
  pthread_t t;
  if (pthread_create(&t, NULL, wf_serve, NULL) != 0)
    abort();
  char url[160];
  snprintf(url, sizeof url, "ipc://%s/w.sock", dir);
  if (nng_req0_open(&wf_sock) != 0 || nng_dial(wf_sock, url, NULL, 0) != 0)
    abort();
  nng_socket_set_ms(wf_sock, NNG_OPT_RECVTIMEO, 10000);
  nng_socket_set_ms(wf_sock, NNG_OPT_REQ_RESENDTIME, NNG_DURATION_INFINITE);
  /* until the packs are prepared: status.ready */
  for (int i = 0; i < 600; i++) {
    Wave__V1__StatusRequest st = WAVE__V1__STATUS_REQUEST__INIT;
    Wave__V1__Request rq = WAVE__V1__REQUEST__INIT;
    rq.version = 2;
    rq.id = 1;
    rq.body_case = WAVE__V1__REQUEST__BODY_STATUS;
    rq.status = &st;
    uint8_t buf[64];
    size_t n = wave__v1__request__pack(&rq, buf);
    Wave__V1__Response *r = wf_call(buf, n);
    int ready = r->body_case == WAVE__V1__RESPONSE__BODY_STATUS &&
                r->status->ready;
    wave__v1__response__free_unpacked(r, NULL);
    if (ready)
      return;
    usleep(100000);
  }
  fprintf(stderr, "fuzz_request: the daemon never became ready\n");
  abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  static int started;
  if (!started) {
    wf_start();
    started = 1;
  }
  Wave__V1__Response *r = wf_call(data, size);
  if (r->body_case == WAVE__V1__RESPONSE__BODY_ERROR) {
    if (r->error == NULL || r->error->code == 0 ||
        r->error->code >= WAVE_ERR_COUNT_ || r->error->message == NULL) {
      fprintf(stderr, "fuzz_request: an Error outside the table\n");
      abort();
    }
  } else if (r->body_case == WAVE__V1__RESPONSE__BODY__NOT_SET) {
    fprintf(stderr, "fuzz_request: a Response with no body\n");
    abort();
  }
  wave__v1__response__free_unpacked(r, NULL);
  return 0;
}
