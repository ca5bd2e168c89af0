# bench/rtt.cmake - round trip of a tiny reduction through a real wavedd vs
# a raw nng REQ/REP echo of the same bytes, same run (bench_rtt.c).
add_executable(bench_rtt bench_rtt.c)
target_link_libraries(bench_rtt PRIVATE wvcore wvproto nng::nng Threads::Threads)
add_dependencies(bench_rtt wavedd)
target_compile_definitions(bench_rtt PRIVATE
  WAVEDD_PATH="$<TARGET_FILE:wavedd>")
wave_defaults(bench_rtt)
