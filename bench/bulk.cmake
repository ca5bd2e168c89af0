# bench/bulk.cmake - issue 10's CPU-machine figures: a 1 GiB reduction over
# tcp against a raw nng transfer (wvbench-bulk), run by bench/bulk-cpu.sh
# with wavectl-vs-cat.
add_executable(wvbench-bulk bench_bulk.c)
target_link_libraries(wvbench-bulk PRIVATE waveclient nng::nng Threads::Threads)
target_include_directories(wvbench-bulk PRIVATE ${PROJECT_SOURCE_DIR})
wave_defaults(wvbench-bulk)
