# bench/opencl.cmake - wvbench-opencl, the OpenCL backend's throughput
# against baselines measured in the same run (bench_opencl.c says which).
# bench/device-run.sh runs it on the GPU machine as its "opencl" step.
if(NOT WAVE_OPENCL)
  return()
endif()
add_executable(wvbench-opencl bench_opencl.c)
target_link_libraries(wvbench-opencl PRIVATE wvopencl OpenCL::OpenCL)
target_include_directories(wvbench-opencl PRIVATE ${PROJECT_SOURCE_DIR})
target_compile_definitions(wvbench-opencl PRIVATE
  WAVE_BENCH_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
wave_defaults(wvbench-opencl)
