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

# The fleet coordinator against members that lie, stall, answer AUTH or
# hang up: fake members are nng REP peers in the test process that speak
# the protocol and hash with the CPU reference (issue 22, finding 8).
wave_test(test_fleet_members SOURCES test_fleet_members.c
  LIBS wvctl waveclient wvhash wvbase nng::nng)
set_tests_properties(test_fleet_members PROPERTIES TIMEOUT 300)

# wavectl's --fleet/--piece/--probe: URL lists, the readiness verdict.
wave_test(test_ctl_fleet SOURCES test_ctl_fleet.c LIBS wvctl waveclient wvbase)

# The fleet coordinator against three real daemons on ipc: fleet jobs equal
# one daemon's, a daemon stopped and a device faulting, ReduceResult.finite,
# cancel.
if(TARGET wavedd)
  wave_test(test_fleet_daemons SOURCES test_fleet_daemons.c daemon_harness.c
    LIBS waveclient wvbase wvhash nng::nng)
  add_dependencies(test_fleet_daemons wavedd wavedd-test)
  target_compile_definitions(test_fleet_daemons PRIVATE
    WAVEDD_PATH="$<TARGET_FILE:wavedd>")
endif()

# One input, one answer on every way the rows travel: format x path x
# dtype through wavectl against a real daemon with regions on.
if(TARGET wavedd)
  wave_test(test_formats SOURCES test_formats.c bulk_harness.c
    daemon_harness.c LIBS waveclient wvbase nng::nng)
  add_dependencies(test_formats wavedd wavectl)
  target_compile_definitions(test_formats PRIVATE
    WAVEDD_PATH="$<TARGET_FILE:wavedd>")
endif()
