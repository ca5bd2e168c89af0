# tests/python.cmake - python_test and python_ctypes_test: the wavedd
# Python package (python/) under pytest against real daemons of this build
# (python/tests/conftest.py starts them: cpu0, and lavapipe's vk0 where the
# Vulkan backend is built and lavapipe is installed), the whole suite once
# through each backend (WAVEDD_FFI: cffi, then ctypes), so that neither
# rots.  python_test needs cffi (python3-cffi); the ctypes run needs only
# the standard library and NumPy.
#
# Debian's interpreter (/usr/bin/python3) first: its python3-numpy,
# python3-cffi and python3-pytest are what .ci/deps.sh installs (a python3
# of pyenv or the like, earlier on PATH, has its own modules).  pytest's
# exit status 5 (no tests collected) fails the test like any nonzero one.
#
# In the ASan build libwaveclient is instrumented, and the ASan runtime
# must be the first library of a process that loads it: the test preloads
# it into Python (LD_PRELOAD, the compiler's libasan.so) with leak checks
# off there (the interpreter does not free everything at exit, by
# design); the daemons and wavectl, themselves ASan builds, get
# WAVEDD_CHILD_ASAN_OPTIONS (leak checks on, abort on error) without the
# preload, and the fixture fails on their nonzero exit.
if(NOT TARGET wavedd OR NOT TARGET wavectl)
  return()
endif()
find_program(WAVE_PYTHON3 NAMES python3 PATHS /usr/bin NO_DEFAULT_PATH)
if(NOT WAVE_PYTHON3)
  find_program(WAVE_PYTHON3 NAMES python3)
endif()
if(NOT WAVE_PYTHON3)
  message(STATUS "python3 not found: no python_test")
  return()
endif()

set(WV_PY_ENV
  "WAVEDD_BUILD=${PROJECT_BINARY_DIR}"
  "WAVE_SOURCE_DIR=${PROJECT_SOURCE_DIR}"
  "WAVEDD_LIBWAVECLIENT=$<TARGET_FILE:waveclient>"
  "PYTHONPATH=${PROJECT_SOURCE_DIR}/python"
  "PYTHONDONTWRITEBYTECODE=1"
  "CC=${CMAKE_C_COMPILER}")
if(WAVE_VULKAN AND WV_LVP_ENV)
  list(APPEND WV_PY_ENV ${WV_LVP_ENV} "WAVEDD_TEST_VULKAN=1"
    "MESA_SHADER_CACHE_DIR=${PROJECT_BINARY_DIR}/mesa-shader-cache/w256")
endif()
if(WAVE_SANITIZE)
  execute_process(COMMAND ${CMAKE_C_COMPILER} -print-file-name=libasan.so
    OUTPUT_VARIABLE WV_LIBASAN OUTPUT_STRIP_TRAILING_WHITESPACE)
  list(APPEND WV_PY_ENV "LD_PRELOAD=${WV_LIBASAN}"
    "ASAN_OPTIONS=detect_leaks=0"
    "WAVEDD_CHILD_ASAN_OPTIONS=detect_leaks=1:abort_on_error=1")
endif()

foreach(ffi cffi ctypes)
  if(ffi STREQUAL "cffi")
    set(name python_test)
  else()
    set(name python_${ffi}_test)
  endif()
  add_test(NAME ${name}
    COMMAND ${WAVE_PYTHON3} -m pytest -q -p no:cacheprovider
            -o faulthandler_timeout=300 ${PROJECT_SOURCE_DIR}/python/tests)
  set_tests_properties(${name} PROPERTIES
    ENVIRONMENT "${WV_PY_ENV};WAVEDD_FFI=${ffi}" TIMEOUT 1200)
  wave_skippable(${name})  # a pytest skip: exit 77 (conftest.py)
endforeach()
