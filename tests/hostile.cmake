# tests/hostile.cmake: careless and hostile clients against the real wavedd
# (issue 12): per-connection limits, the ipc listener's recovery from nng
# 1.5.2's aborted-handshake bug, the socket path and mode, the signals.
wave_test(test_front SOURCES test_front.c daemon_harness.c
  LIBS wvcore wvproto wvhash nng::nng)
add_dependencies(test_front wavedd wavectl)
target_compile_definitions(test_front PRIVATE
  WAVEDD_PATH="$<TARGET_FILE:wavedd>")
# another user squats the socket path (root drops to nobody)
wave_test_case(test_front squatted LABELS root)
# issue 22 (findings 4, 9, 14): the open-files limit and status, metrics and
# TLS connections that must end, a deleted socket file, certificate dates.
wave_test(test_fdlimits SOURCES test_fdlimits.c daemon_harness.c
  LIBS wvcore wvproto wvhash nng::nng)
add_dependencies(test_fdlimits wavedd wavectl)
target_compile_definitions(test_fdlimits PRIVATE
  WAVEDD_PATH="$<TARGET_FILE:wavedd>")
