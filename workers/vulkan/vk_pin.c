/* vk_pin.c - host memory imported for the device: the host_register and
 * host_unregister slots (workers/worker.h) with VK_EXT_external_memory_host.
 *
 * A shared-memory region (daemon/region.c, docs/protocol.md "Regions") is
 * mapped read-only by the daemon.  Registering a piece of it imports the
 * piece's pages as device memory (VkImportMemoryHostPointerInfoEXT, handle
 * type HOST_ALLOCATION) and binds one VkBuffer (VkExternalMemoryBuffer-
 * CreateInfo, storage usage) to the whole import: the device then reads
 * the rows where they are, and vk_reduce.c binds windows of that buffer
 * instead of copying the rows into its staging windows.
 *
 * Alignment: the pointer and size of an import must be multiples of
 * minImportedHostPointerAlignment (4 KiB on lavapipe and NVIDIA).  A piece
 * is imported aligned inward, [round up(ptr), round down(ptr + bytes)), so
 * nothing outside the memory the caller named is ever imported; the few
 * rows of a piece's unaligned ends are staged like unpinned rows.  A piece
 * smaller than one aligned block imports nothing and succeeds.
 *
 * Refusals are not device faults (worker.h): WAVE_EUNSUPPORTED where the
 * device cannot import at all (open decides once: wv_vk_host_import_check
 * at the end of this file),
 * WAVE_EARG where this import fails (overlap with an imported piece, a
 * driver that will not take these pages: the import of a read-only mapping
 * is the doubtful case on GPU drivers; lavapipe takes it, since it only
 * reads through the pointer).  Everything made for a failed import is
 * destroyed before returning.
 *
 * The pieces are kept in d->pins, sorted by address and disjoint; lookups
 * (vk_reduce.c, per span) bisect.  Device thread only, like every slot.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/base.h"
#include "vk.h"

/* Index of the first piece whose end is above p (n_pins when none). */
static size_t vp_lower(const wv_device *d, const unsigned char *p)
{
  size_t lo = 0, hi = d->n_pins;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (d->pins[mid].hi <= p)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

const wv_vk_pin *wv_vk_pin_find(const wv_device *d, const void *p,
                                const unsigned char **next)
{
  const unsigned char *b = p;
  size_t i = vp_lower(d, b);
  if (i < d->n_pins && d->pins[i].lo <= b) {
    if (next != NULL)
      *next = i + 1 < d->n_pins ? d->pins[i + 1].lo : NULL;
    return &d->pins[i];
  }
  if (next != NULL)
    *next = i < d->n_pins ? d->pins[i].lo : NULL;
  return NULL;
}

/* Room for one more piece in d->pins. */
static int vp_reserve(wv_device *d, wave_error *err)
{
  if (d->n_pins < d->cap_pins)
    return 0;
  size_t cap = d->cap_pins ? 2 * d->cap_pins : 8;
  wv_vk_pin *np = realloc(d->pins, cap * sizeof *np);
  if (np == NULL)
    return wv_seterr(err, WAVE_ENOMEM, NULL);
  d->pins = np;
  d->cap_pins = cap;
  return 0;
}

/* pin at index at (vp_lower's answer), room reserved. */
static void vp_insert(wv_device *d, size_t at, const wv_vk_pin *pin)
{
  memmove(&d->pins[at + 1], &d->pins[at], (d->n_pins - at) * sizeof *pin);
  d->pins[at] = *pin;
  d->n_pins++;
}

static void vp_destroy(wv_device *d, wv_vk_pin *pin)
{
  if (pin->buf != VK_NULL_HANDLE)
    vkDestroyBuffer(d->dev, pin->buf, NULL);
  if (pin->mem != VK_NULL_HANDLE)
    vkFreeMemory(d->dev, pin->mem, NULL);
  pin->buf = VK_NULL_HANDLE;
  pin->mem = VK_NULL_HANDLE;
}

/* Import [lo, lo + size) into pin (lo and size aligned) as handle type
 * ht. */
static int vp_import_as(wv_device *d, const unsigned char *lo,
                        VkDeviceSize size,
                        VkExternalMemoryHandleTypeFlagBits ht, wv_vk_pin *pin,
                        wave_error *err)
{
  memset(pin, 0, sizeof *pin);
  VkMemoryHostPointerPropertiesEXT hp = {
    .sType = VK_STRUCTURE_TYPE_MEMORY_HOST_POINTER_PROPERTIES_EXT,
  };
  VkResult r = d->get_host_ptr_props(d->dev, ht, lo, &hp);
  if (r != VK_SUCCESS)
    return wv_seterr(err, WAVE_EARG, "vulkan: host memory at %p cannot be "
                     "imported: vkGetMemoryHostPointerPropertiesEXT: %s",
                     (const void *)lo, wv_vk_result_name(r));
  VkExternalMemoryBufferCreateInfo ebi = {
    .sType = VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_BUFFER_CREATE_INFO,
    .handleTypes = ht,
  };
  VkBufferCreateInfo bi = {
    .sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
    .pNext = &ebi,
    .size = size,
    .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT |
             VK_BUFFER_USAGE_TRANSFER_SRC_BIT,
    .sharingMode = VK_SHARING_MODE_EXCLUSIVE,
  };
  if ((r = vkCreateBuffer(d->dev, &bi, NULL, &pin->buf)) != VK_SUCCESS) {
    pin->buf = VK_NULL_HANDLE;
    return wv_seterr(err, WAVE_EARG, "vulkan: import of %" PRIu64 " bytes: "
                     "vkCreateBuffer: %s", (uint64_t)size,
                     wv_vk_result_name(r));
  }
  VkMemoryRequirements req;
  vkGetBufferMemoryRequirements(d->dev, pin->buf, &req);
  uint32_t bits = req.memoryTypeBits & hp.memoryTypeBits;
  int type = -1;
  /* Any type the pointer allows; host-cached ones first (the pages are
   * ordinary cached memory, and that is what a CPU driver reports). */
  for (int pass = 0; pass < 2 && type < 0; pass++)
    for (uint32_t i = 0; i < d->mem.memoryTypeCount; i++) {
      VkMemoryPropertyFlags f = d->mem.memoryTypes[i].propertyFlags;
      if ((bits & (1u << i)) &&
          (pass == 1 || (f & VK_MEMORY_PROPERTY_HOST_CACHED_BIT))) {
        type = (int)i;
        break;
      }
    }
  if (type < 0 || req.size > size) {
    vp_destroy(d, pin);
    return wv_seterr(err, WAVE_EARG, "vulkan: import of %" PRIu64 " bytes: "
                     "%s", (uint64_t)size,
                     type < 0 ? "no memory type serves both the host pointer "
                                "and a storage buffer"
                              : "the buffer needs more memory than its pages");
  }
  VkImportMemoryHostPointerInfoEXT imp = {
    .sType = VK_STRUCTURE_TYPE_IMPORT_MEMORY_HOST_POINTER_INFO_EXT,
    .handleType = ht,
    .pHostPointer = (void *)lo,   /* the device only reads it */
  };
  VkMemoryAllocateInfo ai = {
    .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
    .pNext = &imp,
    .allocationSize = size,
    .memoryTypeIndex = (uint32_t)type,
  };
  if ((r = vkAllocateMemory(d->dev, &ai, NULL, &pin->mem)) != VK_SUCCESS) {
    pin->mem = VK_NULL_HANDLE;
    vp_destroy(d, pin);
    return wv_seterr(err, WAVE_EARG, "vulkan: import of %" PRIu64 " bytes "
                     "at %p: vkAllocateMemory: %s", (uint64_t)size,
                     (const void *)lo, wv_vk_result_name(r));
  }
  if ((r = vkBindBufferMemory(d->dev, pin->buf, pin->mem, 0)) != VK_SUCCESS) {
    vp_destroy(d, pin);
    return wv_seterr(err, WAVE_EARG, "vulkan: import of %" PRIu64 " bytes: "
                     "vkBindBufferMemory: %s", (uint64_t)size,
                     wv_vk_result_name(r));
  }
  pin->lo = lo;
  pin->hi = lo + size;
  return 0;
}

/* A region is a MAP_SHARED mapping of a memfd: a driver may take it as a
 * host allocation (lavapipe does) or only as memory "mapped from foreign
 * memory" (the extension's other handle type; NVIDIA refused the first
 * with OUT_OF_DEVICE_MEMORY on the H200 host), so both are tried. */
static int vp_import(wv_device *d, const unsigned char *lo, VkDeviceSize size,
                     wv_vk_pin *pin, wave_error *err)
{
  wave_error first = {0};
  if (vp_import_as(d, lo, size,
                   VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT, pin,
                   &first) == 0)
    return 0;
  wave_error second = {0};
  if (vp_import_as(d, lo, size,
                   VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_MAPPED_FOREIGN_MEMORY_BIT_EXT,
                   pin, &second) == 0)
    return 0;
  return wv_seterr(err, first.code, "%.200s; as foreign memory: %.200s",
                   first.message, second.message);
}

int wv_vk_host_register(wv_device *d, const void *ptr, size_t bytes,
                        wave_error *err)
{
  if (!d->host_import)
    return wv_seterr(err, WAVE_EUNSUPPORTED, "vulkan: %s",
                     d->host_import_why);
  if (ptr == NULL || bytes == 0)
    return wv_seterr(err, WAVE_EARG, "vulkan: host_register of nothing");
  const uintptr_t a = (uintptr_t)d->import_align;
  const uintptr_t p = (uintptr_t)ptr;
  if (p + bytes < p)
    return wv_seterr(err, WAVE_EARG, "vulkan: host_register: the range "
                     "wraps around the address space");
  const uintptr_t lo = (p + a - 1) & ~(a - 1), hi = (p + bytes) & ~(a - 1);
  if (hi <= lo)
    return 0;   /* no whole aligned block: its rows are staged */
  const unsigned char *blo = (const unsigned char *)lo;
  const unsigned char *bhi = (const unsigned char *)hi;
  size_t at = vp_lower(d, blo);
  if (at < d->n_pins && d->pins[at].lo < bhi)
    return wv_seterr(err, WAVE_EARG, "vulkan: host_register: [%p, %p) "
                     "overlaps a piece already imported", ptr,
                     (const void *)(p + bytes));
  if (vp_reserve(d, err) != 0)
    return err->code;
  wv_vk_pin pin;
  int rc = vp_import(d, blo, (VkDeviceSize)(hi - lo), &pin, err);
  if (rc != 0)
    return rc;
  vp_insert(d, at, &pin);
  return 0;
}

void wv_vk_host_unregister(wv_device *d, const void *ptr, size_t bytes)
{
  if (d->n_pins == 0 || bytes == 0)
    return;
  const unsigned char *lo = ptr, *hi = lo + bytes;
  /* No submitted work may still read a piece (reductions wait for their
   * own, but make sure). */
  wave_error e = {0};
  if (wv_vk_wait_all(d, &e) != 0)
    vkDeviceWaitIdle(d->dev);
  size_t keep = 0;
  for (size_t i = 0; i < d->n_pins; i++) {
    wv_vk_pin *pin = &d->pins[i];
    if (pin->lo >= lo && pin->hi <= hi)
      vp_destroy(d, pin);
    else
      d->pins[keep++] = *pin;
  }
  d->n_pins = keep;
}

void wv_vk_pins_free(wv_device *d)
{
  for (size_t i = 0; i < d->n_pins; i++)
    vp_destroy(d, &d->pins[i]);
  free(d->pins);
  d->pins = NULL;
  d->n_pins = d->cap_pins = 0;
}

/* ---- open() ------------------------------------------------------------ */

/* Whether shared-memory regions can be imported (open()): the
 * extension, a sane alignment, and storage buffers importable from a host
 * allocation.  The reason for a no goes to host_register's refusals. */
void wv_vk_host_import_check(wv_device *d, int has_ext, VkDeviceSize align)
{
  d->host_import = 0;
  const char *why = NULL;
  if (d->opt.no_host_import)
    why = "host memory import switched off (wv_vk_options)";
  else if (!has_ext)
    why = "no VK_EXT_external_memory_host";
  else if (align == 0 || (align & (align - 1)) != 0 || align > (1u << 21))
    why = "odd minImportedHostPointerAlignment";
  if (why == NULL) {
    VkPhysicalDeviceExternalBufferInfo bi = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_BUFFER_INFO,
      .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT,
      .handleType = VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT,
    };
    VkExternalBufferProperties ep = {
      .sType = VK_STRUCTURE_TYPE_EXTERNAL_BUFFER_PROPERTIES,
    };
    vkGetPhysicalDeviceExternalBufferProperties(d->phys, &bi, &ep);
    if (!(ep.externalMemoryProperties.externalMemoryFeatures &
          VK_EXTERNAL_MEMORY_FEATURE_IMPORTABLE_BIT))
      why = "storage buffers cannot be imported from host allocations";
  }
  if (why != NULL) {
    snprintf(d->host_import_why, sizeof d->host_import_why, "%s", why);
    return;
  }
  d->host_import = 1;
  d->import_align = align;
}

/* ---- memory of the device's own for the daemon's rings ------------------ */

int wv_vk_host_alloc(wv_device *d, size_t bytes, void **out, wave_error *err)
{
  *out = NULL;
  if (bytes == 0)
    return wv_seterr(err, WAVE_EARG, "vulkan: host_alloc of nothing");
  if (vp_reserve(d, err) != 0)
    return err->code;
  wv_vk_buf b;
  wave_error e = {0};
  if (wv_vk_buf_create(d, bytes, WV_VK_HOST | WV_VK_RING, &b, &e) != 0)
    /* out of such memory is a refusal, not a device fault: the daemon
     * falls back to its own pages */
    return wv_seterr(err, WAVE_ENOMEM, "vulkan: %zu bytes of host-visible "
                     "memory: %.200s", bytes, e.message);
  const unsigned char *lo = b.map;
  size_t at = vp_lower(d, lo);
  vp_insert(d, at, &(wv_vk_pin){.lo = lo, .hi = lo + bytes, .buf = b.buf,
                                .mem = b.mem});
  *out = b.map;
  return 0;
}

void wv_vk_host_free(wv_device *d, void *p, size_t bytes)
{
  wv_vk_host_unregister(d, p, bytes);  /* vkFreeMemory unmaps it */
}
