/* skip.c - the skip record and the suites' exit status (skip.h).  The
 * record lives in a shared anonymous mapping made before the runner
 * forks, so a case's child writes what the parent reads. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "skip.h"

typedef struct wvs_record {
  int skipped;
  char why[400];
} wvs_record;

static wvs_record *wvs_rec;

static void wvs_map(void)
{
  if (wvs_rec != NULL)
    return;
  void *m = mmap(NULL, sizeof *wvs_rec, PROT_READ | PROT_WRITE,
                 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) {
    perror("skip.c: mmap");
    exit(1);
  }
  wvs_rec = m;
}

void wvs_note(const char *fmt, ...)
{
  wvs_map();  /* a case run without wvs_run: the record is its own */
  char line[sizeof wvs_rec->why];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  wvs_rec->skipped++;
  fprintf(stderr, "skipping: %s\n", line);
  if (strstr(wvs_rec->why, line) != NULL)
    return;  /* said already (a fixture's, once per case) */
  size_t k = strlen(wvs_rec->why);
  snprintf(wvs_rec->why + k, sizeof wvs_rec->why - k, "%s%s",
           k > 0 ? "; " : "", line);
}

TCase *wvs_tcase(const char *name, double timeout_s)
{
  TCase *tc = tcase_create(name);
  tcase_set_timeout(tc, timeout_s);
  tcase_set_tags(tc, WVS_OWN);
  return tc;
}

int wvs_run(Suite *s, enum print_output mode)
{
  wvs_map();
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, mode);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  if (failed > 0)
    return EXIT_FAILURE;
  if (wvs_rec->skipped == 0)
    return EXIT_SUCCESS;
  const char *name = getenv("WAVE_TEST_NAME");
  const char *req = getenv("WAVE_REQUIRE_ALL");
  const char *allowed = getenv("WAVE_SKIP_ALLOWED");
  if (name == NULL || *name == '\0')
    name = "this suite";
  if (req != NULL && strcmp(req, "1") == 0 &&
      (allowed == NULL || *allowed == '\0')) {
    printf("FAIL %s: skipped (%s), and WAVE_REQUIRE_ALL=1: tests/skips.txt "
           "does not list it\n", name, wvs_rec->why);
    return EXIT_FAILURE;
  }
  if (allowed != NULL && *allowed != '\0')
    printf("SKIP %s: %s (tests/skips.txt: %s)\n", name, wvs_rec->why,
           allowed);
  else
    printf("SKIP %s: %s\n", name, wvs_rec->why);
  return WVS_CODE;
}
