# tests/reduce.cmake - reduction semantics (core/reduce.c) and the CPU
# backend (workers/cpu) against independently computed expectations.
wave_test(test_reduce SOURCES test_reduce.c test_reduce_random.c reduce_harness.c
  LIBS wvcpu)
# The test's own float-sum tree must be the same IEEE adds, unfused.
target_compile_options(test_reduce PRIVATE -ffp-contract=off)
# The op table (core/optable.c) row by row against docs/reduction.md, and
# its order keys and fills (a fraction of a second).
wave_test(test_optable SOURCES test_optable.c LIBS wvcore)
# The exact float sum's accumulator (core/xsum.c, issue 39): the edge rules,
# ties, cancellation, carries, merges, the reference, the wire form (about
# a second).
wave_test(test_xsum SOURCES test_xsum.c LIBS wvcore)
# The 64-bit dtypes and argmin/argmax (issue 23 part 1): the reference, the
# CPU backend and the refusal of the others (the fake backend stands in).
wave_test(test_reduce64 SOURCES test_reduce64.c LIBS wvfake wvworkers wvcpu)
target_compile_options(test_reduce64 PRIVATE -ffp-contract=off)
# The held-in NumPy cross-check (issue 23): wvnp runs the reference and the
# CPU backend over a file of rows; numpy_check.py compares them with
# NumPy's wrapping integer sums, min/max and argmin/argmax.  Debian's
# interpreter, whose python3-numpy .ci/deps.sh installs.
add_executable(wvnp wvnp.c)
target_link_libraries(wvnp PRIVATE wvcpu)
target_include_directories(wvnp PRIVATE ${PROJECT_SOURCE_DIR})
wave_defaults(wvnp)
find_program(WAVE_NP_PYTHON3 NAMES python3 PATHS /usr/bin NO_DEFAULT_PATH)
if(WAVE_NP_PYTHON3)
  add_test(NAME reduce_numpy COMMAND ${WAVE_NP_PYTHON3}
    ${CMAKE_CURRENT_SOURCE_DIR}/numpy_check.py $<TARGET_FILE:wvnp>)
  # fsum (issue 39) against an exact rational reference with its own
  # rounding: a dynamic-range sweep over every exponent, the edge rules,
  # 10^6 random rows per dtype under chunkings, a permutation and mask
  # chunkings (about 6 s of CPU).
  add_test(NAME fsum_ref COMMAND ${WAVE_NP_PYTHON3}
    ${CMAKE_CURRENT_SOURCE_DIR}/fsum_ref.py $<TARGET_FILE:wvnp>)
  set_tests_properties(fsum_ref PROPERTIES TIMEOUT 300)
endif()

# a big reduction in slices (daemon/rq/slices.c) has the whole job's bits
# on every backend that opens here, the fake one too (test_slices.c)
wave_test(test_slices SOURCES test_slices.c LIBS wvdcore wvfake)
# the backends every host has here; CUDA and HIP in test_slices_gpu, which
# skips without their GPU (tests/skips.txt)
set_property(TEST test_slices APPEND PROPERTY ENVIRONMENT
  "WAVE_CONFORMANCE_BACKENDS=cpu,vulkan,opencl")
wave_skippable(test_slices)  # a selected backend that does not open here
if(WAVE_CUDA OR WAVE_HIP)
  add_test(NAME test_slices_gpu COMMAND test_slices)
  set_tests_properties(test_slices_gpu PROPERTIES ENVIRONMENT
    "${WV_TEST_ENV};CK_EXCLUDE_TAGS=own;WAVE_CONFORMANCE_BACKENDS=cpu,cuda,hip")
  wave_skippable(test_slices_gpu)
endif()
