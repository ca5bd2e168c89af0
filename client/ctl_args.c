/* ctl_args.c - wavectl's command line: the parser over the one option
 * table of ctl_opts.c (docs/cli.md is the long form of the same).
 *
 * Forms: wavectl [GLOBAL] COMMAND [OPTIONS], where COMMAND is `submit
 * reduce`, `submit hash`, `status`, `packs`, `jobs`, `wait ID`, `cancel ID
 * [ID...]`, `top`, `bench` or `help [COMMAND]`.  Options
 * are long only (plus -h), "--name value" or "--name=value", and may come
 * before or after the command; a repeated single-valued option keeps the
 * last value.  Names (op, dtype, format) are checked here, so a typo is a
 * usage error (exit 2) before anything is read or sent; whether an op suits
 * a dtype is the daemon's call.
 */
#include <stdlib.h>
#include <string.h>

#include "client/ctl.h"
#include "core/base.h"

int wv_parse_u64(const char *s, uint64_t *out)
{
  if (s == NULL)
    return WAVE_EARG;
  if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
    return wv_parse_hex64(s, out);
  if (s[0] == '\0')
    return WAVE_EARG;
  uint64_t v = 0;
  for (const char *p = s; *p; p++) {
    if (*p < '0' || *p > '9')
      return WAVE_EARG;
    unsigned d = (unsigned)(*p - '0');
    if (v > (UINT64_MAX - d) / 10)
      return WAVE_EARG;
    v = v * 10 + d;
  }
  *out = v;
  return 0;
}

int wv_parse_hex64(const char *s, uint64_t *out)
{
  if (s == NULL)
    return WAVE_EARG;
  if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
    s += 2;
  size_t n = strlen(s);
  if (n == 0 || n > 16)
    return WAVE_EARG;
  uint64_t v = 0;
  for (size_t i = 0; i < n; i++) {
    char ch = s[i];
    unsigned d;
    if (ch >= '0' && ch <= '9')
      d = (unsigned)(ch - '0');
    else if (ch >= 'a' && ch <= 'f')
      d = (unsigned)(ch - 'a' + 10);
    else if (ch >= 'A' && ch <= 'F')
      d = (unsigned)(ch - 'A' + 10);
    else
      return WAVE_EARG;
    v = v << 4 | d;
  }
  *out = v;
  return 0;
}

void wv_args_fini(wv_args *a)
{
  free(a->inputs);
  free(a->masks);
  free(a->job_ids);
  a->inputs = a->masks = NULL;
  a->job_ids = NULL;
  free(a->devlist);
  free(a->devs);
  a->devlist = NULL;
  a->devs = NULL;
  a->n_devs = 0;
}

/* --devices a,b,c (or "all"), and --device a,b: a list of device names. */
static int ar_devlist(wv_args *a, const char *v, wave_error *err)
{
  free(a->devlist);
  free(a->devs);
  a->devs = NULL;
  a->n_devs = 0;
  if ((a->devlist = strdup(v)) == NULL)
    return wv_seterr(err, WAVE_ENOMEM, NULL);
  size_t n = 1;
  for (const char *p = v; *p; p++)
    n += *p == ',';
  if ((a->devs = calloc(n, sizeof *a->devs)) == NULL)
    return wv_seterr(err, WAVE_ENOMEM, NULL);
  for (char *save = NULL, *t = strtok_r(a->devlist, ",", &save); t != NULL;
       t = strtok_r(NULL, ",", &save))
    a->devs[a->n_devs++] = t;
  if (a->n_devs == 0)
    return wv_seterr(err, WAVE_EARG, "--devices: no device name in '%s'", v);
  return 0;
}

/* The first row named name[0..len), and in *cmds the commands of all the
 * rows of that name (--device has one row per meaning). */
static const wv_opt *ar_find(const char *name, size_t len, unsigned *cmds)
{
  const wv_opt *first = NULL;
  *cmds = 0;
  for (size_t i = 0; i < wv_n_opts; i++)
    if (strlen(wv_opts[i].name) == len &&
        memcmp(wv_opts[i].name, name, len) == 0) {
      if (first == NULL)
        first = &wv_opts[i];
      *cmds |= wv_opts[i].cmds;
    }
  return first;
}

/* bench's --nonces N (1..2^40) and --rows N (1..2^28). */
static int ar_bench(wv_args *a, wv_opt_id id, const char *v, wave_error *err)
{
  uint64_t n;
  unsigned lim = id == WV_O_NONCES ? 40 : 28;
  if (wv_parse_u64(v, &n) != 0 || n == 0 || n > ((uint64_t)1 << lim))
    return wv_seterr(err, WAVE_EARG, "--%s: '%s' is not a number in "
                     "1..2^%u", id == WV_O_NONCES ? "nonces" : "rows", v,
                     lim);
  if (id == WV_O_ROWS) {
    a->rows = n;
  } else {
    a->count = n;
    a->have_count = 1;
  }
  return 0;
}

/* Apply one option with its value (NULL for flags). */
static int ar_apply(wv_args *a, const wv_opt *o, const char *v,
                    wave_error *err)
{
  uint64_t n;
  switch (o->id) {
  case WV_O_URL: a->url = v; break;
  case WV_O_TOKENFILE: a->token_file = v; break;
  case WV_O_TLSCA: a->tls_ca = v; break;
  case WV_O_TLSNAME: a->tls_name = v; break;
  case WV_O_TIMEOUT:
    if (wv_parse_u64(v, &n) != 0 || n == 0 || n > 86400000u)
      return wv_seterr(err, WAVE_EARG, "--timeout: '%s' is not a number of "
                       "milliseconds (1..86400000)", v);
    a->timeout_ms = (int)n;
    break;
  case WV_O_DAEMON_UID:  /* libwaveclient reads it (wave/client.h) */
    if (wv_parse_u64(v, &n) != 0 || n > 0x7fffffffu)
      return wv_seterr(err, WAVE_EARG, "--daemon-uid: '%s' is not a uid", v);
    setenv("WAVE_DAEMON_UID", v, 1);
    break;
  case WV_O_JSON: a->json = 1; break;
  case WV_O_HELP: a->help = 1; break;
  case WV_O_VERSION: a->version = 1; break;
  case WV_O_DETACH: a->detach = 1; break;
  case WV_O_PROGRESS: a->progress = 1; break;
  case WV_O_PRIORITY:
    if (wave_priority_parse(v, &a->priority) != 0)
      return wv_seterr(err, WAVE_EARG, "--priority: '%s' is not high, "
                       "normal or low", v);
    break;
  case WV_O_DEADLINE:
    if (wv_parse_u64(v, &n) != 0 || n == 0 || n > 86400000)
      return wv_seterr(err, WAVE_EARG, "--deadline: '%s' is not a number of "
                       "milliseconds in 1..86400000", v);
    a->deadline_ms = (unsigned)n;
    break;
  case WV_O_STALL:
    if (wv_parse_u64(v, &n) != 0 || n == 0 || n > 86400)
      return wv_seterr(err, WAVE_EARG, "--stall: '%s' is not a number of "
                       "seconds in 1..86400", v);
    a->stall_s = (unsigned)n;
    break;
  case WV_O_KEY:
    if (wave_job_key_parse(v, &a->key, err) != 0)
      return wv_seterr(err, WAVE_EARG, "--key: '%.40s' is not a job key "
                       "(32 hex digits, as submit hash --detach prints it)",
                       v);
    break;
  case WV_O_DEVICE:
    if (strchr(v, ',') != NULL) {  /* --device a,b: several (hash jobs) */
      a->device = NULL;
      return ar_devlist(a, v, err);
    }
    a->device = v;
    break;
  case WV_O_OP:
    if ((a->op = wave_op_parse(v)) == WAVE_OP_NONE)
      return wv_seterr(err, WAVE_EARG, "--op: unknown op '%s' (sum, min, "
                       "max, extent, and, or, xor, argmin, argmax, fsum)",
                       v);
    break;
  case WV_O_DTYPE:
    if ((a->dtype = wave_dtype_parse(v)) == WAVE_DTYPE_NONE)
      return wv_seterr(err, WAVE_EARG, "--dtype: unknown dtype '%s' "
                       "(uint32, sint32, float32, uint64, sint64, float64)",
                       v);
    break;
  case WV_O_INPUT: a->inputs[a->n_inputs++] = v; break;
  case WV_O_MASK: a->masks[a->n_masks++] = v; break;
  case WV_O_FORMAT:
    if (wv_format_parse(v, &a->format) != 0)
      return wv_seterr(err, WAVE_EARG, "--format: unknown format '%s' "
                       "(raw, npy, text, auto)", v);
    break;
  case WV_O_PACK: a->pack = v; break;
  case WV_O_NONCE:
    if (wv_parse_u64(v, &a->nonce) != 0)
      return wv_seterr(err, WAVE_EARG, "--nonce: '%s' is not an unsigned "
                       "64-bit number", v);
    a->have_nonce = 1;
    break;
  case WV_O_COUNT:
    if (wv_parse_u64(v, &a->count) != 0 || a->count == 0)
      return wv_seterr(err, WAVE_EARG, "--count: '%s' is not a positive "
                       "64-bit number", v);
    a->have_count = 1;
    break;
  case WV_O_TARGET:
    if (wv_parse_hex64(v, &a->target) != 0)
      return wv_seterr(err, WAVE_EARG, "--target: '%s' is not 1 to 16 hex "
                       "digits", v);
    break;
  case WV_O_MAXWIN:
    if (wv_parse_u64(v, &n) != 0 || n > UINT32_MAX)
      return wv_seterr(err, WAVE_EARG, "--max-winners: '%s' is not a number "
                       "up to 4294967295", v);
    a->max_winners = (uint32_t)n;
    break;
  case WV_O_OUTPUTS: a->outputs = 1; break;
  case WV_O_FLEET: a->fleet = v; break;
  case WV_O_PIECE:
    if (wv_parse_u64(v, &a->piece) != 0 || a->piece == 0)
      return wv_seterr(err, WAVE_EARG, "--piece: '%s' is not a positive "
                       "number", v);
    break;
  case WV_O_PROBE: a->probe = 1; break;
  case WV_O_ONCE: a->once = 1; break;
  case WV_O_NONCES: case WV_O_ROWS: return ar_bench(a, o->id, v, err);
  case WV_O_SEGMENTS: a->segments = 1; break;
  case WV_O_SEGLOG2:
    if (wv_parse_u64(v, &n) != 0 || n < 5 || n > 20)
      return wv_seterr(err, WAVE_EARG, "--segment-log2: '%s' is not a "
                       "number 5..20", v);
    a->segment_log2 = (unsigned)n;
    break;
  case WV_O_DEVICES:
    return ar_devlist(a, v, err);
  }
  return 0;
}

/* The command words: "submit reduce", "submit hash", "status", "packs",
 * "help [words]".  Returns the words consumed, 0 if argv[i] is none. */
static int ar_command(int argc, char **argv, int i, wv_args *a,
                      wave_error *err)
{
  const char *w = argv[i];
  if (strcmp(w, "status") == 0) {
    a->cmd = WV_CMD_STATUS;
    return 1;
  }
  if (strcmp(w, "packs") == 0) {
    a->cmd = WV_CMD_PACKS;
    return 1;
  }
  if (strcmp(w, "jobs") == 0) {
    a->cmd = WV_CMD_JOBS;
    return 1;
  }
  if (strcmp(w, "top") == 0) {
    a->cmd = WV_CMD_TOP;
    return 1;
  }
  if (strcmp(w, "bench") == 0) {
    a->cmd = WV_CMD_BENCH;
    return 1;
  }
  if (strcmp(w, "wait") == 0 || strcmp(w, "cancel") == 0) {
    a->cmd = w[0] == 'w' ? WV_CMD_WAIT : WV_CMD_CANCEL;
    const char *k = i + 1 < argc ? argv[i + 1] : NULL;
    if (k != NULL && (strcmp(k, "--help") == 0 || strcmp(k, "-h") == 0))
      return 1;  /* the option loop sees --help */
    if (k == NULL || wv_parse_u64(k, &a->job_id) != 0)
      return -wv_seterr(err, WAVE_EARG, "%s: expected a job id (as submit "
                        "hash --detach or wavectl jobs print it)%s%s%s", w,
                        k ? ", not '" : "", k ? k : "", k ? "'" : "");
    a->job_ids[a->n_job_ids++] = a->job_id;
    return 2;
  }
  if (strcmp(w, "submit") == 0) {
    const char *k = i + 1 < argc ? argv[i + 1] : NULL;
    if (k != NULL && (strcmp(k, "--help") == 0 || strcmp(k, "-h") == 0)) {
      a->help = a->help_submit = 1; /* `submit --help`: both kinds */
      return 2;
    }
    if (k != NULL && strcmp(k, "reduce") == 0)
      a->cmd = WV_CMD_REDUCE;
    else if (k != NULL && strcmp(k, "hash") == 0)
      a->cmd = WV_CMD_HASH;
    else
      return -wv_seterr(err, WAVE_EARG, "submit: expected 'reduce' or "
                        "'hash'%s%s%s", k ? ", not '" : "", k ? k : "",
                        k ? "'" : "");
    return 2;
  }
  if (strcmp(w, "help") == 0) {  /* help [COMMAND]: no job id needed */
    a->help = 1;
    const char *k = i + 1 < argc ? argv[i + 1] : NULL;
    if (k == NULL || k[0] == '-' || strcmp(k, "help") == 0)
      return k != NULL && k[0] != '-' ? 2 : 1;
    if (strcmp(k, "wait") == 0 || strcmp(k, "cancel") == 0) {
      a->cmd = k[0] == 'w' ? WV_CMD_WAIT : WV_CMD_CANCEL;
      return 2;
    }
    if (strcmp(k, "submit") == 0) {
      const char *t = i + 2 < argc ? argv[i + 2] : NULL;
      if (t != NULL && (strcmp(t, "reduce") == 0 || strcmp(t, "hash") == 0)) {
        a->cmd = t[0] == 'r' ? WV_CMD_REDUCE : WV_CMD_HASH;
        return 3;
      }
      a->help_submit = 1;  /* both kinds */
      return 2;
    }
    int n = ar_command(argc, argv, i + 1, a, err);
    return n < 0 ? n : 1 + n;
  }
  return -wv_seterr(err, WAVE_EARG, "unknown command '%s' (submit reduce, "
                    "submit hash, status, packs, jobs, wait, cancel, top, "
                    "bench, help)",
                    w);
}

/* What each command cannot go without (or cannot combine). */
static int ar_required(const wv_args *a, wave_error *err)
{
  if (a->key.set && a->n_job_ids > 1)
    return wv_seterr(err, WAVE_EARG, "--key reaches one job: give one id "
                     "with it");
  if (a->cmd == WV_CMD_REDUCE) {
    if (a->op == WAVE_OP_NONE)
      return wv_seterr(err, WAVE_EARG, "submit reduce: missing --op");
    /* no --dtype: the .npy headers name it (wv_inputs_dtype) */
    if (a->n_inputs == 0)
      return wv_seterr(err, WAVE_EARG, "submit reduce: missing --input "
                       "(one per chunk)");
  }
  if (a->cmd == WV_CMD_HASH) {
    if (a->pack == NULL || a->pack[0] == '\0')
      return wv_seterr(err, WAVE_EARG, "submit hash: missing --pack");
    if (!a->have_nonce)
      return wv_seterr(err, WAVE_EARG, "submit hash: missing --nonce");
    if (!a->have_count)
      return wv_seterr(err, WAVE_EARG, "submit hash: missing --count");
    if (a->count - 1 > UINT64_MAX - a->nonce)
      return wv_seterr(err, WAVE_EARG, "submit hash: --nonce + --count "
                       "passes 2^64");
  }
  return 0;
}

int wv_args_parse(int argc, char **argv, wv_args *a, wave_error *err)
{
  memset(a, 0, sizeof *a);
  a->max_winners = 16;
  /* Every --input/--mask fits in argc slots. */
  a->inputs = calloc((size_t)argc + 1, sizeof *a->inputs);
  a->masks = calloc((size_t)argc + 1, sizeof *a->masks);
  a->job_ids = calloc((size_t)argc + 1, sizeof *a->job_ids);
  if (a->inputs == NULL || a->masks == NULL || a->job_ids == NULL)
    return wv_seterr(err, WAVE_ENOMEM, NULL);

  int opts_done = 0, rv;
  for (int i = 1; i < argc; i++) {
    const char *s = argv[i];
    if (!opts_done && strcmp(s, "--") == 0) {
      opts_done = 1;
      continue;
    }
    if (!opts_done && strcmp(s, "-h") == 0)
      s = "--help";
    if (opts_done || s[0] != '-' || s[1] == '\0') {
      if (a->cmd == WV_CMD_CANCEL && !a->help) {  /* cancel ID ID ... */
        if (wv_parse_u64(s, &a->job_ids[a->n_job_ids++]) != 0)
          return wv_seterr(err, WAVE_EARG, "cancel: expected a job id, not "
                           "'%s'", s);
        continue;
      }
      if (a->cmd != WV_CMD_NONE || a->help)
        return wv_seterr(err, WAVE_EARG, "unexpected argument '%s'", s);
      int n = ar_command(argc, argv, i, a, err);
      if (n < 0)
        return -n;
      i += n - 1;
      continue;
    }
    if (s[1] != '-')
      return wv_seterr(err, WAVE_EARG, "unknown option '%s' (options are "
                       "long: --name)", s);
    const char *name = s + 2, *eq = strchr(name, '=');
    size_t len = eq ? (size_t)(eq - name) : strlen(name);
    unsigned cmds;
    const wv_opt *o = ar_find(name, len, &cmds);
    /* Options may precede the command, so only reject a known option for
     * the wrong command once the command is known (checked below). */
    if (o == NULL)
      return wv_seterr(err, WAVE_EARG, "unknown option '--%.*s'%s%s",
                       (int)len, name, a->cmd ? " for " : "",
                       a->cmd ? wv_cmd_name(a->cmd) : "");
    const char *v = NULL;
    if (o->arg) {
      if (eq != NULL)
        v = eq + 1;
      else if (i + 1 < argc)
        v = argv[++i];
      else
        return wv_seterr(err, WAVE_EARG, "option --%s needs a value",
                         o->name);
    } else if (eq != NULL) {
      return wv_seterr(err, WAVE_EARG, "option --%s takes no value",
                       o->name);
    }
    if (a->cmd != WV_CMD_NONE && !(cmds & WV_CMD_BIT(a->cmd)))
      return wv_seterr(err, WAVE_EARG, "option --%s does not apply to %s",
                       o->name, wv_cmd_name(a->cmd));
    if ((rv = ar_apply(a, o, v, err)) != 0)
      return rv;
  }

  if (a->help || a->version)
    return 0;
  if (a->cmd == WV_CMD_NONE)
    return wv_seterr(err, WAVE_EARG, "no command given (try wavectl --help)");
  /* Options given before the command: now check they belong to it. */
  if (a->cmd != WV_CMD_REDUCE &&
      (a->op || a->dtype || a->n_inputs || a->n_masks || a->format))
    return wv_seterr(err, WAVE_EARG, "--op/--dtype/--input/--mask/--format "
                     "apply only to submit reduce");
  if (a->cmd == WV_CMD_BENCH && (a->have_nonce || a->target ||
                                 a->outputs || a->detach))
    return wv_seterr(err, WAVE_EARG, "--nonce/--target/--outputs/--detach "
                     "apply only to submit hash");
  if (a->cmd != WV_CMD_HASH && a->cmd != WV_CMD_BENCH &&
      (a->pack || a->have_nonce || a->have_count || a->target || a->outputs ||
       a->detach))
    return wv_seterr(err, WAVE_EARG, "--pack/--nonce/--count/--target/"
                     "--outputs/--detach apply only to submit hash");
  if (a->device && a->cmd != WV_CMD_REDUCE && a->cmd != WV_CMD_HASH &&
      a->cmd != WV_CMD_BENCH)
    return wv_seterr(err, WAVE_EARG, "--device applies only to submit and "
                     "bench");
  if (a->cmd == WV_CMD_BENCH && a->n_devs > 0)
    return wv_seterr(err, WAVE_EARG, "bench --device: one device name");
  if (a->rows && a->cmd != WV_CMD_BENCH)
    return wv_seterr(err, WAVE_EARG, "--rows applies only to bench");
  if (a->fleet && a->cmd != WV_CMD_REDUCE && a->cmd != WV_CMD_HASH &&
      a->cmd != WV_CMD_STATUS)
    return wv_seterr(err, WAVE_EARG, "--fleet applies only to submit and "
                     "status");
  if (a->piece && a->cmd != WV_CMD_REDUCE && a->cmd != WV_CMD_HASH)
    return wv_seterr(err, WAVE_EARG, "--piece applies only to submit");
  if (a->piece && !a->fleet)
    return wv_seterr(err, WAVE_EARG, "--piece needs --fleet");
  if (a->stall_s && !a->fleet)
    return wv_seterr(err, WAVE_EARG, "--stall needs --fleet");
  if (a->fleet && a->url)
    return wv_seterr(err, WAVE_EARG, "--fleet names the daemons: drop --url");
  if (a->progress && a->cmd != WV_CMD_HASH && a->cmd != WV_CMD_WAIT)
    return wv_seterr(err, WAVE_EARG, "--progress applies only to submit hash "
                     "and wait");
  if (a->probe && a->cmd != WV_CMD_STATUS)
    return wv_seterr(err, WAVE_EARG, "--probe applies only to status");
  if (a->once && a->cmd != WV_CMD_TOP)
    return wv_seterr(err, WAVE_EARG, "--once applies only to top");
  return ar_required(a, err);
}

void wv_args_client_options(const wv_args *a, int dial,
                            wave_client_options *o)
{
  memset(o, 0, sizeof *o);
  o->dial = dial;
  o->token_file = a->token_file;
  o->tls_ca_file = a->tls_ca;
  o->tls_server_name = a->tls_name;
  o->timeout_ms = a->timeout_ms;  /* bounds the dial too */
}
