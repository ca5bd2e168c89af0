# tests/client.cmake - libwaveclient and wavectl without a daemon: loaders,
# JSON output, argument parsing, and the library's reply handling against a
# scripted nng REP socket.
wave_test(test_client
  SOURCES test_client.c jsonq.c
  LIBS wvctl waveclient wvbase nng::nng)

# The fleet coordinator's exact merges against the single-job definitions
# (the reduction reference, the host hash fold); no sockets.
wave_test(test_fleet
  SOURCES test_fleet.c ${PROJECT_SOURCE_DIR}/client/fleet_merge.c
  LIBS wvworkers wvbase)
target_compile_options(test_fleet PRIVATE -ffp-contract=off)

# wavectl's --fleet/--piece/--probe: URL lists, the readiness verdict.
wave_test(test_ctl_fleet SOURCES test_ctl_fleet.c LIBS wvctl waveclient wvbase)
