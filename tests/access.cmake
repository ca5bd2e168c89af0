# tests/access.cmake: tls+tcp:// listeners and bearer tokens on tcp
# (docs/security.md).  The certificates are made with the openssl CLI.
wave_test(test_access_config SOURCES test_access_config.c LIBS wvdaemon)

wave_test(test_access SOURCES test_access.c daemon_harness.c
  LIBS waveclient wvcore wvproto nng::nng)
add_dependencies(test_access wavedd wavectl)
target_compile_definitions(test_access PRIVATE
  WAVEDD_PATH="$<TARGET_FILE:wavedd>")

# Job keys: an anonymous tcp submitter reaches its job from another
# connection by the key, and nobody else does (docs/protocol.md "Job
# ownership"); wavectl's --detach hints run as printed.
wave_test(test_jobkey SOURCES test_jobkey.c daemon_harness.c
  LIBS wvcore wvproto nng::nng)
add_dependencies(test_jobkey wavedd wavectl)
target_compile_definitions(test_jobkey PRIVATE
  WAVEDD_PATH="$<TARGET_FILE:wavedd>")
