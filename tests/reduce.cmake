# tests/reduce.cmake - reduction semantics (core/reduce.c) and the CPU
# backend (workers/cpu) against independently computed expectations.
wave_test(test_reduce SOURCES test_reduce.c test_reduce_random.c reduce_harness.c
  LIBS wvcpu)
# The test's own float-sum tree must be the same IEEE adds, unfused.
target_compile_options(test_reduce PRIVATE -ffp-contract=off)
# The 64-bit dtypes and argmin/argmax (issue 23 part 1): the reference, the
# CPU backend and the refusal of the others (the fake backend stands in).
wave_test(test_reduce64 SOURCES test_reduce64.c LIBS wvfake wvworkers wvcpu)
target_compile_options(test_reduce64 PRIVATE -ffp-contract=off)
