/* registry.c - the backends built into this binary.  Adding a backend is one
 * folder under workers/ and one line here.  A test program may add one more
 * at start-up (wv_backend_add: wavedd-test's fake backend, workers/fake/);
 * the product binaries never do. */
#include <string.h>

#include "workers/worker.h"

extern const wv_backend wv_cpu_backend;
#ifdef WAVE_HAVE_CUDA
extern const wv_backend wv_cuda_backend;
#endif
#ifdef WAVE_HAVE_HIP
extern const wv_backend wv_hip_backend;
#endif
#ifdef WAVE_HAVE_VULKAN
extern const wv_backend wv_vulkan_backend;
#endif
#ifdef WAVE_HAVE_OPENCL
extern const wv_backend wv_opencl_backend;
#endif

const wv_backend *const wv_backends[] = {
  &wv_cpu_backend,
#ifdef WAVE_HAVE_CUDA
  &wv_cuda_backend,
#endif
#ifdef WAVE_HAVE_HIP
  &wv_hip_backend,
#endif
#ifdef WAVE_HAVE_VULKAN
  &wv_vulkan_backend,
#endif
#ifdef WAVE_HAVE_OPENCL
  &wv_opencl_backend,
#endif
  NULL,
};

static const wv_backend *rg_extra;  /* set before any thread starts */

int wv_backend_add(const wv_backend *b)
{
  if (rg_extra != NULL || wv_backend_find(b->name) != NULL)
    return -1;
  rg_extra = b;
  return 0;
}

const wv_backend *wv_backend_find(const char *name)
{
  if (rg_extra != NULL && strcmp(rg_extra->name, name) == 0)
    return rg_extra;
  for (size_t i = 0; wv_backends[i] != NULL; i++)
    if (strcmp(wv_backends[i]->name, name) == 0)
      return wv_backends[i];
  return NULL;
}

int wv_backend_known(const char *name)
{
  static const char *const all[] = {"cpu", "cuda", "hip", "vulkan", "opencl"};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    if (strcmp(all[i], name) == 0)
      return 1;
  return 0;
}
