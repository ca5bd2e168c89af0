# tests/hash.cmake - the lottery hash (docs/hash.md): spec and known answers
# (small and closed packs), pack loader errors, FNV, the GPU emulator, the
# CPU backend's hash slots.  Fast: nothing here touches the 1 GiB main pack.
wave_test(test_hash SOURCES test_hash.c hash_harness.c LIBS wvworkers)
wave_test(test_pack SOURCES test_pack.c hash_harness.c LIBS wvworkers)

# The main pack's known answers on the CPU backend (1 GiB dataset, ~10 s on
# 2 cores): its own entry, label "main-pack", so `ctest -LE main-pack` skips
# it on a machine without the memory.
wave_test(test_hash_main SOURCES test_hash_main.c LIBS wvworkers)
set_tests_properties(test_hash_main PROPERTIES LABELS main-pack TIMEOUT 300)

# The per-pack CUDA kernels compile (NVRTC, no GPU needed): a folder of its
# own, so that CUDA is enabled for that test only.
if(WAVE_CUDA)
  add_subdirectory(cuda)
endif()
