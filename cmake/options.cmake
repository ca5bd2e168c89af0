# cmake/options.cmake - the one place that says which backends are built.
# The CPU backend is always built.  Each GPU backend is a folder under
# workers/ and one line in workers/registry.c, switched on here.
option(WAVE_CUDA     "Build the CUDA backend (needs nvcc)"                 OFF)
option(WAVE_HIP      "Build the HIP backend (needs hipcc); compiled, not run here" OFF)
option(WAVE_VULKAN   "Build the Vulkan backend (needs libvulkan-dev, glslc)" ON)
# OpenCL: AUTO (the default) builds it when the headers and the ICD loader
# are found (Debian: ocl-icd-opencl-dev, opencl-c-headers; PoCL runs it in
# CI), decided again at every configure: a build dir first configured
# before they were installed (the demo installs no OpenCL) builds it once
# they are.  ON or OFF force it.  The cache keeps AUTO; the normal variable
# below shadows it with this configure's answer.
find_package(OpenCL QUIET)
# a BOOL in the cache is the old option()'s value, which stuck at the first
# configure's answer: start again from AUTO
get_property(_wave_ocl_type CACHE WAVE_OPENCL PROPERTY TYPE)
if(_wave_ocl_type STREQUAL "BOOL")
  set(WAVE_OPENCL AUTO CACHE STRING "" FORCE)
endif()
set(WAVE_OPENCL AUTO CACHE STRING
  "Build the OpenCL backend (needs OpenCL headers + ICD loader): AUTO (when found), ON or OFF")
set_property(CACHE WAVE_OPENCL PROPERTY STRINGS AUTO ON OFF)
if(WAVE_OPENCL STREQUAL "AUTO")
  if(OpenCL_FOUND)
    set(WAVE_OPENCL ON)
  else()
    set(WAVE_OPENCL OFF)
  endif()
  message(STATUS "WAVE_OPENCL AUTO: ${WAVE_OPENCL} (OpenCL headers and loader found: ${OpenCL_FOUND})")
endif()
option(WAVE_SANITIZE "Build with AddressSanitizer + UndefinedBehaviorSanitizer" OFF)
option(WAVE_TESTS    "Build the Check test suites"                         ON)
option(WAVE_FUZZ     "Build the libFuzzer targets under fuzz/ (clang; instruments everything)" OFF)
option(WAVE_BENCH    "Build the benchmark programs under bench/"          ON)
# WAVE_TEST_HOOKS: whether the daemon and the backends read the environment
# switches that tests and benchmarks set (core/testhook.h lists them).  On
# in every build but a release one (CMAKE_BUILD_TYPE Release or
# MinSizeRel: the container image), which reads none of them.
if(CMAKE_BUILD_TYPE MATCHES "^(Release|MinSizeRel)$")
  set(WAVE_TEST_HOOKS_DEFAULT OFF)
else()
  set(WAVE_TEST_HOOKS_DEFAULT ON)
endif()
option(WAVE_TEST_HOOKS "Read the test hooks' environment switches (core/testhook.h)" ${WAVE_TEST_HOOKS_DEFAULT})
set(WAVE_CUDA_ARCHS "80;90" CACHE STRING "CUDA architectures (sm numbers)")
set(WAVE_HIP_ARCHS  "gfx90a;gfx1030" CACHE STRING "AMD GPU targets for HIP")

# wave_defaults(target): warnings and sanitizers, applied to every C target.
function(wave_defaults tgt)
  target_compile_options(${tgt} PRIVATE
    $<$<COMPILE_LANGUAGE:C>:-Wall -Wextra -Wshadow -Wno-unused-parameter>
    # clang (the fuzz build) does not know GCC's ivdep (workers/cpu/)
    $<$<AND:$<COMPILE_LANGUAGE:C>,$<C_COMPILER_ID:Clang>>:-Wno-unknown-pragmas>)
  if(WAVE_SANITIZE)
    target_compile_options(${tgt} PRIVATE
      $<$<COMPILE_LANGUAGE:C>:-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined>)
    target_link_options(${tgt} PRIVATE -fsanitize=address,undefined)
  endif()
endfunction()
