# tests/integration.cmake - the real wavedd, started in a temporary folder,
# driven through libwaveclient and the wavectl binary (over ipc and tcp).
# Registered only once the daemon target exists.
if(TARGET wavedd)
  wave_test(test_integration
    SOURCES test_integration.c integ_harness.c integ_hash.c jsonq.c
    LIBS waveclient)
  target_compile_definitions(test_integration PRIVATE
    WAVECTL_PATH="$<TARGET_FILE:wavectl>"
    WAVEDD_PATH="$<TARGET_FILE:wavedd>")
  add_dependencies(test_integration wavectl wavedd)
endif()
