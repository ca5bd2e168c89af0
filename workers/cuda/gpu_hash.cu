/* gpu_hash.cu - the lottery hash (docs/hash.md) on CUDA and HIP.
 *
 * One 32-lane unit per warp (half a wave on wave64).  The program is data:
 * it sits in constant memory with the pack's parameters (one slot per
 * device: devices of one GPU share its context, so its constant memory,
 * and one device's program must not replace another's under its running
 * kernels -- which, with two devices on GPU 0, faulted) and every thread
 * interprets it with uniform control flow (all lanes run the same
 * instruction).  A lane's registers are indexed by the program at run time,
 * so they live in shared memory, laid out [register][thread] so that a
 * warp's 64-bit accesses are conflict-free; an array in real registers
 * would be demoted to local memory by the compiler anyway.
 *
 * Exchanges (xchg) follow docs/hash.md "Exchange paths":
 *   shuffle - __shfl_xor_sync of the two 32-bit halves (the unit is exactly
 *             one 32-lane warp, or a 32-wide wave);
 *   local   - two alternating shared buffers X[k & 1] and one barrier per
 *             exchange (any wave size; what wave64 hardware uses).
 * `exchange: auto` picks shuffle when the wave is 32 lanes, else local.
 *
 * Loads are per-lane random 8-byte reads of the dataset, which is generated
 * on the device from the cache (built on the host, uploaded) and
 * spot-checked against the CPU's wv_item_from_cache() before first use.
 * Outputs go to the host through the pinned staging slots in sub-batches,
 * the copy of one overlapping the hashing of the next.
 *
 * hash_prepare also compiles the pack's own kernel (gpu_jit.cu: straight-
 * line code, registers in registers; 1.26x this one on the H200) and,
 * once it gives k_hash's outputs, hash_launch runs that instead; k_hash is
 * the fallback (no libnvrtc, HIP, WAVE_CUDA_NVRTC=0, a failed compile).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vector>

#include "core/testhook.h"
#include "workers/cuda/gpu_internal.h"

#define WV_HASH_FN static __host__ __device__ inline
extern "C" {
#include "workers/hash/pack.h"
}

namespace WVG_NS {

/* Loads in flight per lane.  A load only XORs into its destination
 * register, so its value can wait in one of WVG_DEFER pending slots until
 * an instruction reads or overwrites that register; the interpreter then
 * stalls on the load only there, and up to WVG_DEFER loads of a lane fly at
 * once.  Where to settle each slot is worked out on the host from the
 * program (hash_schedule): it is the same for every lane and every round. */
#define WVG_DEFER 4

/* One instruction as the kernel sees it: the pack's fields, the pending
 * slot a LOAD fills, and the slots to settle (XOR into rdst[s]) before the
 * instruction runs. */
struct hinsn {
  uint32_t op, dst, a, b;
  uint64_t imm;
  uint32_t slot, settle;
  uint8_t rdst[WVG_DEFER];
  uint32_t pad;
};

/* The pack as the kernel sees it. */
struct hprog {
  hinsn prog[WV_PROGRAM_LEN];
  uint64_t seed, item_mask, closed_key;
  uint32_t regs, rounds;
  uint32_t settle;                /* after the last round */
  uint8_t rdst[WVG_DEFER];
};

#define WVG_HP_SLOTS 8  /* devices of one GPU with their own program */
__constant__ hprog c_hp[WVG_HP_SLOTS];

/* The slots taken on each GPU (by ordinal), for the process. */
static struct {
  int ordinal;
  uint32_t used;
} hp_slots[64];
static pthread_mutex_t hp_slots_mu = PTHREAD_MUTEX_INITIALIZER;

static int hp_slot_take(int ordinal)
{
  int got = -1, at = -1;
  pthread_mutex_lock(&hp_slots_mu);
  for (int i = 0; i < 64; i++)
    if (hp_slots[i].used != 0 && hp_slots[i].ordinal == ordinal)
      at = i;
  for (int i = 0; i < 64 && at < 0; i++)
    if (hp_slots[i].used == 0)
      at = i;
  for (int s = 0; at >= 0 && s < WVG_HP_SLOTS && got < 0; s++)
    if (!(hp_slots[at].used & (1u << s))) {
      hp_slots[at].ordinal = ordinal;
      hp_slots[at].used |= 1u << s;
      got = at * WVG_HP_SLOTS + s;
    }
  pthread_mutex_unlock(&hp_slots_mu);
  return got;  /* -1: this GPU's slots are all taken */
}

static void hp_slot_give(int slot)
{
  if (slot < 0)
    return;
  pthread_mutex_lock(&hp_slots_mu);
  hp_slots[slot / WVG_HP_SLOTS].used &= ~(1u << (slot % WVG_HP_SLOTS));
  pthread_mutex_unlock(&hp_slots_mu);
}

#define WVG_HASH_SMEM_MAX (48u << 10)   /* without opting in to more */
#define WVG_HASH_SUB (8u << 20)         /* nonces per output sub-batch */

__device__ __forceinline__ uint64_t shfl_xor64(uint64_t v, int m)
{
  uint32_t lo = shfl_xor((uint32_t)v, m), hi = shfl_xor((uint32_t)(v >> 32), m);
  return ((uint64_t)hi << 32) | lo;
}

/* XOR the pending loads named by `settle` into their registers. */
__device__ __forceinline__ void settle(uint64_t *reg, uint32_t G, uint32_t m,
                                       const uint8_t *rdst, uint64_t p[])
{
#pragma unroll
  for (int s = 0; s < WVG_DEFER; s++)
    if (m & (1u << s))
      reg[rdst[s] * G] ^= p[s];
}

/* Outputs of nonces [nonce, nonce + count) for units u0 .. u0 + nunits - 1;
 * thread t of the grid is lane t % 32 of unit u0 + t / 32.  Threads of
 * units past the range run in full (barriers) and store nothing. */
template <bool LOCAL, bool CLOSED>
__global__ void __launch_bounds__(1024)
k_hash(const uint64_t *__restrict__ data, uint64_t u0, uint64_t nunits,
       uint64_t nonce, uint64_t count, uint64_t *out, unsigned slot)
{
  extern __shared__ uint64_t sm[];
  const hprog &P = c_hp[slot];
  const uint32_t G = blockDim.x, tid = threadIdx.x, R = P.regs;
  uint64_t *reg = sm + tid;               /* reg[j * G]: register j */
  uint64_t *X = sm + (size_t)R * G;       /* LOCAL: X[2][G] */
  const uint64_t k = (uint64_t)blockIdx.x * (G / 32) + tid / 32;
  const uint64_t n = (u0 + k) * 32 + lane_id();
  const uint64_t seed = P.seed, mask = P.item_mask;
  /* Pending loads; 0 until filled, so settling an unfilled slot (first
   * round) changes nothing. */
  uint64_t p[WVG_DEFER];
#pragma unroll
  for (int s = 0; s < WVG_DEFER; s++)
    p[s] = 0;

  for (uint32_t j = 0; j < R; j++)
    reg[j * G] = wv_lane_init(seed, n, j);
  uint32_t xk = 0;
  for (uint32_t round = 0; round < P.rounds; round++) {
    for (uint32_t pc = 0; pc < WV_PROGRAM_LEN; pc++) {
      const hinsn &I = P.prog[pc];
      const uint32_t op = I.op, dst = I.dst, b = I.b;
      if (!CLOSED && I.settle != 0)
        settle(reg, G, I.settle, I.rdst, p);
      const uint64_t va = reg[I.a * G];
      uint64_t v;
      switch (op) {
      case WV_OP_ADD: v = va + reg[b * G]; break;
      case WV_OP_SUB: v = va - reg[b * G]; break;
      case WV_OP_XOR: v = va ^ reg[b * G]; break;
      case WV_OP_MUL: v = va * reg[b * G]; break;
      case WV_OP_ROTL: v = (va << b) | (va >> (64u - b)); break;
      case WV_OP_XSHR: v = va ^ (va >> b); break;
      case WV_OP_ADDI: v = va + I.imm; break;
      case WV_OP_MULI: v = va * I.imm; break;
      case WV_OP_LOAD:
        if (CLOSED) {
          v = reg[dst * G] ^ wv_item_closed(P.closed_key, va & mask);
          break;
        }
        /* Straight into the pending slot's register: moving it there
         * would wait for the load.  (Constant indices keep p[] in
         * registers.)  On CUDA, four predicated loads in straight-line
         * code: with a switch, ptxas merged the cases into one load and
         * predicated moves, which wait for the data. */
#if defined(WV_GPU_HIP)
        switch (I.slot) {
        case 0: p[0] = __ldg(&data[va & mask]); break;
        case 1: p[1] = __ldg(&data[va & mask]); break;
        case 2: p[2] = __ldg(&data[va & mask]); break;
        default: p[3] = __ldg(&data[va & mask]); break;
        }
#else
        {
          const uint64_t *ap = &data[va & mask];
          const uint32_t sl = I.slot;
#define WVG_LD_SLOT(S)                                                         \
  asm volatile("{\n\t.reg .pred q;\n\tsetp.eq.u32 q, %1, " #S ";\n\t"       \
               "@q ld.global.nc.u64 %0, [%2];\n\t}"                          \
               : "+l"(p[S]) : "r"(sl), "l"(ap))
          WVG_LD_SLOT(0);
          WVG_LD_SLOT(1);
          WVG_LD_SLOT(2);
          WVG_LD_SLOT(3);
#undef WVG_LD_SLOT
        }
#endif
        continue;
      default: /* WV_OP_XCHG: all reads before any write */
        if (LOCAL) {
          uint64_t *x = X + (xk & 1) * G;
          x[tid] = va;
          __syncthreads();
          v = x[tid ^ b];
          xk++;
        } else {
          v = shfl_xor64(va, (int)b);
        }
        break;
      }
      reg[dst * G] = v;
    }
  }
  if (!CLOSED)
    settle(reg, G, P.settle, P.rdst, p);
  uint64_t h = seed ^ WV_TAG_OUT;
  for (uint32_t j = 0; j < R; j++)
    h = wv_mix64(h + reg[j * G]);
  if (k < nunits && n - nonce < count)
    out[n - nonce] = h;
}

__global__ void k_dataset(const uint64_t *__restrict__ cache,
                          uint64_t cache_items, unsigned parents, uint64_t n,
                          uint64_t *d)
{
  for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (uint64_t)gridDim.x * blockDim.x)
    d[i] = wv_item_from_cache(cache, cache_items, parents, i);
}

/* Spot-check indices: 0, N-1, then spread pseudo-randomly. */
WV_HASH_FN uint64_t spot_index(unsigned k, uint64_t n)
{
  if (k == 0)
    return 0;
  if (k == 1)
    return n - 1;
  return wv_mix64(k ^ 0x5eed5eed5eed5eedull) & (n - 1);
}

#define WVG_SPOTS 4096u

__global__ void k_spot(const uint64_t *d, uint64_t n, uint64_t *out)
{
  unsigned k = blockIdx.x * blockDim.x + threadIdx.x;
  if (k < WVG_SPOTS)
    out[k] = d[spot_index(k, n)];
}

/* ---- host side ---------------------------------------------------------- */

#define CK(call)                                                               \
  do {                                                                         \
    cudaError_t e_ = (call);                                                   \
    if (e_ != cudaSuccess)                                                     \
      return dev_fail(err, #call, e_);                                         \
  } while (0)

void hash_init(gdev *g, const wv_device_config *cfg)
{
  /* 4 units (128 threads): a lane's registers take 8 R bytes of shared
   * memory, and smaller blocks waste less of it per SM (1 KB reserved per
   * block on sm_90). */
  g->group_units = cfg->group_units > 0 ? cfg->group_units : 4;
  g->hp_slot = hp_slot_take(g->index);
  if (g->group_units > 32)
    g->group_units = 32;
  /* Per-pack kernels: on unless WAVE_CUDA_NVRTC=0 (docs/backends.md);
   * WAVE_CUDA_NVRTC_UNROLL=0 keeps a loop over the rounds;
   * WAVE_CUDA_NVRTC_MINBLOCKS=B asks ptxas for B resident blocks per SM. */
  const char *jv = wv_test_hook("WAVE_CUDA_NVRTC");
  const char *ju = wv_test_hook("WAVE_CUDA_NVRTC_UNROLL");
  const int want_jit = !(jv != NULL && strcmp(jv, "0") == 0);
  g->jit = want_jit && jit_available();
  g->jit_unroll = !(ju != NULL && strcmp(ju, "0") == 0);
  const char *jm = wv_test_hook("WAVE_CUDA_NVRTC_MINBLOCKS");
  g->jit_minblocks = jm != NULL ? (unsigned)strtoul(jm, NULL, 10) : 0;
  if (g->jit_minblocks > 32)
    g->jit_minblocks = 32;
  if (g->jit)
    snprintf(g->jit_note, sizeof g->jit_note,
             "kernel: nvrtc per pack (none prepared yet)");
  else
    snprintf(g->jit_note, sizeof g->jit_note, "kernel: interpreter (%s)",
             !want_jit ? "WAVE_CUDA_NVRTC=0" : jit_missing());
  if (cfg->exchange == WV_EXCHANGE_LOCAL) {
    g->local = 1;
    snprintf(g->exchange_reason, sizeof g->exchange_reason,
             "configured: local memory, two buffers, one barrier");
  } else if (cfg->exchange == WV_EXCHANGE_SHUFFLE) {
    g->local = 0;
    snprintf(g->exchange_reason, sizeof g->exchange_reason,
             g->warp == 32 ? "configured: wave %d = one unit (shuffle xor)"
                           : "configured shuffle, but wave %d != 32",
             g->warp);
  } else {
    g->local = g->warp != 32;
    snprintf(g->exchange_reason, sizeof g->exchange_reason,
             g->warp == 32 ? "auto: wave %d = one unit, shuffle xor"
                           : "auto: wave %d != 32, local memory", g->warp);
  }
}

void hash_fini(gdev *g)
{
  seg_fini(g);
  for (int i = 0; i < g->npacks; i++) {
    if (g->packs[i].d_dataset != NULL)
      (void)cudaFree(g->packs[i].d_dataset);
    jit_free(g->packs[i].jit);
  }
  g->npacks = 0;
  g->loaded = NULL;
  hp_slot_give(g->hp_slot);
  g->hp_slot = -1;
}

uint64_t hash_batch(const gdev *g)
{
  /* About 150 ms of work: measured when a pack was prepared, else a
   * guess of 250 k hashes/s per SM.  Past one of hash_batch's sub-batches
   * (WVG_SEG_SUB nonces) it is rounded up to whole sub-batches: the fold
   * of the last one is the part of a call that does not overlap hashing,
   * so a batch of whole sub-batches, several of them, keeps that share
   * small (about 1.5% at four). */
  double rate = g->hash_rate > 0 ? g->hash_rate : 250e3 * g->sms;
  uint64_t b = (uint64_t)(rate * 0.15) & ~(uint64_t)31;
  const uint64_t sub = (uint64_t)1 << WVG_SEG_SUB_LOG2;
  if (b > sub)
    b = (b + sub - 1) / sub * sub;
  return b < 4096 ? 4096 : b;
}

/* Threads per block: group_units units, fewer when the registers and
 * exchange buffers would not fit the default shared-memory limit. */
static unsigned hash_threads(const gdev *g, unsigned regs, size_t *smem)
{
  unsigned units = g->group_units;
  for (;;) {
    size_t t = 32u * units;
    size_t s = (size_t)regs * t * 8 + (g->local ? 2 * t * 8 : 0);
    if (s <= WVG_HASH_SMEM_MAX || units == 1) {
      *smem = s;
      return (unsigned)t;
    }
    units /= 2;
  }
}

static int hash_load(gdev *g, const wv_pack *p, wave_error *err);

static hpack *hash_find(gdev *g, const wv_pack *p)
{
  for (int i = 0; i < g->npacks; i++)
    if (g->packs[i].pack == p)
      return &g->packs[i];
  return NULL;
}

static int hash_launch(gdev *g, const hpack *hp, uint64_t nonce,
                       uint64_t count, uint64_t *d_out, wave_error *err)
{
  const wv_pack *p = hp->pack;
  uint64_t u0 = nonce / 32, nunits = (nonce + (count - 1)) / 32 - u0 + 1;
  size_t smem;
  unsigned threads = hash_threads(g, p->registers, &smem);
  uint64_t blocks = (nunits * 32 + threads - 1) / threads;
  if (blocks > 0x7fffffffu)
    return wv_seterr(err, WAVE_ERANGE, "hash batch too large");
  const uint64_t *d = hp->d_dataset;
  if (hp->jit != NULL) {
    const unsigned jt = 32u * g->group_units;
    const uint64_t jb = (nunits * 32 + jt - 1) / jt;
    CK(jit_launch(hp->jit, (unsigned)jb, jt, g->local ? 2u * jt * 8 : 0,
                  g->compute, d, u0, nunits, nonce, count, d_out));
    return 0;
  }
  dim3 grid((unsigned)blocks);
  const unsigned hs = (unsigned)(g->hp_slot % WVG_HP_SLOTS);
  if (g->local) {
    if (p->closed)
      k_hash<true, true><<<grid, threads, smem, g->compute>>>(d, u0, nunits,
                                                               nonce, count, d_out, hs);
    else
      k_hash<true, false><<<grid, threads, smem, g->compute>>>(d, u0, nunits,
                                                                nonce, count, d_out, hs);
  } else {
    if (p->closed)
      k_hash<false, true><<<grid, threads, smem, g->compute>>>(d, u0, nunits,
                                                                nonce, count, d_out, hs);
    else
      k_hash<false, false><<<grid, threads, smem, g->compute>>>(d, u0, nunits,
                                                                 nonce, count, d_out, hs);
  }
  CK(cudaGetLastError());
  return 0;
}

int hash_device(gdev *g, const wv_pack *p, uint64_t nonce, uint64_t count,
                uint64_t *d_out, wave_error *err)
{
  int rv;
  if (hash_find(g, p) == NULL && (rv = hash_prepare(g, p, err)) != 0)
    return rv;
  if ((rv = hash_load(g, p, err)) != 0)
    return rv;
  return hash_launch(g, hash_find(g, p), nonce, count, d_out, err);
}

/* The program with its load schedule (see WVG_DEFER): LOADs take pending
 * slots round-robin; a slot is settled before the first later instruction
 * that reads or overwrites its register (a LOAD only reads its address
 * register: XORs into the same register commute), or before its slot is
 * reused.  Worked out over two passes of the program, because loads of one
 * round stay pending into the next; the second pass is the steady state,
 * and in the first round the slots it settles early are still 0. */
static void hash_schedule(const wv_pack *p, hprog *hp)
{
  static_assert(WVG_DEFER == 4, "k_hash's slot switch has four cases");
  memset(hp, 0, sizeof *hp);
  int pending[WVG_DEFER];
  for (int s = 0; s < WVG_DEFER; s++)
    pending[s] = -1;
  for (int pass = 0; pass < 2; pass++) {
    unsigned li = 0;
    for (unsigned pc = 0; pc < WV_PROGRAM_LEN; pc++) {
      const wv_insn *in = &p->program[pc];
      hinsn *h = &hp->prog[pc];
      memset(h, 0, sizeof *h);
      h->op = in->op;
      h->dst = in->dst;
      h->a = in->a;
      h->b = in->b;
      h->imm = in->imm;
      uint32_t touch = 1u << in->a;
      switch (in->op) {
      case WV_OP_ADD: case WV_OP_SUB: case WV_OP_XOR: case WV_OP_MUL:
        touch |= 1u << in->b | 1u << in->dst;
        break;
      case WV_OP_LOAD:
        break;
      default:
        touch |= 1u << in->dst;
        break;
      }
      for (int s = 0; s < WVG_DEFER; s++)
        if (pending[s] >= 0 && (touch >> pending[s] & 1u)) {
          h->settle |= 1u << s;
          h->rdst[s] = (uint8_t)pending[s];
          pending[s] = -1;
        }
      if (in->op == WV_OP_LOAD) {
        unsigned s = li++ % WVG_DEFER;
        if (pending[s] >= 0) {
          h->settle |= 1u << s;
          h->rdst[s] = (uint8_t)pending[s];
        }
        pending[s] = (int)in->dst;
        h->slot = s;
      }
    }
  }
  for (int s = 0; s < WVG_DEFER; s++)
    if (pending[s] >= 0) {
      hp->settle |= 1u << s;
      hp->rdst[s] = (uint8_t)pending[s];
    }
  hp->seed = p->seed;
  hp->item_mask = p->item_mask;
  hp->closed_key = p->closed_key;
  hp->regs = p->registers;
  hp->rounds = p->rounds;
}

/* Put pack p's program into constant memory (stream-ordered after the
 * kernels that use the previous one). */
static int hash_load(gdev *g, const wv_pack *p, wave_error *err)
{
  if (g->loaded == p)
    return 0;
  hprog hp;
  hash_schedule(p, &hp);
  /* From pageable memory (2.6 KB): synchronised before hp goes out of
   * scope. */
  if (g->hp_slot < 0)
    return wv_seterr(err, WAVE_EUNSUPPORTED, "cuda: more than %d devices on "
                     "GPU %d: no constant-memory slot left for a hash "
                     "program", WVG_HP_SLOTS, g->index);
  CK(cudaMemcpyToSymbolAsync(c_hp, &hp, sizeof hp,
                             (size_t)(g->hp_slot % WVG_HP_SLOTS) * sizeof hp,
                             cudaMemcpyHostToDevice,
                             g->compute));
  CK(cudaStreamSynchronize(g->compute));
  g->loaded = p;
  return 0;
}

/* The freshly built kernel of hp against the interpreter on 4096 nonces
 * from an unaligned start: *ok stays 1 when they agree, else 0 with the
 * reason in why (a launch the runtime refuses counts as a disagreement).
 * Device faults are errors. */
static int gh_jit_crosscheck(gdev *g, hpack *hp, int *ok, char *why,
                          size_t whylen, wave_error *err)
{
  const uint64_t at = 1000003, cnt = 4096;
  uint64_t *d = (uint64_t *)g->slots[0].d;
  std::vector<uint64_t> a(cnt), b(cnt);
  CK(cudaEventSynchronize(g->slots[0].copied));
  CK(cudaEventSynchronize(g->slots[0].done));
  int rv = hash_launch(g, hp, at, cnt, d, err);
  if (rv != 0) {
    (void)cudaGetLastError();
    snprintf(why, whylen, "launch: %.150s", err->message);
    *ok = 0;
    return 0;
  }
  CK(cudaMemcpyAsync(a.data(), d, cnt * 8, cudaMemcpyDeviceToHost,
                     g->compute));
  CK(cudaStreamSynchronize(g->compute));
  hjit *j = hp->jit;
  hp->jit = NULL;
  rv = hash_launch(g, hp, at, cnt, d, err);
  hp->jit = j;
  if (rv != 0)
    return rv;
  CK(cudaMemcpyAsync(b.data(), d, cnt * 8, cudaMemcpyDeviceToHost,
                     g->compute));
  CK(cudaStreamSynchronize(g->compute));
  for (uint64_t i = 0; i < cnt; i++)
    if (a[i] != b[i]) {
      snprintf(why, whylen, "differs from the interpreter at nonce %llu",
               (unsigned long long)(at + i));
      *ok = 0;
      return 0;
    }
  return 0;
}

/* Measure a pack's rate once (2^21 nonces) so that the batch size keeps
 * a batch near 100 ms; the slowest pack sets it. */
static int hash_measure(gdev *g, hpack *php, wave_error *err)
{
  int rv;
  cudaEvent_t t0, t1;
  CK(cudaEventCreateWithFlags(&t0, cudaEventDefault));
  CK(cudaEventCreateWithFlags(&t1, cudaEventDefault));
  const uint64_t trial = 1u << 21;
  uint64_t *d_out = (uint64_t *)g->slots[0].d;
  CK(cudaEventSynchronize(g->slots[0].copied));
  CK(cudaEventSynchronize(g->slots[0].done));
  CK(cudaEventRecord(t0, g->compute));
  if ((rv = hash_launch(g, php, 0, trial, d_out, err)) != 0)
    return rv;
  CK(cudaEventRecord(t1, g->compute));
  CK(cudaEventSynchronize(t1));
  float ms = 0;
  CK(cudaEventElapsedTime(&ms, t0, t1));
  (void)cudaEventDestroy(t0);
  (void)cudaEventDestroy(t1);
  if (ms > 0) {
    double rate = trial / (ms * 1e-3);
    if (g->hash_rate == 0 || rate < g->hash_rate)
      g->hash_rate = rate;
  }
  return 0;
}

int hash_prepare(gdev *g, const wv_pack *p, wave_error *err)
{
  if (hash_find(g, p) != NULL)
    return 0;
  if (!g->local && g->warp != 32)
    return wv_seterr(err, WAVE_EUNSUPPORTED,
                     "pack %s: exchange shuffle demanded, but wave %d != 32",
                     p->name, g->warp);
  CK(cudaSetDevice(g->index));
  /* A reloaded pack replaces the old one of the same name. */
  for (int i = 0; i < g->npacks; i++)
    if (strcmp(g->packs[i].pack->name, p->name) == 0) {
      CK(cudaDeviceSynchronize());
      if (g->loaded == g->packs[i].pack)
        g->loaded = NULL;
      (void)cudaFree(g->packs[i].d_dataset);
      jit_free(g->packs[i].jit);
      g->packs[i] = g->packs[--g->npacks];
      break;
    }
  if (g->npacks == (int)(sizeof g->packs / sizeof g->packs[0]))
    return wv_seterr(err, WAVE_ENOMEM, "pack %s: too many packs on %s",
                     p->name, WVG_VENDOR);
  hpack hp = {p, NULL, NULL};
  if (!p->closed) {
    const uint64_t *cache;
    int rv = wv_pack_cache_get(p, &cache, err);
    if (rv != 0)
      return rv;
    uint64_t n = p->dataset_items;
    uint64_t *d_cache = NULL, *d_spot = NULL;
    cudaError_t e = cudaMalloc((void **)&hp.d_dataset, n * 8);
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      return wv_seterr(err, WAVE_ENOMEM, "pack %s: dataset of %llu bytes: %s",
                       p->name, (unsigned long long)(n * 8),
                       cudaGetErrorString(e));
    }
    g->packs[g->npacks++] = hp; /* freed by hash_fini from here on */
    CK(cudaMalloc((void **)&d_cache, p->cache_items * 8));
    CK(cudaMalloc((void **)&d_spot, WVG_SPOTS * 8));
    /* Stream-ordered: a plain cudaMemcpy from pageable memory may return
     * before the data lands, and the non-blocking compute stream would not
     * wait for it. */
    CK(cudaMemcpyAsync(d_cache, cache, p->cache_items * 8,
                       cudaMemcpyHostToDevice, g->compute));
    k_dataset<<<g->sms * 8, 256, 0, g->compute>>>(d_cache, p->cache_items,
                                                 p->parents, n, hp.d_dataset);
    CK(cudaGetLastError());
    k_spot<<<WVG_SPOTS / 256, 256, 0, g->compute>>>(hp.d_dataset, n, d_spot);
    CK(cudaGetLastError());
    std::vector<uint64_t> got(WVG_SPOTS);
    CK(cudaMemcpyAsync(got.data(), d_spot, WVG_SPOTS * 8,
                       cudaMemcpyDeviceToHost, g->compute));
    CK(cudaStreamSynchronize(g->compute));
    (void)cudaFree(d_cache);
    (void)cudaFree(d_spot);
    for (unsigned k = 0; k < WVG_SPOTS; k++) {
      uint64_t i = spot_index(k, n);
      uint64_t want = wv_item_from_cache(cache, p->cache_items, p->parents, i);
      if (got[k] != want)
        return wv_seterr(err, WAVE_ESELFCHECK,
                         "pack %s: dataset item %llu is %016llx on the device, "
                         "%016llx on the CPU", p->name, (unsigned long long)i,
                         (unsigned long long)got[k], (unsigned long long)want);
    }
  } else {
    g->packs[g->npacks++] = hp;
  }

  hpack *php = hash_find(g, p);
  int rv = hash_load(g, p, err);
  if (rv != 0)
    return rv;
  /* The pack's own kernel, cached with the pack, once it gives the
   * interpreter's outputs; else the interpreter runs the pack and the
   * device says why. */
  if (g->jit) {
    char why[200];
    int ok = jit_build(g, p, 32u * g->group_units, &php->jit, why,
                       sizeof why) == 0;
    if (ok && (rv = gh_jit_crosscheck(g, php, &ok, why, sizeof why, err)) != 0)
      return rv;
    if (ok) {
      /* A fallback note stays until the device closes. */
      if (!g->jit_fell_back)
        snprintf(g->jit_note, sizeof g->jit_note,
                 "kernel: nvrtc (%d packs, last %.40s)", ++g->jit_packs,
                 p->name);
    } else {
      g->jit_fell_back = 1;
      jit_free(php->jit);
      php->jit = NULL;
      snprintf(g->jit_note, sizeof g->jit_note,
               "kernel: interpreter (pack %.40s: %.60s)", p->name, why);
    }
  }
  return hash_measure(g, php, err);
}

int hash_run(gdev *g, const wv_pack *p, uint64_t nonce, uint64_t count,
             uint64_t *out, wave_error *err)
{
  if (count == 0)
    return 0;
  int rv;
  if (hash_find(g, p) == NULL && (rv = hash_prepare(g, p, err)) != 0)
    return rv;
  const hpack *hp = hash_find(g, p);
  CK(cudaSetDevice(g->index));
  if ((rv = hash_load(g, p, err)) != 0)
    return rv;
  /* Sub-batch k hashes into slot k % 2 on the compute stream; its copy to
   * pinned memory runs on the copy stream while k + 1 hashes; the host
   * moves it into out meanwhile. */
  uint64_t pos = nonce, left = count, prev_pos = 0, prev_n = 0;
  const uint64_t sub = WVG_SLICE_ROWS / 2 < WVG_HASH_SUB ? WVG_SLICE_ROWS / 2
                                                          : WVG_HASH_SUB;
  unsigned k = 0;
  for (;;) {
    if (left > 0) {
      uint64_t take = left < sub ? left : sub;
      if (take < left)
        take -= (pos + take) % 32; /* cut sub-batches at unit boundaries */
      slot *s = &g->slots[k & 1];
      CK(cudaStreamWaitEvent(g->compute, s->copied, 0));
      if ((rv = hash_launch(g, hp, pos, take, (uint64_t *)s->d, err)) != 0)
        return rv;
      CK(cudaEventRecord(s->done, g->compute));
      CK(cudaStreamWaitEvent(g->copy, s->done, 0));
      CK(cudaMemcpyAsync(s->h, s->d, take * 8, cudaMemcpyDeviceToHost,
                         g->copy));
      CK(cudaEventRecord(s->copied, g->copy));
      if (k > 0) {
        slot *ps = &g->slots[(k - 1) & 1];
        CK(cudaEventSynchronize(ps->copied));
        memcpy(out + (prev_pos - nonce), ps->h, prev_n * 8);
      }
      prev_pos = pos;
      prev_n = take;
      pos += take;
      left -= take;
      k++;
      continue;
    }
    slot *ps = &g->slots[(k - 1) & 1];
    CK(cudaEventSynchronize(ps->copied));
    memcpy(out + (prev_pos - nonce), ps->h, prev_n * 8);
    break;
  }
  CK(cudaGetLastError());
  return 0;
}

} /* namespace WVG_NS */
