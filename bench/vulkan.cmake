# bench/vulkan.cmake - wvbench-vulkan, the Vulkan backend's throughput
# against baselines measured in the same run (bench_vulkan.c says which).
# bench/device-run.sh runs it on the GPU machine under this name.
if(NOT WAVE_VULKAN)
  return()
endif()
add_executable(wvbench-vulkan bench_vulkan.c)
target_link_libraries(wvbench-vulkan PRIVATE wvvulkan)
target_include_directories(wvbench-vulkan PRIVATE ${PROJECT_SOURCE_DIR})
# Where the packs are when WAVE_SOURCE_DIR is not set.
target_compile_definitions(wvbench-vulkan PRIVATE
  WAVE_BENCH_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
wave_defaults(wvbench-vulkan)
