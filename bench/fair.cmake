# bench/fair.cmake - a 1-row sum's latency behind another client's pipelined
# 16 MiB sums, idle vs loaded (bench_fair.c; daemon/exec/device.c's turns);
# --chunks (bench_fair_chunks.c) sends one raw protobuf message of many
# one-row chunks (wvproto), from a process of its own.
# --hash N: a high hash job's wait for its first piece behind a low one.
add_executable(bench_fair bench_fair.c bench_fair_chunks.c)
target_link_libraries(bench_fair PRIVATE waveclient wvproto nng::nng
  Threads::Threads)
target_include_directories(bench_fair PRIVATE ${PROJECT_SOURCE_DIR})
add_dependencies(bench_fair wavedd)
target_compile_definitions(bench_fair PRIVATE
  WAVEDD_PATH="$<TARGET_FILE:wavedd>"
  WAVE_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
wave_defaults(bench_fair)
