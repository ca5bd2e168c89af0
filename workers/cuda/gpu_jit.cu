/* gpu_jit.cu - a pack's hash kernel specialised at hash_prepare (NVRTC).
 *
 * The interpreter (gpu_hash.cu, k_hash) reads the program from constant
 * memory and keeps a lane's registers in shared memory, because registers
 * indexed at run time cannot live in real registers.  Its profile on the
 * H200 (docs/performance.md): latency-bound, ~55 machine instructions per
 * program instruction.  The program is fixed per pack, so here it becomes
 * CUDA source with every register number and immediate a constant: the 64
 * instructions in straight-line code on registers r0 .. r{R-1}, compiled by
 * NVRTC into a cubin for this device's architecture and loaded with the
 * runtime's library API (cudaLibraryLoadData), cached in the pack's hpack.
 *
 * The generated kernel computes exactly docs/hash.md: the same lane
 * initialisation, the same dataset (D[r[a] & item_mask], read-only loads)
 * or closed form, xchg by the same two paths ("Exchange paths", normative):
 *   shuffle - __shfl_xor_sync of the two 32-bit halves;
 *   local   - two shared buffers X[k & 1][G], one barrier per exchange,
 *             k = EXCHANGES * round + index of the xchg in the program.
 * It has k_hash's signature and thread layout, so hash_launch swaps one for
 * the other and every consumer (hash(), the device fold of gpu_seg.cu, the
 * benchmarks) gets identical outputs.
 *
 * libnvrtc is opened at run time (dlopen of libnvrtc.so.<CUDA major>), so a
 * host without it still runs the backend.  Fallback: no nvrtc.h at build
 * time (WV_HAVE_NVRTC undefined), HIP (hiprtc is not wired up), no libnvrtc
 * at run time, WAVE_CUDA_NVRTC=0, a failed compile or load, or outputs that
 * differ from the interpreter's on a trial batch (gpu_hash.cu): the pack
 * runs on the interpreter and the device's exchange_reason says why.
 *
 * On the H200 (docs/performance.md) the pack main's kernel runs at 0.99 of
 * the random-load roofline, 1.26x the interpreter.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <string>

#include "workers/cuda/gpu_internal.h"

extern "C" {
#include "workers/hash/pack.h"
}

#if defined(WV_HAVE_NVRTC) && !defined(WV_GPU_HIP)
#include <dlfcn.h>
#include <nvrtc.h>
#include <pthread.h>
#define WVG_JIT 1
#endif

namespace WVG_NS {

#if defined(WVG_JIT)

struct hjit {
  cudaLibrary_t lib;
  cudaKernel_t kern;
};

/* The NVRTC entry points, from dlopen. */
static struct {
  int ok;
  char why[120];
  const char *(*GetErrorString)(nvrtcResult);
  nvrtcResult (*CreateProgram)(nvrtcProgram *, const char *, const char *,
                               int, const char *const *, const char *const *);
  nvrtcResult (*CompileProgram)(nvrtcProgram, int, const char *const *);
  nvrtcResult (*GetProgramLogSize)(nvrtcProgram, size_t *);
  nvrtcResult (*GetProgramLog)(nvrtcProgram, char *);
  nvrtcResult (*GetCUBINSize)(nvrtcProgram, size_t *);
  nvrtcResult (*GetCUBIN)(nvrtcProgram, char *);
  nvrtcResult (*DestroyProgram)(nvrtcProgram *);
} nv;
static pthread_once_t nv_once = PTHREAD_ONCE_INIT;

static void nv_open(void)
{
  char name[32];
  snprintf(name, sizeof name, "libnvrtc.so.%d", CUDART_VERSION / 1000);
  void *h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
  if (h == NULL) {
    snprintf(nv.why, sizeof nv.why, "no %s", name);
    return;
  }
#define WVG_SYM(f)                                                             \
  if ((*(void **)&nv.f = dlsym(h, "nvrtc" #f)) == NULL) {                      \
    snprintf(nv.why, sizeof nv.why, "%s lacks nvrtc" #f, name);                \
    return;                                                                    \
  }
  WVG_SYM(GetErrorString)
  WVG_SYM(CreateProgram)
  WVG_SYM(CompileProgram)
  WVG_SYM(GetProgramLogSize)
  WVG_SYM(GetProgramLog)
  WVG_SYM(GetCUBINSize)
  WVG_SYM(GetCUBIN)
  WVG_SYM(DestroyProgram)
#undef WVG_SYM
  nv.ok = 1;  /* the handle stays open for the process's life */
}

static void emit(std::string &s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void emit(std::string &s, const char *fmt, ...)
{
  va_list ap, aq;
  va_start(ap, fmt);
  va_copy(aq, ap);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n > 0) {
    size_t at = s.size();
    s.resize(at + (size_t)n + 1);
    (void)vsnprintf(&s[at], (size_t)n + 1, fmt, aq);
    s.resize(at + (size_t)n);
  }
  va_end(aq);
}

/* The kernel's source for pack p.  unroll: the rounds fully unrolled, else
 * one loop over rounds around the 64 straight-line instructions. */
static std::string jit_source(const wv_pack *p, int local, unsigned threads,
                              int unroll, unsigned minblocks)
{
  std::string s;
  const unsigned R = p->registers;
  unsigned nx = 0;
  for (unsigned pc = 0; pc < WV_PROGRAM_LEN; pc++)
    nx += p->program[pc].op == WV_OP_XCHG;
  emit(s, "typedef unsigned long long u64;\n"
          "__device__ __forceinline__ u64 mix(u64 x) {\n"
          "  x ^= x >> 30; x *= 0x%016llxull;\n"
          "  x ^= x >> 27; x *= 0x%016llxull;\n"
          "  return x ^ (x >> 31);\n}\n",
       (unsigned long long)WV_MIX_M1, (unsigned long long)WV_MIX_M2);
  emit(s, "__device__ __forceinline__ u64 shx(u64 v, int m) {\n"
          "  unsigned lo = __shfl_xor_sync(0xffffffffu, (unsigned)v, m);\n"
          "  unsigned hi = __shfl_xor_sync(0xffffffffu, (unsigned)(v >> 32), m);\n"
          "  return ((u64)hi << 32) | lo;\n}\n");
  char lb[40];
  if (minblocks > 0)
    snprintf(lb, sizeof lb, "%u, %u", threads, minblocks);
  else
    snprintf(lb, sizeof lb, "%u", threads);
  emit(s, "extern \"C\" __global__ void __launch_bounds__(%s)\n"
          "wv_k(const u64 *__restrict__ data, u64 u0, u64 nunits, u64 nonce,\n"
          "     u64 count, u64 *out) {\n"
          "  const unsigned tid = threadIdx.x, G = blockDim.x;\n"
          "  const u64 k = (u64)blockIdx.x * (G / 32) + tid / 32;\n"
          "  const u64 n = (u0 + k) * 32 + (tid & 31);\n",
       lb);
  if (local)
    emit(s, "  extern __shared__ u64 X[];\n");
  else
    emit(s, "  (void)G;\n");
  emit(s, "  const u64 s0 = mix(n ^ 0x%016llxull);\n",
       (unsigned long long)(p->seed ^ WV_TAG_LANE));
  for (unsigned j = 0; j < R; j++)
    emit(s, "  u64 r%u = mix(s0 + 0x%016llxull);\n", j,
         (unsigned long long)((uint64_t)(j + 1) * WV_GAMMA));
  emit(s, "%s  for (unsigned round = 0; round < %uu; round++) {\n",
       unroll ? "#pragma unroll\n" : "#pragma unroll 1\n", p->rounds);
  unsigned xi = 0;
  for (unsigned pc = 0; pc < WV_PROGRAM_LEN; pc++) {
    const wv_insn *in = &p->program[pc];
    const unsigned d = in->dst, a = in->a, b = in->b;
    const unsigned long long imm = (unsigned long long)in->imm;
    switch (in->op) {
    case WV_OP_ADD: emit(s, "    r%u = r%u + r%u;\n", d, a, b); break;
    case WV_OP_SUB: emit(s, "    r%u = r%u - r%u;\n", d, a, b); break;
    case WV_OP_XOR: emit(s, "    r%u = r%u ^ r%u;\n", d, a, b); break;
    case WV_OP_MUL: emit(s, "    r%u = r%u * r%u;\n", d, a, b); break;
    case WV_OP_ROTL:
      emit(s, "    r%u = (r%u << %u) | (r%u >> %u);\n", d, a, b, a, 64 - b);
      break;
    case WV_OP_XSHR: emit(s, "    r%u = r%u ^ (r%u >> %u);\n", d, a, a, b); break;
    case WV_OP_ADDI: emit(s, "    r%u = r%u + 0x%016llxull;\n", d, a, imm); break;
    case WV_OP_MULI: emit(s, "    r%u = r%u * 0x%016llxull;\n", d, a, imm); break;
    case WV_OP_LOAD:
      if (p->closed)
        emit(s, "    r%u ^= mix(0x%016llxull ^ (r%u & 0x%llxull));\n", d,
             (unsigned long long)p->closed_key, a,
             (unsigned long long)p->item_mask);
      else
        emit(s, "    r%u ^= __ldg(&data[r%u & 0x%llxull]);\n", d, a,
             (unsigned long long)p->item_mask);
      break;
    default: /* WV_OP_XCHG: the read of r[a] happens before the write */
      if (local && nx % 2 == 0) /* buffer k & 1 = xi & 1 every round */
        emit(s, "    { u64 *x = X + %uu * G;\n"
                "      x[tid] = r%u; __syncthreads(); r%u = x[tid ^ %uu]; }\n",
             xi & 1, a, d, b);
      else if (local)
        emit(s, "    { u64 *x = X + ((round * %uu + %uu) & 1u) * G;\n"
                "      x[tid] = r%u; __syncthreads(); r%u = x[tid ^ %uu]; }\n",
             nx, xi, a, d, b);
      else
        emit(s, "    r%u = shx(r%u, %u);\n", d, a, b);
      xi++;
      break;
    }
  }
  emit(s, "  }\n  u64 h = 0x%016llxull;\n",
       (unsigned long long)(p->seed ^ WV_TAG_OUT));
  for (unsigned j = 0; j < R; j++)
    emit(s, "  h = mix(h + r%u);\n", j);
  emit(s, "  if (k < nunits && n - nonce < count)\n"
          "    out[n - nonce] = h;\n}\n");
  return s;
}

int jit_compile(const wv_pack *p, int local, unsigned threads, int unroll,
                unsigned minblocks, int major, int minor, std::string *cubin,
                char *why, size_t whylen)
{
  (void)pthread_once(&nv_once, nv_open);
  if (!nv.ok) {
    snprintf(why, whylen, "%s", nv.why);
    return -1;
  }
  std::string src = jit_source(p, local, threads, unroll, minblocks);
  nvrtcProgram prog;
  nvrtcResult r = nv.CreateProgram(&prog, src.c_str(), "wv_pack.cu", 0,
                                     NULL, NULL);
  if (r != NVRTC_SUCCESS) {
    snprintf(why, whylen, "nvrtc: %s", nv.GetErrorString(r));
    return -1;
  }
  char arch[32];
  snprintf(arch, sizeof arch, "-arch=sm_%d%d", major, minor);
  const char *opts[] = {arch, "-default-device"};
  r = nv.CompileProgram(prog, 2, opts);
  if (r != NVRTC_SUCCESS) {
    size_t ln = 0;
    std::string log;
    if (nv.GetProgramLogSize(prog, &ln) == NVRTC_SUCCESS && ln > 1) {
      log.resize(ln);
      (void)nv.GetProgramLog(prog, &log[0]);
    }
    snprintf(why, whylen, "nvrtc %s: %s %.80s", arch,
             nv.GetErrorString(r), log.c_str());
    (void)nv.DestroyProgram(&prog);
    return -1;
  }
  size_t n = 0;
  r = nv.GetCUBINSize(prog, &n);
  if (r == NVRTC_SUCCESS && n > 0) {
    cubin->resize(n);
    r = nv.GetCUBIN(prog, &(*cubin)[0]);
  }
  (void)nv.DestroyProgram(&prog);
  if (r != NVRTC_SUCCESS || n == 0) {
    snprintf(why, whylen, "nvrtc cubin: %s", nv.GetErrorString(r));
    return -1;
  }
  return 0;
}

int jit_build(gdev *g, const wv_pack *p, unsigned threads, hjit **out,
              char *why, size_t whylen)
{
  *out = NULL;
  std::string cubin;
  if (jit_compile(p, g->local, threads, g->jit_unroll, g->jit_minblocks,
                  g->major, g->minor, &cubin, why, whylen) != 0)
    return -1;
  hjit *j = (hjit *)calloc(1, sizeof *j);
  if (j == NULL) {
    snprintf(why, whylen, "out of memory");
    return -1;
  }
  cudaError_t e = cudaLibraryLoadData(&j->lib, cubin.data(), NULL, NULL, 0,
                                      NULL, NULL, 0);
  if (e == cudaSuccess) {
    e = cudaLibraryGetKernel(&j->kern, j->lib, "wv_k");
    if (e != cudaSuccess)
      (void)cudaLibraryUnload(j->lib);
  }
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    snprintf(why, whylen, "load: %s", cudaGetErrorString(e));
    free(j);
    return -1;
  }
  *out = j;
  return 0;
}

cudaError_t jit_launch(const hjit *j, unsigned blocks, unsigned threads,
                       size_t smem, cudaStream_t st, const uint64_t *data,
                       uint64_t u0, uint64_t nunits, uint64_t nonce,
                       uint64_t count, uint64_t *out)
{
  void *args[] = {(void *)&data, &u0, &nunits, &nonce, &count, &out};
  return cudaLaunchKernel((const void *)j->kern, dim3(blocks), dim3(threads),
                          args, smem, st);
}

void jit_free(hjit *j)
{
  if (j == NULL)
    return;
  (void)cudaLibraryUnload(j->lib);
  free(j);
}

int jit_available(void)
{
  (void)pthread_once(&nv_once, nv_open);
  return nv.ok;
}

const char *jit_missing(void)
{
  (void)pthread_once(&nv_once, nv_open);
  return nv.ok ? "" : nv.why;
}

#else /* no NVRTC: the interpreter only */

int jit_build(gdev *g, const wv_pack *p, unsigned threads, hjit **out,
              char *why, size_t whylen)
{
  (void)g;
  (void)p;
  (void)threads;
  *out = NULL;
  snprintf(why, whylen, "no runtime compiler in this build");
  return -1;
}

cudaError_t jit_launch(const hjit *j, unsigned blocks, unsigned threads,
                       size_t smem, cudaStream_t st, const uint64_t *data,
                       uint64_t u0, uint64_t nunits, uint64_t nonce,
                       uint64_t count, uint64_t *out)
{
  /* Never called: jit_build always fails in this build. */
  (void)j; (void)blocks; (void)threads; (void)smem; (void)st; (void)data;
  (void)u0; (void)nunits; (void)nonce; (void)count; (void)out;
  return cudaErrorNotSupported;
}

void jit_free(hjit *j)
{
  (void)j;
}

int jit_available(void)
{
  return 0;
}

const char *jit_missing(void)
{
#if defined(WV_GPU_HIP)
  return "HIP: no runtime compilation";
#else
  return "no NVRTC in this build";
#endif
}

#endif

} /* namespace WVG_NS */
