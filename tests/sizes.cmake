# tests/sizes.cmake - check_sizes: no source file over 800 lines and no
# function over 120 (issue 20), over every tracked C, CUDA, GLSL and
# OpenCL C file (tests/check_sizes.py; what other branches are still
# fixing is listed in tests/sizes_pending.txt).
# Debian's interpreter first, as tests/python.cmake: one found first on
# root's PATH (a pyenv shim under /root) is not one the test user may run
find_program(WAVE_PYTHON3 NAMES python3 PATHS /usr/bin NO_DEFAULT_PATH)
if(NOT WAVE_PYTHON3)
  find_program(WAVE_PYTHON3 NAMES python3)
endif()
if(NOT WAVE_PYTHON3)
  message(STATUS "python3 not found: no check_sizes")
  return()
endif()
add_test(NAME check_sizes
  COMMAND ${WAVE_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/check_sizes.py
          --root ${PROJECT_SOURCE_DIR}
          --pending ${CMAKE_CURRENT_SOURCE_DIR}/sizes_pending.txt --strict)
# The counter itself, on samples of known sizes (braces in strings and
# comments, initializers, extern "C", START_TEST bodies, unbalanced files).
add_test(NAME check_sizes_counter
  COMMAND ${WAVE_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/check_sizes.py --self-test)
