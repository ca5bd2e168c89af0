/* skip.h - a case that cannot run on this host says why and counts as
 * skipped, never as passed.
 *
 * Such a case is a TCase of its own, tagged WVS_OWN ("own"), and has a
 * ctest entry of its own, SUITE_CASE, made by wave_test_case()
 * (tests/CMakeLists.txt): that entry runs the TCase alone (CK_RUN_CASE)
 * and ctest counts its exit status 77 as skipped (SKIP_RETURN_CODE); the
 * suite's own entry leaves every "own" TCase out (CK_EXCLUDE_TAGS), so no
 * case runs twice.
 *
 * In the case, WVS_SKIP("why", ...) records the skip and returns from the
 * test function (the record is shared memory, so it crosses Check's fork).
 * The suite's main ends with `return wvs_run(suite, mode)`, which prints
 * one line and exits:
 *   1   a case failed (a failure is never hidden by a skip);
 *   77  a case skipped: "SKIP NAME: why";
 *   1   a case skipped under WAVE_REQUIRE_ALL=1 (CI) and the entry is not
 *       one of tests/skips.txt's (wave_test_case() passes the entry's
 *       listed reason as WAVE_SKIP_ALLOWED): "FAIL NAME: skipped (why) ...";
 *   0   otherwise.
 * NAME is the ctest entry (WAVE_TEST_NAME), else the suite's name.  The
 * shell tests' twin is tests/skip.sh.
 */
#ifndef WV_TEST_SKIP_H
#define WV_TEST_SKIP_H

#include <check.h>

#define WVS_OWN "own"
#define WVS_CODE 77

/* Record that the running case cannot run here (printf-style reason). */
void wvs_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#define WVS_SKIP(...)   \
  do {                  \
    wvs_note(__VA_ARGS__); \
    return;             \
  } while (0)

/* A TCase for a case that may skip: tagged WVS_OWN. */
TCase *wvs_tcase(const char *name, double timeout_s);

/* Run the suite (srunner, mode), free it, return the exit status above. */
int wvs_run(Suite *s, enum print_output mode);

#endif
