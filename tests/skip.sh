# tests/skip.sh - sourced by the shell tests: wv_skip WHY... ends a test
# that cannot run on this host, the twin of tests/skip.h for C suites.
# Exit 77 (ctest SKIP_RETURN_CODE: skipped) with one line saying why; but
# under WAVE_REQUIRE_ALL=1 (CI) exit 1 unless tests/skips.txt lists the
# entry (wave_skippable() in tests/CMakeLists.txt passes its reason as
# WAVE_SKIP_ALLOWED).  NAME is the ctest entry (WAVE_TEST_NAME).
wv_skip() {
  local name=${WAVE_TEST_NAME:-$(basename "$0" .sh)}
  if [ "${WAVE_REQUIRE_ALL:-}" = 1 ] && [ -z "${WAVE_SKIP_ALLOWED:-}" ]; then
    echo "FAIL $name: skipped ($*), and WAVE_REQUIRE_ALL=1: tests/skips.txt does not list it"
    exit 1
  fi
  if [ -n "${WAVE_SKIP_ALLOWED:-}" ]; then
    echo "SKIP $name: $* (tests/skips.txt: $WAVE_SKIP_ALLOWED)"
  else
    echo "SKIP $name: $*"
  fi
  exit 77
}
