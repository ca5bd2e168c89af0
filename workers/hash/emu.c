/* emu.c - the lottery hash run the way a GPU runs it (docs/hash.md
 * "Exchange paths"), to show on a CPU that the exchange rule gives the
 * reference's outputs at every sub-group and work-group size.
 *
 * Model: one work-item per lane; a work-group of G work-items holds G/32
 * units (work-item lid is lane lid % 32 of unit lid / 32); it is split into
 * sub-groups of S consecutive work-items (the last one partly inactive when
 * S > G, e.g. a 32-item work-group on a wave64).  A sub-group executes one
 * instruction at a time for all its active lanes, in lockstep; different
 * sub-groups of a work-group run in a pseudo-random interleaving that only
 * the barriers constrain, so an exchange that relied on lockstep across
 * sub-groups would see stale or future values, as on real hardware.
 *
 *  - shuffle: r[dst] = old r[a] of sub-group lane (sl ^ m), inside the
 *    sub-group, no barrier (needs every unit inside one sub-group, S >= 32);
 *  - local: X[k & 1][lid] = r[a]; barrier; r[dst] = X[k & 1][lid ^ m];
 *  - local, one buffer (a deliberate bug for the tests): X[0] every time.
 * Sub-group sizes below 32 (Intel SIMD8/16, lavapipe, or lanes that do not
 * run in lockstep) are allowed for the local paths.
 */
#include <stdlib.h>
#include <string.h>

#include "core/base.h"
#include "workers/hash/ref.h"

typedef struct emu_sg {
  uint64_t pc;        /* instructions done: round * 64 + index */
  unsigned xk;        /* exchanges done: selects the local buffer */
  int at_barrier;     /* wrote its exchange value, waiting */
  int released;       /* passed the barrier, the read is next */
} emu_sg;

typedef struct emu_wg {
  const wv_hash_mem *m;
  const wv_emu_config *cfg;
  unsigned g;           /* work-items */
  unsigned nsg;         /* sub-groups */
  uint64_t (*r)[WV_REGS_MAX];
  uint64_t *x[2];       /* local memory, g words each */
  emu_sg *sg;
  uint64_t rng;
} emu_wg;

static uint64_t emu_rand(uint64_t *s)
{
  *s += WV_GAMMA;
  return wv_mix64(*s);
}

/* Work-items [lo, hi) of sub-group s that exist in the work-group. */
static void emu_span(const emu_wg *w, unsigned s, unsigned *lo, unsigned *hi)
{
  *lo = s * w->cfg->subgroup;
  *hi = *lo + w->cfg->subgroup;
  if (*hi > w->g)
    *hi = w->g;
}

static void emu_alu(const emu_wg *w, const wv_insn *in, unsigned lid)
{
  uint64_t *r = w->r[lid], a = r[in->a], v;
  switch (in->op) {
  case WV_OP_ADD:  v = a + r[in->b]; break;
  case WV_OP_SUB:  v = a - r[in->b]; break;
  case WV_OP_XOR:  v = a ^ r[in->b]; break;
  case WV_OP_MUL:  v = a * r[in->b]; break;
  case WV_OP_ROTL: v = wv_rotl64(a, in->b); break;
  case WV_OP_XSHR: v = a ^ (a >> in->b); break;
  case WV_OP_ADDI: v = a + in->imm; break;
  case WV_OP_MULI: v = a * in->imm; break;
  case WV_OP_LOAD:
    v = r[in->dst] ^ wv_hash_mem_item(w->m, a & w->m->pack->item_mask);
    break;
  default:         v = 0; break;
  }
  r[in->dst] = v;
}

/* One scheduling step of sub-group s. */
static void emu_step(emu_wg *w, unsigned s)
{
  emu_sg *sg = &w->sg[s];
  const wv_insn *in = &w->m->pack->program[sg->pc % WV_PROGRAM_LEN];
  unsigned lo, hi;
  emu_span(w, s, &lo, &hi);
  if (in->op != WV_OP_XCHG) {
    for (unsigned lid = lo; lid < hi; lid++)
      emu_alu(w, in, lid);
    sg->pc++;
    return;
  }
  if (w->cfg->exchange == WV_EMU_SHUFFLE) {
    uint64_t old[64];
    unsigned base = s * w->cfg->subgroup;
    for (unsigned lid = lo; lid < hi; lid++)
      old[lid - base] = w->r[lid][in->a];
    for (unsigned lid = lo; lid < hi; lid++)
      w->r[lid][in->dst] = old[(lid - base) ^ in->b];
    sg->pc++;
    sg->xk++;
    return;
  }
  uint64_t *x = w->x[w->cfg->exchange == WV_EMU_LOCAL ? (sg->xk & 1) : 0];
  if (!sg->released) {
    for (unsigned lid = lo; lid < hi; lid++)
      x[lid] = w->r[lid][in->a];
    sg->at_barrier = 1;
    return;
  }
  for (unsigned lid = lo; lid < hi; lid++)
    w->r[lid][in->dst] = x[lid ^ in->b];
  sg->released = 0;
  sg->pc++;
  sg->xk++;
}

/* Run work-group number wg_index: units first_unit + wg_index * (g/32) ... */
static void emu_workgroup(emu_wg *w, uint64_t unit0, uint64_t nonce,
                          uint64_t last, uint64_t *out)
{
  const wv_pack *p = w->m->pack;
  const uint64_t steps = (uint64_t)p->rounds * WV_PROGRAM_LEN;
  for (unsigned lid = 0; lid < w->g; lid++) {
    uint64_t n = (unit0 + lid / WV_LANES) * WV_LANES + lid % WV_LANES;
    for (unsigned j = 0; j < p->registers; j++)
      w->r[lid][j] = wv_lane_init(p->seed, n, j);
  }
  /* Local memory starts as garbage, as on a GPU. */
  for (unsigned lid = 0; lid < w->g; lid++)
    w->x[0][lid] = w->x[1][lid] = emu_rand(&w->rng);
  memset(w->sg, 0, w->nsg * sizeof *w->sg);
  for (;;) {
    unsigned runnable = 0, waiting = 0, done = 0;
    for (unsigned s = 0; s < w->nsg; s++) {
      if (w->sg[s].pc == steps)
        done++;
      else if (w->sg[s].at_barrier)
        waiting++;
      else
        runnable++;
    }
    if (done == w->nsg)
      break;
    if (runnable == 0) {
      /* Everyone is at the barrier (control flow is uniform, so it is the
       * same barrier for all): release them. */
      for (unsigned s = 0; s < w->nsg; s++) {
        w->sg[s].at_barrier = 0;
        w->sg[s].released = 1;
      }
      continue;
    }
    unsigned pick = (unsigned)(emu_rand(&w->rng) % runnable);
    for (unsigned s = 0; s < w->nsg; s++) {
      if (w->sg[s].pc == steps || w->sg[s].at_barrier)
        continue;
      if (pick-- == 0) {
        emu_step(w, s);
        break;
      }
    }
  }
  for (unsigned lid = 0; lid < w->g; lid++) {
    uint64_t n = (unit0 + lid / WV_LANES) * WV_LANES + lid % WV_LANES;
    /* Work-items outside the range computed their unit but store nothing.
     * (n may have wrapped past 2^64 for units beyond the last: skipped.) */
    if (unit0 + lid / WV_LANES > last / WV_LANES || n < nonce || n > last)
      continue;
    out[n - nonce] = wv_lane_output(p->seed, w->r[lid], p->registers);
  }
}

int wv_emu_range(const wv_hash_mem *m, const wv_emu_config *cfg,
                 uint64_t nonce, uint64_t count, uint64_t *out,
                 wave_error *err)
{
  unsigned s = cfg->subgroup, g = cfg->workgroup;
  if (s == 0 || s > 64 || (s & (s - 1)) != 0)
    return wv_seterr(err, WAVE_EARG, "sub-group size %u: 1..64, a power of "
                     "two", s);
  if (g == 0 || g > 1024 || g % WV_LANES != 0)
    return wv_seterr(err, WAVE_EARG, "work-group size %u: a multiple of 32 "
                     "up to 1024", g);
  if (cfg->exchange == WV_EMU_SHUFFLE && s < WV_LANES)
    return wv_seterr(err, WAVE_EARG, "shuffle exchange needs sub-groups of "
                     "at least 32 (got %u)", s);
  if (count == 0)
    return 0;
  emu_wg w = {.m = m, .cfg = cfg, .g = g, .nsg = (g + s - 1) / s,
              .rng = cfg->sched_seed};
  w.r = calloc(g, sizeof *w.r);
  w.x[0] = calloc(g, sizeof(uint64_t));
  w.x[1] = calloc(g, sizeof(uint64_t));
  w.sg = calloc(w.nsg, sizeof *w.sg);
  int rv = 0;
  if (!w.r || !w.x[0] || !w.x[1] || !w.sg) {
    rv = wv_seterr(err, WAVE_ENOMEM, "emulator work-group");
  } else {
    uint64_t last = nonce + (count - 1);
    uint64_t u0 = nonce / WV_LANES, u1 = last / WV_LANES;
    uint64_t per = g / WV_LANES;
    for (uint64_t u = u0; u <= u1; u += per) {
      emu_workgroup(&w, u, nonce, last, out);
      if (u1 - u < per)
        break;
    }
  }
  free(w.r);
  free(w.x[0]);
  free(w.x[1]);
  free(w.sg);
  return rv;
}
