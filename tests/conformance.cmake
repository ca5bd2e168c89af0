# tests/conformance.cmake - the cross-backend conformance suite: the same
# jobs on every backend built in, compared bit for bit with the CPU
# reference.  Other job kinds join as conformance_<kind>.c (one TCase each,
# see conformance.h), listed here.  conformance_merge.c holds core/'s exact
# merges (partials, hash pieces) against whole jobs; conformance_wide.c the
# 64-bit dtypes and argmin/argmax (and their refusal where caps lack them);
# conformance_fsum.c the exact float sum (issue 39; a few seconds).
wave_test(conformance SOURCES conformance.c conformance_hash.c conformance_merge.c
  conformance_wide.c conformance_fsum.c LIBS wvworkers)
target_compile_definitions(conformance PRIVATE WAVE_CONF_HASH
  WAVE_SOURCE_DIR_DEFAULT="${PROJECT_SOURCE_DIR}")
# GPU runs at WAVE_CONFORMANCE_MAX_LOG2=28 take minutes.
set_tests_properties(conformance PROPERTIES TIMEOUT 3600)
# The backends every host has (lavapipe, PoCL) in this entry; CUDA and HIP,
# built where their compilers are, in conformance_gpu, which skips without
# their GPU (tests/skips.txt: CI has none; bench/device-run.sh runs the
# whole suite on the GPU machine).  A selected backend that cannot open
# here: exit 77 (tests/skip.h).
set_property(TEST conformance APPEND PROPERTY ENVIRONMENT
  "WAVE_CONFORMANCE_BACKENDS=cpu,vulkan,opencl")
wave_skippable(conformance)
if(WAVE_CUDA OR WAVE_HIP)
  add_test(NAME conformance_gpu COMMAND conformance)
  set_tests_properties(conformance_gpu PROPERTIES TIMEOUT 3600 ENVIRONMENT
    "${WV_TEST_ENV};CK_EXCLUDE_TAGS=own;WAVE_CONFORMANCE_BACKENDS=cuda,hip")
  wave_skippable(conformance_gpu)
endif()
