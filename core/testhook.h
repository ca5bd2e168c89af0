/* testhook.h - the environment switches that tests and benchmarks set to
 * steer the daemon and the backends down a path they would not take on
 * this host, read through one function that a release build compiles to
 * "not set" (cmake/options.cmake WAVE_TEST_HOOKS: on in every build but
 * CMAKE_BUILD_TYPE Release or MinSizeRel, so the container image reads
 * none).  They are not configuration: an operator has no reason to set
 * one, and docs/config.md does not list them.  The hooks (issue 38 step 8):
 *
 *   WAVED_FILE_LEVELS=1..3   bulk/filered.c: file pieces of 256^k rows, many
 *                            small pieces on any device (test_filered,
 *                            test_wide_ways)
 *   WAVED_FILE_MASKS=apply   bulk/filered.c: the readers apply the mask for
 *                            every device, as for one that stages masks
 *                            (test_filered_applied)
 *   WAVED_FILE_STAGE=1       bulk/filered.c: regions read into the slots as
 *                            for a GPU that stages (test_filered,
 *                            test_wide_ways)
 *   WAVED_CLOSE_STALL_MS=N   net/front.c: the final nng_close starts N ms
 *                            late, as if nng hung (test_front stop_stuck)
 *   WAVED_RING_ALLOC=0       bulk/readers.c: no ring buffer of the device's
 *                            own memory (host_alloc), our pages instead
 *   WAVE_VK_TRACE=1          workers/vulkan/vk_open.c: one debug line per
 *                            Vulkan reduce call (bench/device-vkprobe.sh)
 *   WAVE_CUDA_PIN=off        workers/cuda/gpu_device.cu: host_register says
 *                            UNSUPPORTED, every use staged (measurements,
 *                            docs/performance.md)
 *   WAVE_CUDA_NVRTC=0        workers/cuda/gpu_hash.cu: the interpreter
 *                            kernel, no per-pack NVRTC kernels
 *   WAVE_CUDA_NVRTC_UNROLL=0 ... with a loop over the rounds
 *   WAVE_CUDA_NVRTC_MINBLOCKS=B  ... __launch_bounds__ minimum blocks
 *                            (the last three: bench_gpu_hash,
 *                            bench/device-nvrtc.sh)
 */
#ifndef WV_TESTHOOK_H
#define WV_TESTHOOK_H

#include <stdlib.h>

/* The switch's value, or NULL when unset or in a release build. */
static inline const char *wv_test_hook(const char *name)
{
#ifdef WAVE_TEST_HOOKS
  return getenv(name);
#else
  (void)name;
  return NULL;
#endif
}

#endif
