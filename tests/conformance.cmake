# tests/conformance.cmake - the cross-backend conformance suite: the same
# jobs on every backend built in, compared bit for bit with the CPU
# reference.  Other job kinds join as conformance_<kind>.c (one TCase each,
# see conformance.h), listed here.  conformance_merge.c holds core/'s exact
# merges (partials, hash pieces) against whole jobs; conformance_wide.c the
# 64-bit dtypes and argmin/argmax (and their refusal where caps lack them).
wave_test(conformance SOURCES conformance.c conformance_hash.c conformance_merge.c
  conformance_wide.c LIBS wvworkers)
target_compile_definitions(conformance PRIVATE WAVE_CONF_HASH
  WAVE_SOURCE_DIR_DEFAULT="${PROJECT_SOURCE_DIR}")
# GPU runs at WAVE_CONFORMANCE_MAX_LOG2=28 take minutes.
set_tests_properties(conformance PROPERTIES TIMEOUT 3600)
# a built-in backend that cannot open here: exit 77 (tests/skip.h)
wave_skippable(conformance)
