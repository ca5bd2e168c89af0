/* pack.h - a parsed program pack, as backends read it, and the scalar
 * building blocks of the lottery hash (docs/hash.md is normative; every
 * function here is a line-for-line transcription of a section of it).
 *
 * Backends port the `static inline` functions below 1:1 into their kernel
 * language: they use only 64-bit add, sub, xor, mul (low 64 bits) and shifts
 * by constants, which CUDA, HIP, OpenCL C and GLSL (with
 * GL_EXT_shader_explicit_arithmetic_types_int64) all have natively.  A CUDA
 * or HIP translation unit may define WV_HASH_FN as
 * `static __host__ __device__ inline` before including this header and use
 * the functions on the device directly.
 *
 * The host side of every backend:
 *   1. wv_pack_cache_build()   the cache (sequential, small: built on the CPU);
 *   2. upload it and generate the dataset on the device, item i =
 *      wv_pack_item(pack, cache, i) (independent items: one thread each);
 *   3. run the program: pack->program[0..63], pack->rounds times, over units
 *      of 32 lanes, exchanges by the rule of docs/hash.md "Exchange paths".
 */
#ifndef WV_PACK_H
#define WV_PACK_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "wave/error.h"

#ifndef WV_HASH_FN
#define WV_HASH_FN static inline
#endif

/* ---- constants of the hash (docs/hash.md "Constants") -------------------- */

#define WV_LANES 32u               /* lanes per unit (= WV_UNIT_LANES) */
#define WV_PROGRAM_LEN 64u         /* instructions per program */
#define WV_EXCHANGES 6u            /* xchg instructions per program */
#define WV_REGS_MIN 4u
#define WV_REGS_MAX 32u
#define WV_ROUNDS_MAX 64u
#define WV_CACHE_PASSES 3u
#define WV_CHECK_BATCH_LOG2 13u    /* known batch: nonces [0, 2^13) */
#define WV_MAX_VECTORS 8u
/* The largest dataset a pack may ask for: 16 GiB, sixteen times the main
 * pack's, and what every device of the pack must hold in memory (a GPU's
 * own, the CPU backend's RAM); docs/hash.md "Pack files". */
#define WV_DATASET_MAX (1ull << 34)

#define WV_GAMMA      0x9e3779b97f4a7c15ull
#define WV_MIX_M1     0xbf58476d1ce4e5b9ull
#define WV_MIX_M2     0x94d049bb133111ebull
#define WV_TAG_CACHE  0x243f6a8885a308d3ull
#define WV_TAG_CLOSED 0x13198a2e03707344ull
#define WV_TAG_LANE   0xa4093822299f31d0ull
#define WV_TAG_OUT    0x082efa98ec4e6c89ull
/* A closed-form pack addresses 2^32 virtual items. */
#define WV_CLOSED_ITEM_MASK 0xffffffffull

/* ---- the instruction set (docs/hash.md "Instructions") -------------------
 * Every lane has registers r[0 .. registers-1], uint64_t.  One instruction
 * runs on all 32 lanes of a unit; `a`, `b` are register numbers unless said
 * otherwise.  Reads happen before the write, so dst may equal a source.
 *
 *   op          C semantics, lane l                       operand use
 *   ADD   0     r[dst] = r[a] + r[b]                      b register
 *   SUB   1     r[dst] = r[a] - r[b]                      b register
 *   XOR   2     r[dst] = r[a] ^ r[b]                      b register
 *   MUL   3     r[dst] = r[a] * r[b]   (low 64 bits)      b register
 *   ROTL  4     r[dst] = (r[a] << b) | (r[a] >> (64 - b)) b = k, 1..63
 *   XSHR  5     r[dst] = r[a] ^ (r[a] >> b)               b = k, 1..63
 *   ADDI  6     r[dst] = r[a] + imm                       imm 64-bit
 *   MULI  7     r[dst] = r[a] * imm    (low 64 bits)      imm 64-bit
 *   LOAD  8     r[dst] = r[dst] ^ D[r[a] & item_mask]     b = 0
 *   XCHG  9     r[dst] = OLD r[a] of lane (l ^ b)         b = m, 1 2 4 8 16
 *
 * XCHG: every lane of the unit reads the value register a had BEFORE this
 * instruction in lane l ^ b, then every lane writes r[dst].  Unused fields
 * are 0.  The layout (4 x uint32, uint64: 24 bytes, 8-aligned) is the same
 * in C and in a GLSL std430 / CUDA struct, so the program can be uploaded
 * as-is. */
enum wv_opcode {
  WV_OP_ADD = 0,
  WV_OP_SUB = 1,
  WV_OP_XOR = 2,
  WV_OP_MUL = 3,
  WV_OP_ROTL = 4,
  WV_OP_XSHR = 5,
  WV_OP_ADDI = 6,
  WV_OP_MULI = 7,
  WV_OP_LOAD = 8,
  WV_OP_XCHG = 9,
  WV_OP_COUNT_ = 10
};

typedef struct wv_insn {
  uint32_t op;     /* enum wv_opcode */
  uint32_t dst;    /* register */
  uint32_t a;      /* register */
  uint32_t b;      /* register, or k (ROTL, XSHR), or m (XCHG), else 0 */
  uint64_t imm;    /* ADDI, MULI; else 0 */
} wv_insn;

/* One known-answer vector: the 32 outputs of the unit starting at nonce. */
typedef struct wv_pack_vector {
  uint64_t nonce;                /* a multiple of 32 */
  uint64_t outputs[WV_LANES];
} wv_pack_vector;

typedef struct wv_pack {
  char name[64];
  unsigned version;
  char description[160];
  char path[256];                /* file it was loaded from */
  uint64_t seed;
  unsigned registers;            /* WV_REGS_MIN .. WV_REGS_MAX */
  unsigned rounds;               /* 1 .. WV_ROUNDS_MAX */
  int closed;                    /* closed form: no cache, no dataset */
  uint64_t cache_items;          /* power of two (0 when closed) */
  uint64_t dataset_items;        /* power of two (0 when closed) */
  unsigned parents;              /* cache parents per dataset item */
  uint64_t item_mask;            /* dataset_items - 1, or WV_CLOSED_ITEM_MASK */
  uint64_t closed_key;           /* wv_mix64(seed ^ WV_TAG_CLOSED) */
  wv_insn program[WV_PROGRAM_LEN];
  unsigned loads;                /* LOAD instructions in the program */

  int has_known;                 /* a `known:` section was present */
  uint64_t cache_fnv;            /* memory packs */
  uint64_t batch_fnv;            /* nonces [0, 2^13) */
  size_t n_vectors;
  wv_pack_vector vectors[WV_MAX_VECTORS];
  /* known.job (optional): the job fingerprint (docs/hash.md "Segments",
   * s = 13) of nonces [job_nonce, job_nonce + job_count), a job of several
   * segments, for the end-to-end tests (tests/integ_hash.c) */
  int has_job;
  uint64_t job_nonce, job_count, job_fingerprint;

  /* Private: the cache, built once on first use by wv_hash_verify() and
   * wv_pack_selfcheck() (wv_pack_cache_get()). */
  pthread_mutex_t lock_;
  uint64_t *cache_;
} wv_pack;

/* ---- scalar building blocks ---------------------------------------------- */

/* The mixer (the finaliser of SplitMix64): a bijection on uint64_t. */
WV_HASH_FN uint64_t wv_mix64(uint64_t x)
{
  x ^= x >> 30;
  x *= WV_MIX_M1;
  x ^= x >> 27;
  x *= WV_MIX_M2;
  x ^= x >> 31;
  return x;
}

WV_HASH_FN uint64_t wv_rotl64(uint64_t x, unsigned k)  /* k in 1..63 */
{
  return (x << k) | (x >> (64u - k));
}

/* Dataset item i of a memory pack, from the cache (docs/hash.md "Dataset").
 * cache has cache_items = 2^c entries; items are independent. */
WV_HASH_FN uint64_t wv_item_from_cache(const uint64_t *cache,
                                       uint64_t cache_items, unsigned parents,
                                       uint64_t i)
{
  uint64_t cmask = cache_items - 1;
  uint64_t x = wv_mix64(cache[i & cmask] ^ i);
  for (unsigned j = 0; j < parents; j++)
    x = wv_mix64(x + cache[x & cmask]);
  return x;
}

/* Item at address i (already masked) of a closed-form pack. */
WV_HASH_FN uint64_t wv_item_closed(uint64_t closed_key, uint64_t i)
{
  return wv_mix64(closed_key ^ i);
}

/* Initial register j of the lane that hashes nonce n. */
WV_HASH_FN uint64_t wv_lane_init(uint64_t seed, uint64_t n, unsigned j)
{
  uint64_t s = wv_mix64(n ^ seed ^ WV_TAG_LANE);
  return wv_mix64(s + (uint64_t)(j + 1) * WV_GAMMA);
}

/* Output of a lane from its final registers r[0 .. nregs-1]. */
WV_HASH_FN uint64_t wv_lane_output(uint64_t seed, const uint64_t *r,
                                   unsigned nregs)
{
  uint64_t h = seed ^ WV_TAG_OUT;
  for (unsigned j = 0; j < nregs; j++)
    h = wv_mix64(h + r[j]);
  return h;
}

/* ---- host functions (workers/hash/pack.c, dataset.c) --------------------- */

/* Build the cache of a memory pack into a fresh malloc'ed array of
 * *items = cache_items entries (free() it).  WAVE_EARG for a closed pack,
 * WAVE_ENOMEM. */
int wv_pack_cache_build(const wv_pack *p, uint64_t **cache, size_t *items,
                        wave_error *err);

/* The pack's own cache, built on first use and kept until wv_pack_free()
 * (thread-safe).  Do not free. */
int wv_pack_cache_get(const wv_pack *p, const uint64_t **cache,
                      wave_error *err);

/* Dataset item i (i <= item_mask) of pack p: from the cache for memory packs
 * (cache may be NULL for closed packs). */
WV_HASH_FN uint64_t wv_pack_item(const wv_pack *p, const uint64_t *cache,
                                 uint64_t i)
{
  if (p->closed)
    return wv_item_closed(p->closed_key, i);
  return wv_item_from_cache(cache, p->cache_items, p->parents, i);
}

/* Items [first, first + count) of a memory pack into out[count]; the same
 * values as wv_item_from_cache(), computed several items at a time so the
 * cache reads overlap (the CPU backend's dataset generator). */
void wv_pack_dataset_range(const wv_pack *p, const uint64_t *cache,
                           uint64_t first, uint64_t count, uint64_t *out);

/* Mnemonic of an opcode ("add" ... "xchg"), or NULL. */
const char *wv_opcode_name(unsigned op);

#endif
