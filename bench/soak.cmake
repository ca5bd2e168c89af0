# bench/soak.cmake - the soak benchmark (bench/soak.sh drives bench_soak.c
# against a real wavedd): N clients, mixed jobs, every answer checked, the
# daemon's RSS sampled.
add_executable(bench_soak bench_soak.c)
target_link_libraries(bench_soak PRIVATE waveclient wvhash wvcore wvproto nng::nng
  Threads::Threads)
add_dependencies(bench_soak wavedd)
wave_defaults(bench_soak)
