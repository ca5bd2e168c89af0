/* ctl_opts.c - wavectl's one option table, its environment variables and
 * the usage texts printed from them.
 *
 * Everything that lists wavectl's options is made from wv_opts: the parser
 * (ctl_args.c), `--help` (wv_usage below), and at build time the OPTIONS and
 * ENVIRONMENT sections of wavectl(1) and the bash, zsh and fish completions
 * (ctl_gen.c, run by client/CMakeLists.txt).  So an option added here shows
 * up everywhere, and tests/ctl_docs_test.sh checks that it does.
 *
 * An option that means different things to two commands (--device, --piece)
 * has one row per meaning; the parser takes the first row of a name for its
 * kind and accepts it for the commands of every row.
 */
#include <string.h>

#include "client/ctl.h"

#define B(c) WV_CMD_BIT(WV_CMD_##c)
#define SUBMIT (B(REDUCE) | B(HASH))

const wv_opt wv_opts[] = {
  /* options of one command, in the order usage lists them */
  {"op", "OP", WV_O_OP, B(REDUCE),
   "sum min max extent and or xor argmin argmax fsum",
   "the reduction: sum, min, max, extent, and, or, xor, argmin, argmax "
   "(the value and the index of its first row), fsum (float32/float64: "
   "the float nearest the exact sum, the same bits for any chunking)"},
  {"dtype", "DTYPE", WV_O_DTYPE, B(REDUCE),
   "uint32 sint32 float32 uint64 sint64 float64",
   "uint32, sint32, float32, uint64, sint64, float64 (also u32, s32/int32, "
   "f32, u64, s64/int64, f64/double); rows of 4 or 8 bytes (default: the "
   "dtype the .npy inputs' headers name)"},
  {"input", "FILE", WV_O_INPUT, B(REDUCE), "=file",
   "one chunk of rows, in order; '-' reads standard input"},
  {"mask", "FILE", WV_O_MASK, B(REDUCE), "=file",
   "one mask chunk (uint32 rows, or a NumPy bool .npy; as many in all as "
   "the input; nonzero selects)"},
  {"format", "FMT", WV_O_FORMAT, B(REDUCE), "auto raw npy text",
   "auto (default: .npy by its magic, else raw; input that looks like text "
   "is refused), raw, npy, text (numbers separated by spaces or commas)"},
  {"device", "NAME", WV_O_DEVICE, B(REDUCE), "=device",
   "run on this device (default: the daemon picks)"},
  {"pack", "NAME", WV_O_PACK, B(HASH), "=pack",
   "program pack (see wavectl packs)"},
  {"pack", "NAME", WV_O_PACK, B(BENCH), "=pack",
   "the pack of the hash check (default: the first the daemon lists)"},
  {"nonces", "N", WV_O_NONCES, B(BENCH), NULL,
   "nonces of the hash check, from 0 (default 1048576)"},
  {"rows", "N", WV_O_ROWS, B(BENCH), NULL,
   "rows of each generated reduction (default 4194304)"},
  {"device", "NAME", WV_O_DEVICE, B(BENCH), "=device",
   "check this device only (default: every device)"},
  {"nonce", "N", WV_O_NONCE, B(HASH), NULL,
   "first nonce (decimal or 0x-hex)"},
  {"count", "C", WV_O_COUNT, B(HASH), NULL,
   "number of nonces, >= 1 (N + C must not pass 2^64)"},
  {"target", "HEX", WV_O_TARGET, B(HASH), NULL,
   "winners have output < HEX, 1 to 16 hex digits (default 0: none)"},
  {"max-winners", "K", WV_O_MAXWIN, B(HASH), NULL,
   "winners to list (default 16; the count is exact)"},
  {"outputs", NULL, WV_O_OUTPUTS, B(HASH), NULL,
   "also return every output (small jobs only)"},
  {"device", "NAME[,NAME...]", WV_O_DEVICE, B(HASH), "=device",
   "run on this device (default: the daemon picks); NAME,NAME,...: one job "
   "over those devices"},
  {"devices", "all|NAME,...", WV_O_DEVICES, B(HASH), "=device",
   "one job over these devices; 'all': every device that runs hash jobs"},
  {"segment-log2", "S", WV_O_SEGLOG2, B(HASH), NULL,
   "segments of 2^S nonces (5..20, default 13)"},
  {"segments", NULL, WV_O_SEGMENTS, B(HASH), NULL,
   "also print every segment fingerprint"},
  {"detach", NULL, WV_O_DETACH, B(HASH), NULL,
   "print the job id and exit; the job runs on (wavectl jobs, wait ID, "
   "cancel ID)"},
  {"progress", NULL, WV_O_PROGRESS, B(HASH) | B(WAIT), NULL,
   "show progress on stderr even when it is not a terminal: a plain line "
   "every 5 s (on a terminal the bar is always drawn)"},
  {"priority", "LEVEL", WV_O_PRIORITY, SUBMIT, "high normal low",
   "service level: high, normal (default) or low; each device serves the "
   "higher first; high only where the daemon allows it (else PERM)"},
  {"deadline", "MS", WV_O_DEADLINE, SUBMIT, NULL,
   "longest wait before the job starts (a hash job: its first piece); "
   "past it the job never runs and fails DEADLINE (default: the daemon's)"},
  {"fleet", "SPEC", WV_O_FLEET, SUBMIT | B(STATUS), NULL,
   "work over several daemons: URL,URL,... or slurm[:PORT[+]] (see "
   "SPEC below; docs/fleet.md)"},
  {"piece", "ROWS", WV_O_PIECE, B(REDUCE), NULL,
   "fleet piece: 256, 65536 (default) or 16777216 rows"},
  {"piece", "N", WV_O_PIECE, B(HASH), NULL,
   "fleet piece in nonces (default: count / (16 x daemons))"},
  {"stall", "S", WV_O_STALL, B(HASH), NULL,
   "fleet: drop a daemon whose piece makes no progress for S seconds "
   "(default 120)"},
  {"probe", NULL, WV_O_PROBE, B(STATUS), NULL,
   "print nothing; exit 0 when the daemon is ready, 1 when it answers but "
   "is not ready, 3 when it does not answer (a readiness probe), 4 when it "
   "answers AUTH (tcp without the right token: one line on stderr); with "
   "--fleet, 0 only when all are ready"},
  {"key", "KEY", WV_O_KEY, B(JOBS) | B(WAIT) | B(CANCEL), NULL,
   "the job key that submit hash --detach printed (32 hex digits): reaches "
   "a job submitted without a token or uid (tcp with auth: none)"},
  {"once", NULL, WV_O_ONCE, B(TOP), NULL,
   "print one frame on stdout and exit, with no screen control (what top "
   "does anyway when stdout is not a terminal)"},
  /* options of every command */
  {"url", "URL", WV_O_URL, WV_CMDS_ALL, NULL,
   "daemon address (default: $WAVE_URL, then "
   "$XDG_RUNTIME_DIR/wavedd/wavedd.sock or /tmp/wavedd-UID/wavedd.sock, "
   "the first that exists, then " WAVE_DEFAULT_URL ")"},
  {"timeout", "MS", WV_O_TIMEOUT, WV_CMDS_ALL, NULL,
   "bound on every wait, in milliseconds: the connection and each reply "
   "(default 30000)"},
  {"daemon-uid", "UID", WV_O_DAEMON_UID, WV_CMDS_ALL, NULL,
   "also trust an ipc daemon run by UID (default: root, yourself, user "
   "wavedd; $WAVE_DAEMON_UID)"},
  {"token-file", "FILE", WV_O_TOKENFILE, WV_CMDS_ALL, "=file",
   "the daemon's token for tcp, one line, mode 600 (default: "
   "$WAVE_TOKEN_FILE)"},
  {"tls-ca", "FILE", WV_O_TLSCA, WV_CMDS_ALL, "=file",
   "tls+tcp://: CAs to trust (default: $WAVE_TLS_CA, then the system's)"},
  {"tls-server-name", "NAME", WV_O_TLSNAME, WV_CMDS_ALL, NULL,
   "tls+tcp://: the name the certificate carries (default: the host)"},
  {"json", NULL, WV_O_JSON, WV_CMDS_ALL, NULL,
   "print one JSON object on stdout"},
  {"help", NULL, WV_O_HELP, WV_CMDS_ALL, NULL, "this text (also -h)"},
  {"version", NULL, WV_O_VERSION, B(NONE), NULL, "print wavectl's version"},
};
const size_t wv_n_opts = sizeof wv_opts / sizeof wv_opts[0];

const wv_env wv_envs[] = {
  {"WAVE_URL", "the daemon's address when --url is not given"},
  {"XDG_RUNTIME_DIR", "without --url and WAVE_URL, a user's own daemon at "
   "$XDG_RUNTIME_DIR/wavedd/wavedd.sock is used when that socket exists "
   "(not for root; without a session, /tmp/wavedd-UID/wavedd.sock)"},
  {"WAVE_TOKEN_FILE", "the token file when --token-file is not given"},
  {"WAVE_TLS_CA", "the CA file when --tls-ca is not given"},
  {"WAVE_DAEMON_UID", "a uid whose ipc daemon is trusted (as --daemon-uid)"},
  {"WAVE_FLEET_PORT", "--fleet slurm: the port when SPEC names none "
   "(default 5555)"},
  {"SLURM_JOB_NODELIST", "--fleet slurm: the nodes of the job"},
  {"WAVE_PACKS_DIR", "--fleet submit hash and bench: the folder of the "
   "daemons' packs, whose programs re-hash what members report and give "
   "bench its reference (default: the installed packs folder)"},
  {"WAVE_REGION_HUGEPAGES", "'off': shared-memory regions of 64 MiB or "
   "more never use huge pages"},
};
const size_t wv_n_envs = sizeof wv_envs / sizeof wv_envs[0];

static const struct op_cmd {
  const char *name, *summary;
} op_cmds[] = {
  [WV_CMD_NONE] = {"wavectl", NULL},
  [WV_CMD_REDUCE] = {"submit reduce",
                     "run a reduction (sum, min, max, ...) on the daemon"},
  [WV_CMD_HASH] = {"submit hash", "run a hash job with a program pack"},
  [WV_CMD_STATUS] = {"status", "show devices, queues and faults"},
  [WV_CMD_PACKS] = {"packs", "list program packs and their self-checks"},
  [WV_CMD_JOBS] = {"jobs", "list hash jobs with rate and ETA"},
  [WV_CMD_WAIT] = {"wait", "wait for a hash job and print its result"},
  [WV_CMD_CANCEL] = {"cancel", "cancel hash jobs"},
  [WV_CMD_TOP] = {"top", "live view of devices and running jobs"},
  [WV_CMD_BENCH] = {"bench", "check each device's answers, rates and "
                    "checksum"},
};

const char *wv_cmd_name(wv_cmd c)
{
  return (unsigned)c < WV_CMD_COUNT ? op_cmds[c].name : "?";
}

/* lead ("  --name ARG") then help from column 20, wrapped before column
 * 78. */
static void op_wrap(FILE *f, const char *lead, const char *s)
{
  enum { COL = 20, WIDTH = 78 };
  int n = fprintf(f, "%s", lead);
  if (n >= COL - 1) {
    fputc('\n', f);
    n = 0;
  }
  while (*s) {
    fprintf(f, "%*s", COL - n, "");
    size_t len = strlen(s);
    size_t cut = len;
    if (len > (size_t)(WIDTH - COL)) {
      cut = (size_t)(WIDTH - COL);
      while (cut > 0 && s[cut] != ' ')
        cut--;
      if (cut == 0)
        cut = (size_t)(WIDTH - COL);
    }
    fprintf(f, "%.*s\n", (int)cut, s);
    s += cut;
    while (*s == ' ')
      s++;
    n = 0;
  }
}

static void op_print(FILE *f, const wv_opt *o)
{
  char lead[64];
  snprintf(lead, sizeof lead, "  --%s%s%s", o->name, o->arg ? " " : "",
           o->arg ? o->arg : "");
  op_wrap(f, lead, o->help);
}

/* The rows for cmd: its own (common 0) or those of every command. */
static void op_list(FILE *f, wv_cmd cmd, int common)
{
  for (size_t i = 0; i < wv_n_opts; i++) {
    const wv_opt *o = &wv_opts[i];
    if ((o->cmds & WV_CMD_BIT(cmd)) && (o->cmds == WV_CMDS_ALL) == common)
      op_print(f, o);
  }
}

static const char op_fleet_help[] =
    "\nFleet SPEC: URL,URL,... (one connection each), or slurm[:PORT[+]]:\n"
    "the nodes of $SLURM_JOB_NODELIST at their NodeAddr, port PORT\n"
    "(default $WAVE_FLEET_PORT, then 5555); PORT+ adds each node's index\n"
    "(several daemons on one host).  Daemons that fail are dropped and\n"
    "their pieces run on the others; the result is exact.\n";

static const char *const op_head[] = {
  [WV_CMD_REDUCE] =
    "usage: wavectl submit reduce --op OP [--dtype DTYPE] --input FILE "
    "[--input FILE ...]\n"
    "                             [--mask FILE ...] [--format FMT] "
    "[--device NAME] [--json]\n\n"
    "Reduce the rows of the input files (one chunk per --input, in order)\n"
    "on the daemon; with --mask files (uint32 rows or a bool .npy, any\n"
    "chunking, as many rows in total as the input) only rows whose mask\n"
    "row is nonzero.  --dtype may be left out when the inputs are .npy\n"
    "files: their headers name it.\n",
  [WV_CMD_HASH] =
    "usage: wavectl submit hash --pack NAME --nonce N --count C "
    "[--target HEX]\n"
    "                           [--max-winners K] [--outputs] "
    "[--device NAME[,NAME...]]\n"
    "                           [--devices all|NAME,...] "
    "[--segment-log2 S] [--segments] [--json]\n\n"
    "Hash nonces [N, N + C) with a program pack; report the fingerprint,\n"
    "the best output and the winners (output < target).  A progress bar\n"
    "with the rate and the time left is drawn on stderr when it is a\n"
    "terminal (--progress: a line every 5 s otherwise); Ctrl-C cancels\n"
    "the job.\n",
  [WV_CMD_JOBS] =
    "usage: wavectl jobs [--key KEY] [--json]\n\n"
    "List the daemon's hash jobs: queued, running (with the rate and the\n"
    "time left), and the finished ones it still keeps (limits.keep_jobs,\n"
    "keep_seconds).\n",
  [WV_CMD_WAIT] =
    "usage: wavectl wait ID [--key KEY] [--progress] [--json]\n\n"
    "Wait for hash job ID to end and print its result, as submit hash\n"
    "would have; Ctrl-C stops waiting (the job runs on).\n",
  [WV_CMD_CANCEL] =
    "usage: wavectl cancel ID [ID ...] [--key KEY] [--json]\n\n"
    "Cancel hash jobs and print the state of each once it has ended\n"
    "(exit 0, also for a job that had already ended); --key with one ID.\n"
    "--json: the job's object, or {\"jobs\": [...]} for several.\n",
  [WV_CMD_STATUS] =
    "usage: wavectl status [--probe] [--fleet SPEC] [--json]\n\n"
    "Show the daemon's devices, backends, queues, jobs served, faults,\n"
    "hash exchange paths and pack self-checks, and the asker's share of\n"
    "regions and streams (root over ipc: every client's).\n",
  [WV_CMD_TOP] =
    "usage: wavectl top [--once] [--json]\n\n"
    "A live view of the daemon, redrawn every second: per device its\n"
    "state, queue, busy share, hash rate, temperature and power; then the\n"
    "queued and running hash jobs with progress, rate and time left.  q\n"
    "or Ctrl-C quits.  Off a terminal (or with --once) one frame is\n"
    "printed, from a second of samples (--json: as one JSON object).\n"
    "\"-\" is a figure not known.\n",
  [WV_CMD_BENCH] =
    "usage: wavectl bench [--device NAME] [--pack NAME] [--nonces N] "
    "[--rows N] [--json]\n\n"
    "Check each device: its packs' known answers, a timed hash job whose\n"
    "fingerprint must equal the pack's C reference (the pack from\n"
    "$WAVE_PACKS_DIR, else the installed folder), and a sum and a max of\n"
    "every dtype checked bit for bit against the C reference, with the\n"
    "device's GB/s.  Exit 1 when any check fails.\n",
  [WV_CMD_PACKS] =
    "usage: wavectl packs [--json]\n\n"
    "List the daemon's program packs and their known-answer status on\n"
    "each device.\n",
};

void wv_usage(FILE *f, wv_cmd cmd)
{
  if (cmd != WV_CMD_NONE && (unsigned)cmd < WV_CMD_COUNT) {
    fputs(op_head[cmd], f);
    fputc('\n', f);
    op_list(f, cmd, 0);
    op_list(f, cmd, 1);
    if (cmd == WV_CMD_REDUCE || cmd == WV_CMD_HASH)
      fputs(op_fleet_help, f);
    return;
  }
  fputs("usage: wavectl [--url URL] [--timeout MS] COMMAND [OPTIONS]\n\n"
        "Commands:\n", f);
  for (unsigned c = 1; c < WV_CMD_COUNT; c++) {
    char w[32];
    snprintf(w, sizeof w, "%s%s", op_cmds[c].name,
             c == WV_CMD_WAIT ? " ID" : c == WV_CMD_CANCEL ? " ID..." : "");
    fprintf(f, "  %-18s%s\n", w, op_cmds[c].summary);
  }
  fprintf(f, "  %-18s%s\n\nOptions:\n", "help [COMMAND]",
          "the options of a command");
  op_list(f, WV_CMD_NONE, 1);
  op_list(f, WV_CMD_NONE, 0);
  fputs("\nEnvironment:\n", f);
  for (size_t i = 0; i < wv_n_envs; i++) {
    char lead[64];
    snprintf(lead, sizeof lead, "  %s", wv_envs[i].name);
    op_wrap(f, lead, wv_envs[i].help);
  }
  fputs("\nExit status: 0 success, 1 job or daemon error (or a bad input\n"
        "file), 2 usage error, 3 daemon unreachable or no answer within\n"
        "--timeout, 130 hash job cancelled by Ctrl-C (top: a second\n"
        "Ctrl-C while the daemon does not answer).\n", f);
}
