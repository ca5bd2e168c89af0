/* ocl_open.c - opening an OpenCL device, program builds, the hash exchange
 * rule, caps, and the wv_backend vtable.
 *
 * Device choice (devices.yaml, docs/config.md): `device: TEXT` picks the
 * index-th device, over all platforms in the loader's order, whose device
 * name, platform name or platform vendor contains TEXT (case-insensitive;
 * PoCL's vendor is "The pocl project"); without it, device
 * `index` of platform `platform` (default 0).  No ICD, no platform or no
 * such device is WAVE_ENODEV with the reason, never a crash.
 *
 * What open() decides once, from what the device reports:
 *  - reduce: sub_group_reduce_{add,min,max} for the integer wave step when
 *    the device has sub-groups (cl_khr_subgroups with OpenCL C >= 2.0, or
 *    OpenCL C 3.0 with the __opencl_c_subgroups feature), else local memory;
 *  - float sum: plain adds where the device promises float denormals
 *    (CL_FP_DENORM) and a probe sum of subnormals agrees, else adds that
 *    redo zero-exponent cases in integer arithmetic (reduce.cl);
 *  - hash exchange, exactly the wavefront-width seed's rule (docs/hash.md
 *    "Exchange paths"): shuffle only when (1) the device lists
 *    cl_khr_subgroup_shuffle (or cl_intel_subgroups), (2) the work-group is
 *    32 items (group_units 0 or 1), (3) the shuffle variant of the hash
 *    kernel compiles, and (4) clGetKernelSubGroupInfo[KHR] reports a
 *    sub-group of exactly 32 for a 32-item work-group of that kernel; when
 *    no query exists a probe kernel from the same build measures
 *    get_sub_group_size() and the exchange (weaker: a compiler may choose
 *    the width per kernel; the reason says so).  Otherwise local memory.
 *    The query is repeated on every pack's own kernel at hash_prepare.
 *    clGetKernelSubGroupInfoKHR is looked up only when cl_khr_subgroups is
 *    listed: PoCL 3.1 hands out a pointer that crashes when called on its
 *    devices, which have no sub-groups.
 * Nothing here reads the environment; tests reach the knobs through
 * wv_ocl_open_ex().
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ocl.h"
#include <CL/cl_ext.h> /* after ocl.h, which sets the target version */
#include "core/base.h"
#include "workers/hash/hash.h"
#include "workers/hash/pack.h"

extern const char wv_ocl_src_reduce[];
extern const char wv_ocl_src_hashbase[];

/* ---- errors -------------------------------------------------------------- */

const char *wv_ocl_errname(cl_int e)
{
  switch (e) {
#define E(x) case x: return #x;
  E(CL_SUCCESS) E(CL_DEVICE_NOT_FOUND) E(CL_DEVICE_NOT_AVAILABLE)
  E(CL_COMPILER_NOT_AVAILABLE) E(CL_MEM_OBJECT_ALLOCATION_FAILURE)
  E(CL_OUT_OF_RESOURCES) E(CL_OUT_OF_HOST_MEMORY)
  E(CL_PROFILING_INFO_NOT_AVAILABLE) E(CL_BUILD_PROGRAM_FAILURE)
  E(CL_MAP_FAILURE) E(CL_INVALID_VALUE) E(CL_INVALID_DEVICE_TYPE)
  E(CL_INVALID_PLATFORM) E(CL_INVALID_DEVICE) E(CL_INVALID_CONTEXT)
  E(CL_INVALID_QUEUE_PROPERTIES) E(CL_INVALID_COMMAND_QUEUE)
  E(CL_INVALID_MEM_OBJECT) E(CL_INVALID_BINARY) E(CL_INVALID_BUILD_OPTIONS)
  E(CL_INVALID_PROGRAM) E(CL_INVALID_PROGRAM_EXECUTABLE)
  E(CL_INVALID_KERNEL_NAME) E(CL_INVALID_KERNEL) E(CL_INVALID_ARG_INDEX)
  E(CL_INVALID_ARG_VALUE) E(CL_INVALID_ARG_SIZE) E(CL_INVALID_KERNEL_ARGS)
  E(CL_INVALID_WORK_DIMENSION) E(CL_INVALID_WORK_GROUP_SIZE)
  E(CL_INVALID_WORK_ITEM_SIZE) E(CL_INVALID_GLOBAL_OFFSET)
  E(CL_INVALID_EVENT_WAIT_LIST) E(CL_INVALID_EVENT) E(CL_INVALID_OPERATION)
  E(CL_INVALID_BUFFER_SIZE) E(CL_INVALID_GLOBAL_WORK_SIZE)
#undef E
  case -1001: return "CL_PLATFORM_NOT_FOUND_KHR";
  default: return "CL_error";
  }
}

int wv_ocl_fail(wave_error *err, cl_int e, const char *what)
{
  return wv_seterr(err, WAVE_EDEVICE, "opencl: %s: %s (%d)", what,
                   wv_ocl_errname(e), (int)e);
}

/* ---- small helpers ------------------------------------------------------- */

static char *oo_dev_str(cl_device_id id, cl_device_info what)
{
  size_t n = 0;
  if (clGetDeviceInfo(id, what, 0, NULL, &n) != CL_SUCCESS)
    return NULL;
  char *s = calloc(1, n + 1);
  if (s != NULL && clGetDeviceInfo(id, what, n, s, NULL) != CL_SUCCESS)
    s[0] = '\0';
  return s;
}

static void oo_plat_name(cl_platform_id p, char *buf, size_t n)
{
  buf[0] = '\0';
  if (clGetPlatformInfo(p, CL_PLATFORM_NAME, n, buf, NULL) != CL_SUCCESS)
    snprintf(buf, n, "?");
}

/* Whole-word membership in a space-separated extension list. */
static int oo_has_ext(const char *list, const char *ext)
{
  size_t n = strlen(ext);
  for (const char *p = list; p != NULL && (p = strstr(p, ext)) != NULL;
       p += n)
    if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0'))
      return 1;
  return 0;
}

static int oo_contains_ci(const char *hay, const char *needle)
{
  size_t n = strlen(needle);
  for (; *hay != '\0'; hay++) {
    size_t i = 0;
    while (i < n && hay[i] != '\0' &&
           tolower((unsigned char)hay[i]) == tolower((unsigned char)needle[i]))
      i++;
    if (i == n)
      return 1;
  }
  return n == 0;
}

int wv_ocl_buf_reserve(wv_device *d, wv_ocl_buf *b, size_t size,
                       wave_error *err)
{
  if (size == 0)
    size = 16;
  if (b->mem != NULL && b->size >= size)
    return 0;
  wv_ocl_buf_free(b);
  cl_int e;
  b->mem = clCreateBuffer(d->ctx, CL_MEM_READ_WRITE, size, NULL, &e);
  if (b->mem == NULL || e != CL_SUCCESS) {
    b->mem = NULL;
    if (e == CL_MEM_OBJECT_ALLOCATION_FAILURE || e == CL_OUT_OF_RESOURCES ||
        e == CL_OUT_OF_HOST_MEMORY || e == CL_INVALID_BUFFER_SIZE)
      return wv_seterr(err, WAVE_ENOMEM, "opencl: device buffer of %zu bytes: "
                       "%s", size, wv_ocl_errname(e));
    return wv_ocl_fail(err, e, "clCreateBuffer");
  }
  b->size = size;
  return 0;
}

void wv_ocl_buf_free(wv_ocl_buf *b)
{
  if (b->mem != NULL)
    clReleaseMemObject(b->mem);
  b->mem = NULL;
  b->size = 0;
}

int wv_ocl_launch(wv_device *d, cl_kernel k, size_t global, size_t local,
                  cl_event *ev, wave_error *err)
{
  cl_int e = clEnqueueNDRangeKernel(d->q, k, 1, NULL, &global,
                                    local ? &local : NULL, 0, NULL, ev);
  if (e != CL_SUCCESS)
    return wv_ocl_fail(err, e, "clEnqueueNDRangeKernel");
  return 0;
}

/* ---- builds -------------------------------------------------------------- */

int wv_ocl_build(wv_device *d, const char *const *src, unsigned nsrc,
                 const char *options, cl_program *out, wave_error *err)
{
  cl_int e;
  *out = NULL;
  cl_program p = clCreateProgramWithSource(d->ctx, nsrc, (const char **)src,
                                           NULL, &e);
  if (p == NULL || e != CL_SUCCESS)
    return wv_ocl_fail(err, e, "clCreateProgramWithSource");
  e = clBuildProgram(p, 1, &d->id, options, NULL, NULL);
  if (e != CL_SUCCESS) {
    size_t n = 0;
    clGetProgramBuildInfo(p, d->id, CL_PROGRAM_BUILD_LOG, 0, NULL, &n);
    char *log = calloc(1, n + 1);
    if (log != NULL)
      clGetProgramBuildInfo(p, d->id, CL_PROGRAM_BUILD_LOG, n, log, NULL);
    /* The whole log on stderr (the daemon's log); the error holds what
     * fits, newlines folded. */
    fprintf(stderr, "opencl: %s: build failed (%s), options \"%s\", log:\n"
            "%s\n", d->name, wv_ocl_errname(e), options,
            log != NULL ? log : "");
    for (char *c = log; c != NULL && *c != '\0'; c++)
      if (*c == '\n' || *c == '\r')
        *c = ' ';
    wv_seterr(err, WAVE_EDEVICE, "opencl: clBuildProgram: %s; log: %s",
              wv_ocl_errname(e), log != NULL ? log : "(none)");
    free(log);
    clReleaseProgram(p);
    return WAVE_EDEVICE;
  }
  *out = p;
  return 0;
}

typedef cl_int (*oo_sginfo_fn)(cl_kernel, cl_device_id, cl_uint, size_t,
                               const void *, size_t, void *, size_t *);

int wv_ocl_kernel_subgroup(wv_device *d, cl_kernel k, size_t items,
                           size_t *size, const char **how)
{
  size_t got = 0;
  /* Core since OpenCL 2.1 (optional in 3.0: CL_INVALID_OPERATION there
   * without sub-groups). */
  if (d->cl_major > 2 || (d->cl_major == 2 && d->cl_minor >= 1)) {
    cl_int e = clGetKernelSubGroupInfo(k, d->id,
                                       CL_KERNEL_MAX_SUB_GROUP_SIZE_FOR_NDRANGE,
                                       sizeof items, &items, sizeof got, &got,
                                       NULL);
    if (e == CL_SUCCESS && got > 0) {
      *size = got;
      *how = "clGetKernelSubGroupInfo";
      return 0;
    }
  }
  /* The extension's entry point, only where the extension is listed. */
  if (d->khr_subgroups) {
    oo_sginfo_fn f = (oo_sginfo_fn)clGetExtensionFunctionAddressForPlatform(
        d->platform, "clGetKernelSubGroupInfoKHR");
    if (f != NULL) {
      cl_int e = f(k, d->id, CL_KERNEL_MAX_SUB_GROUP_SIZE_FOR_NDRANGE /* = _KHR */,
                   sizeof items, &items, sizeof got, &got, NULL);
      if (e == CL_SUCCESS && got > 0) {
        *size = got;
        *how = "clGetKernelSubGroupInfoKHR";
        return 0;
      }
    }
  }
  return -1;
}

/* A pack-shaped program for the exchange decision at open (the real packs'
 * kernels are queried again at hash_prepare): closed form, four registers,
 * one round, six exchanges between arithmetic. */
static void oo_probe_pack(wv_pack *p)
{
  memset(p, 0, sizeof *p);
  snprintf(p->name, sizeof p->name, "probe");
  p->registers = 4;
  p->rounds = 1;
  p->closed = 1;
  p->item_mask = WV_CLOSED_ITEM_MASK;
  p->closed_key = 1;
  static const unsigned m[6] = {1, 2, 4, 8, 16, 1};
  for (unsigned i = 0; i < WV_PROGRAM_LEN; i++) {
    wv_insn *in = &p->program[i];
    if (i % 10 == 5 && i / 10 < 6) {
      *in = (wv_insn){.op = WV_OP_XCHG, .dst = i % 4, .a = (i + 1) % 4,
                      .b = m[i / 10]};
    } else {
      *in = (wv_insn){.op = WV_OP_ADD, .dst = i % 4, .a = (i + 1) % 4,
                      .b = (i + 2) % 4};
    }
  }
}

/* Run the probe kernel of program prog: sub-group size, and whether every
 * item's sub-group local id is its local id and the exchange was right. */
static int oo_run_probe(wv_device *d, cl_program prog, unsigned *sg,
                        int *ok, wave_error *err)
{
  cl_int e;
  cl_kernel k = clCreateKernel(prog, "hash_probe", &e);
  if (k == NULL)
    return wv_ocl_fail(err, e, "clCreateKernel(hash_probe)");
  cl_mem m = clCreateBuffer(d->ctx, CL_MEM_READ_WRITE, 33 * sizeof(cl_uint),
                            NULL, &e);
  int rv = 0;
  cl_uint res[33] = {0};
  if (m == NULL) {
    rv = wv_ocl_fail(err, e, "clCreateBuffer");
  } else {
    clSetKernelArg(k, 0, sizeof m, &m);
    if ((rv = wv_ocl_launch(d, k, 32, 32, NULL, err)) == 0) {
      e = clEnqueueReadBuffer(d->q, m, CL_TRUE, 0, sizeof res, res, 0, NULL,
                              NULL);
      if (e != CL_SUCCESS)
        rv = wv_ocl_fail(err, e, "clEnqueueReadBuffer(probe)");
    }
    clReleaseMemObject(m);
  }
  clReleaseKernel(k);
  *sg = res[0];
  *ok = 1;
  for (unsigned i = 0; i < 32; i++)
    if (res[1 + i] != 3u)
      *ok = 0;
  return rv;
}

/* The rule, conditions (2)..(4) for variant ex (1 khr, 2 intel); why gets
 * the failed condition or the evidence. */
static int oo_shuffle_possible(wv_device *d, const wv_device_config *cfg,
                               int ex, char *why, size_t n)
{
  if (cfg->group_units > 1) {
    snprintf(why, n, "group_units %u: work-group of %u items, not 32",
             cfg->group_units, 32 * cfg->group_units);
    return 0;
  }
  wv_pack pk;
  oo_probe_pack(&pk);
  char *hdr = wv_ocl_hash_header(&pk, ex, 1);
  if (hdr == NULL) {
    snprintf(why, n, "out of memory");
    return 0;
  }
  const char *src[2] = {hdr, wv_ocl_src_hash};
  char opts[64];
  snprintf(opts, sizeof opts, "-cl-std=CL%u.%u",
           ex == 1 && d->c_major >= 2 ? d->c_major : 1,
           ex == 1 && d->c_major >= 2 ? d->c_minor : 2);
  cl_program prog = NULL;
  wave_error e2 = {0};
  int rv = wv_ocl_build(d, src, 2, opts, &prog, &e2);
  free(hdr);
  if (rv != 0) {
    snprintf(why, n, "the shuffle variant does not compile: %.120s",
             e2.message);
    return 0;
  }
  cl_int e;
  cl_kernel k = clCreateKernel(prog, "hash_units", &e);
  size_t sg = 0;
  const char *how = "";
  int ok = 0;
  if (k != NULL && wv_ocl_kernel_subgroup(d, k, 32, &sg, &how) == 0) {
    ok = sg == 32;
    snprintf(why, n, "%s: sub-group %zu %s 32 for a 32-item work-group",
             how, sg, ok ? "==" : "!=");
  } else {
    unsigned psg = 0;
    int lanes_ok = 0;
    if (oo_run_probe(d, prog, &psg, &lanes_ok, &e2) != 0) {
      snprintf(why, n, "no sub-group query, and the probe kernel failed: "
               "%.100s", e2.message);
    } else {
      ok = psg == 32 && lanes_ok;
      snprintf(why, n, "no per-kernel sub-group query; probe kernel "
               "(weaker: a compiler may pick the width per kernel): "
               "sub-group %u%s", psg,
               psg != 32 ? " != 32"
                         : lanes_ok ? ", ids and exchange right"
                                    : ", ids or exchange wrong");
    }
  }
  if (k != NULL)
    clReleaseKernel(k);
  clReleaseProgram(prog);
  return ok;
}

static void oo_choose_exchange(wv_device *d, const wv_device_config *cfg)
{
  int ex = 0;
  char why[180];
  if (cfg->exchange == WV_EXCHANGE_LOCAL) {
    snprintf(why, sizeof why, "configured local");
  } else if (d->khr_shuffle) {
    ex = oo_shuffle_possible(d, cfg, 1, why, sizeof why) ? 1 : 0;
  } else if (d->intel_shuffle) {
    ex = oo_shuffle_possible(d, cfg, 2, why, sizeof why) ? 2 : 0;
  } else {
    snprintf(why, sizeof why, "no sub-group shuffle extension listed "
             "(cl_khr_subgroup_shuffle, cl_intel_subgroups)");
  }
  d->want_shuffle = cfg->exchange == WV_EXCHANGE_SHUFFLE;
  d->hash_shuffle = ex;
  d->hash_refused = 0;
  if (ex != 0) {
    d->exchange = WV_EXCHANGE_SHUFFLE;
    snprintf(d->exchange_reason, sizeof d->exchange_reason, "%s: %.140s",
             ex == 1 ? "sub_group_shuffle_xor" : "intel_sub_group_shuffle_xor",
             why);
  } else if (d->want_shuffle) {
    d->hash_refused = 1;
    d->exchange = WV_EXCHANGE_NONE;
    snprintf(d->exchange_reason, sizeof d->exchange_reason,
             "configured shuffle, which this device cannot do: %.140s", why);
  } else {
    d->exchange = WV_EXCHANGE_LOCAL;
    snprintf(d->exchange_reason, sizeof d->exchange_reason,
             "local memory, two buffers, one barrier per exchange: %.140s", why);
  }
  d->hash_units = ex != 0 ? 1 : cfg->group_units ? cfg->group_units
                                 : d->gpu ? 2 : 1;
}

/* ---- open / close -------------------------------------------------------- */

static int oo_pick(wv_device *d, const wv_device_config *cfg, wave_error *err)
{
  cl_uint np = 0;
  cl_int e = clGetPlatformIDs(0, NULL, &np);
  if (e != CL_SUCCESS || np == 0)
    return wv_seterr(err, WAVE_ENODEV, "%s: no usable OpenCL platform (ICD) "
                     "on this machine: clGetPlatformIDs: %s", cfg->name,
                     e != CL_SUCCESS ? wv_ocl_errname(e) : "0 platforms");
  cl_platform_id *pl = calloc(np, sizeof *pl);
  if (pl == NULL)
    return wv_seterr(err, WAVE_ENOMEM, NULL);
  clGetPlatformIDs(np, pl, NULL);
  const char *match = cfg->device_match != NULL && cfg->device_match[0]
                        ? cfg->device_match : NULL;
  int seen = 0, found = 0;
  for (cl_uint p = 0; p < np && !found; p++) {
    if (match == NULL && (int)p != cfg->platform)
      continue;
    cl_uint nd = 0;
    if (clGetDeviceIDs(pl[p], CL_DEVICE_TYPE_ALL, 0, NULL, &nd) !=
        CL_SUCCESS || nd == 0)
      continue;
    cl_device_id *ids = calloc(nd, sizeof *ids);
    if (ids == NULL)
      break;
    clGetDeviceIDs(pl[p], CL_DEVICE_TYPE_ALL, nd, ids, NULL);
    char pname[128], pvendor[128] = "";
    oo_plat_name(pl[p], pname, sizeof pname);
    if (clGetPlatformInfo(pl[p], CL_PLATFORM_VENDOR, sizeof pvendor, pvendor,
                          NULL) != CL_SUCCESS)
      pvendor[0] = '\0';
    for (cl_uint i = 0; i < nd && !found; i++) {
      char *dn = oo_dev_str(ids[i], CL_DEVICE_NAME);
      int ok = match == NULL || (dn != NULL && oo_contains_ci(dn, match)) ||
               oo_contains_ci(pname, match) || oo_contains_ci(pvendor, match);
      if (ok && seen++ == cfg->index) {
        d->platform = pl[p];
        d->id = ids[i];
        snprintf(d->name, sizeof d->name, "%s", dn != NULL ? dn : "?");
        snprintf(d->platform_name, sizeof d->platform_name, "%s", pname);
        found = 1;
      }
      free(dn);
    }
    free(ids);
  }
  free(pl);
  if (!found) {
    if (match != NULL)
      return wv_seterr(err, WAVE_ENODEV, "%s: no OpenCL device matching "
                       "\"%s\" with index %d (%d match)", cfg->name, match,
                       cfg->index, seen);
    return wv_seterr(err, WAVE_ENODEV, "%s: no OpenCL device %d on platform "
                     "%d (%u platforms, %d devices there)", cfg->name,
                     cfg->index, cfg->platform, (unsigned)np, seen);
  }
  return 0;
}

static void oo_version(const char *s, const char *prefix, unsigned *maj,
                       unsigned *min)
{
  *maj = 1;
  *min = 0;
  if (s != NULL && strncmp(s, prefix, strlen(prefix)) == 0)
    sscanf(s + strlen(prefix), "%u.%u", maj, min);
}

static int oo_info(wv_device *d)
{
  cl_device_type t = 0;
  clGetDeviceInfo(d->id, CL_DEVICE_TYPE, sizeof t, &t, NULL);
  d->gpu = (t & CL_DEVICE_TYPE_GPU) != 0;
  clGetDeviceInfo(d->id, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof d->units,
                  &d->units, NULL);
  if (d->units == 0)
    d->units = 1;
  clGetDeviceInfo(d->id, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof d->max_alloc,
                  &d->max_alloc, NULL);
  cl_device_fp_config fp = 0;
  clGetDeviceInfo(d->id, CL_DEVICE_SINGLE_FP_CONFIG, sizeof fp, &fp, NULL);
  d->denorm = (fp & CL_FP_DENORM) != 0;
  char *v = oo_dev_str(d->id, CL_DEVICE_VERSION);
  oo_version(v, "OpenCL ", &d->cl_major, &d->cl_minor);
  free(v);
  /* The highest OpenCL C version: 3.0 devices list them all
   * (CL_DEVICE_OPENCL_C_ALL_VERSIONS); CL_DEVICE_OPENCL_C_VERSION says at
   * most 1.2 there by rule, so ask for both. */
  v = oo_dev_str(d->id, CL_DEVICE_OPENCL_C_VERSION);
  oo_version(v, "OpenCL C ", &d->c_major, &d->c_minor);
  free(v);
  if (d->cl_major >= 3) {
    size_t n = 0;
    if (clGetDeviceInfo(d->id, CL_DEVICE_OPENCL_C_ALL_VERSIONS, 0, NULL, &n) ==
          CL_SUCCESS && n >= sizeof(cl_name_version)) {
      cl_name_version *nv = malloc(n);
      if (nv != NULL &&
          clGetDeviceInfo(d->id, CL_DEVICE_OPENCL_C_ALL_VERSIONS, n, nv,
                          NULL) == CL_SUCCESS) {
        for (size_t i = 0; i < n / sizeof *nv; i++) {
          unsigned ma = CL_VERSION_MAJOR(nv[i].version);
          unsigned mi = CL_VERSION_MINOR(nv[i].version);
          if (ma > d->c_major || (ma == d->c_major && mi > d->c_minor)) {
            d->c_major = ma;
            d->c_minor = mi;
          }
        }
      }
      free(nv);
    }
  }
  d->extensions = oo_dev_str(d->id, CL_DEVICE_EXTENSIONS);
  if (d->extensions == NULL)
    return -1;
  d->khr_subgroups = oo_has_ext(d->extensions, "cl_khr_subgroups");
  d->khr_shuffle = oo_has_ext(d->extensions, "cl_khr_subgroup_shuffle") &&
                   d->c_major >= 2;
  d->intel_shuffle = oo_has_ext(d->extensions, "cl_intel_subgroups");
  /* cl_khr_device_uuid: the same UUID as CUDA's and Vulkan's for one GPU,
   * so a job over several devices uses a card once. */
  if (oo_has_ext(d->extensions, "cl_khr_device_uuid") &&
      clGetDeviceInfo(d->id, CL_DEVICE_UUID_KHR, sizeof d->uuid, d->uuid,
                      NULL) == CL_SUCCESS)
    d->has_uuid = 1;
  int sg30 = 0;
  if (d->c_major >= 3) {
    size_t n = 0;
    if (clGetDeviceInfo(d->id, CL_DEVICE_OPENCL_C_FEATURES, 0, NULL, &n) ==
        CL_SUCCESS && n >= sizeof(cl_name_version)) {
      cl_name_version *nv = malloc(n);
      if (nv != NULL && clGetDeviceInfo(d->id, CL_DEVICE_OPENCL_C_FEATURES, n,
                                        nv, NULL) == CL_SUCCESS)
        for (size_t i = 0; i < n / sizeof *nv; i++)
          if (strcmp(nv[i].name, "__opencl_c_subgroups") == 0)
            sg30 = 1;
      free(nv);
    }
  }
  d->subgroups = (d->khr_subgroups && d->c_major >= 2) || sg30;
  return 0;
}

const char *const wv_ocl_kernel_names[WV_OCL_KERNEL_COUNT_] = {
  "red_sum", "red_and", "red_or", "red_xor", "red_umin", "red_smin",
  "red_fmin", "red_umax", "red_smax", "red_fmax", "red_uext", "red_sext",
  "red_fext", "red_finish", "fsum_level1", "fsum_tree", "xsum_bins",
  "xsum_fold", "stream_read",
  "hash_dataset", "hash_fold_count", "hash_fold_winners",
  "hash_fold_segments",
};

static void oo_release_base(wv_device *d)
{
  for (unsigned i = 0; i < WV_OCL_KERNEL_COUNT_; i++) {
    if (d->k[i] != NULL)
      clReleaseKernel(d->k[i]);
    d->k[i] = NULL;
  }
  if (d->base != NULL)
    clReleaseProgram(d->base);
  d->base = NULL;
}

/* Build the base program (reduce.cl + hashbase.cl) and its kernels. */
static int oo_build_base(wv_device *d, wave_error *err)
{
  oo_release_base(d);
  char opts[160];
  int sg = d->subgroups && !d->opt.force_local;
  snprintf(opts, sizeof opts, "-cl-std=CL%u.%u -DWV_SUBGROUPS=%d "
           "-DWV_DENORM=%d", sg ? d->c_major : 1, sg ? d->c_minor : 2, sg,
           d->denorm);
  const char *src[2] = {wv_ocl_src_reduce, wv_ocl_src_hashbase};
  int rv = wv_ocl_build(d, src, 2, opts, &d->base, err);
  if (rv != 0 && sg) {
    /* Sub-groups listed but the variant does not build: local memory. */
    d->subgroups = 0;
    return oo_build_base(d, err);
  }
  if (rv != 0)
    return rv;
  for (unsigned i = 0; i < WV_OCL_KERNEL_COUNT_; i++) {
    cl_int e;
    d->k[i] = clCreateKernel(d->base, wv_ocl_kernel_names[i], &e);
    if (d->k[i] == NULL)
      return wv_ocl_fail(err, e, wv_ocl_kernel_names[i]);
  }
  return 0;
}

/* The float sum of subnormals 3 ulp + -1 ulp must be 2 ulp: a device that
 * says it keeps denormals but flushes gets the integer adds instead. */
static int oo_probe_denorm(wv_device *d, wave_error *err)
{
  static const uint32_t rows[2] = {0x00000003u, 0x80000001u};
  wv_span in = {rows, 2};
  wv_reduce_job job = {.dtype = WAVE_F32, .op = WAVE_SUM, .input = &in,
                       .n_input = 1, .rows = 2};
  wv_reduce_out out;
  int rv = wv_ocl_reduce(d, &job, &out, err);
  if (rv != 0)
    return rv;
  if (out.bits[0] != 0x00000002u && d->denorm) {
    d->denorm = 0;
    return oo_build_base(d, err);
  }
  if (out.bits[0] != 0x00000002u)
    return wv_seterr(err, WAVE_EDEVICE, "opencl: %s: float sum of subnormals "
                     "gave %08x, not 00000002", d->name,
                     (unsigned)out.bits[0]);
  return 0;
}

int wv_ocl_open_ex(const wv_device_config *cfg, const wv_ocl_options *opt,
                   wv_device **out, wave_error *err)
{
  *out = NULL;
  wv_device *d = calloc(1, sizeof *d);
  if (d == NULL)
    return wv_seterr(err, WAVE_ENOMEM, NULL);
  if (opt != NULL)
    d->opt = *opt;
  int rv = oo_pick(d, cfg, err);
  if (rv != 0) {
    free(d);
    return rv;
  }
  if (oo_info(d) != 0) {
    free(d);
    return wv_seterr(err, WAVE_ENODEV, "%s: CL_DEVICE_EXTENSIONS unreadable",
                     cfg->name);
  }
  cl_int e;
  d->ctx = clCreateContext(NULL, 1, &d->id, NULL, NULL, &e);
  if (d->ctx == NULL) {
    rv = wv_ocl_fail(err, e, "clCreateContext");
    goto fail;
  }
  d->q = clCreateCommandQueue(d->ctx, d->id, CL_QUEUE_PROFILING_ENABLE, &e);
  if (d->q == NULL) {
    rv = wv_ocl_fail(err, e, "clCreateCommandQueue");
    goto fail;
  }
  d->window_rows = d->opt.window_rows ? (d->opt.window_rows + 255) & ~255ull
                                      : d->gpu ? 1ull << 24 : 1ull << 22;
  if ((rv = oo_build_base(d, err)) != 0 ||
      (rv = oo_probe_denorm(d, err)) != 0 || (rv = wv_ocl_wide_open(d, err)))
    goto fail;
  oo_choose_exchange(d, cfg);
  d->hash_batch = d->gpu ? 1ull << 22 : 1ull << 15;
  snprintf(d->description, sizeof d->description,
           "%.50s (%.30s), OpenCL %u.%u, C %u.%u, %u CUs%s%s%s", d->name,
           d->platform_name, d->cl_major, d->cl_minor, d->c_major, d->c_minor,
           (unsigned)d->units, d->subgroups ? ", sub-groups" : "",
           d->denorm ? "" : ", soft subnormal adds",
           d->wide == NULL ? ", no wide program"
           : d->fp64 ? "" : ", no fp64");
  *out = d;
  return 0;
fail:
  wv_ocl_close(d);
  return rv;
}

void wv_ocl_close(wv_device *d)
{
  if (d == NULL)
    return;
  if (d->q != NULL)
    clFinish(d->q);
  wv_ocl_hash_free(d);
  wv_ocl_reduce_free(d);
  wv_ocl_wide_close(d);
  oo_release_base(d);
  if (d->q != NULL)
    clReleaseCommandQueue(d->q);
  if (d->ctx != NULL)
    clReleaseContext(d->ctx);
  free(d->extensions);
  free(d);
}

/* ---- the vtable ---------------------------------------------------------- */

static int oo_open(const wv_device_config *cfg, wv_device **out,
                   wave_error *err)
{
  return wv_ocl_open_ex(cfg, NULL, out, err);
}

static void oo_caps(wv_device *d, wv_caps *caps)
{
  memset(caps, 0, sizeof *caps);
  snprintf(caps->description, sizeof caps->description, "%s", d->description);
  caps->wave_width = d->hash_shuffle ? 32 : 1;
  caps->native_wave_reduce = d->subgroups && !d->opt.force_local;
  snprintf(caps->exchange_reason, sizeof caps->exchange_reason, "%s",
           d->exchange_reason);
  caps->exchange_mode = d->exchange;
  caps->reverify = 1;  /* a GPU's winners are checked on the CPU */
  caps->hash_batch = d->hash_batch;
  caps->has_uuid = d->has_uuid;
  memcpy(caps->uuid, d->uuid, sizeof caps->uuid);
  /* One bit for the three 64-bit dtypes: set where float64 sums run
   * (cl_khr_fp64, ocl_reduce.c); argmin/argmax need no double. */
  caps->dtypes64 = d->wide != NULL && d->fp64;
  caps->argminmax = d->wide != NULL;
  /* fsum is integer work with 32-bit local atomics, core OpenCL C: every
   * device that opens runs float32; float64 rides on dtypes64. */
  caps->fsum = 1;
  if (!caps->dtypes64)
    snprintf(caps->wide_why, sizeof caps->wide_why, "%.100s: %s", d->name,
             d->wide == NULL ? "its 64-bit kernels did not build"
                             : "no cl_khr_fp64 (float64 sums need it)");
}

const wv_backend wv_opencl_backend = {
  .name = "opencl",
  .open = oo_open,
  .close = wv_ocl_close,
  .caps = oo_caps,
  .reduce = wv_ocl_reduce,
  .hash_prepare = wv_ocl_hash_prepare,
  .hash = wv_ocl_hash,
  .hash_batch = wv_ocl_hash_batch,
};
