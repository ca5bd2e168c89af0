# tests/opencl.cmake - the OpenCL backend, run for real on PoCL (Debian's
# pocl-opencl-icd, a CPU OpenCL driver) in CI.
#
#  test_opencl        the backend's own suite (tests/test_opencl.c)
#  test_opencl_wide   its 64-bit dtypes and argmin/argmax (test_opencl_wide.c)
#  conformance_opencl tests/conformance.c on the opencl backend alone (it must
#                     open: WAVE_REQUIRE_BACKENDS=cpu,opencl); its hash part
#                     runs exchange auto and exchange local
#
# PoCL keeps its compiled kernels in a cache; the tests point it into the
# build tree (CI's home may be read-only).  Platform 0 is whatever the ICD
# loader lists first: on CI machines that is PoCL, the only one installed.
if(NOT WAVE_OPENCL)
  return()
endif()
set(WV_POCL_CACHE ${PROJECT_BINARY_DIR}/pocl-cache)
# Under ASan: PoCL's and LLVM's own allocations kept until exit are not ours.
set(WV_OCL_LSAN "LSAN_OPTIONS=suppressions=${CMAKE_CURRENT_SOURCE_DIR}/lsan-opencl.supp:print_suppressions=0")
file(MAKE_DIRECTORY ${WV_POCL_CACHE})

wave_test(test_opencl
  SOURCES test_opencl.c
  LIBS wvopencl wvcore)
target_link_libraries(test_opencl PRIVATE OpenCL::OpenCL)
set_property(TEST test_opencl APPEND PROPERTY ENVIRONMENT
  "POCL_CACHE_DIR=${WV_POCL_CACHE}" "${WV_OCL_LSAN}")
set_tests_properties(test_opencl PROPERTIES TIMEOUT 1800)
# the shuffle hash exchange where the device can take it (a GPU);
# skipped on PoCL (tests/skips.txt)
wave_test_case(test_opencl shuffle ENVIRONMENT
  "POCL_CACHE_DIR=${WV_POCL_CACHE}" "${WV_OCL_LSAN}")

wave_test(test_opencl_wide
  SOURCES test_opencl_wide.c
  LIBS wvopencl wvcore)
target_link_libraries(test_opencl_wide PRIVATE OpenCL::OpenCL)
set_property(TEST test_opencl_wide APPEND PROPERTY ENVIRONMENT
  "POCL_CACHE_DIR=${WV_POCL_CACHE}" "${WV_OCL_LSAN}")
set_tests_properties(test_opencl_wide PROPERTIES TIMEOUT 1800)

if(TARGET conformance)
  add_test(NAME conformance_opencl COMMAND conformance)
  set_tests_properties(conformance_opencl PROPERTIES
    ENVIRONMENT "POCL_CACHE_DIR=${WV_POCL_CACHE};${WV_OCL_LSAN};WAVE_REQUIRE_BACKENDS=cpu,opencl;WAVE_CONFORMANCE_BACKENDS=opencl;WAVE_SOURCE_DIR=${PROJECT_SOURCE_DIR};WAVE_BINARY_DIR=${PROJECT_BINARY_DIR};CK_DEFAULT_TIMEOUT=600"
    TIMEOUT 1800)
  wave_skippable(conformance_opencl)
endif()

# test_pin (tests/daemon.cmake) also reduces a region on a PoCL device.
if(TARGET test_pin)
  target_compile_definitions(test_pin PRIVATE WAVE_PIN_OPENCL=1)
  set_property(TEST test_pin APPEND PROPERTY ENVIRONMENT
    "POCL_CACHE_DIR=${WV_POCL_CACHE}" "${WV_OCL_LSAN}")
  if(WAVE_SANITIZE)  # LLVM's alternate signal stacks: see integ_opencl
    set_property(TEST test_pin APPEND PROPERTY ENVIRONMENT
      "ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:use_sigaltstack=0")
  endif()
endif()

# wavedd with an opencl device, through wavectl (tests/integ_opencl.sh).
if(TARGET wavedd AND TARGET wavectl)
  add_test(NAME integ_opencl COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/integ_opencl.sh
           $<TARGET_FILE:wavedd> $<TARGET_FILE:wavectl> ${PROJECT_SOURCE_DIR})
  set_tests_properties(integ_opencl PROPERTIES
    ENVIRONMENT "POCL_CACHE_DIR=${WV_POCL_CACHE};${WV_OCL_LSAN}" TIMEOUT 900)
  # LLVM (inside PoCL) gives the thread that builds a program its own
  # malloc'ed alternate signal stack; when wavedd's device thread exits,
  # ASan would unmap it as if it were its own and abort.  ASan's own
  # alternate stacks are off for this test only.
  if(WAVE_SANITIZE)
    set_property(TEST integ_opencl APPEND PROPERTY ENVIRONMENT
      "ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:use_sigaltstack=0")
  endif()
endif()

# Suites of other fragments that open the opencl backend beside the others
# (WAVE_CONFORMANCE_BACKENDS=cpu,vulkan,opencl) get the same cache and
# suppressions: with a cold PoCL cache (a fresh machine, or root's home
# under .ci/test) PoCL compiles their kernels, and LLVM's state kept until
# exit is not our leak; as in integ_opencl, the threads that build them
# exit, so ASan's own alternate stacks are off.
foreach(t test_slices conformance)
  if(TEST ${t})
    set_property(TEST ${t} APPEND PROPERTY ENVIRONMENT
      "POCL_CACHE_DIR=${WV_POCL_CACHE}" "${WV_OCL_LSAN}")
    if(WAVE_SANITIZE)
      set_property(TEST ${t} APPEND PROPERTY ENVIRONMENT
        "ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:use_sigaltstack=0")
    endif()
  endif()
endforeach()
