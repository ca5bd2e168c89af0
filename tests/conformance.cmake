# tests/conformance.cmake - the cross-backend conformance suite: the same
# jobs on every backend built in, compared bit for bit with the CPU
# reference.  Other job kinds join as conformance_<kind>.c (one TCase each,
# see conformance.h); a file that exists is built in.  conformance_merge.c
# holds core/'s exact merges (partials, hash pieces) to whole jobs.
set(WV_CONF_SOURCES conformance.c conformance_merge.c)
if(EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/conformance_hash.c)
  list(APPEND WV_CONF_SOURCES conformance_hash.c)
endif()
wave_test(conformance SOURCES ${WV_CONF_SOURCES} LIBS wvworkers)
target_compile_definitions(conformance PRIVATE
  WAVE_SOURCE_DIR_DEFAULT="${PROJECT_SOURCE_DIR}")
if(EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/conformance_hash.c)
  target_compile_definitions(conformance PRIVATE WAVE_CONF_HASH)
endif()
# GPU runs at WAVE_CONFORMANCE_MAX_LOG2=28 take minutes.
set_tests_properties(conformance PROPERTIES TIMEOUT 3600)
