/* test_formats.c - one input, one answer, whatever way the rows travel.
 *
 * wavectl decides what a file's bytes are (--format auto|raw|text|npy:
 * client/ctl_load.c wv_format_decide) and then carries them one of several
 * ways: as one message (tcp), as a stream of pieces (tcp with
 * WAVE_CLIENT_STREAM=1), in a sealed memfd, as a daemon-side copy, as a file
 * region read at each job (ipc, forced with WAVECTL_PATH), or as it picks by
 * itself over ipc.  For a matrix of files (text, raw, npy of each dtype,
 * empty, odd lengths, a text head over a raw tail) x format x dtype, every
 * way must print the same answer (the JSON result, bits, index, rows, count;
 * not the seconds) or the same refusal (exit status and error name).  The
 * 32-bit dtypes are summed; of the 64-bit ones (8-byte rows, issue 23)
 * uint64 is summed and sint64/float64 take argmax/argmin, whose index must
 * agree too.  The
 * answers themselves are not written here: what matters is that no path
 * disagrees with the plain message over tcp, which no region code touches.
 *
 * Where a forced way can carry the input (raw or npy rows that were
 * accepted, not empty), wavectl must say it took it ("wavectl: via PATH"),
 * so a path that silently fell back to another cannot pass for itself.
 * The same holds for a CSV with a header line (refused as text, naming
 * the line) and for NumPy bool masks ('|b1'), which wavectl widens to
 * the daemon's uint32 rows on each way (for file and copy regions, in a
 * memfd region of their own), with the dtype from the input's header.
 *
 * fsum (issue 39) goes every way too, and its answer (bits and the exact
 * sum, "exact") must be the reference's.
 *
 * wavectl runs as a subprocess against one real wavedd (regions allowed),
 * started before the tests fork; this process never touches nng.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "bulk_harness.h"
#include "core/reduce.h"
#include "core/xsum.h"

static td_daemon g_d;

typedef struct tf_file {
  const char *name;
  unsigned char *bytes;
  size_t len;
} tf_file;

enum { TF_FILES = 16 };
static tf_file g_files[TF_FILES + 7];  /* + the masks, the CSV, fsum's */

static const char *const tf_formats[] = {"auto", "raw", "text", "npy"};
static const char *const tf_dtypes[] = {"uint32", "sint32", "float32",
                                        "uint64", "sint64", "float64"};
static const char *const tf_ops[] = {"sum", "sum", "sum",
                                     "sum", "argmax", "argmin"};
enum { TF_DTYPES = sizeof tf_dtypes / sizeof tf_dtypes[0] };

/* The ways: env, whether over tcp, and the name wavectl says it took. */
typedef struct tf_way {
  const char *label, *env;
  int tcp;
  const char *via;  /* NULL: any (the default choice) */
} tf_way;

static const tf_way tf_ways[] = {
  {"message", "", 1, NULL},
  {"stream", "WAVECTL_PATH=stream", 1, "stream"},
  {"ipc-default", "", 0, NULL},
  {"memfd", "WAVECTL_PATH=memfd", 0, "memfd"},
  {"copy", "WAVECTL_PATH=copy", 0, "copy"},
  {"file", "WAVECTL_PATH=file", 0, "file"},
  {"stdin", "", 0, NULL},   /* --input - over ipc: parsed here, a message */
};
enum { TF_WAYS = sizeof tf_ways / sizeof tf_ways[0] };

static void tf_path(char *out, size_t n, const char *name)
{
  snprintf(out, n, "%s/%s", g_d.dir, name);
}

/* n rows of size bytes (4 or 8) from rows. */
static unsigned char *tf_npy(const char *descr, const void *rows,
                             size_t n, size_t size, size_t *len)
{
  char hdr[128];
  int h = snprintf(hdr, sizeof hdr, "{'descr': '%s', 'fortran_order': False, "
                   "'shape': (%zu,), }", descr, n);
  size_t hl = (size_t)h + 1;
  size_t pad = (64 - (10 + hl) % 64) % 64;
  hl += pad;
  *len = 10 + hl + n * size;
  unsigned char *b = malloc(*len);
  ck_assert_ptr_nonnull(b);
  memcpy(b, "\x93NUMPY\x01\x00", 8);
  b[8] = (unsigned char)hl;
  b[9] = (unsigned char)(hl >> 8);
  memcpy(b + 10, hdr, (size_t)h);
  memset(b + 10 + h, ' ', pad);
  b[10 + hl - 1] = '\n';
  memcpy(b + 10 + hl, rows, n * size);
  return b;
}

static void tf_add(int i, const char *name, const void *bytes, size_t len)
{
  g_files[i].name = name;
  g_files[i].bytes = malloc(len + 1);
  memcpy(g_files[i].bytes, bytes, len);
  g_files[i].len = len;
  char p[300];
  tf_path(p, sizeof p, name);
  FILE *f = fopen(p, "wb");
  ck_assert_ptr_nonnull(f);
  ck_assert_uint_eq(fwrite(bytes, 1, len, f), len);
  fclose(f);
}

static void tf_make_files(void)
{
  uint32_t ints[16], floats[16];
  bh_fill(ints, 16, 7, 0);
  bh_fill(floats, 16, 8, 1);
  int i = 0;
  tf_add(i++, "t.txt", "1 2 3 4\n", 8);           /* the case */
  tf_add(i++, "neg.txt", "-1, 5 # five\n0x10\n", 18);
  tf_add(i++, "odd.txt", "12345", 5);             /* text, no newline */
  tf_add(i++, "four.bin", "1234", 4);             /* digits, one raw row */
  tf_add(i++, "ints.raw", ints, sizeof ints);
  tf_add(i++, "floats.raw", floats, sizeof floats);
  tf_add(i++, "empty", "", 0);
  tf_add(i++, "odd.raw", "\x01\x02\x00\xff\x10\x20\x30", 7);
  static const char *const descr[] = {"<u4", "<i4", "<f4",
                                      "<u8", "<i8", "<f8"};
  static const char *const names[] = {"u4.npy", "i4.npy", "f4.npy",
                                      "u8.npy", "i8.npy", "f8.npy"};
  /* the 8-byte rows are the same bytes, 8 of them (floats: 16 float32
   * bit patterns read as float64, some NaN or inf: the argmin ignores
   * those) */
  for (int d = 0; d < 6; d++) {
    size_t len;
    unsigned char *b = tf_npy(descr[d], d % 3 == 2 ? floats : ints,
                              d < 3 ? 16 : 8, d < 3 ? 4 : 8, &len);
    tf_add(i++, names[d], b, len);
    free(b);
  }
  /* more than the head the decision reads: 256 KiB of raw rows, and a
   * head of text (64 KiB of "1\n") over a raw tail */
  size_t big = 256 * 1024;
  unsigned char *b = malloc(big);
  bh_fill((uint32_t *)b, big / 4, 9, 0);
  tf_add(i++, "big.raw", b, big);
  for (size_t k = 0; k < 65536; k += 2)
    memcpy(b + k, "1\n", 2);
  tf_add(i++, "texthead.raw", b, big);
  free(b);
  ck_assert_int_eq(i, TF_FILES);
}

/* One run's verdict: the status, and the answer (stdout up to "seconds")
 * or the error name. */
typedef struct tf_verdict {
  int status;
  char answer[1024];
  char via[32];
} tf_verdict;

static void tf_read(const char *path, char *buf, size_t n)
{
  FILE *f = fopen(path, "r");
  size_t got = f ? fread(buf, 1, n - 1, f) : 0;
  buf[got] = '\0';
  if (f)
    fclose(f);
}

/* wavectl --json submit reduce ARGS the way w (stdin_file: the input
 * comes on standard input, for the stdin way). */
static void tf_exec(const tf_way *w, const char *args, const char *stdin_file,
                    tf_verdict *v)
{
  char out[300], err[300], cmd[4096];
  tf_path(out, sizeof out, "run.out");
  tf_path(err, sizeof err, "run.err");
  snprintf(cmd, sizeof cmd, "%s %s/wavectl --url %s --timeout 60000 --json "
           "submit reduce %s %s%s >%s 2>%s", w->env, getenv("WAVE_BINARY_DIR"),
           w->tcp ? g_d.tcp : g_d.ipc, args, stdin_file ? "<" : "",
           stdin_file ? stdin_file : "", out, err);
  int st = system(cmd);
  v->status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  char o[4096], e[4096];
  tf_read(out, o, sizeof o);
  tf_read(err, e, sizeof e);
  v->via[0] = '\0';
  const char *p = strstr(e, "wavectl: via ");
  if (p != NULL)
    sscanf(p + 13, "%31s", v->via);
  if (v->status == 0) {
    char *s = strstr(o, ", \"seconds\"");
    ck_assert_msg(s != NULL, "%s %s: no answer: %s", w->label, args, o);
    *s = '\0';
    size_t k = (size_t)(s - o) < sizeof v->answer ? (size_t)(s - o)
                                                   : sizeof v->answer - 1;
    memcpy(v->answer, o, k);
    v->answer[k] = '\0';
  } else {
    /* the first "wavectl: NAME: message" line that is not the via line */
    const char *q = e;
    v->answer[0] = '\0';
    while ((q = strstr(q, "wavectl: ")) != NULL) {
      q += 9;
      if (strncmp(q, "via ", 4) == 0)
        continue;
      size_t k = strcspn(q, ":");
      snprintf(v->answer, sizeof v->answer, "%.*s", (int)k, q);
      break;
    }
    ck_assert_msg(v->answer[0] != '\0', "%s %s: status %d, no error line: "
                  "%s", w->label, args, v->status, e);
  }
}

static void tf_run(const tf_way *w, const char *file, const char *fmt,
                   size_t di, tf_verdict *v)
{
  char in[300], args[1024];
  tf_path(in, sizeof in, file);
  int stdin_ = strcmp(w->label, "stdin") == 0;
  snprintf(args, sizeof args, "--op %s --dtype %s --format %s --input %s",
           tf_ops[di], tf_dtypes[di], fmt, stdin_ ? "-" : in);
  tf_exec(w, args, stdin_ ? in : NULL, v);
}

START_TEST(formats_agree)
{
  const tf_file *f = &g_files[_i];
  for (size_t fi = 0; fi < 4; fi++)
    for (size_t di = 0; di < TF_DTYPES; di++) {
      tf_verdict ref, v;
      tf_run(&tf_ways[0], f->name, tf_formats[fi], di, &ref);
      ck_assert_msg(ref.status == 0 || ref.status == 1, "%s %s %s: status "
                    "%d", f->name, tf_formats[fi], tf_dtypes[di], ref.status);
      for (size_t wi = 1; wi < TF_WAYS; wi++) {
        const tf_way *w = &tf_ways[wi];
        tf_run(w, f->name, tf_formats[fi], di, &v);
        ck_assert_msg(v.status == ref.status &&
                      strcmp(v.answer, ref.answer) == 0,
                      "%s --format %s --dtype %s: %s gives status %d '%s', "
                      "the message gives status %d '%s'", f->name,
                      tf_formats[fi], tf_dtypes[di], w->label, v.status,
                      v.answer, ref.status, ref.answer);
        /* a way that could carry these rows must have carried them */
        int rows = ref.status == 0 && f->len > 0 &&
                   strcmp(tf_formats[fi], "text") != 0;
        if (w->via != NULL && ref.status == 0 &&
            (rows || strcmp(w->via, "stream") == 0))
          ck_assert_msg(strcmp(v.via, w->via) == 0, "%s --format %s --dtype "
                        "%s: WAVECTL_PATH=%s went via '%s'", f->name,
                        tf_formats[fi], tf_dtypes[di], w->via, v.via);
      }
    }
}
END_TEST

/* The issue's own case, spelled out: auto refuses text on every way. */
START_TEST(text_as_raw_refused)
{
  for (size_t wi = 0; wi < TF_WAYS; wi++) {
    tf_verdict v;
    tf_run(&tf_ways[wi], "t.txt", "auto", wi % TF_DTYPES, &v);
    ck_assert_msg(v.status == 1 && strcmp(v.answer, "ARG") == 0,
                  "%s: status %d '%s'", tf_ways[wi].label, v.status,
                  v.answer);
  }
}
END_TEST

/* A CSV with a header, as --format auto meets it: refused as text, naming
 * its first line, on every way (it was once LENGTH or raw rows). */
START_TEST(csv_header_refused)
{
  for (size_t wi = 0; wi < TF_WAYS; wi++) {
    tf_verdict v;
    tf_run(&tf_ways[wi], "hdr.csv", "auto", wi % TF_DTYPES, &v);
    ck_assert_msg(v.status == 1 && strcmp(v.answer, "ARG") == 0,
                  "%s: status %d '%s'", tf_ways[wi].label, v.status,
                  v.answer);
    char e[4096], err[300];
    tf_path(err, sizeof err, "run.err");
    tf_read(err, e, sizeof e);
    ck_assert_msg(strstr(e, ":1: looks like text ('x,y'") != NULL,
                  "%s: %s", tf_ways[wi].label, e);
  }
}
END_TEST

/* NumPy's bool mask ('|b1') on every way: the same answer as the same mask
 * in uint32 rows sent as a message, with the dtype taken from the input's
 * .npy header (no --dtype), in one chunk and in two; a float mask refused
 * alike.  A forced way that can carry the rows says it did. */
START_TEST(bool_masks_agree)
{
  char in[300], mb[300], mb1[300], mb2[300], mu[300], mf[300];
  tf_path(in, sizeof in, "u4.npy");
  tf_path(mb, sizeof mb, "mb.npy");
  tf_path(mb1, sizeof mb1, "mb1.npy");
  tf_path(mb2, sizeof mb2, "mb2.npy");
  tf_path(mu, sizeof mu, "mu.npy");
  tf_path(mf, sizeof mf, "f4.npy");
  char ref_args[1024];
  tf_verdict ref, v;
  snprintf(ref_args, sizeof ref_args, "--op sum --dtype uint32 --input %s "
           "--mask %s", in, mu);
  tf_exec(&tf_ways[0], ref_args, NULL, &ref);
  ck_assert_msg(ref.status == 0, "uint32 mask: %s", ref.answer);
  /* rows 0, 3, ..., 15 of 16 */
  ck_assert_ptr_nonnull(strstr(ref.answer, "\"count\": 6, \"rows\": 16"));
  static const char *const masks[] = {"one", "two", "float"};
  for (size_t mi = 0; mi < 3; mi++)
    for (size_t wi = 0; wi < TF_WAYS; wi++) {
      const tf_way *w = &tf_ways[wi];
      int stdin_ = strcmp(w->label, "stdin") == 0;
      char args[1024], m[700];
      if (mi == 0)
        snprintf(m, sizeof m, "--mask %s", mb);
      else if (mi == 1)
        snprintf(m, sizeof m, "--mask %s --mask %s", mb1, mb2);
      else
        snprintf(m, sizeof m, "--mask %s", mf);
      snprintf(args, sizeof args, "--op sum --input %s %s",
               stdin_ ? "-" : in, m);
      tf_exec(w, args, stdin_ ? in : NULL, &v);
      if (mi == 2) {
        ck_assert_msg(v.status == 1 && strcmp(v.answer, "DTYPE") == 0,
                      "float mask via %s: status %d '%s'", w->label,
                      v.status, v.answer);
        continue;
      }
      ck_assert_msg(v.status == 0 && strcmp(v.answer, ref.answer) == 0,
                    "%s bool mask via %s: status %d '%s', the uint32 mask "
                    "'%s'", masks[mi], w->label, v.status, v.answer,
                    ref.answer);
      if (w->via != NULL)
        ck_assert_msg(strcmp(v.via, w->via) == 0, "WAVECTL_PATH=%s went via "
                      "'%s'", w->via, v.via);
    }
}
END_TEST

/* X of a JSON answer's "exact": "[-]0xHEX" into limbs (two's complement,
 * n of them). */
static void tf_exact_limbs(const char *answer, uint64_t *l, unsigned n)
{
  const char *p = strstr(answer, "\"exact\": \"");
  ck_assert_msg(p != NULL, "no exact sum in %s", answer);
  p += 10;
  int neg = *p == '-';
  p += neg + 2;
  size_t k = strspn(p, "0123456789abcdef");
  memset(l, 0, n * sizeof *l);
  for (size_t i = 0; i < k; i++) {  /* digit i from the right */
    char c = p[k - 1 - i];
    uint64_t d = (uint64_t)(c <= '9' ? c - '0' : c - 'a' + 10);
    ck_assert_uint_lt(i / 16, n);
    l[i / 16] |= d << (4 * (i % 16));
  }
  for (unsigned i = 0, c = 1; neg && i < n; i++) {
    l[i] = ~l[i] + c;
    c = c && l[i] == 0;
  }
}

/* fsum (issue 39) through wavectl on every way: one answer, whose bits
 * and exact sum ("exact") are the reference's; and OPDTYPE on uint32. */
START_TEST(fsum_every_way)
{
  static double f64[3000];
  static float f32[3000];
  uint64_t x = 99;
  for (int i = 0; i < 3000; i++) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    f64[i] = ldexp((double)(x >> 11), (int)(x % 200) - 150);
    f64[i] = (x & 1024) ? -f64[i] : f64[i];
    f32[i] = (float)ldexp((double)(x >> 40), (int)(x % 60) - 50);
    f32[i] = (x & 1024) ? -f32[i] : f32[i];
  }
  f64[7] = -f64[8];  /* and an exact cancellation */
  tf_add(TF_FILES + 5, "fs64.raw", f64, sizeof f64);
  size_t len;
  unsigned char *img = tf_npy("<f4", f32, 3000, 4, &len);
  tf_add(TF_FILES + 6, "fs32.npy", img, len);
  free(img);
  static const struct { const char *file, *dtype; const void *rows;
                        wave_dtype dt; } jobs[] = {
      {"fs64.raw", "float64", f64, WAVE_F64},
      {"fs32.npy", "float32", f32, WAVE_F32}};
  for (size_t k = 0; k < 2; k++) {
    wv_span sp = {jobs[k].rows, 3000};
    wv_reduce_job j = {.dtype = jobs[k].dt, .op = WAVE_FSUM, .input = &sp,
                       .n_input = 1, .rows = 3000};
    wv_reduce_out ref;
    wave_error e = {0};
    ck_assert_int_eq(wv_reduce_reference(&j, &ref, &e), 0);
    char in[300], args[1024], want[40];
    tf_path(in, sizeof in, jobs[k].file);
    snprintf(want, sizeof want, jobs[k].dt == WAVE_F64 ? "\"0x%016llx\""
             : "\"0x%08llx\"", (unsigned long long)ref.bits[0]);
    tf_verdict first, v;
    for (size_t wi = 0; wi < TF_WAYS; wi++) {
      const tf_way *w = &tf_ways[wi];
      int stdin_ = strcmp(w->label, "stdin") == 0;
      snprintf(args, sizeof args, "--op fsum --dtype %s --input %s",
               jobs[k].dtype, stdin_ ? "-" : in);
      tf_exec(w, args, stdin_ ? in : NULL, wi ? &v : &first);
      const tf_verdict *r = wi ? &v : &first;
      ck_assert_msg(r->status == 0, "%s via %s: %s", jobs[k].file, w->label,
                    r->answer);
      ck_assert_msg(strcmp(r->answer, first.answer) == 0, "%s via %s: '%s', "
                    "the message '%s'", jobs[k].file, w->label, r->answer,
                    first.answer);
      if (w->via != NULL)
        ck_assert_str_eq(r->via, w->via);
    }
    ck_assert_msg(strstr(first.answer, want) != NULL, "%s: %s, not bits %s",
                  jobs[k].file, first.answer, want);
    uint64_t l[WV_XSUM_LIMBS];
    tf_exact_limbs(first.answer, l, ref.xsum.n_limbs);
    for (unsigned i = 0; i < ref.xsum.n_limbs; i++)
      ck_assert_msg(l[i] == ref.xsum.limb[i], "%s: exact sum limb %u",
                    jobs[k].file, i);
  }
  char in[300], args[1024];
  tf_path(in, sizeof in, "u4.npy");
  snprintf(args, sizeof args, "--op fsum --input %s", in);
  tf_verdict v;
  tf_exec(&tf_ways[2], args, NULL, &v);
  ck_assert_msg(v.status == 1 && strcmp(v.answer, "OPDTYPE") == 0,
                "fsum on uint32: status %d '%s'", v.status, v.answer);
}
END_TEST

/* The masks of bool_masks_agree: 16 rows, every third selected, as bool
 * (whole, and split 5 + 11) and as uint32; and csv_header_refused's CSV. */
static void tf_make_masks(void)
{
  unsigned char b[16];
  uint32_t u[16];
  for (int i = 0; i < 16; i++) {
    b[i] = i % 3 == 0;
    u[i] = i % 3 == 0;
  }
  size_t len;
  unsigned char *img = tf_npy("|b1", b, 16, 1,
                              &len);
  tf_add(TF_FILES, "mb.npy", img, len);
  free(img);
  img = tf_npy("|b1", b, 5, 1, &len);
  tf_add(TF_FILES + 1, "mb1.npy", img, len);
  free(img);
  img = tf_npy("|b1", b + 5, 11, 1, &len);
  tf_add(TF_FILES + 2, "mb2.npy", img, len);
  free(img);
  img = tf_npy("<u4", u, 16, 4, &len);
  tf_add(TF_FILES + 3, "mu.npy", img, len);
  free(img);
  /* 16 bytes: whole rows, so only the text rule stands between it and a
   * sum of its bytes */
  tf_add(TF_FILES + 4, "hdr.csv", "x,y\n1,2\n3,4\n5,6\n", 16);
}

static void tf_setup(void)
{
  bh_start(&g_d, 1, NULL);
  tf_make_files();
  tf_make_masks();
}

static void tf_teardown(void)
{
  td_stop_ok(&g_d);
  for (int i = 0; i < TF_FILES + 7; i++) {
    free(g_files[i].bytes);
    g_files[i].bytes = NULL;
  }
}

int main(void)
{
  Suite *s = suite_create("formats");
  TCase *t = tcase_create("matrix");
  tcase_set_timeout(t, 600);
  tcase_add_unchecked_fixture(t, tf_setup, tf_teardown);
  tcase_add_test(t, text_as_raw_refused);
  tcase_add_loop_test(t, formats_agree, 0, TF_FILES);
  suite_add_tcase(s, t);
  t = tcase_create("edges");  /* CK_RUN_CASE=edges: these alone */
  tcase_set_timeout(t, 120);
  tcase_add_unchecked_fixture(t, tf_setup, tf_teardown);
  tcase_add_test(t, csv_header_refused);
  tcase_add_test(t, bool_masks_agree);
  tcase_add_test(t, fsum_every_way);
  suite_add_tcase(s, t);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
