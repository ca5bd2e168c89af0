# tests/integration.cmake - the real wavedd, started in a temporary folder,
# driven through libwaveclient and the wavectl binary (over ipc and tcp).
# Registered only once the daemon target exists.
if(TARGET wavedd)
  wave_test(test_integration
    SOURCES test_integration.c integ_ctl.c integ_harness.c integ_hash.c jsonq.c
    LIBS waveclient)
  target_compile_definitions(test_integration PRIVATE
    WAVECTL_PATH="$<TARGET_FILE:wavectl>"
    WAVEDD_PATH="$<TARGET_FILE:wavedd>")
  add_dependencies(test_integration wavectl wavedd)
endif()

# wavectl's exit status, one real case per row of docs/cli.md's table
# (--timeout against a SIGSTOPped daemon included)
if(TARGET wavedd)
  add_test(NAME ctl_exit_test
    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/ctl_exit_test.sh ${PROJECT_BINARY_DIR})
  set_tests_properties(ctl_exit_test PROPERTIES TIMEOUT 300
    ENVIRONMENT "WAVE_SOURCE_DIR=${PROJECT_SOURCE_DIR}")
endif()

# wavectl top against a real wavedd (wavedd-test, for a fake device's
# health feed) with a job running: the --once frame (and --json), and the
# live view in a tmux pane, ended by q, by Ctrl-C and by two Ctrl-C on a
# stopped daemon, with the terminal restored (77: no tmux); the once mode
# also runs `wavectl bench` at small sizes, a fake device's wrong_bits
# making it fail once (about 3 s more).  About 15 s each.
if(TARGET wavedd)
  foreach(mode once tty)
    add_test(NAME ctl_top_${mode}_test
      COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/ctl_top_test.sh ${PROJECT_BINARY_DIR} ${mode})
    set_tests_properties(ctl_top_${mode}_test PROPERTIES TIMEOUT 300
      SKIP_RETURN_CODE 77 ENVIRONMENT "WAVE_SOURCE_DIR=${PROJECT_SOURCE_DIR}")
  endforeach()
endif()
