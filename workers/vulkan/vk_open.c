/* vk_open.c - opening a Vulkan device, and the wv_backend vtable.
 *
 * What open() decides once, from what the device reports:
 *  - reduce: sub-group arithmetic (subgroupAdd/Min/Max/And/Or/Xor) for the
 *    integer wave step when compute supports it, else a shared-memory tree;
 *  - float sum: subgroupShuffleXor for the in-group exchanges when a group's
 *    WV_VK_SUM_LANES lanes fit in full sub-groups, else shared memory;
 *  - hash exchange (vk_hash.c): shuffle at a sub-group size of exactly 32
 *    (docs/hash.md "Exchange paths"), or shared memory; the reason goes to
 *    caps();
 *  - whether float sums may run: DenormPreserve where promised, else a
 *    probe of what the device does with subnormals (vk_rec.c);
 *  - whether shared-memory regions can be imported in place
 *    (VK_EXT_external_memory_host, enabled when present and storage
 *    buffers are importable from host allocations; vk_pin.c);
 *  - the 64-bit dtypes and argmin/argmax: shaderInt64, shaderFloat64 and
 *    shaderSubgroupExtendedTypes enabled where present, the rest decided
 *    by vk_rec.c (wv_vk_wide_setup: paths, float64 subnormal probe);
 *  - the exact sum fsum: shaderSharedInt64Atomics and
 *    shaderBufferInt64Atomics enabled where present (vk_xsum.c says
 *    whether it runs).
 * Nothing here reads the environment: tests reach the knobs through
 * wv_vk_open_ex().  A machine without a Vulkan driver gets WAVE_ENODEV from
 * open(), never a crash (the loader itself is linked; without an ICD,
 * vkCreateInstance fails cleanly).
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/base.h"
#include "core/testhook.h"
#include "vk.h"

#define VO_POOL_SETS 256u                  /* descriptor sets per slot */
#define VO_DEFAULT_WINDOW_BYTES (16u << 20)

/* ---- open / close -------------------------------------------------------- */

static int vo_has_ext(const VkExtensionProperties *e, uint32_t n,
                      const char *name)
{
  for (uint32_t i = 0; i < n; i++)
    if (strcmp(e[i].extensionName, name) == 0)
      return 1;
  return 0;
}

/* Decide the paths, from the properties just read. */
static void vo_choose_paths(wv_device *d, const wv_device_config *cfg)
{
  d->red_sg = d->sg_arith && !d->opt.force_local;
  /* Float sum: a group's WV_VK_SUM_LANES lanes must be an aligned block
   * of one full sub-group, so that lane ^ m stays inside it: any size of
   * at least that many lanes will do. */
  d->sum_shuffle = !d->opt.force_local && d->sg_shuffle && d->full_subgroups &&
                   d->sg_min >= WV_VK_SUM_LANES;

  /* Hash: docs/hash.md "Exchange paths": exactly 32, one unit per
   * sub-group: a required size of 32 with full sub-groups, or a device
   * whose only size is 32. */
  int fixed32 = d->sg_size == 32 && d->sg_min == 32 && d->sg_max == 32;
  int can = d->sg_shuffle && ((d->sg_require32 && d->full_subgroups) ||
                              fixed32);
  char why[160];
  if (!d->sg_shuffle)
    snprintf(why, sizeof why, "no sub-group shuffle in compute");
  else if (can && d->sg_require32 && d->full_subgroups)
    snprintf(why, sizeof why, "required sub-group size 32, full sub-groups "
             "(VK_EXT_subgroup_size_control, device range %u..%u)",
             d->sg_min, d->sg_max);
  else if (can)
    snprintf(why, sizeof why, "the device's only sub-group size is 32");
  else
    snprintf(why, sizeof why, "sub-group %u != 32 (range %u..%u%s)",
             d->sg_size, d->sg_min, d->sg_max,
             d->sg_min <= 32 && 32 <= d->sg_max && !d->full_subgroups
               ? ", full sub-groups cannot be required" : "");
  d->hash_shuffle = 0;
  d->hash_refused = 0;
  if (cfg->exchange == WV_EXCHANGE_LOCAL) {
    d->exchange = WV_EXCHANGE_LOCAL;
    snprintf(d->exchange_reason, sizeof d->exchange_reason,
             "configured local (shuffle would be %s: %.140s)",
             can ? "possible" : "impossible", why);
  } else if (can) {
    d->hash_shuffle = 1;
    d->exchange = WV_EXCHANGE_SHUFFLE;
    snprintf(d->exchange_reason, sizeof d->exchange_reason,
             "subgroupShuffleXor: %.140s%s", why,
             d->maxreconv ? "; maximal reconvergence" : "");
  } else if (cfg->exchange == WV_EXCHANGE_SHUFFLE) {
    d->hash_refused = 1;  /* hash_prepare refuses packs (UNSUPPORTED) */
    d->exchange = WV_EXCHANGE_NONE;
    snprintf(d->exchange_reason, sizeof d->exchange_reason,
             "configured shuffle, which this device cannot do: %.140s", why);
  } else {
    d->exchange = WV_EXCHANGE_LOCAL;
    snprintf(d->exchange_reason, sizeof d->exchange_reason,
             "shared memory: %.140s", why);
  }
}

void wv_vk_close(wv_device *d)
{
  if (d == NULL)
    return;
  if (d->dev != VK_NULL_HANDLE) {
    vkDeviceWaitIdle(d->dev);
    wv_vk_seg_free(d);
    wv_vk_hash_free(d);
    wv_vk_pins_free(d);
    for (unsigned i = 0; i < 2; i++) {
      wv_vk_buf_destroy(d, &d->slot[i].stage);
      wv_vk_buf_destroy(d, &d->part[i]);
      if (d->slot[i].fence != VK_NULL_HANDLE)
        vkDestroyFence(d->dev, d->slot[i].fence, NULL);
      if (d->slot[i].pool != VK_NULL_HANDLE)
        vkDestroyDescriptorPool(d->dev, d->slot[i].pool, NULL);
    }
    wv_vk_buf_destroy(d, &d->seg);
    wv_vk_buf_destroy(d, &d->result);
    for (unsigned p = 0; p < WV_VK_PROG_COUNT_; p++) {
      for (unsigned v = 0; v < WV_VK_SPEC_VARIANTS; v++)
        if (d->pipes[p][v] != VK_NULL_HANDLE)
          vkDestroyPipeline(d->dev, d->pipes[p][v], NULL);
      if (d->modules[p] != VK_NULL_HANDLE)
        vkDestroyShaderModule(d->dev, d->modules[p], NULL);
    }
    if (d->qpool != VK_NULL_HANDLE)
      vkDestroyQueryPool(d->dev, d->qpool, NULL);
    if (d->cache != VK_NULL_HANDLE)
      vkDestroyPipelineCache(d->dev, d->cache, NULL);
    if (d->layout != VK_NULL_HANDLE)
      vkDestroyPipelineLayout(d->dev, d->layout, NULL);
    if (d->dsl != VK_NULL_HANDLE)
      vkDestroyDescriptorSetLayout(d->dev, d->dsl, NULL);
    if (d->cmd_pool != VK_NULL_HANDLE)
      vkDestroyCommandPool(d->dev, d->cmd_pool, NULL);  /* frees the cbs */
    vkDestroyDevice(d->dev, NULL);
  }
  free(d);   /* d->inst is the process's (vo_instance) */
}

/* The process's one VkInstance, created by the first open() that finds a
 * driver and never destroyed.  Devices share it (the instance-level calls
 * used here need no external synchronisation; creation is locked), the
 * loader scans for drivers once, and the driver stays loaded for the life
 * of the process: destroying the last instance unloads it, which turns the
 * driver's own global allocations (lavapipe has one) into "leaks" that the
 * sanitizer build reports at exit against an unknown module.  A failed
 * creation is not remembered: a later open() tries again. */
static pthread_mutex_t vo_inst_lock = PTHREAD_MUTEX_INITIALIZER;
static VkInstance vo_inst;
static uint32_t vo_inst_api;   /* the apiVersion it was created with */

static int vo_instance(VkInstance *out, wave_error *err)
{
  pthread_mutex_lock(&vo_inst_lock);
  VkResult r = VK_SUCCESS;
  if (vo_inst == VK_NULL_HANDLE) {
    uint32_t api = VK_API_VERSION_1_1;
    if (vkEnumerateInstanceVersion(&api) != VK_SUCCESS)
      api = VK_API_VERSION_1_1;
    if (api > VK_API_VERSION_1_3)
      api = VK_API_VERSION_1_3;
    VkApplicationInfo app = {
      .sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
      .pApplicationName = "wavedd",
      .pEngineName = "wavedd",
      .apiVersion = api,
    };
    VkInstanceCreateInfo ii = {
      .sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
      .pApplicationInfo = &app,
    };
    r = vkCreateInstance(&ii, NULL, &vo_inst);
    if (r != VK_SUCCESS)
      vo_inst = VK_NULL_HANDLE;
    else
      vo_inst_api = api;
  }
  *out = vo_inst;
  pthread_mutex_unlock(&vo_inst_lock);
  if (r == VK_ERROR_INCOMPATIBLE_DRIVER || r == VK_ERROR_INITIALIZATION_FAILED)
    return wv_seterr(err, WAVE_ENODEV, "vulkan: no usable Vulkan driver "
                     "(ICD) on this machine: vkCreateInstance: %s",
                     wv_vk_result_name(r));
  if (r != VK_SUCCESS)
    return wv_vk_fail(err, r, "vkCreateInstance");
  return 0;
}

/* The physical device: properties, features, queue family. */
static int vo_pick(wv_device *d, const wv_device_config *cfg, wave_error *err)
{
  uint32_t n = 0;
  VkResult r = vkEnumeratePhysicalDevices(d->inst, &n, NULL);
  if (r != VK_SUCCESS)
    return wv_vk_fail(err, r, "vkEnumeratePhysicalDevices");
  if (n == 0)
    return wv_seterr(err, WAVE_ENODEV, "vulkan: no physical devices");
  VkPhysicalDevice *pd = calloc(n, sizeof *pd);
  if (pd == NULL)
    return wv_seterr(err, WAVE_ENOMEM, NULL);
  r = vkEnumeratePhysicalDevices(d->inst, &n, pd);
  if (r != VK_SUCCESS && r != VK_INCOMPLETE) {
    free(pd);
    return wv_vk_fail(err, r, "vkEnumeratePhysicalDevices");
  }
  if (cfg->index < 0 || (uint32_t)cfg->index >= n) {
    free(pd);
    return wv_seterr(err, WAVE_ENODEV, "vulkan: device index %d, but %u "
                     "physical device%s", cfg->index, n, n == 1 ? "" : "s");
  }
  d->phys = pd[cfg->index];
  free(pd);

  vkGetPhysicalDeviceProperties(d->phys, &d->props);
  vkGetPhysicalDeviceMemoryProperties(d->phys, &d->mem);
  /* Core features of a version are ours only if both the device and the
   * instance we asked for have it. */
  d->api = d->props.apiVersion < vo_inst_api ? d->props.apiVersion
                                             : vo_inst_api;
  if (d->api < VK_API_VERSION_1_1)
    return wv_seterr(err, WAVE_ENODEV, "vulkan: %s supports Vulkan %u.%u; "
                     "1.1 is needed (sub-groups)", d->props.deviceName,
                     VK_API_VERSION_MAJOR(d->props.apiVersion),
                     VK_API_VERSION_MINOR(d->props.apiVersion));

  uint32_t nq = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(d->phys, &nq, NULL);
  VkQueueFamilyProperties *qf = calloc(nq ? nq : 1, sizeof *qf);
  if (qf == NULL)
    return wv_seterr(err, WAVE_ENOMEM, NULL);
  vkGetPhysicalDeviceQueueFamilyProperties(d->phys, &nq, qf);
  int best = -1;
  for (uint32_t i = 0; i < nq; i++) {
    if (!(qf[i].queueFlags & VK_QUEUE_COMPUTE_BIT))
      continue;
    /* Prefer a queue with timestamps, then a compute-only one. */
    int score = (qf[i].timestampValidBits > 0) * 2 +
                !(qf[i].queueFlags & VK_QUEUE_GRAPHICS_BIT);
    if (best < 0 || score > ((qf[best].timestampValidBits > 0) * 2 +
                             !(qf[best].queueFlags & VK_QUEUE_GRAPHICS_BIT)))
      best = (int)i;
  }
  if (best >= 0) {
    d->qfam = (uint32_t)best;
    d->ts_valid_bits = qf[best].timestampValidBits;
  }
  free(qf);
  if (best < 0)
    return wv_seterr(err, WAVE_ENODEV, "vulkan: %s has no compute queue",
                     d->props.deviceName);
  return 0;
}

/* What the device offers, from its extension list and API version. */
typedef struct {
  int v12, v13;
  int sizectl, maxrc, bda, fctl, smb, hostmem, sgext, atom64;
} vo_exts;

/* The property and feature structs of one vo_create_device: queried,
 * then the feature structs are reused, filled with what we enable, as
 * vkCreateDevice's pNext chain (so they live in the caller's frame). */
typedef struct {
  VkPhysicalDeviceSubgroupSizeControlPropertiesEXT szp;
  wv_vk_maxreconv_features mrf;
  VkPhysicalDeviceSubgroupSizeControlFeaturesEXT szf;
  VkPhysicalDeviceBufferDeviceAddressFeaturesKHR bdf;
  VkPhysicalDeviceShaderSubgroupExtendedTypesFeaturesKHR sxf;
  VkPhysicalDeviceShaderAtomicInt64FeaturesKHR a64f;   /* fsum */
  VkPhysicalDeviceFeatures2 f2;
} vo_feats;

static int vo_device_exts(wv_device *d, vo_exts *x, wave_error *err)
{
  uint32_t ne = 0;
  VkResult r = vkEnumerateDeviceExtensionProperties(d->phys, NULL, &ne, NULL);
  if (r != VK_SUCCESS)
    return wv_vk_fail(err, r, "vkEnumerateDeviceExtensionProperties");
  VkExtensionProperties *ext = calloc(ne ? ne : 1, sizeof *ext);
  if (ext == NULL)
    return wv_seterr(err, WAVE_ENOMEM, NULL);
  r = vkEnumerateDeviceExtensionProperties(d->phys, NULL, &ne, ext);
  if (r != VK_SUCCESS && r != VK_INCOMPLETE) {
    free(ext);
    return wv_vk_fail(err, r, "vkEnumerateDeviceExtensionProperties");
  }
  x->v13 = d->api >= VK_API_VERSION_1_3;
  x->sizectl = x->v13 ||
    vo_has_ext(ext, ne, VK_EXT_SUBGROUP_SIZE_CONTROL_EXTENSION_NAME);
  x->maxrc = vo_has_ext(ext, ne, WV_VK_MAXRECONV_EXT);
  x->v12 = d->api >= VK_API_VERSION_1_2;
  x->bda = x->v12 ||
    vo_has_ext(ext, ne, VK_KHR_BUFFER_DEVICE_ADDRESS_EXTENSION_NAME);
  x->fctl = x->v12 ||
    vo_has_ext(ext, ne, VK_KHR_SHADER_FLOAT_CONTROLS_EXTENSION_NAME);
  x->smb = vo_has_ext(ext, ne, VK_NV_SHADER_SM_BUILTINS_EXTENSION_NAME);
  x->hostmem =
    vo_has_ext(ext, ne, VK_EXT_EXTERNAL_MEMORY_HOST_EXTENSION_NAME);
  x->sgext = x->v12 ||
    vo_has_ext(ext, ne, VK_KHR_SHADER_SUBGROUP_EXTENDED_TYPES_EXTENSION_NAME);
  x->atom64 = x->v12 ||
    vo_has_ext(ext, ne, VK_KHR_SHADER_ATOMIC_INT64_EXTENSION_NAME);
  free(ext);
  return 0;
}

/* Properties: sub-groups, and the size-control range (kept in f->szp). */
static void vo_query_props(wv_device *d, const vo_exts *x, vo_feats *f)
{
  f->szp = (VkPhysicalDeviceSubgroupSizeControlPropertiesEXT){
    .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_PROPERTIES_EXT,
  };
  VkPhysicalDeviceFloatControlsPropertiesKHR fcp = {
    .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FLOAT_CONTROLS_PROPERTIES_KHR,
  };
  f->szp.pNext = x->fctl ? &fcp : NULL;
  VkPhysicalDeviceSubgroupProperties sgp = {
    .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES,
    .pNext = x->sizectl ? (void *)&f->szp : x->fctl ? (void *)&fcp : NULL,
  };
  /* The number of SMs sizes the streaming dispatches (wv_vk_groups); only
   * NVIDIA says it, other devices get a generous fixed count. */
  VkPhysicalDeviceShaderSMBuiltinsPropertiesNV smp = {
    .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_SM_BUILTINS_PROPERTIES_NV,
    .pNext = &sgp,
  };
  /* deviceUUID: the same bytes as CUDA's device UUID on NVIDIA, so a
   * job over cuda0 and vk0 knows they are one GPU. */
  VkPhysicalDeviceIDProperties idp = {
    .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES,
    .pNext = x->smb ? (void *)&smp : (void *)&sgp,
  };
  /* Host memory import: the alignment of an imported pointer and size. */
  VkPhysicalDeviceExternalMemoryHostPropertiesEXT hmp = {
    .sType =
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_MEMORY_HOST_PROPERTIES_EXT,
    .pNext = idp.pNext,
  };
  if (x->hostmem)
    idp.pNext = &hmp;
  VkPhysicalDeviceProperties2 p2 = {
    .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
    .pNext = &idp,
  };
  vkGetPhysicalDeviceProperties2(d->phys, &p2);
  memcpy(d->uuid, idp.deviceUUID, sizeof d->uuid);
  d->units = x->smb ? smp.shaderSMCount : 0;
  d->sg_size = sgp.subgroupSize;
  d->sg_min = d->sg_max = sgp.subgroupSize;
  int compute = (sgp.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) != 0;
  d->sg_arith = compute &&
    (sgp.supportedOperations & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT) &&
    (sgp.supportedOperations & VK_SUBGROUP_FEATURE_BASIC_BIT);
  d->sg_shuffle = compute &&
    (sgp.supportedOperations & VK_SUBGROUP_FEATURE_SHUFFLE_BIT) &&
    (sgp.supportedOperations & VK_SUBGROUP_FEATURE_BASIC_BIT);

  d->denorm = x->fctl && fcp.shaderDenormPreserveFloat32;
  d->denorm64 = x->fctl && fcp.shaderDenormPreserveFloat64;
  wv_vk_host_import_check(d, x->hostmem, hmp.minImportedHostPointerAlignment);
  const char *tr = wv_test_hook("WAVE_VK_TRACE");
  d->trace = tr != NULL && strcmp(tr, "1") == 0;
}

/* Features we may turn on (queried through one chain). */
static void vo_query_features(wv_device *d, const vo_exts *x, vo_feats *f)
{
  f->mrf = (wv_vk_maxreconv_features){.sType = WV_VK_STYPE_MAXRECONV};
  f->szf = (VkPhysicalDeviceSubgroupSizeControlFeaturesEXT){
    .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES_EXT,
  };
  f->bdf = (VkPhysicalDeviceBufferDeviceAddressFeaturesKHR){
    .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_BUFFER_DEVICE_ADDRESS_FEATURES_KHR,
  };
  f->sxf = (VkPhysicalDeviceShaderSubgroupExtendedTypesFeaturesKHR){
    .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_SUBGROUP_EXTENDED_TYPES_FEATURES_KHR,
  };
  f->a64f = (VkPhysicalDeviceShaderAtomicInt64FeaturesKHR){
    .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_ATOMIC_INT64_FEATURES_KHR,
  };
  f->f2 = (VkPhysicalDeviceFeatures2){
    .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2,
  };
  void *q = NULL;
  if (x->atom64) { f->a64f.pNext = q; q = &f->a64f; }
  if (x->sgext) { f->sxf.pNext = q; q = &f->sxf; }
  if (x->maxrc) { f->mrf.pNext = q; q = &f->mrf; }
  if (x->sizectl) { f->szf.pNext = q; q = &f->szf; }
  if (x->bda) { f->bdf.pNext = q; q = &f->bdf; }
  f->f2.pNext = q;
  vkGetPhysicalDeviceFeatures2(d->phys, &f->f2);

  if (x->sizectl && f->szf.subgroupSizeControl) {
    d->sg_min = f->szp.minSubgroupSize;
    d->sg_max = f->szp.maxSubgroupSize;
    d->sg_require32 = f->szp.minSubgroupSize <= 32 &&
                      f->szp.maxSubgroupSize >= 32 &&
                      (f->szp.requiredSubgroupSizeStages &
                       VK_SHADER_STAGE_COMPUTE_BIT) != 0;
  } else {
    f->szf.subgroupSizeControl = VK_FALSE;
  }
  if (x->sizectl && f->szf.computeFullSubgroups)
    d->full_subgroups = 1;
  else
    f->szf.computeFullSubgroups = VK_FALSE;
  if (!d->full_subgroups)
    d->sg_require32 = 0;   /* a required size alone does not fill groups */
  d->maxreconv = x->maxrc && f->mrf.shaderMaximalReconvergence &&
                 !d->opt.no_maxreconv;
  d->int64 = f->f2.features.shaderInt64 && !d->opt.no_int64;
  d->float64 = f->f2.features.shaderFloat64 && !d->opt.no_float64;
  d->sg_ext = x->sgext && f->sxf.shaderSubgroupExtendedTypes;
  d->bda = x->bda && f->bdf.bufferDeviceAddress;
  d->atom64_shared = f->a64f.shaderSharedInt64Atomics && d->int64 &&
                     !d->opt.no_atomic64;
  d->atom64_buffer = f->a64f.shaderBufferInt64Atomics && d->int64;
}

/* Enable exactly what we use: f->f2 becomes the feature chain, names[]
 * (room for 8) the extensions; returns their count. */
static uint32_t vo_enable(wv_device *d, const vo_exts *x, vo_feats *f,
                          const char **names)
{
  VkPhysicalDeviceFeatures core = {
    .shaderInt64 = d->int64 ? VK_TRUE : VK_FALSE,
    .shaderFloat64 = d->float64 ? VK_TRUE : VK_FALSE,
  };
  f->f2.features = core;
  uint32_t nn = 0;
  void *chain = NULL;
  if (d->sg_ext) {   /* 64-bit sub-group ops (vk_rec.c) */
    if (!x->v12)
      names[nn++] = VK_KHR_SHADER_SUBGROUP_EXTENDED_TYPES_EXTENSION_NAME;
    f->sxf.shaderSubgroupExtendedTypes = VK_TRUE;
    f->sxf.pNext = chain;
    chain = &f->sxf;
  }
  if (d->bda) {
    if (!x->v12)
      names[nn++] = VK_KHR_BUFFER_DEVICE_ADDRESS_EXTENSION_NAME;
    memset(&f->bdf, 0, sizeof f->bdf);
    f->bdf.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_BUFFER_DEVICE_ADDRESS_FEATURES_KHR;
    f->bdf.bufferDeviceAddress = VK_TRUE;
    f->bdf.pNext = chain;
    chain = &f->bdf;
  }
  if ((d->denorm || d->denorm64) && !x->v12)
    names[nn++] = VK_KHR_SHADER_FLOAT_CONTROLS_EXTENSION_NAME;
  if (d->maxreconv) {
    names[nn++] = WV_VK_MAXRECONV_EXT;
    f->mrf.shaderMaximalReconvergence = VK_TRUE;
    f->mrf.pNext = chain;
    chain = &f->mrf;
  }
  if (x->sizectl && (f->szf.subgroupSizeControl || f->szf.computeFullSubgroups)) {
    if (!x->v13)
      names[nn++] = VK_EXT_SUBGROUP_SIZE_CONTROL_EXTENSION_NAME;
    f->szf.pNext = chain;
    chain = &f->szf;
  }
  if (d->host_import)
    names[nn++] = VK_EXT_EXTERNAL_MEMORY_HOST_EXTENSION_NAME;
  if (d->atom64_shared || d->atom64_buffer) {   /* fsum (vk_xsum.c) */
    if (!x->v12)
      names[nn++] = VK_KHR_SHADER_ATOMIC_INT64_EXTENSION_NAME;
    f->a64f.shaderSharedInt64Atomics = d->atom64_shared ? VK_TRUE : VK_FALSE;
    f->a64f.shaderBufferInt64Atomics = d->atom64_buffer ? VK_TRUE : VK_FALSE;
    f->a64f.pNext = chain;
    chain = &f->a64f;
  }
  f->f2.pNext = chain;
  return nn;
}

static int vo_create_device(wv_device *d, wave_error *err)
{
  vo_exts x = {0};
  vo_feats f;
  int rv = vo_device_exts(d, &x, err);
  if (rv != 0)
    return rv;
  vo_query_props(d, &x, &f);
  vo_query_features(d, &x, &f);
  const char *names[8];
  uint32_t nn = vo_enable(d, &x, &f, names);

  float prio = 1.0f;
  VkDeviceQueueCreateInfo qi = {
    .sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
    .queueFamilyIndex = d->qfam,
    .queueCount = 1,
    .pQueuePriorities = &prio,
  };
  VkDeviceCreateInfo di = {
    .sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
    .pNext = &f.f2,
    .queueCreateInfoCount = 1,
    .pQueueCreateInfos = &qi,
    .enabledExtensionCount = nn,
    .ppEnabledExtensionNames = names,
  };
  VkResult r;
  if ((r = vkCreateDevice(d->phys, &di, NULL, &d->dev)) != VK_SUCCESS)
    return wv_vk_fail(err, r, "vkCreateDevice");
  vkGetDeviceQueue(d->dev, d->qfam, 0, &d->queue);
  if (d->host_import) {
    d->get_host_ptr_props = (PFN_vkGetMemoryHostPointerPropertiesEXT)
      vkGetDeviceProcAddr(d->dev, "vkGetMemoryHostPointerPropertiesEXT");
    if (d->get_host_ptr_props == NULL) {
      d->host_import = 0;
      snprintf(d->host_import_why, sizeof d->host_import_why,
               "vkGetMemoryHostPointerPropertiesEXT not found");
    }
  }
  return 0;
}

static int vo_create_objects(wv_device *d, wave_error *err)
{
  VkResult r;
  VkCommandPoolCreateInfo cpi = {
    .sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
    .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
    .queueFamilyIndex = d->qfam,
  };
  if ((r = vkCreateCommandPool(d->dev, &cpi, NULL, &d->cmd_pool)) != VK_SUCCESS)
    return wv_vk_fail(err, r, "vkCreateCommandPool");

  VkDescriptorSetLayoutBinding b[3];
  for (unsigned i = 0; i < 3; i++)
    b[i] = (VkDescriptorSetLayoutBinding){
      .binding = i,
      .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
      .descriptorCount = 1,
      .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT,
    };
  VkDescriptorSetLayoutCreateInfo li = {
    .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
    .bindingCount = 3,
    .pBindings = b,
  };
  if ((r = vkCreateDescriptorSetLayout(d->dev, &li, NULL, &d->dsl)) != VK_SUCCESS)
    return wv_vk_fail(err, r, "vkCreateDescriptorSetLayout");
  VkPushConstantRange pr = {VK_SHADER_STAGE_COMPUTE_BIT, 0, 64};
  VkPipelineLayoutCreateInfo pli = {
    .sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
    .setLayoutCount = 1,
    .pSetLayouts = &d->dsl,
    .pushConstantRangeCount = 1,
    .pPushConstantRanges = &pr,
  };
  if ((r = vkCreatePipelineLayout(d->dev, &pli, NULL, &d->layout)) != VK_SUCCESS)
    return wv_vk_fail(err, r, "vkCreatePipelineLayout");
  VkPipelineCacheCreateInfo pci = {
    .sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO,
  };
  if ((r = vkCreatePipelineCache(d->dev, &pci, NULL, &d->cache)) != VK_SUCCESS)
    return wv_vk_fail(err, r, "vkCreatePipelineCache");
  if (d->ts_valid_bits > 0) {
    VkQueryPoolCreateInfo qi = {
      .sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
      .queryType = VK_QUERY_TYPE_TIMESTAMP,
      .queryCount = 2,
    };
    if ((r = vkCreateQueryPool(d->dev, &qi, NULL, &d->qpool)) != VK_SUCCESS)
      return wv_vk_fail(err, r, "vkCreateQueryPool");
  }

  VkDescriptorPoolSize ps = {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 3 * VO_POOL_SETS};
  VkDescriptorPoolCreateInfo dpi = {
    .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
    .maxSets = VO_POOL_SETS,
    .poolSizeCount = 1,
    .pPoolSizes = &ps,
  };
  VkFenceCreateInfo fi = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  VkCommandBufferAllocateInfo cai = {
    .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
    .commandPool = d->cmd_pool,
    .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
    .commandBufferCount = 1,
  };
  for (unsigned i = 0; i < 2; i++) {
    wv_vk_slot *s = &d->slot[i];
    if ((r = vkCreateDescriptorPool(d->dev, &dpi, NULL, &s->pool)) != VK_SUCCESS)
      return wv_vk_fail(err, r, "vkCreateDescriptorPool");
    if ((r = vkCreateFence(d->dev, &fi, NULL, &s->fence)) != VK_SUCCESS)
      return wv_vk_fail(err, r, "vkCreateFence");
    if ((r = vkAllocateCommandBuffers(d->dev, &cai, &s->cb)) != VK_SUCCESS)
      return wv_vk_fail(err, r, "vkAllocateCommandBuffers");
    int rc = wv_vk_buf_create(d, (VkDeviceSize)d->window_rows * 4, WV_VK_HOST,
                              &s->stage, err);
    if (rc != 0)
      return rc;
  }
  return wv_vk_buf_create(d, 16, WV_VK_HOST, &d->result, err);
}

int wv_vk_open_ex(const wv_device_config *cfg, const wv_vk_options *opt,
                  wv_device **out, wave_error *err)
{
  *out = NULL;
  wv_device *d = calloc(1, sizeof *d);
  if (d == NULL)
    return wv_seterr(err, WAVE_ENOMEM, NULL);
  if (opt != NULL)
    d->opt = *opt;

  int rc;
  if ((rc = vo_instance(&d->inst, err)) != 0)
    goto fail;
  if ((rc = vo_pick(d, cfg, err)) != 0 ||
      (rc = vo_create_device(d, err)) != 0)
    goto fail;

  /* Staging windows: whole multiples of 1024 rows (256-row groups,
   * 16-byte vectors, any storage offset alignment up to 4 KiB). */
  uint64_t wr = d->opt.window_rows;
  if (wr == 0) {
    uint64_t bytes = d->props.limits.maxStorageBufferRange;
    if (bytes > VO_DEFAULT_WINDOW_BYTES)
      bytes = VO_DEFAULT_WINDOW_BYTES;
    wr = bytes / 4;
  }
  wr = wr / 1024 * 1024;
  if (wr < 1024)
    wr = 1024;
  d->window_rows = (uint32_t)wr;
  /* Streaming passes (reduce_int, stream, sum_f32) loop over blocks in
   * work-groups that stay resident: 16 work-groups of 256 per SM is two
   * full waves at 2048 threads an SM, and stays whole at lower occupancy.
   * An unknown GPU gets the count of a large one (132 SMs); extra
   * work-groups cost only a few more partials.  A CPU driver is the
   * opposite: it runs a work-group's invocations 8 or so at a time, each
   * batch through the whole shader, so a work-group should read one block
   * (32 KiB, cache-resident across its batches): no cap. */
  if (d->props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU)
    d->stream_groups = 65535;
  else
    d->stream_groups = 16 * (d->units ? d->units : 132);
  /* sum.comp gives each group of 256 rows to 8 lanes, which read all
   * of it, so a CPU driver's batches stay on contiguous memory whatever
   * the loop; there fewer work-groups save the per-work-group set-up (on
   * lavapipe 64 ran 1.5x faster than one per 8192 rows).  A GPU gets four
   * times the streaming count: a pass of sum_f32 reads 8 KiB per work-
   * group, not 32, and on the H200 (1 GiB) 8448 work-groups took 249 us,
   * 2112 253 us. */
  d->sum_groups = d->props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU
                    ? 64 : 4 * d->stream_groups;
  if (d->opt.stream_groups != 0)
    d->stream_groups = d->sum_groups = d->opt.stream_groups;
  vo_choose_paths(d, cfg);
  d->hash_units = cfg->group_units ? cfg->group_units : 4;
  if (d->hash_units > 32)
    d->hash_units = 32;
  /* A batch should take a good fraction of a second: far fewer nonces on
   * a CPU driver (lavapipe) than on a GPU.  On a GPU, 2^25 nonces is ~90 ms
   * of the main pack on an H200 and four of hash_batch's 2^23 sub-batches:
   * 2^22 (11 ms) left a job through the daemon at 0.86 of the batch rate,
   * its per-call fold and copy-back exposed every 11 ms. */
  d->hash_batch = d->props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU
                      ? (1u << 15) : (1u << 25);
  if ((rc = vo_create_objects(d, err)) != 0 ||
      (rc = wv_vk_probe_denormals(d, err)) != 0 ||
      (rc = wv_vk_wide_setup(d, err)) != 0)
    goto fail;

  /* May be cut short on a device that lacks much (the notes are last). */
  int nd = snprintf(d->description, sizeof d->description,
           "%.48s, Vulkan %u.%u.%u, sub-group %u (%u..%u)%s%s%s",
           d->props.deviceName, VK_API_VERSION_MAJOR(d->props.apiVersion),
           VK_API_VERSION_MINOR(d->props.apiVersion),
           VK_API_VERSION_PATCH(d->props.apiVersion), d->sg_size, d->sg_min,
           d->sg_max, d->red_sg ? "" : ", no sub-group arithmetic",
           d->fsum_ok ? "" : ", float sums off (flushes subnormals)",
           d->wide_ok ? "" : d->argm_ok ? ", no 64-bit dtypes"
                                        : ", no 64-bit dtypes or argmin");
  if (nd < 0)
    d->description[0] = 0;
  *out = d;
  return 0;
fail:
  wv_vk_close(d);
  return rc;
}

/* ---- the backend --------------------------------------------------------- */

static int vo_open(const wv_device_config *cfg, wv_device **out,
                   wave_error *err)
{
  return wv_vk_open_ex(cfg, NULL, out, err);
}

static void vo_caps(wv_device *d, wv_caps *caps)
{
  memset(caps, 0, sizeof *caps);
  snprintf(caps->description, sizeof caps->description, "%s", d->description);
  /* The sub-group size the kernels run at: the hash's 32 when it requires
   * it, the device's size otherwise. */
  caps->wave_width = d->hash_shuffle && d->sg_require32 ? 32 : d->sg_size;
  caps->native_wave_reduce = d->red_sg;
  caps->exchange_mode = d->exchange;
  caps->reverify = 1;
  snprintf(caps->exchange_reason, sizeof caps->exchange_reason, "%s",
           d->exchange_reason);
  caps->hash_batch = wv_vk_hash_batch(d);
  caps->has_uuid = 1;
  caps->stages_masks = 1;           /* vk_reduce.c */
  caps->dtypes64 = d->wide_ok;      /* vk_rec.c: wide_why says why not */
  caps->argminmax = d->argm_ok;
  if (!d->wide_ok || !d->argm_ok)
    snprintf(caps->wide_why, sizeof caps->wide_why, "%s", d->wide_why);
  wv_vk_xsum_caps(d, caps);         /* vk_xsum.c */
  memcpy(caps->uuid, d->uuid, sizeof caps->uuid);
}

/* Every physical device's deviceUUID, in vkEnumeratePhysicalDevices order
 * (the order vo_pick indexes).  No driver: 0 devices. */
static int vo_list_uuids(unsigned char (*out)[16], size_t max,
                         wave_error *err)
{
  VkInstance inst;
  wave_error e = {0};
  if (vo_instance(&inst, &e) != 0) {
    if (e.code == WAVE_ENODEV)
      return 0;
    *err = e;
    return -1;
  }
  uint32_t n = 0;
  VkResult r = vkEnumeratePhysicalDevices(inst, &n, NULL);
  if (r != VK_SUCCESS) {
    wv_vk_fail(err, r, "vkEnumeratePhysicalDevices");
    return -1;
  }
  if (n == 0)
    return 0;
  VkPhysicalDevice *pd = calloc(n, sizeof *pd);
  if (pd == NULL) {
    wv_seterr(err, WAVE_ENOMEM, NULL);
    return -1;
  }
  r = vkEnumeratePhysicalDevices(inst, &n, pd);
  if (r != VK_SUCCESS && r != VK_INCOMPLETE) {
    free(pd);
    wv_vk_fail(err, r, "vkEnumeratePhysicalDevices");
    return -1;
  }
  for (uint32_t i = 0; i < n && i < max; i++) {
    VkPhysicalDeviceIDProperties idp = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES,
    };
    VkPhysicalDeviceProperties2 p2 = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
      .pNext = &idp,
    };
    vkGetPhysicalDeviceProperties2(pd[i], &p2);
    memcpy(out[i], idp.deviceUUID, sizeof out[i]);
  }
  free(pd);
  return (int)n;
}

const wv_backend wv_vulkan_backend = {
  .name = "vulkan",
  .open = vo_open,
  .close = wv_vk_close,
  .caps = vo_caps,
  .reduce = wv_vk_reduce,
  .hash_prepare = wv_vk_hash_prepare,
  .hash = wv_vk_hash,
  .hash_batch = wv_vk_hash_batch_run,
  .host_register = wv_vk_host_register,
  .host_unregister = wv_vk_host_unregister,
  .host_alloc = wv_vk_host_alloc,
  .host_free = wv_vk_host_free,
  .list_uuids = vo_list_uuids,
};
