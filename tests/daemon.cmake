# tests/daemon.cmake: wavedd's config loader, and the real daemon binary
# spoken to with raw nng + protobuf-c (the wire protocol, docs/protocol.md).
# wavedd-test: wavedd plus the fake backend (workers/fake/), for the tests
# whose devices must fault (wavedd_test.c: the fake backend, then wd_main).
add_executable(wavedd-test wavedd_test.c)
target_link_libraries(wavedd-test PRIVATE wvdcore wvfake)
target_include_directories(wavedd-test PRIVATE ${PROJECT_SOURCE_DIR})
set_target_properties(wavedd-test PROPERTIES
  RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR})
wave_defaults(wavedd-test)

wave_test(test_config SOURCES test_config.c LIBS wvdcore)
# the number rule of both YAML loaders, on the parser alone
wave_test(test_yamlconf SOURCES test_yamlconf.c LIBS wvyamlconf)
# the file reader pool and the staging rings (daemon/bulk/readers.h)
wave_test(test_readers SOURCES test_readers.c LIBS wvdcore)
wave_test(test_autodev SOURCES test_autodev.c LIBS wvdaemon)
# the arena a request is decoded into (daemon/net/arena.h): alignment, big
# items, the limit, free and reuse, 100,000 chunks through protobuf-c
# (under a second; 4 s at WD_ARENA_CHUNKS=4194304)
wave_test(test_arena SOURCES test_arena.c LIBS wvdcore)

wave_test(test_daemon SOURCES test_daemon.c daemon_harness.c
  LIBS wvcore wvproto wvhash nng::nng)
add_dependencies(test_daemon wavedd wavedd-test)
# WAVE_BINARY_DIR (set by wave_test) wins; this is for running it by hand
target_compile_definitions(test_daemon PRIVATE
  WAVEDD_PATH="$<TARGET_FILE:wavedd>")

# start and stop, each with a daemon of its own (faults: wavedd-test)
wave_test(test_lifecycle SOURCES test_lifecycle.c daemon_harness.c
  LIBS wvcore wvproto wvhash nng::nng)
add_dependencies(test_lifecycle wavedd wavedd-test)
target_compile_definitions(test_lifecycle PRIVATE
  WAVEDD_PATH="$<TARGET_FILE:wavedd>")
# a GPU backend's device that faults at start (needs one built in)
wave_test_case(test_lifecycle faulted)

# every request answered at SIGTERM, 100 stops (issue 35; a few seconds)
wave_test(test_stop SOURCES test_stop.c daemon_harness.c
  LIBS wvcore wvproto wvhash nng::nng)
add_dependencies(test_stop wavedd wavedd-test)
target_compile_definitions(test_stop PRIVATE
  WAVEDD_PATH="$<TARGET_FILE:wavedd>")

# wavedd as a service: SIGHUP reload, signals, the metrics page, JobsRequest
wave_test(test_service SOURCES test_service.c daemon_harness.c
  LIBS wvcore wvproto wvhash nng::nng)
add_dependencies(test_service wavedd)
target_compile_definitions(test_service PRIVATE
  WAVEDD_PATH="$<TARGET_FILE:wavedd>")

# what a SIGHUP reload changes while serving: listeners, packs
wave_test(test_reload SOURCES test_reload.c daemon_harness.c
  LIBS wvcore wvproto wvhash nng::nng)
add_dependencies(test_reload wavedd)
target_compile_definitions(test_reload PRIVATE
  WAVEDD_PATH="$<TARGET_FILE:wavedd>")

# Framed requests, streams and shared-memory regions (docs/protocol.md),
# against the real daemon through libwaveclient and raw nng.
wave_test(test_bulk
  SOURCES test_bulk.c test_bulk_streams.c test_bulk_gates.c test_bulk_ring.c
          test_bulk_pipe.c
    bulk_harness.c
  daemon_harness.c
  LIBS waveclient wvcore wvproto nng::nng)
add_dependencies(test_bulk wavedd wavedd-test)
target_compile_definitions(test_bulk PRIVATE
  WAVEDD_PATH="$<TARGET_FILE:wavedd>")

# What one client may hold: idle connections with regions, shares of region
# bytes, of copy+stream bytes and of file descriptors, status's regions
# (issue 22 findings 5, 6, 12; docs/security.md "Shares").
wave_test(test_shares SOURCES test_shares.c bulk_harness.c daemon_harness.c
  LIBS waveclient wvcore wvproto nng::nng)
add_dependencies(test_shares wavedd)
target_compile_definitions(test_shares PRIVATE
  WAVEDD_PATH="$<TARGET_FILE:wavedd>")
# a second client as user nobody (root drops privileges)
wave_test_case(test_shares other_uid LABELS root)

# Regions pinned for the devices, piece by piece (the fake backend's pinning
# slots), and regions of huge pages (test_pin.c).
wave_test(test_pin SOURCES test_pin.c bulk_harness.c daemon_harness.c
  LIBS waveclient wvcore wvproto nng::nng)
add_dependencies(test_pin wavedd wavedd-test)
target_compile_definitions(test_pin PRIVATE
  WAVEDD_PATH="$<TARGET_FILE:wavedd>")
# regions of huge pages: root raises the pool for them
wave_test_case(test_pin huge LABELS root)

# File regions: jobs that read the client's file in pieces as they reduce
# (daemon/bulk/filered.h), bit for bit against messages and the reference.
wave_test(test_filered SOURCES test_filered.c bulk_harness.c daemon_harness.c
  LIBS waveclient wvcore wvproto nng::nng)
add_dependencies(test_filered wavedd)
# The same cases with the readers applying every mask (as they do for a
# device that stages masks, Vulkan: WAVED_FILE_MASKS=apply, filered.c
# fr_applies), on cpu0.
add_test(NAME test_filered_applied COMMAND test_filered)
set_tests_properties(test_filered_applied PROPERTIES ENVIRONMENT
  "WAVED_FILE_MASKS=apply;CK_RUN_CASE=bits;CK_DEFAULT_TIMEOUT=600")
target_compile_definitions(test_filered PRIVATE
  WAVEDD_PATH="$<TARGET_FILE:wavedd>")

# The 64-bit dtypes and argmin/argmax (issue 23) by every way in: message,
# framed, stream (ipc and tcp), memfd, copy and file regions, a fleet of two
# daemons, against the reference; and the same refusal on each
# (tests/test_wide_ways.c, tests/wide_harness.h).
wave_test(test_wide_ways SOURCES test_wide_ways.c wide_harness.c
  bulk_harness.c daemon_harness.c LIBS waveclient wvcore wvproto nng::nng)
add_dependencies(test_wide_ways wavedd wavedd-test)
target_compile_definitions(test_wide_ways PRIVATE
  WAVEDD_PATH="$<TARGET_FILE:wavedd>")

# Region descriptors by SCM_RIGHTS: what a region may be, the tickets'
# rules, a client of another uid, a 4 GiB file under the shipped limits
# (test_fdpass.c).
wave_test(test_fdpass SOURCES test_fdpass.c bulk_harness.c daemon_harness.c
  LIBS waveclient wvcore wvproto nng::nng)
add_dependencies(test_fdpass wavedd wavectl)
target_compile_definitions(test_fdpass PRIVATE
  WAVEDD_PATH="$<TARGET_FILE:wavedd>")
# a client of another uid (root drops to nobody)
wave_test_case(test_fdpass other_uid LABELS root)

# A file-region read that never returns (a FUSE file served by the test on
# /dev/fuse, mounted by root; skipped without them) fails its job after the
# bound, and the device and decode threads move on (test_stall.c).
wave_test(test_stall SOURCES test_stall.c bulk_harness.c daemon_harness.c
  LIBS waveclient wvcore wvproto nng::nng)
add_dependencies(test_stall wavedd)
target_compile_definitions(test_stall PRIVATE
  WAVEDD_PATH="$<TARGET_FILE:wavedd>")
wave_skippable(test_stall)
set_tests_properties(test_stall PROPERTIES LABELS root)

# hash jobs over several devices and the lifecycle promises (test_jobs.c)
wave_test(test_jobs SOURCES test_jobs.c daemon_harness.c
  LIBS wvcore wvproto wvhash nng::nng)
add_dependencies(test_jobs wavedd wavedd-test)
target_compile_definitions(test_jobs PRIVATE
  WAVEDD_PATH="$<TARGET_FILE:wavedd>")
# cpu and vulkan devices in one job (lavapipe: tests/vulkan.cmake)
wave_test_case(test_jobs vulkan)

# the seams of the daemon's wings and of core/ (tests/check_includes.sh):
# no include cycle, no backend slot called from daemon/, the wire only in
# net/, rq/ and bulk/decode.c, no backend names compared, net/ and exec/
# below rq/ and jobs/, core/ on itself
add_test(NAME daemon_includes
  COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/check_includes.sh
          ${PROJECT_SOURCE_DIR}/daemon)

# hash job scheduling and ownership: fair turns, quotas, jobs tied to their
# connection, owners, results' memory (test_sched.c)
wave_test(test_sched SOURCES test_sched.c daemon_harness.c
  LIBS wvcore wvproto wvhash nng::nng)
add_dependencies(test_sched wavedd)
target_compile_definitions(test_sched PRIVATE
  WAVEDD_PATH="$<TARGET_FILE:wavedd>")
# another uid's requests for a job (root setuids to nobody)
wave_test_case(test_sched other_uid LABELS root)

# the log under journald: sd-daemon "<N>" priority prefixes, no second
# timestamp or pid ($JOURNAL_STREAM naming stderr); plain lines otherwise
add_test(NAME log_journal_test
  COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/log_journal_test.sh ${PROJECT_BINARY_DIR})
set_tests_properties(log_journal_test PROPERTIES TIMEOUT 180
  ENVIRONMENT "WAVE_SOURCE_DIR=${PROJECT_SOURCE_DIR}")

# hash jobs that wait for their pack's preparation (PREPARING), with the
# fake backend holding a pack's preparation until the test lets it go
wave_test(test_packwait SOURCES test_packwait.c daemon_harness.c
  LIBS wvcore wvproto wvhash nng::nng)
add_dependencies(test_packwait wavedd wavedd-test)
target_compile_definitions(test_packwait PRIVATE
  WAVEDD_PATH="$<TARGET_FILE:wavedd>")

# /livez and /readyz on the metrics listener through start, stop and
# faults (test_probes.c, fake backend)
wave_test(test_probes SOURCES test_probes.c daemon_harness.c
  LIBS wvcore wvproto nng::nng)
add_dependencies(test_probes wavedd wavedd-test)
target_compile_definitions(test_probes PRIVATE
  WAVEDD_PATH="$<TARGET_FILE:wavedd>")

# device health from the fake backend's telemetry feed: StatusReply,
# the metrics families, wavectl status (test_health.c)
wave_test(test_health SOURCES test_health.c daemon_harness.c
  LIBS wvcore wvproto nng::nng)
add_dependencies(test_health wavedd wavedd-test wavectl)
target_compile_definitions(test_health PRIVATE
  WAVEDD_PATH="$<TARGET_FILE:wavedd>")

# reductions take turns by client: two clients' sums queued behind a held
# device complete alternately (test_fairred.c, fake backend)
# the same turns in process: a CPU device, items that write down their
# order, one holding the device (test_turns.c)
wave_test(test_turns SOURCES test_turns.c LIBS wvdcore)
# the executor in process on the fake backend: lanes, the owner ring,
# park/resume, unqueue, the fault rule, stop (test_exec.c)
wave_test(test_exec SOURCES test_exec.c LIBS wvdcore wvfake)

wave_test(test_fairred SOURCES test_fairred.c daemon_harness.c bulk_harness.c
  LIBS waveclient wvcore wvproto nng::nng)
add_dependencies(test_fairred wavedd wavedd-test)
target_compile_definitions(test_fairred PRIVATE
  WAVEDD_PATH="$<TARGET_FILE:wavedd>")
# priorities and deadlines: level order, the level cap, PERM every way in,
# DEADLINE counted on the fake device (test_prio.c; two daemon starts, a
# few seconds)
wave_test(test_prio SOURCES test_prio.c daemon_harness.c
  LIBS waveclient wvcore wvproto nng::nng)
add_dependencies(test_prio wavedd wavedd-test wavectl)
target_compile_definitions(test_prio PRIVATE
  WAVEDD_PATH="$<TARGET_FILE:wavedd>")
# the default socket's rule (core/sockdir.h) and --check-config's socket checks
wave_test(test_sockdir SOURCES test_sockdir.c LIBS wvcore)
