/* wvdev.c - the slot wrappers (see wvdev.h). */
#include <stdio.h>
#include <string.h>

#include "core/base.h"
#include "core/reduce.h"
#include "workers/health.h"
#include "workers/wvdev.h"

int wv_dev_open(wv_dev *d, const wv_device_config *cfg, wave_error *err)
{
  d->impl = NULL;
  int rc = d->be->open(cfg, &d->impl, err);
  if (rc != 0)
    d->impl = NULL;
  return rc;
}

void wv_dev_close(wv_dev *d)
{
  if (d->impl != NULL)
    d->be->close(d->impl);
  d->impl = NULL;
}

void wv_dev_caps(const wv_dev *d, wv_caps *caps)
{
  memset(caps, 0, sizeof *caps);
  d->be->caps(d->impl, caps);
}

int wv_dev_has_hash(const wv_dev *d) { return d->be->hash != NULL; }

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

void wv_dev_health(const wv_backend *be, const wv_device_config *cfg,
                   const wv_caps *caps, wv_health *out)
{
  memset(out, 0, sizeof *out);
  if (be->health != NULL)
    be->health(cfg, caps, out);
  else
    wv_health_gpu(caps, out);
}

int wv_dev_batch_needs_scratch(const wv_dev *d)
{
  return d->be->hash_batch == NULL;
}

/* The 64-bit dtypes and argmin/argmax run only where caps says so: the
 * other backends would read their rows as 32-bit ones.  fsum likewise
 * (caps.fsum). */
static int wvd_reduce_supported(const wv_dev *d, const wv_reduce_job *job,
                               wave_error *err)
{
  int fsum = job->op == WAVE_FSUM;
  if (!wv_reduce_is_wide(job->dtype, job->op) && !fsum)
    return 0;
  wv_caps c;
  wv_dev_caps(d, &c);
  if (fsum && !c.fsum && c.fsum_why[0])
    return wv_seterr(err, WAVE_EUNSUPPORTED, "backend %s does not run fsum "
                     "here: %s", d->be->name, c.fsum_why);
  if (fsum && !c.fsum)
    return wv_seterr(err, WAVE_EUNSUPPORTED, "fsum is not built for the %s "
                     "backend", d->be->name);
  int wide = wv_dtype_size(job->dtype) == 8;
  /* the device's own reason where it gave one, else the backend's */
  const char *why = c.wide_why[0] ? c.wide_why : "not in this backend";
  if (wide && !c.dtypes64)
    return wv_seterr(err, WAVE_EUNSUPPORTED, "backend %s does not reduce "
                     "%s here: %s", d->be->name, wave_dtype_name(job->dtype),
                     why);
  if ((job->op == WAVE_ARGMIN || job->op == WAVE_ARGMAX) && !c.argminmax)
    return wv_seterr(err, WAVE_EUNSUPPORTED, "backend %s does not run %s "
                     "here: %s", d->be->name, wave_op_name(job->op), why);
  return 0;
}

int wv_dev_reduce(const wv_dev *d, const wv_reduce_job *job,
                  wv_reduce_out *out, wave_error *err)
{
  memset(out, 0, sizeof *out);
  int rc = wvd_reduce_supported(d, job, err);
  return rc != 0 ? rc : d->be->reduce(d->impl, job, out, err);
}

int wv_dev_prepare_step(const wv_dev *d, const wv_pack *p, int *done,
                        wave_error *err)
{
  const wv_backend *be = d->be;
  wv_device *dev = d->impl;
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

unsigned wv_dev_prepare_steps(const wv_dev *d, const wv_pack *p)
{
  const wv_backend *be = d->be;
  wv_device *dev = d->impl;
  if (be->hash == NULL)
    return 0;
  if (be->hash_prepare_step == NULL)
    return 1;  /* hash_prepare in one step */
  return be->hash_prepare_steps != NULL ? be->hash_prepare_steps(dev, p) : 0;
}

int wv_dev_selfcheck(const wv_dev *d, const wv_pack *p, char *detail,
                     size_t detail_len, wave_error *err)
{
  /* wv_pack_selfcheck calls hash_prepare again, a no-op once prepared */
  return wv_pack_selfcheck(d->be, d->impl, p, detail, detail_len, err);
}

int wv_dev_hash_batch(const wv_dev *d, const wv_pack *p, wv_hash_batch *b,
                      uint64_t *scratch, wave_error *err)
{
  return wv_hash_run_batch(d->be, d->impl, p, b, scratch, err);
}

int wv_dev_can_pin(const wv_dev *d)
{
  return d != NULL && d->be != NULL && d->be->host_register != NULL;
}

int wv_dev_host_register(const wv_dev *d, const void *ptr, size_t bytes,
                         wave_error *err)
{
  if (!wv_dev_can_pin(d) || d->impl == NULL)
    return wv_seterr(err, WAVE_EUNSUPPORTED, "backend %s does not pin host "
                     "memory", d != NULL && d->be ? d->be->name : "?");
  return d->be->host_register(d->impl, ptr, bytes, err);
}

int wv_dev_host_alloc(const wv_dev *d, size_t bytes, void **out,
                      wave_error *err)
{
  *out = NULL;
  if (d == NULL || d->be == NULL || d->be->host_alloc == NULL ||
      d->impl == NULL)
    return wv_seterr(err, WAVE_EUNSUPPORTED, "backend %s does not allocate "
                     "host memory", d != NULL && d->be ? d->be->name : "?");
  return d->be->host_alloc(d->impl, bytes, out, err);
}

void wv_dev_host_free(const wv_dev *d, void *p, size_t bytes)
{
  if (d != NULL && d->be != NULL && d->be->host_free != NULL &&
      d->impl != NULL && p != NULL)
    d->be->host_free(d->impl, p, bytes);
}

void wv_dev_host_unregister(const wv_dev *d, const void *ptr, size_t bytes)
{
  if (d != NULL && d->be != NULL && d->be->host_unregister != NULL &&
      d->impl != NULL)
    d->be->host_unregister(d->impl, ptr, bytes);
}
