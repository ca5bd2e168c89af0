# cmake/options.cmake - the one place that says which backends are built.
# The CPU backend is always built.  Each GPU backend is a folder under
# workers/ and one line in workers/registry.c, switched on here.
option(WAVE_CUDA     "Build the CUDA backend (needs nvcc)"                 OFF)
option(WAVE_HIP      "Build the HIP backend (needs hipcc); compiled, not run here" OFF)
option(WAVE_VULKAN   "Build the Vulkan backend (needs libvulkan-dev, glslc)" ON)
# OpenCL: on by default where the headers and the ICD loader are found
# (Debian: ocl-icd-opencl-dev, opencl-c-headers); PoCL runs it in CI.
find_package(OpenCL QUIET)
option(WAVE_OPENCL   "Build the OpenCL backend (needs OpenCL headers + ICD loader)" ${OpenCL_FOUND})
option(WAVE_SANITIZE "Build with AddressSanitizer + UndefinedBehaviorSanitizer" OFF)
option(WAVE_TESTS    "Build the Check test suites"                         ON)
option(WAVE_FUZZ     "Build the libFuzzer targets under fuzz/ (clang; instruments everything)" OFF)
option(WAVE_BENCH    "Build the benchmark programs under bench/"          ON)
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
