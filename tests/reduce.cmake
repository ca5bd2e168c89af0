# tests/reduce.cmake - reduction semantics (core/reduce.c) and the CPU
# backend (workers/cpu) against independently computed expectations.
wave_test(test_reduce SOURCES test_reduce.c test_reduce_random.c reduce_harness.c
  LIBS wvcpu)
# The test's own float-sum tree must be the same IEEE adds, unfused.
target_compile_options(test_reduce PRIVATE -ffp-contract=off)

# a big reduction in slices (daemon/rq/slices.c) has the whole job's bits
# on every backend that opens here, the fake one too (test_slices.c)
wave_test(test_slices SOURCES test_slices.c LIBS wvdcore wvfake)
