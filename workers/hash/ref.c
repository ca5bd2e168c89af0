/* ref.c - the plain reference: one 32-lane unit, exactly as docs/hash.md
 * "The whole unit, in one place" writes it.  Registers are r[lane][j]; an
 * instruction runs lane by lane; xchg first copies the source register of
 * all 32 lanes, then writes.  Every other implementation (the CPU backend's
 * fast path, the emulator, the GPU kernels) is checked against this file,
 * so it stays obviously correct rather than fast.
 */
#include "workers/hash/ref.h"

static void ref_insn(const wv_hash_mem *m, const wv_insn *in,
                     uint64_t r[WV_LANES][WV_REGS_MAX])
{
  const wv_pack *p = m->pack;
  if (in->op == WV_OP_XCHG) {
    uint64_t old[WV_LANES];
    for (unsigned l = 0; l < WV_LANES; l++)
      old[l] = r[l][in->a];
    for (unsigned l = 0; l < WV_LANES; l++)
      r[l][in->dst] = old[l ^ in->b];
    return;
  }
  for (unsigned l = 0; l < WV_LANES; l++) {
    uint64_t a = r[l][in->a], v;
    switch (in->op) {
    case WV_OP_ADD:  v = a + r[l][in->b]; break;
    case WV_OP_SUB:  v = a - r[l][in->b]; break;
    case WV_OP_XOR:  v = a ^ r[l][in->b]; break;
    case WV_OP_MUL:  v = a * r[l][in->b]; break;
    case WV_OP_ROTL: v = wv_rotl64(a, in->b); break;
    case WV_OP_XSHR: v = a ^ (a >> in->b); break;
    case WV_OP_ADDI: v = a + in->imm; break;
    case WV_OP_MULI: v = a * in->imm; break;
    case WV_OP_LOAD:
      v = r[l][in->dst] ^ wv_hash_mem_item(m, a & p->item_mask);
      break;
    default:         v = 0; break;  /* the loader admits no other op */
    }
    r[l][in->dst] = v;
  }
}

void wv_ref_unit(const wv_hash_mem *m, uint64_t u, uint64_t out[WV_LANES])
{
  const wv_pack *p = m->pack;
  uint64_t r[WV_LANES][WV_REGS_MAX];
  for (unsigned l = 0; l < WV_LANES; l++)
    for (unsigned j = 0; j < p->registers; j++)
      r[l][j] = wv_lane_init(p->seed, u * WV_LANES + l, j);
  for (unsigned round = 0; round < p->rounds; round++)
    for (unsigned pc = 0; pc < WV_PROGRAM_LEN; pc++)
      ref_insn(m, &p->program[pc], r);
  for (unsigned l = 0; l < WV_LANES; l++)
    out[l] = wv_lane_output(p->seed, r[l], p->registers);
}

void wv_ref_range(const wv_hash_mem *m, uint64_t nonce, uint64_t count,
                  uint64_t *out)
{
  if (count == 0)
    return;
  uint64_t last = nonce + (count - 1);  /* no overflow: nonce + count <= 2^64 */
  for (uint64_t u = nonce / WV_LANES; u <= last / WV_LANES; u++) {
    uint64_t o[WV_LANES];
    wv_ref_unit(m, u, o);
    for (unsigned l = 0; l < WV_LANES; l++) {
      uint64_t n = u * WV_LANES + l;
      if (n >= nonce && n <= last)
        out[n - nonce] = o[l];
    }
    if (u == UINT64_MAX / WV_LANES)
      break;
  }
}
