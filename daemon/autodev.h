/* autodev.h - what a daemon launched by a job engine (Slurm, Kubernetes)
 * takes from its environment: `devices: auto` and `${VAR}` in listen URLs.
 *
 * Both read the environment through a getenv-like function, so the tests
 * give them a table instead of the process environment.  Nothing here
 * opens a device: the entries are ordinary wd_device_cfg rows, opened (or
 * shown faulted) by the daemon like any configured device.
 */
#ifndef WD_AUTODEV_H
#define WD_AUTODEV_H

#include <stddef.h>

#include "daemon/config.h"

typedef const char *(*wd_getenv_fn)(const char *name);

/* The environment the config loader uses (getenv unless a test set one). */
extern wd_getenv_fn wd_config_getenv;
/* Whether a path exists (access(F_OK) unless a test set one): `auto` asks
 * it for the GPU drivers' device nodes. */
typedef int (*wd_exists_fn)(const char *path);
extern wd_exists_fn wd_autodev_exists;
/* The UUIDs of a backend's devices by index ("vulkan", "cuda"): the
 * count (at most max written), or -1 with why filled.  By default the
 * backend's list_uuids in a forked child, once per process and only while
 * it has one thread (autodev.c says why); a test may set its own. */
typedef int (*wd_uuids_fn)(const char *backend, unsigned char (*out)[16],
                           size_t max, char *why, size_t why_n);
extern wd_uuids_fn wd_autodev_uuids;

/* `devices: auto`: one device per GPU the allocation grants, in the order
 * listed (docs/config.md, "devices: auto"):
 *   - CUDA_VISIBLE_DEVICES, when the cuda backend is built and NVIDIA's
 *     driver is on the node (/dev/nvidiactl): cuda devices cuda0.. with
 *     index 0.. (the CUDA runtime renumbers the visible GPUs);
 *   - else ROCR_VISIBLE_DEVICES, then CUDA_VISIBLE_DEVICES, when hip is
 *     built and the ROCm driver is there (/dev/kfd): hip0.. the same way;
 *   - and, when vulkan is built, vk<i> for entry i of the granted list
 *     (the one above, else CUDA_VISIBLE_DEVICES, else
 *     ROCR_VISIBLE_DEVICES) whose UUID exactly one Vulkan physical device
 *     has: CUDA's UUID of visible device i when cuda is listed, else the
 *     entry's own GPU-<hex> (a prefix will do); these come after the
 *     cuda/hip devices;
 *   - else (none of the above) one cpu device cpu0 (all cores).
 * Slurm sets all of these variables for any GPU GRES, so the driver's
 * device node is what tells an NVIDIA node from an AMD one.
 * Values "", "-1" and "NoDevFiles" (Slurm's "no device files") grant none.
 * *out is calloc'ed (*n entries, defaults from defaults); 0 or nonzero
 * with why filled. */
int wd_autodev_fill(wd_getenv_fn get, const wd_device_cfg *defaults,
                    wd_device_cfg **out, size_t *n, char *why, size_t why_n);

/* Expand ${NAME} and ${NAME:-default} in s into out[out_n].  NAME is
 * letters, digits and '_'; "$$" is a literal '$'.  An unset NAME without a
 * default, a malformed reference or an expansion that does not fit is an
 * error: nonzero with why filled. */
int wd_expand_vars(wd_getenv_fn get, const char *s, char *out, size_t out_n,
                   char *why, size_t why_n);

#endif
