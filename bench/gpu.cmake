# bench/gpu.cmake - the CUDA backend's benchmarks, in bench/gpu/ (its own
# directory so that CUDA is enabled there only: in bench/ itself it would
# become the linker language of the C benchmarks that link wvworkers).
if(WAVE_CUDA)
  add_subdirectory(gpu)
endif()
