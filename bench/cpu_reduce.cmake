# bench/cpu_reduce.cmake - CPU backend reduce throughput vs a plain memory
# read of the same bytes, same threads, same run.
add_executable(bench_cpu_reduce bench_cpu_reduce.c)
target_link_libraries(bench_cpu_reduce PRIVATE wvcpu)
target_include_directories(bench_cpu_reduce PRIVATE ${PROJECT_SOURCE_DIR})
# The baseline read loop should be as fast as the compiler can make it.
target_compile_options(bench_cpu_reduce PRIVATE -O3)
wave_defaults(bench_cpu_reduce)
