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

# wvbench-vkhost: a memfd region reduced in place (imported with
# VK_EXT_external_memory_host) against the copy path, same run
# (bench_vkhost.c).  Not named wvbench-vulkan-*: device-run.sh runs the
# first bench/wvbench-vulkan* it finds as its vulkan step.
add_executable(wvbench-vkhost bench_vkhost.c)
target_link_libraries(wvbench-vkhost PRIVATE wvvulkan)
target_include_directories(wvbench-vkhost PRIVATE ${PROJECT_SOURCE_DIR})
wave_defaults(wvbench-vkhost)

# wvbench-vkwide: the 64-bit dtypes and argmin/argmax (issue 23), device-
# resident against a streaming read and from host memory against memcpy,
# same run (bench_vkwide.c).  Not named wvbench-vulkan-* (device-run.sh).
add_executable(wvbench-vkwide bench_vkwide.c)
target_link_libraries(wvbench-vkwide PRIVATE wvvulkan)
target_include_directories(wvbench-vkwide PRIVATE ${PROJECT_SOURCE_DIR})
wave_defaults(wvbench-vkwide)
