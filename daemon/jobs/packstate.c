/* packstate.c - the device x pack table (see packstate.h).
 *
 * One row per device, one entry per pack slot, all under one mutex: the
 * table is small (devices x packs) and every access copies one entry.
 * Rows grow in place on a reload, so an index handed out earlier stays
 * valid.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "daemon/jobs/packstate.h"
#include "core/base.h"

#define PS_DEFAULT_BATCH (1u << 16)
#define PS_MAX_BATCH (1u << 24)  /* 128 MiB of outputs at most */

typedef struct ps_entry {
  wd_pack_state st;
  uint64_t hashes;            /* the measured rate: hashes over seconds */
  double seconds;
} ps_entry;

typedef struct ps_row {
  int hash;                   /* the device's backend runs hash jobs */
  uint64_t batch;             /* its configured batch, 0: none */
  ps_entry *e;                /* n_packs */
} ps_row;

struct wd_packstate {
  pthread_mutex_t mu;
  size_t n_devs, n_packs;
  ps_row *rows;
};

static void ps_fresh(ps_entry *e, int hash)
{
  *e = (ps_entry){.st.state = hash ? WD_CHECK_PENDING : WD_CHECK_NONE};
  snprintf(e->st.detail, sizeof e->st.detail, "%s",
           hash ? "pending" : "backend has no hash support");
}

int wd_packstate_new(wd_device *const *devs, size_t n_devs, size_t n_packs,
                     wd_packstate **out, wave_error *err)
{
  *out = NULL;
  wd_packstate *ps = calloc(1, sizeof *ps);
  if (ps == NULL ||
      (ps->rows = calloc(n_devs ? n_devs : 1, sizeof *ps->rows)) == NULL) {
    free(ps);
    return wv_seterr(err, WAVE_ENOMEM, NULL);
  }
  ps->n_devs = n_devs;
  ps->n_packs = n_packs;
  pthread_mutex_init(&ps->mu, NULL);
  for (size_t i = 0; i < n_devs; i++) {
    ps_row *r = &ps->rows[i];
    r->hash = wd_device_has_hash(devs[i]);
    r->batch = wd_device_cfg_of(devs[i])->batch;
    if ((r->e = calloc(n_packs ? n_packs : 1, sizeof *r->e)) == NULL) {
      wd_packstate_free(ps);
      return wv_seterr(err, WAVE_ENOMEM, NULL);
    }
    for (size_t k = 0; k < n_packs; k++)
      ps_fresh(&r->e[k], r->hash);
  }
  *out = ps;
  return 0;
}

void wd_packstate_free(wd_packstate *ps)
{
  if (ps == NULL)
    return;
  for (size_t i = 0; i < ps->n_devs; i++)
    free(ps->rows[i].e);
  free(ps->rows);
  pthread_mutex_destroy(&ps->mu);
  free(ps);
}

int wd_packstate_get(wd_packstate *ps, unsigned dev, size_t pack,
                     wd_pack_state *out)
{
  pthread_mutex_lock(&ps->mu);
  if (dev >= ps->n_devs || pack >= ps->n_packs) {
    pthread_mutex_unlock(&ps->mu);
    return -1;
  }
  const ps_entry *e = &ps->rows[dev].e[pack];
  *out = e->st;
  out->hash_rate = e->seconds > 0 ? (double)e->hashes / e->seconds : 0.0;
  pthread_mutex_unlock(&ps->mu);
  return 0;
}

void wd_packstate_set(wd_packstate *ps, unsigned dev, size_t pack,
                      const wd_pack_state *st)
{
  pthread_mutex_lock(&ps->mu);
  if (dev < ps->n_devs && pack < ps->n_packs)
    ps->rows[dev].e[pack].st = *st;
  pthread_mutex_unlock(&ps->mu);
}

void wd_packstate_add_hashes(wd_packstate *ps, unsigned dev, size_t pack,
                             uint64_t n, double seconds)
{
  if (seconds <= 0)
    return;
  pthread_mutex_lock(&ps->mu);
  if (dev < ps->n_devs && pack < ps->n_packs) {
    ps->rows[dev].e[pack].hashes += n;
    ps->rows[dev].e[pack].seconds += seconds;
  }
  pthread_mutex_unlock(&ps->mu);
}

int wd_packstate_add_packs(wd_packstate *ps, size_t n_packs, wave_error *err)
{
  int rc = 0;
  pthread_mutex_lock(&ps->mu);
  if (n_packs > ps->n_packs) {
    /* grow every row first; the count moves only once all have grown */
    for (size_t i = 0; i < ps->n_devs && rc == 0; i++) {
      ps_row *r = &ps->rows[i];
      ps_entry *e = realloc(r->e, n_packs * sizeof *e);
      if (e == NULL) {
        rc = wv_seterr(err, WAVE_ENOMEM, NULL);
        break;
      }
      r->e = e;
      for (size_t k = ps->n_packs; k < n_packs; k++)
        ps_fresh(&e[k], r->hash);
    }
    if (rc == 0)
      ps->n_packs = n_packs;
  }
  pthread_mutex_unlock(&ps->mu);
  return rc;
}

uint64_t wd_packstate_batch(const wd_packstate *ps, unsigned dev,
                            const wv_caps *caps)
{
  /* rows[].batch never changes after new: no lock */
  uint64_t cfg = dev < ps->n_devs ? ps->rows[dev].batch : 0;
  uint64_t b = cfg               ? cfg
               : caps->hash_batch ? caps->hash_batch
                                  : PS_DEFAULT_BATCH;
  return b > PS_MAX_BATCH ? PS_MAX_BATCH : b;
}
