# bench/scrape.cmake - a metrics scrape while 64 clients keep wavedd busy,
# and the clients' job latency with and without scraping, same run
# (bench_scrape.c; issue 36's target).
add_executable(bench_scrape bench_scrape.c)
target_link_libraries(bench_scrape PRIVATE waveclient nng::nng Threads::Threads)
add_dependencies(bench_scrape wavedd)
target_compile_definitions(bench_scrape PRIVATE
  WAVEDD_PATH="$<TARGET_FILE:wavedd>")
wave_defaults(bench_scrape)
