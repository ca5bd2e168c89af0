/* vk_hash.c - lottery-hash jobs on a Vulkan device (docs/hash.md).
 *
 * hash_prepare(pack), once per pack and device:
 *  - memory packs: the cache (built on the host by wv_pack_cache_get) is
 *    uploaded, and the dataset is generated on the device from it
 *    (dataset.comp, one item per work-item) into a device-local buffer that
 *    shaders reach by buffer device address; the cache buffer is dropped;
 *  - a pipeline of hash.comp specialized for the pack: its program, seed,
 *    register count and rounds become specialization constants, so the
 *    driver compiles the pack's program as straight-line code.
 * hash(nonce, count, out): every unit (32 nonces) the range touches is
 * computed in full and only requested nonces are stored (docs/hash.md
 * "Units and lanes").  Batches of units alternate between the two slots
 * and their host-visible output buffers, so the device computes batch k + 1
 * while the host copies batch k out.
 *
 * The exchange path (shuffle or shared memory) and its reason were chosen
 * at open (vk_device.c, vd_choose_paths); a device configured for shuffle
 * that cannot do it refuses every pack with WAVE_EUNSUPPORTED.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/base.h"
#include "vk.h"
#include "workers/hash/hash.h"
#include "workers/hash/pack.h"

#define VH_MAX_PACKS 8
#define VH_SPEC_BASE 16u   /* hash.comp: instruction i at 16 + 5 i */
#ifndef VH_DATASET_CHUNK
#define VH_DATASET_CHUNK (1u << 24)   /* items per dataset.comp dispatch */
#endif

typedef struct vh_pack {
  const wv_pack *pack;     /* identity: pointer and contents below */
  char name[64];
  unsigned version;
  uint64_t seed;
  wv_vk_buf dataset;       /* memory packs */
  VkDeviceAddress addr;
  VkPipeline pipe;
} vh_pack;

typedef struct vh_state {
  vh_pack packs[VH_MAX_PACKS];
  unsigned n, next_evict;
  wv_vk_buf out[2];        /* per slot: outputs of its batch */
  struct {
    uint64_t *dst;
    uint64_t n;
  } pending[2];            /* per slot: copy out after its fence */
} vh_state;

static void vh_pack_free(wv_device *d, vh_pack *e)
{
  if (e->pipe != VK_NULL_HANDLE)
    vkDestroyPipeline(d->dev, e->pipe, NULL);
  wv_vk_buf_destroy(d, &e->dataset);
  memset(e, 0, sizeof *e);
}

void wv_vk_hash_free(wv_device *d)
{
  vh_state *h = d->hash_state;
  if (h == NULL)
    return;
  for (unsigned i = 0; i < h->n; i++)
    vh_pack_free(d, &h->packs[i]);
  wv_vk_buf_destroy(d, &h->out[0]);
  wv_vk_buf_destroy(d, &h->out[1]);
  free(h);
  d->hash_state = NULL;
}

uint64_t wv_vk_hash_batch(wv_device *d)
{
  return d->hash_batch;
}

static int vh_same(const vh_pack *e, const wv_pack *p)
{
  return e->pack == p && e->version == p->version && e->seed == p->seed &&
         strcmp(e->name, p->name) == 0;
}

/* The pack's pipeline: hash.comp with the program as constants. */
static int vh_pipeline(wv_device *d, const wv_pack *p, VkPipeline *out,
                       wave_error *err)
{
  enum { N = VH_SPEC_BASE + 5 * WV_PROGRAM_LEN };
  VkSpecializationMapEntry ent[N];
  unsigned char data[N * 8];
  uint32_t n = 0, at = 0;
#define VH_U32(id, v) do { uint32_t x_ = (v); memcpy(data + at, &x_, 4); \
    ent[n++] = (VkSpecializationMapEntry){(id), at, 4}; at += 4; } while (0)
#define VH_U64(id, v) do { uint64_t x_ = (v); memcpy(data + at, &x_, 8); \
    ent[n++] = (VkSpecializationMapEntry){(id), at, 8}; at += 8; } while (0)
  VH_U32(0, 32u * d->hash_units);             /* local_size_x */
  VH_U32(1, p->registers);
  VH_U32(2, p->rounds);
  VH_U32(3, p->closed ? 1u : 0u);
  VH_U64(4, p->seed);
  VH_U64(5, p->item_mask);
  VH_U64(6, p->closed_key);
  unsigned xk = 0;   /* exchanges so far: the local path's buffer parity */
  for (unsigned i = 0; i < WV_PROGRAM_LEN; i++) {
    const wv_insn *in = &p->program[i];
    uint32_t op = in->op;
    if (op == WV_OP_XCHG)
      op |= (xk++ & 1u) << 4;
    VH_U32(VH_SPEC_BASE + 5 * i, op);
    VH_U32(VH_SPEC_BASE + 5 * i + 1, in->dst);
    VH_U32(VH_SPEC_BASE + 5 * i + 2, in->a);
    VH_U32(VH_SPEC_BASE + 5 * i + 3, in->b);
    VH_U64(VH_SPEC_BASE + 5 * i + 4, in->imm);
  }
#undef VH_U32
#undef VH_U64
  /* Six exchanges per round keep the parity of exchange k = 6 round + i
   * equal to that of i; the loader guarantees six (docs/hash.md). */
  if (xk != WV_EXCHANGES)
    return wv_seterr(err, WAVE_EPACKFILE, "pack %s: %u exchanges, not %u",
                     p->name, xk, WV_EXCHANGES);
  VkSpecializationInfo si = {n, ent, at, data};
  enum wv_vk_prog prog = !d->hash_shuffle ? WV_VK_HASH_SM
                       : d->maxreconv ? WV_VK_HASH_SH_MR : WV_VK_HASH_SH;
  return wv_vk_pipeline_new(d, prog, &si,
                            d->hash_shuffle ? WV_VK_FULL | WV_VK_SIZE32 : 0,
                            out, err);
}

/* Upload the cache and generate the dataset into e->dataset. */
static int vh_dataset(wv_device *d, const wv_pack *p, vh_pack *e,
                      wave_error *err)
{
  const uint64_t *cache;
  int rc = wv_pack_cache_get(p, &cache, err);
  if (rc != 0)
    return rc;
  const VkDeviceSize cbytes = p->cache_items * 8;
  const VkDeviceSize dbytes = p->dataset_items * 8;
  VkPhysicalDeviceMaintenance3Properties m3 = {
    .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES,
  };
  VkPhysicalDeviceProperties2 p2 = {
    .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, .pNext = &m3,
  };
  vkGetPhysicalDeviceProperties2(d->phys, &p2);
  if (dbytes > m3.maxMemoryAllocationSize)
    return wv_seterr(err, WAVE_EUNSUPPORTED, "vulkan: pack %s: dataset of "
                     "%llu bytes is more than one allocation may hold (%llu)",
                     p->name, (unsigned long long)dbytes,
                     (unsigned long long)m3.maxMemoryAllocationSize);

  wv_vk_buf up = {0}, dc = {0};
  VkPipeline pipe;
  wv_vk_slot *s;
  if ((rc = wv_vk_pipeline(d, WV_VK_DATASET, 0, &pipe, err)) != 0 ||
      (rc = wv_vk_buf_create(d, cbytes, WV_VK_HOST, &up, err)) != 0 ||
      (rc = wv_vk_buf_create(d, cbytes, WV_VK_ADDR, &dc, err)) != 0 ||
      (rc = wv_vk_buf_create(d, dbytes, WV_VK_ADDR, &e->dataset, err)) != 0)
    goto out;
  memcpy(up.map, cache, cbytes);
  e->addr = wv_vk_buf_addr(d, &e->dataset);
  const VkDeviceAddress caddr = wv_vk_buf_addr(d, &dc);
  if ((rc = wv_vk_slot_begin(d, &s, err)) != 0)
    goto out;
  VkBufferCopy cp = {0, 0, cbytes};
  vkCmdCopyBuffer(s->cb, up.buf, dc.buf, 1, &cp);
  wv_vk_barrier(s);
  const wv_vk_range any = {d->result.buf, 0, d->result.size};
  /* At most 128 dispatches (descriptor sets per slot are limited). */
  uint64_t chunk = (p->dataset_items + 127) / 128;
  if (chunk < VH_DATASET_CHUNK)
    chunk = VH_DATASET_CHUNK;
  for (uint64_t first = 0; first < p->dataset_items; first += chunk) {
    uint64_t left = p->dataset_items - first;
    uint32_t cnt = (uint32_t)(left < chunk ? left : chunk);
    struct {
      uint64_t cache, dataset, first, cmask;
      uint32_t count, parents;
    } push = {caddr, e->addr, first, p->cache_items - 1, cnt, p->parents};
    if ((rc = wv_vk_dispatch(d, s, pipe, any, any, any, &push, sizeof push,
                             (cnt + 255) / 256, err)) != 0)
      goto out;
  }
  wv_vk_barrier(s);
  if ((rc = wv_vk_slot_submit(d, s, err)) != 0 ||
      (rc = wv_vk_wait_all(d, err)) != 0)
    goto out;
out:
  wv_vk_wait_all(d, NULL);   /* nothing may still use up/dc on failure */
  wv_vk_buf_destroy(d, &up);
  wv_vk_buf_destroy(d, &dc);
  return rc;
}

/* The prepared entry for p, preparing it when needed. */
static int vh_get(wv_device *d, const wv_pack *p, vh_pack **out,
                  wave_error *err)
{
  if (d->hash_refused)
    return wv_seterr(err, WAVE_EUNSUPPORTED, "vulkan: %s",
                     d->exchange_reason);
  if (!d->int64 || (!p->closed && !d->bda))
    return wv_seterr(err, WAVE_EUNSUPPORTED, "vulkan: the hash needs %s",
                     !d->int64 ? "shaderInt64" : "bufferDeviceAddress");
  if (d->hash_state == NULL &&
      (d->hash_state = calloc(1, sizeof(vh_state))) == NULL)
    return wv_seterr(err, WAVE_ENOMEM, NULL);
  vh_state *h = d->hash_state;
  for (unsigned i = 0; i < h->n; i++)
    if (vh_same(&h->packs[i], p)) {
      *out = &h->packs[i];
      return 0;
    }
  /* A new pack (or a reloaded one at a recycled address): take a free
   * entry, or drop the oldest. */
  vh_pack *e = NULL;
  for (unsigned i = 0; i < h->n && e == NULL; i++)
    if (h->packs[i].pack == p)
      e = &h->packs[i];
  if (e == NULL && h->n < VH_MAX_PACKS)
    e = &h->packs[h->n++];
  if (e == NULL)
    e = &h->packs[h->next_evict++ % VH_MAX_PACKS];
  int rc = wv_vk_wait_all(d, err);
  if (rc != 0)
    return rc;
  vh_pack_free(d, e);
  if (!p->closed && (rc = vh_dataset(d, p, e, err)) != 0)
    goto fail;
  if ((rc = vh_pipeline(d, p, &e->pipe, err)) != 0)
    goto fail;
  e->pack = p;
  snprintf(e->name, sizeof e->name, "%s", p->name);
  e->version = p->version;
  e->seed = p->seed;
  *out = e;
  return 0;
fail:
  vh_pack_free(d, e);   /* stays a free entry (pack NULL) */
  return rc;
}

int wv_vk_hash_prepare(wv_device *d, const struct wv_pack *pack,
                       wave_error *err)
{
  vh_pack *e;
  return vh_get(d, pack, &e, err);
}

int wv_vk_hash_pipe(wv_device *d, const struct wv_pack *pack,
                    VkPipeline *pipe, VkDeviceAddress *dataset,
                    uint64_t *units_per_dispatch, wave_error *err)
{
  vh_pack *e;
  int rc = vh_get(d, pack, &e, err);
  if (rc != 0)
    return rc;
  *pipe = e->pipe;
  *dataset = e->addr;
  /* hash.comp does not loop: one work-group per hash_units units, and at
   * most 2^15 work-groups a dispatch (wv_vk_groups caps at 65535). */
  *units_per_dispatch = 32768ull * d->hash_units;
  return 0;
}

int wv_vk_hash_outbuf(wv_device *d, unsigned slot, uint64_t nonces,
                      wv_vk_buf **out, wave_error *err)
{
  vh_state *h = d->hash_state;
  if (nonces * 8 > d->props.limits.maxStorageBufferRange)
    return wv_seterr(err, WAVE_EUNSUPPORTED, "vulkan: %llu outputs are more "
                     "than one binding may hold", (unsigned long long)nonces);
  int rc = wv_vk_buf_reserve(d, &h->out[slot], nonces * 8, WV_VK_HOST, err);
  *out = &h->out[slot];
  return rc;
}

static void vh_flush(vh_state *h, unsigned slot)
{
  if (h->pending[slot].n > 0)
    memcpy(h->pending[slot].dst, h->out[slot].map, h->pending[slot].n * 8);
  h->pending[slot].n = 0;
}

int wv_vk_hash(wv_device *d, const struct wv_pack *pack, uint64_t nonce,
               uint64_t count, uint64_t *out, wave_error *err)
{
  if (count == 0)
    return 0;
  if (nonce + (count - 1) < nonce)
    return wv_seterr(err, WAVE_ERANGE, "nonce range past 2^64");
  vh_pack *e;
  int rc = vh_get(d, pack, &e, err);
  if (rc != 0)
    return rc;
  vh_state *h = d->hash_state;
  /* Units per batch: one dispatch of at most 2^15 work-groups, outputs
   * (256 bytes a unit) in one binding of at most 64 MiB. */
  uint64_t range = d->props.limits.maxStorageBufferRange;
  if (range > (64u << 20))
    range = 64u << 20;
  uint64_t per_batch = 32768ull * d->hash_units;
  if (per_batch > range / 256)
    per_batch = range / 256;
  if (d->opt.batch_units != 0)
    per_batch = d->opt.batch_units;   /* tests: many small batches */
  const uint64_t last = nonce + (count - 1);
  const uint64_t u_first = nonce / 32, u_last = last / 32;
  for (unsigned i = 0; i < 2; i++)
    if ((rc = wv_vk_buf_reserve(d, &h->out[i],
                                per_batch * 32 * 8, WV_VK_HOST, err)) != 0)
      return rc;

  uint64_t u = u_first;
  for (;;) {
    uint64_t units = u_last - u < per_batch - 1 ? u_last - u + 1 : per_batch;
    uint64_t lo = u * 32 > nonce ? u * 32 : nonce;
    uint64_t hi = (u + units - 1) * 32 + 31;   /* may wrap at 2^64 - 1 */
    if (u + units - 1 == u_last || hi > last)
      hi = last;
    unsigned si = d->cur;
    wv_vk_slot *s;
    if ((rc = wv_vk_slot_begin(d, &s, err)) != 0)
      goto fail;
    vh_flush(h, si);   /* the slot's previous batch is complete */
    struct {
      uint64_t dataset, unit0, last_unit, lo, count;
    } push = {e->addr, u, u_last, lo, hi - lo + 1};
    wv_vk_range o = {h->out[si].buf, 0, h->out[si].size};
    if ((rc = wv_vk_dispatch(d, s, e->pipe, o, o, o, &push, sizeof push,
                             (units + d->hash_units - 1) / d->hash_units,
                             err)) != 0)
      goto fail;
    wv_vk_barrier(s);
    if ((rc = wv_vk_slot_submit(d, s, err)) != 0)
      goto fail;
    h->pending[si].dst = out + (lo - nonce);
    h->pending[si].n = hi - lo + 1;
    if (u + units - 1 == u_last)
      break;
    u += units;
  }
  if ((rc = wv_vk_wait_all(d, err)) != 0)
    goto fail;
  vh_flush(h, 0);
  vh_flush(h, 1);
  return 0;
fail:
  h->pending[0].n = h->pending[1].n = 0;
  return rc;
}
