/* ctl_args.c - wavectl's command line: one option table, one parser, and
 * the usage texts (docs/cli.md is the long form of the same).
 *
 * Forms: wavectl [GLOBAL] COMMAND [OPTIONS], where COMMAND is `submit
 * reduce`, `submit hash`, `status`, `packs`, `jobs`, `wait ID`, `cancel ID`
 * or `help [COMMAND]`.  Options
 * are long only (plus -h), "--name value" or "--name=value", and may come
 * before or after the command; a repeated single-valued option keeps the
 * last value.  Names (op, dtype, format) are checked here, so a typo is a
 * usage error (exit 2) before anything is read or sent; whether an op suits
 * a dtype is the daemon's call.
 */
#include <stdlib.h>
#include <string.h>

#include "client/ctl.h"
#include "proto/base.h"

enum {
  A_URL, A_TIMEOUT, A_JSON, A_HELP, A_VERSION, A_DEVICE,
  A_OP, A_DTYPE, A_INPUT, A_MASK, A_FORMAT,
  A_PACK, A_NONCE, A_COUNT, A_TARGET, A_MAXWIN, A_OUTPUTS, A_DEVICES,
  A_SEGLOG2, A_SEGMENTS, A_DETACH,
  A_FLEET, A_PIECE, A_PROBE, A_TOKENFILE, A_TLSCA, A_TLSNAME, A_DAEMON_UID,
  A_KEY, A_STALL,
};

#define M_ALL 0xffu
#define M_NONE (1u << WV_CMD_NONE)
#define M_RED (1u << WV_CMD_REDUCE)
#define M_HASH (1u << WV_CMD_HASH)
#define M_STATUS (1u << WV_CMD_STATUS)
#define M_JOB ((1u << WV_CMD_JOBS) | (1u << WV_CMD_WAIT) | \
               (1u << WV_CMD_CANCEL))

static const struct ar_opt {
  const char *name;
  int arg;            /* takes a value */
  int id;
  unsigned cmds;      /* bit (1 << wv_cmd) per command that accepts it */
} ar_opts[] = {
  {"url", 1, A_URL, M_ALL},
  {"timeout", 1, A_TIMEOUT, M_ALL},
  {"daemon-uid", 1, A_DAEMON_UID, M_ALL},
  {"token-file", 1, A_TOKENFILE, M_ALL},
  {"tls-ca", 1, A_TLSCA, M_ALL},
  {"tls-server-name", 1, A_TLSNAME, M_ALL},
  {"json", 0, A_JSON, M_ALL},
  {"help", 0, A_HELP, M_ALL},
  {"version", 0, A_VERSION, M_NONE},
  {"device", 1, A_DEVICE, M_RED | M_HASH},
  {"op", 1, A_OP, M_RED},
  {"dtype", 1, A_DTYPE, M_RED},
  {"input", 1, A_INPUT, M_RED},
  {"mask", 1, A_MASK, M_RED},
  {"format", 1, A_FORMAT, M_RED},
  {"pack", 1, A_PACK, M_HASH},
  {"nonce", 1, A_NONCE, M_HASH},
  {"count", 1, A_COUNT, M_HASH},
  {"target", 1, A_TARGET, M_HASH},
  {"max-winners", 1, A_MAXWIN, M_HASH},
  {"outputs", 0, A_OUTPUTS, M_HASH},
  {"fleet", 1, A_FLEET, M_RED | M_HASH | M_STATUS},   /* ctl_fleet.c */
  {"piece", 1, A_PIECE, M_RED | M_HASH},
  {"stall", 1, A_STALL, M_HASH},   /* fleet progress deadline, seconds */
  {"probe", 0, A_PROBE, M_STATUS},
  {"devices", 1, A_DEVICES, M_HASH},
  {"segment-log2", 1, A_SEGLOG2, M_HASH},
  {"segments", 0, A_SEGMENTS, M_HASH},
  {"detach", 0, A_DETACH, M_HASH},
  {"key", 1, A_KEY, M_JOB},   /* a job key (docs/cli.md "jobs, wait, ...") */
};

static const char *const ar_cmd_names[] = {
  [WV_CMD_NONE] = "wavectl", [WV_CMD_REDUCE] = "submit reduce",
  [WV_CMD_HASH] = "submit hash", [WV_CMD_STATUS] = "status",
  [WV_CMD_PACKS] = "packs", [WV_CMD_JOBS] = "jobs", [WV_CMD_WAIT] = "wait",
  [WV_CMD_CANCEL] = "cancel",
};

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
  a->inputs = a->masks = NULL;
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

static const struct ar_opt *ar_find(const char *name, size_t len)
{
  for (size_t i = 0; i < sizeof ar_opts / sizeof ar_opts[0]; i++)
    if (strlen(ar_opts[i].name) == len &&
        memcmp(ar_opts[i].name, name, len) == 0)
      return &ar_opts[i];
  return NULL;
}

/* Apply one option with its value (NULL for flags). */
static int ar_apply(wv_args *a, const struct ar_opt *o, const char *v,
                    wave_error *err)
{
  uint64_t n;
  switch (o->id) {
  case A_URL: a->url = v; break;
  case A_TOKENFILE: a->token_file = v; break;
  case A_TLSCA: a->tls_ca = v; break;
  case A_TLSNAME: a->tls_name = v; break;
  case A_TIMEOUT:
    if (wv_parse_u64(v, &n) != 0 || n == 0 || n > 86400000u)
      return wv_seterr(err, WAVE_EARG, "--timeout: '%s' is not a number of "
                       "milliseconds (1..86400000)", v);
    a->timeout_ms = (int)n;
    break;
  case A_DAEMON_UID:  /* libwaveclient reads it (wave/client.h) */
    if (wv_parse_u64(v, &n) != 0 || n > 0x7fffffffu)
      return wv_seterr(err, WAVE_EARG, "--daemon-uid: '%s' is not a uid", v);
    setenv("WAVE_DAEMON_UID", v, 1);
    break;
  case A_JSON: a->json = 1; break;
  case A_HELP: a->help = 1; break;
  case A_VERSION: a->version = 1; break;
  case A_DETACH: a->detach = 1; break;
  case A_KEY:
    if (wave_job_key_parse(v, &a->key, err) != 0)
      return wv_seterr(err, WAVE_EARG, "--key: '%.40s' is not a job key "
                       "(32 hex digits, as submit hash --detach prints it)",
                       v);
    break;
  case A_DEVICE:
    if (strchr(v, ',') != NULL) {  /* --device a,b: several (hash jobs) */
      a->device = NULL;
      return ar_devlist(a, v, err);
    }
    a->device = v;
    break;
  case A_OP:
    if ((a->op = wave_op_parse(v)) == WAVE_OP_NONE)
      return wv_seterr(err, WAVE_EARG, "--op: unknown op '%s' (sum, min, "
                       "max, extent, and, or, xor)", v);
    break;
  case A_DTYPE:
    if ((a->dtype = wave_dtype_parse(v)) == WAVE_DTYPE_NONE)
      return wv_seterr(err, WAVE_EARG, "--dtype: unknown dtype '%s' "
                       "(uint32, sint32, float32)", v);
    break;
  case A_INPUT: a->inputs[a->n_inputs++] = v; break;
  case A_MASK: a->masks[a->n_masks++] = v; break;
  case A_FORMAT:
    if (wv_format_parse(v, &a->format) != 0)
      return wv_seterr(err, WAVE_EARG, "--format: unknown format '%s' "
                       "(raw, npy, text, auto)", v);
    break;
  case A_PACK: a->pack = v; break;
  case A_NONCE:
    if (wv_parse_u64(v, &a->nonce) != 0)
      return wv_seterr(err, WAVE_EARG, "--nonce: '%s' is not an unsigned "
                       "64-bit number", v);
    a->have_nonce = 1;
    break;
  case A_COUNT:
    if (wv_parse_u64(v, &a->count) != 0 || a->count == 0)
      return wv_seterr(err, WAVE_EARG, "--count: '%s' is not a positive "
                       "64-bit number", v);
    a->have_count = 1;
    break;
  case A_TARGET:
    if (wv_parse_hex64(v, &a->target) != 0)
      return wv_seterr(err, WAVE_EARG, "--target: '%s' is not 1 to 16 hex "
                       "digits", v);
    break;
  case A_MAXWIN:
    if (wv_parse_u64(v, &n) != 0 || n > UINT32_MAX)
      return wv_seterr(err, WAVE_EARG, "--max-winners: '%s' is not a number "
                       "up to 4294967295", v);
    a->max_winners = (uint32_t)n;
    break;
  case A_OUTPUTS: a->outputs = 1; break;
  case A_FLEET: a->fleet = v; break;
  case A_PIECE:
    if (wv_parse_u64(v, &a->piece) != 0 || a->piece == 0)
      return wv_seterr(err, WAVE_EARG, "--piece: '%s' is not a positive "
                       "number", v);
    break;
  case A_STALL:
    if (wv_parse_u64(v, &n) != 0 || n == 0 || n > 86400)
      return wv_seterr(err, WAVE_EARG, "--stall: '%s' is not a number of "
                       "seconds in 1..86400", v);
    a->stall_s = (unsigned)n;
    break;
  case A_PROBE: a->probe = 1; break;
  case A_SEGMENTS: a->segments = 1; break;
  case A_SEGLOG2:
    if (wv_parse_u64(v, &n) != 0 || n < 5 || n > 20)
      return wv_seterr(err, WAVE_EARG, "--segment-log2: '%s' is not a "
                       "number 5..20", v);
    a->segment_log2 = (unsigned)n;
    break;
  case A_DEVICES:
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
  if (strcmp(w, "wait") == 0 || strcmp(w, "cancel") == 0) {
    a->cmd = w[0] == 'w' ? WV_CMD_WAIT : WV_CMD_CANCEL;
    const char *k = i + 1 < argc ? argv[i + 1] : NULL;
    if (k != NULL && (strcmp(k, "--help") == 0 || strcmp(k, "-h") == 0))
      return 1;  /* the option loop sees --help */
    if (k == NULL || wv_parse_u64(k, &a->job_id) != 0)
      return -wv_seterr(err, WAVE_EARG, "%s: expected a job id (as submit "
                        "hash --detach or wavectl jobs print it)%s%s%s", w,
                        k ? ", not '" : "", k ? k : "", k ? "'" : "");
    return 2;
  }
  if (strcmp(w, "submit") == 0) {
    const char *k = i + 1 < argc ? argv[i + 1] : NULL;
    if (k != NULL && (strcmp(k, "--help") == 0 || strcmp(k, "-h") == 0)) {
      a->help = 1; /* `submit --help`: the overview lists both kinds */
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
  if (strcmp(w, "help") == 0) {
    a->help = 1;
    if (i + 1 < argc && strcmp(argv[i + 1], "help") != 0) {
      int n = ar_command(argc, argv, i + 1, a, err);
      return n < 0 ? n : 1 + n;
    }
    return 1;
  }
  return -wv_seterr(err, WAVE_EARG, "unknown command '%s' (submit reduce, "
                    "submit hash, status, packs, jobs, wait, cancel, help)",
                    w);
}

int wv_args_parse(int argc, char **argv, wv_args *a, wave_error *err)
{
  memset(a, 0, sizeof *a);
  a->max_winners = 16;
  /* Every --input/--mask fits in argc slots. */
  a->inputs = calloc((size_t)argc + 1, sizeof *a->inputs);
  a->masks = calloc((size_t)argc + 1, sizeof *a->masks);
  if (a->inputs == NULL || a->masks == NULL)
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
    const struct ar_opt *o = ar_find(name, len);
    /* Options may precede the command, so only reject a known option for
     * the wrong command once the command is known (checked below). */
    if (o == NULL)
      return wv_seterr(err, WAVE_EARG, "unknown option '--%.*s'%s%s",
                       (int)len, name, a->cmd ? " for " : "",
                       a->cmd ? ar_cmd_names[a->cmd] : "");
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
    if (a->cmd != WV_CMD_NONE && !(o->cmds & (1u << a->cmd)))
      return wv_seterr(err, WAVE_EARG, "option --%s does not apply to %s",
                       o->name, ar_cmd_names[a->cmd]);
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
  if (a->cmd != WV_CMD_HASH && (a->pack || a->have_nonce || a->have_count ||
                                a->target || a->outputs || a->detach))
    return wv_seterr(err, WAVE_EARG, "--pack/--nonce/--count/--target/"
                     "--outputs/--detach apply only to submit hash");
  if (a->device && a->cmd != WV_CMD_REDUCE && a->cmd != WV_CMD_HASH)
    return wv_seterr(err, WAVE_EARG, "--device applies only to submit");
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
  if (a->probe && a->cmd != WV_CMD_STATUS)
    return wv_seterr(err, WAVE_EARG, "--probe applies only to status");

  if (a->cmd == WV_CMD_REDUCE) {
    if (a->op == WAVE_OP_NONE)
      return wv_seterr(err, WAVE_EARG, "submit reduce: missing --op");
    if (a->dtype == WAVE_DTYPE_NONE)
      return wv_seterr(err, WAVE_EARG, "submit reduce: missing --dtype");
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

void wv_usage(FILE *f, wv_cmd cmd)
{
  static const char common[] =
      "  --url URL         daemon address (default: $WAVE_URL, then\n"
      "                    $XDG_RUNTIME_DIR/wavedd/wavedd.sock if it exists,\n"
      "                    then " WAVE_DEFAULT_URL ")\n"
      "  --timeout MS      reply timeout in milliseconds (default 30000)\n"
      "  --daemon-uid UID  also trust an ipc daemon run by UID (default: root,\n"
      "                    yourself, user wavedd; $WAVE_DAEMON_UID)\n"
      "  --token-file FILE the daemon's token for tcp (default: "
      "$WAVE_TOKEN_FILE)\n"
      "  --tls-ca FILE     tls+tcp://: CAs to trust (default: $WAVE_TLS_CA, "
      "then the system's)\n"
      "  --tls-server-name NAME  tls+tcp://: the name the certificate "
      "carries (default: the host)\n"
      "  --json            print one JSON object on stdout\n"
      "  -h, --help        this text\n";
  static const char fleet_help[] =
      "\nFleet SPEC: URL,URL,... (one connection each), or slurm[:PORT[+]]:\n"
      "the nodes of $SLURM_JOB_NODELIST at their NodeAddr, port PORT\n"
      "(default $WAVE_FLEET_PORT, then 5555); PORT+ adds each node's index\n"
      "(several daemons on one host).  Daemons that fail are dropped and\n"
      "their pieces run on the others; the result is exact.\n";
  switch (cmd) {
  case WV_CMD_REDUCE:
    fprintf(f,
      "usage: wavectl submit reduce --op OP --dtype DTYPE --input FILE "
      "[--input FILE ...]\n"
      "                             [--mask FILE ...] [--format FMT] "
      "[--device NAME] [--json]\n\n"
      "Reduce the rows of the input files (one chunk per --input, in order)\n"
      "on the daemon; with --mask files (uint32 rows, any chunking, as many\n"
      "rows in total as the input) only rows whose mask row is nonzero.\n\n"
      "  --op OP           sum, min, max, extent, and, or, xor\n"
      "  --dtype DTYPE     uint32, sint32, float32 (also u32, s32/int32, "
      "f32)\n"
      "  --input FILE      one chunk; '-' reads standard input\n"
      "  --mask FILE       one mask chunk\n"
      "  --format FMT      auto (default: .npy by magic, else raw), raw,\n"
      "                    npy, text (numbers separated by spaces/commas)\n"
      "  --device NAME     run on this device (default: the daemon picks)\n"
      "  --fleet SPEC      split the job over several daemons (see below)\n"
      "  --piece ROWS      fleet piece: 256, 65536 (default) or 16777216 rows\n"
      "%s%s", common, fleet_help);
    break;
  case WV_CMD_HASH:
    fprintf(f,
      "usage: wavectl submit hash --pack NAME --nonce N --count C "
      "[--target HEX]\n"
      "                           [--max-winners K] [--outputs] "
      "[--device NAME[,NAME...]]\n"
      "                           [--devices all|NAME,...] "
      "[--segment-log2 S] [--segments] [--json]\n\n"
      "Hash nonces [N, N + C) with a program pack; report the fingerprint,\n"
      "the best output and the winners (output < target).  A progress bar\n"
      "is shown on stderr when it is a terminal; Ctrl-C cancels the job.\n\n"
      "  --pack NAME       program pack (see wavectl packs)\n"
      "  --nonce N         first nonce (decimal or 0x-hex)\n"
      "  --count C         number of nonces, >= 1\n"
      "  --target HEX      winners have output < HEX (default 0: none)\n"
      "  --max-winners K   winners to list (default 16; the count is exact)\n"
      "  --outputs         also return every output (small jobs only)\n"
      "  --device NAME     run on this device (default: the daemon picks);\n"
      "                    NAME,NAME,...: one job over those devices\n"
      "  --devices LIST    one job over these devices; 'all': every device\n"
      "                    that runs hash jobs\n"
      "  --segment-log2 S  segments of 2^S nonces (5..20, default 13)\n"
      "  --segments        also print every segment fingerprint\n"
      "  --detach          print the job id and exit; the job runs on\n"
      "                    (wavectl jobs / wait ID / cancel ID)\n"
      "  --fleet SPEC      split the job over several daemons (see below)\n"
      "  --piece N         fleet piece in nonces (default: count / (16 x "
      "daemons))\n"
      "  --stall S         fleet: drop a daemon whose piece makes no progress\n"
      "                    for S seconds (default 120)\n"
      "%s%s", common, fleet_help);
    break;
  case WV_CMD_JOBS:
    fprintf(f,
      "usage: wavectl jobs [--key KEY] [--json]\n\n"
      "List the daemon's hash jobs: queued, running, and the finished ones\n"
      "it still keeps (limits.keep_jobs, keep_seconds).\n"
      "  --key KEY         also the job of this job key\n\n%s", common);
    break;
  case WV_CMD_WAIT:
    fprintf(f,
      "usage: wavectl wait ID [--key KEY] [--json]\n\n"
      "Wait for hash job ID to end and print its result, as submit hash\n"
      "would have; Ctrl-C stops waiting (the job runs on).\n"
      "  --key KEY         the job key submit hash --detach printed\n\n%s",
      common);
    break;
  case WV_CMD_CANCEL:
    fprintf(f,
      "usage: wavectl cancel ID [--key KEY] [--json]\n\n"
      "Cancel hash job ID and print its state.\n"
      "  --key KEY         the job key submit hash --detach printed\n\n%s",
      common);
    break;
  case WV_CMD_STATUS:
    fprintf(f,
      "usage: wavectl status [--probe] [--fleet SPEC] [--json]\n\n"
      "Show the daemon's devices, backends, queues, jobs served, faults,\n"
      "hash exchange paths and pack self-checks.\n\n"
      "  --probe           print nothing; exit 0 when the daemon is ready,\n"
      "                    1 when it answers but is not ready, 3 when it\n"
      "                    does not answer (a readiness probe)\n"
      "  --fleet SPEC      every daemon of SPEC (as for submit): with\n"
      "                    --probe, 0 only when all are ready\n%s", common);
    break;
  case WV_CMD_PACKS:
    fprintf(f,
      "usage: wavectl packs [--json]\n\n"
      "List the daemon's program packs and their known-answer status on\n"
      "each device.\n\n%s", common);
    break;
  default:
    fprintf(f,
      "usage: wavectl [--url URL] [--timeout MS] COMMAND [OPTIONS]\n\n"
      "Commands:\n"
      "  submit reduce     run a reduction (sum, min, max, ...) on the "
      "daemon\n"
      "  submit hash       run a hash job with a program pack\n"
      "  status            show devices, queues and faults\n"
      "  packs             list program packs and their self-checks\n"
      "  jobs              list hash jobs (also those of gone clients)\n"
      "  wait ID           wait for a hash job and print its result\n"
      "  cancel ID         cancel a hash job\n"
      "  help COMMAND      the options of a command\n\n"
      "Options:\n%s"
      "  --version         print wavectl's version\n\n"
      "Exit status: 0 success, 1 job or daemon error, 2 usage error,\n"
      "3 daemon unreachable, 130 hash job cancelled by Ctrl-C.\n",
      common);
    break;
  }
}

void wv_args_client_options(const wv_args *a, int dial,
                            wave_client_options *o)
{
  memset(o, 0, sizeof *o);
  o->dial = dial;
  o->token_file = a->token_file;
  o->tls_ca_file = a->tls_ca;
  o->tls_server_name = a->tls_name;
}
