/* vk_rec.h - recording a reduction on a Vulkan device, shared by the jobs
 * from host memory (vk_reduce.c) and the device-resident ones (vk_rec.c):
 * the plan of an op (the op table's row, core/optable.h, and the shader
 * build it picks), the first-level dispatch, the later levels and the
 * result read back.  Internal to the backend.
 */
#ifndef WV_VK_REC_H
#define WV_VK_REC_H

#include <stdint.h>

#include "core/reduce.h"
#include "vk.h"

/* reduce_int.comp's OP (and, or, xor in wave_op's order) */
enum { VR_ADD = 0, VR_UMIN = 1, VR_UMAX = 2, VR_AND = 3, VR_OR = 4,
       VR_XOR = 5, VR_EXTENT = 6 };

typedef struct wv_vkr_plan {
  const wv_op_plan *op;  /* the op table's row */
  int fsum;            /* the float sum's fixed tree */
  int xsum;            /* the exact sum fsum (vk_xsum.c) */
  unsigned variant;    /* VR_* (reduce_int.comp's OP); argm.comp's OP */
  uint32_t key;        /* wv_key_kind */
  uint64_t fill;       /* written for rows the mask does not select */
  int fill_dup;        /* fill = first selected row */
  int wide;            /* a 64-bit dtype or argmin/argmax (caps) */
  int argm;            /* argmin/argmax */
  unsigned rs;         /* bytes per row: 4 or 8 */
  unsigned es;         /* bytes per partial: 4, 8, or 32 (argm) */
} wv_vkr_plan;

typedef struct wv_vkr_run {
  wv_vkr_plan plan;
  uint32_t slots;        /* first-level partials per work-group */
  uint64_t partials;     /* first-level partials (float: groups) */
  uint64_t half;         /* extent: index of the max half in part[0] */
  unsigned final_buf;    /* part[] holding the result after the levels */
  uint64_t final_half;   /* extent: its max half */
  /* float sum: each non-empty chunk's first-level partials */
  uint64_t *seg_off, *seg_n;
  size_t n_segs;
  uint64_t row0;         /* argm: global index of the window's row 0 */
  int xsum_zeroed;       /* fsum: the job's bins zeroed (a window ran) */
  uint64_t xsum_groups;  /* fsum: work-groups dispatched so far */
} wv_vkr_run;

static inline uint64_t wv_vkr_div(uint64_t a, uint64_t b)
{
  return (a + b - 1) / b;
}

void wv_vkr_make_plan(wave_dtype dt, wave_op op, wv_vkr_plan *p);
/* First-level partials per work-group: one per sub-group on the sub-group
 * path of 4-byte rows (room for the most sub-groups a work-group of 256
 * can have), else one. */
uint32_t wv_vkr_slots(const wv_device *d);
/* Partial buffers for a run: part[0] takes the first level, part[1] the
 * second, then they alternate with shrinking sizes. */
int wv_vkr_reserve(wv_device *d, wv_vkr_run *run, wave_error *err);
/* One first-level dispatch over rows [0, rows) of src. */
int wv_vkr_level1(wv_device *d, wv_vkr_run *run, wv_vk_slot *s,
                  wv_vk_range src, uint32_t rows, uint64_t out_base,
                  wave_error *err);
/* After the last first-level dispatch: the levels, then the value(s) into
 * d->result, visible to the host once the slot's fence signals. */
int wv_vkr_finish(wv_device *d, wv_vkr_run *run, wv_vk_slot *s,
                  wave_error *err);
void wv_vkr_result(const wv_vkr_run *run, const wv_device *d,
                   uint64_t count, wv_reduce_out *out);
/* First-level partials of a window of `rows` rows. */
uint64_t wv_vkr_window_partials(const wv_device *d, const wv_vkr_run *run,
                                uint64_t rows);
/* The float-sum levels (float32 and float64: tree.comp). */
int wv_vkr_fsum_levels(wv_device *d, wv_vkr_run *run, wv_vk_slot *s,
                       wave_error *err);

/* vk_xsum.c, the exact sum fsum: 0 or WAVE_EUNSUPPORTED naming the device
 * and the missing feature; the job's bins (reserve); one window's
 * dispatch; the bins copied back (finish); the host's fold and rounding
 * into out (xsum, bits, count). */
int wv_vk_xsum_check(const wv_device *d, wave_error *err);
int wv_vk_xsum_reserve(wv_device *d, const wv_vkr_run *run, wave_error *err);
int wv_vk_xsum_level1(wv_device *d, wv_vkr_run *run, wv_vk_slot *s,
                      wv_vk_range src, uint32_t rows, wave_error *err);
int wv_vk_xsum_finish(wv_device *d, wv_vkr_run *run, wv_vk_slot *s);
void wv_vk_xsum_result(const wv_vkr_run *run, const wv_device *d,
                       uint64_t count, wv_reduce_out *out);

#endif
