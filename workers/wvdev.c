/* wvdev.c - the slot wrappers (see wvdev.h). */
#include <stdio.h>
#include <string.h>

#include "core/base.h"
#include "core/reduce.h"
#include "workers/wvdev.h"

int wv_dev_open(const wv_backend *be, const wv_device_config *cfg,
                wv_device **out, wave_error *err)
{
  *out = NULL;
  return be->open(cfg, out, err);
}

void wv_dev_close(const wv_backend *be, wv_device *dev)
{
  if (dev != NULL)
    be->close(dev);
}

const char *wv_exchange_name(wv_exchange x)
{
  switch (x) {
  case WV_EXCHANGE_LANES: return "lanes";
  case WV_EXCHANGE_SHUFFLE: return "shuffle";
  case WV_EXCHANGE_LOCAL: return "local";
  default: return "none";
  }
}

void wv_dev_caps(const wv_backend *be, wv_device *dev, wv_caps *caps)
{
  memset(caps, 0, sizeof *caps);
  be->caps(dev, caps);
  if (caps->exchange_mode != WV_EXCHANGE_NONE || caps->exchange[0] == '\0')
    snprintf(caps->exchange, sizeof caps->exchange, "%s",
             wv_exchange_name(caps->exchange_mode));
}

int wv_dev_has_hash(const wv_backend *be) { return be->hash != NULL; }

int wv_dev_list_uuids(const wv_backend *be, unsigned char (*out)[16],
                      size_t max, wave_error *err)
{
  if (be->list_uuids == NULL) {
    wv_seterr(err, WAVE_EUNSUPPORTED, "backend %s does not list device "
              "UUIDs", be->name);
    return -1;
  }
  return be->list_uuids(out, max, err);
}

int wv_dev_batch_needs_scratch(const wv_backend *be)
{
  return be->hash_batch == NULL;
}

/* The 64-bit dtypes and argmin/argmax run only where caps says so: the
 * other backends would read their rows as 32-bit ones. */
static int dv_reduce_supported(const wv_backend *be, wv_device *dev,
                               const wv_reduce_job *job, wave_error *err)
{
  if (!wv_reduce_is_wide(job->dtype, job->op))
    return 0;
  wv_caps c;
  wv_dev_caps(be, dev, &c);
  int wide = wv_dtype_size(job->dtype) == 8;
  if (wide && !c.dtypes64)
    return wv_seterr(err, WAVE_EUNSUPPORTED, "backend %s does not reduce "
                     "%s yet (the cpu backend does)", be->name,
                     wave_dtype_name(job->dtype));
  if ((job->op == WAVE_ARGMIN || job->op == WAVE_ARGMAX) && !c.argminmax)
    return wv_seterr(err, WAVE_EUNSUPPORTED, "backend %s does not run %s "
                     "yet (the cpu backend does)", be->name,
                     wave_op_name(job->op));
  return 0;
}

int wv_dev_reduce(const wv_backend *be, wv_device *dev,
                  const wv_reduce_job *job, wv_reduce_out *out,
                  wave_error *err)
{
  memset(out, 0, sizeof *out);
  int rc = dv_reduce_supported(be, dev, job, err);
  return rc != 0 ? rc : be->reduce(dev, job, out, err);
}

int wv_dev_prepare_step(const wv_backend *be, wv_device *dev,
                        const wv_pack *p, int *done, wave_error *err)
{
  *done = 0;
  if (be->hash == NULL)
    return wv_seterr(err, WAVE_EUNSUPPORTED, "backend %s has no hash jobs",
                     be->name);
  if (be->hash_prepare_step != NULL)
    return be->hash_prepare_step(dev, p, done, err);
  int rv = be->hash_prepare != NULL ? be->hash_prepare(dev, p, err) : 0;
  if (rv == 0)
    *done = 1;
  return rv;
}

unsigned wv_dev_prepare_steps(const wv_backend *be, wv_device *dev,
                              const wv_pack *p)
{
  if (be->hash == NULL)
    return 0;
  if (be->hash_prepare_step == NULL)
    return 1;  /* hash_prepare in one step */
  return be->hash_prepare_steps != NULL ? be->hash_prepare_steps(dev, p) : 0;
}

int wv_dev_selfcheck(const wv_backend *be, wv_device *dev, const wv_pack *p,
                     char *detail, size_t detail_len, wave_error *err)
{
  /* wv_pack_selfcheck calls hash_prepare again, a no-op once prepared */
  return wv_pack_selfcheck(be, dev, p, detail, detail_len, err);
}

int wv_dev_hash_batch(const wv_backend *be, wv_device *dev, const wv_pack *p,
                      wv_hash_batch *b, uint64_t *scratch, wave_error *err)
{
  return wv_hash_run_batch(be, dev, p, b, scratch, err);
}

int wv_dev_can_pin(const wv_backend *be)
{
  return be != NULL && be->host_register != NULL;
}

int wv_dev_host_register(const wv_backend *be, wv_device *dev, const void *ptr,
                         size_t bytes, wave_error *err)
{
  if (!wv_dev_can_pin(be) || dev == NULL)
    return wv_seterr(err, WAVE_EUNSUPPORTED, "backend %s does not pin host "
                     "memory", be ? be->name : "?");
  return be->host_register(dev, ptr, bytes, err);
}

void wv_dev_host_unregister(const wv_backend *be, wv_device *dev,
                            const void *ptr, size_t bytes)
{
  if (be != NULL && be->host_unregister != NULL && dev != NULL)
    be->host_unregister(dev, ptr, bytes);
}
