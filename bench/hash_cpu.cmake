# bench/hash_cpu.cmake - CPU hash rate on the main pack vs the machine's
# random 8-byte load rate at the dataset's size (same threads, same run).
add_executable(bench_hash_cpu bench_hash_cpu.c)
target_link_libraries(bench_hash_cpu PRIVATE wvworkers)
target_include_directories(bench_hash_cpu PRIVATE ${PROJECT_SOURCE_DIR})
target_compile_definitions(bench_hash_cpu PRIVATE
  WAVE_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
target_compile_options(bench_hash_cpu PRIVATE -O3)
wave_defaults(bench_hash_cpu)
