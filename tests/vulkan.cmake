# tests/vulkan.cmake - the Vulkan backend, run for real on Mesa's lavapipe
# (a CPU Vulkan driver; its sub-group size follows LP_NATIVE_VECTOR_WIDTH:
# 128 -> 4, 256 -> 8 (default), 512 -> 16 lanes).
#
#  test_vulkan            the backend's own suite (tests/test_vulkan.c)
#  test_vkwide            64-bit dtypes, argmin/argmax (tests/test_vkwide.c)
#  test_vkpin             regions imported for the device and reduced in place
#                         (tests/test_vkpin.c)
#  vulkan_caps_w<bits>    vkcaps asserts the sub-group size lavapipe reports
#                         at that vector width, so the runs below are known to
#                         have changed it
#  conformance_vulkan_w<bits>  tests/conformance.c on the vulkan backend alone
#                         (it must open: WAVE_REQUIRE_BACKENDS=cpu,vulkan)
#
# Every test but test_vulkan_shuffle pins the lavapipe driver
# (VK_DRIVER_FILES) so that a machine with a real GPU still tests what CI
# tests, and points Mesa's shader cache into
# the build tree, one folder per vector width (code built for one width must
# never be served to another, and CI's home may be read-only).
if(NOT WAVE_VULKAN)
  return()
endif()

wave_test(test_vulkan
  SOURCES test_vulkan.c
  LIBS wvvulkan wvcore)

# The 64-bit dtypes and argmin/argmax on the set-ups a default device never
# takes (tests/test_vkwide.c).
wave_test(test_vkwide
  SOURCES test_vkwide.c
  LIBS wvvulkan wvcore)

# Host memory imported into the device (vk_pin.c) and reduced in place, on
# a read-only memfd mapping as the daemon maps regions.
wave_test(test_vkpin
  SOURCES test_vkpin.c
  LIBS wvvulkan wvcore)

add_executable(vkcaps ${PROJECT_SOURCE_DIR}/workers/vulkan/vkcaps.c)
target_link_libraries(vkcaps PRIVATE wvvulkan)
target_include_directories(vkcaps PRIVATE ${PROJECT_SOURCE_DIR})
wave_defaults(vkcaps)

file(GLOB WV_LVP_ICD /usr/share/vulkan/icd.d/lvp_icd*.json)
list(SORT WV_LVP_ICD)
set(WV_LVP_ENV "")
if(WV_LVP_ICD)
  list(GET WV_LVP_ICD 0 WV_LVP_ICD)
  set(WV_LVP_ENV "VK_DRIVER_FILES=${WV_LVP_ICD}" "VK_ICD_FILENAMES=${WV_LVP_ICD}")
else()
  message(STATUS "lavapipe ICD not found: Vulkan tests use the default driver")
endif()
set(WV_MESA_CACHE ${PROJECT_BINARY_DIR}/mesa-shader-cache)
# Mesa does not create the folder's parents itself.
file(MAKE_DIRECTORY ${WV_MESA_CACHE}/w128 ${WV_MESA_CACHE}/w256
     ${WV_MESA_CACHE}/w512)

set_property(TEST test_vulkan APPEND PROPERTY ENVIRONMENT
  ${WV_LVP_ENV} "MESA_SHADER_CACHE_DIR=${WV_MESA_CACHE}/w256")
set_property(TEST test_vkwide APPEND PROPERTY ENVIRONMENT
  ${WV_LVP_ENV} "MESA_SHADER_CACHE_DIR=${WV_MESA_CACHE}/w256")
set_property(TEST test_vkpin APPEND PROPERTY ENVIRONMENT
  ${WV_LVP_ENV} "MESA_SHADER_CACHE_DIR=${WV_MESA_CACHE}/w256")
# the shuffle hash exchange on the loader's device 0 where it can run (a
# GPU: the one entry without VK_DRIVER_FILES); skipped, saying why, on
# lavapipe (tests/skips.txt)
wave_test_case(test_vulkan shuffle ENVIRONMENT
  "MESA_SHADER_CACHE_DIR=${WV_MESA_CACHE}/w256")

foreach(bits 128 256 512)
  math(EXPR lanes "${bits} / 32")
  set(env ${WV_LVP_ENV} "LP_NATIVE_VECTOR_WIDTH=${bits}"
          "MESA_SHADER_CACHE_DIR=${WV_MESA_CACHE}/w${bits}")
  add_test(NAME vulkan_caps_w${bits}
           COMMAND vkcaps --expect-wave-width ${lanes})
  set_tests_properties(vulkan_caps_w${bits} PROPERTIES ENVIRONMENT "${env}")
  if(TARGET conformance)
    add_test(NAME conformance_vulkan_w${bits} COMMAND conformance)
    set_tests_properties(conformance_vulkan_w${bits} PROPERTIES
      ENVIRONMENT "${env};WAVE_REQUIRE_BACKENDS=cpu,vulkan;WAVE_CONFORMANCE_BACKENDS=vulkan;WAVE_SOURCE_DIR=${PROJECT_SOURCE_DIR};WAVE_BINARY_DIR=${PROJECT_BINARY_DIR};CK_DEFAULT_TIMEOUT=600"
      TIMEOUT 1800
      DEPENDS vulkan_caps_w${bits})
    wave_skippable(conformance_vulkan_w${bits})
  endif()
endforeach()

# The integer float addition the float-sum shaders fall back to where a
# device flushes subnormals (shaders/fadd.glsl), against the CPU's IEEE adds.
wave_test(test_fadd SOURCES test_fadd.c)
target_compile_options(test_fadd PRIVATE -ffp-contract=off)

# A region reduction on cpu + vulkan (lavapipe) with the bits of the message
# and stream jobs (tests/test_bulk.c, case vulkan).
if(TARGET test_bulk)
  add_test(NAME test_bulk_vulkan COMMAND test_bulk)
  set_tests_properties(test_bulk_vulkan PROPERTIES ENVIRONMENT
    "${WV_LVP_ENV};MESA_SHADER_CACHE_DIR=${WV_MESA_CACHE}/w256;WAVE_BULK_VULKAN=1;CK_RUN_CASE=vulkan;WAVE_SOURCE_DIR=${PROJECT_SOURCE_DIR};WAVE_BINARY_DIR=${PROJECT_BINARY_DIR};CK_DEFAULT_TIMEOUT=600")
endif()

# hash jobs over cpu + vulkan devices (tests/test_jobs.c, case vulkan):
# lavapipe, not whatever driver the loader would pick
if(TEST test_jobs_vulkan)
  set_property(TEST test_jobs_vulkan APPEND PROPERTY ENVIRONMENT
    ${WV_LVP_ENV} "MESA_SHADER_CACHE_DIR=${WV_MESA_CACHE}/w256")
endif()

# File regions (daemon/bulk/filered.h) on vulkan (lavapipe): the bits of the
# message job and the reference (tests/test_filered.c, case vulkan).
if(TARGET test_filered)
  add_test(NAME test_filered_vulkan COMMAND test_filered)
  set_tests_properties(test_filered_vulkan PROPERTIES ENVIRONMENT
    "${WV_LVP_ENV};MESA_SHADER_CACHE_DIR=${WV_MESA_CACHE}/w256;WAVE_FILERED_VULKAN=1;CK_RUN_CASE=vulkan;WAVE_SOURCE_DIR=${PROJECT_SOURCE_DIR};WAVE_BINARY_DIR=${PROJECT_BINARY_DIR};CK_DEFAULT_TIMEOUT=600")
endif()
