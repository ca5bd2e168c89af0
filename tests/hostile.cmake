# tests/hostile.cmake: careless and hostile clients against the real wavedd
# (issue 12): per-connection limits, the ipc listener's recovery from nng
# 1.5.2's aborted-handshake bug, the socket path and mode, the signals.
wave_test(test_front SOURCES test_front.c daemon_harness.c
  LIBS wvbase wvhash nng::nng)
add_dependencies(test_front wavedd wavectl)
target_compile_definitions(test_front PRIVATE
  WAVEDD_PATH="$<TARGET_FILE:wavedd>")
