# tests/daemon.cmake: wavedd's config loader, and the real daemon binary
# spoken to with raw nng + protobuf-c (the wire protocol, docs/protocol.md).
wave_test(test_config SOURCES test_config.c LIBS wvdaemon)

wave_test(test_daemon SOURCES test_daemon.c daemon_harness.c
  LIBS wvbase wvhash nng::nng)
add_dependencies(test_daemon wavedd)
# WAVE_BINARY_DIR (set by wave_test) wins; this is for running it by hand
target_compile_definitions(test_daemon PRIVATE
  WAVEDD_PATH="$<TARGET_FILE:wavedd>")

# wavedd as a service: SIGHUP reload, signals, the metrics page, JobsRequest
wave_test(test_service SOURCES test_service.c daemon_harness.c
  LIBS wvbase wvhash nng::nng)
add_dependencies(test_service wavedd)
target_compile_definitions(test_service PRIVATE
  WAVEDD_PATH="$<TARGET_FILE:wavedd>")
