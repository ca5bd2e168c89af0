/* bench_fair.h - what bench_fair.c (the daemon, the light client, the
 * region and hash modes) shares with bench_fair_chunks.c (--chunks: one
 * raw message of many one-row chunks, sent from a process of its own).
 */
#ifndef WAVE_BENCH_FAIR_H
#define WAVE_BENCH_FAIR_H

#include <stddef.h>

#include "wave/client.h"

#define BF_WARMUP 50  /* light sums before any timed one */

double bf_now_us(void);  /* CLOCK_MONOTONIC: one clock for every process */
int bf_cmp(const void *a, const void *b);  /* doubles, for qsort */
void bf_die(const char *what, const wave_error *err);

/* n 1-row u32 sums from c, one after the other; with keep, their round
 * trips in us[] (us); bf_light_dev_us: the last one's device time. */
void bf_light(wave_client *c, double *us, size_t n, int keep,
              wave_priority prio);
extern double bf_light_dev_us;

/* --chunks N: idle light sums, then light sums while one raw request of
 * chunks one-row chunks (u32 or f64) runs on the one CPU device; sender
 * "process" (the default) sends it from a process of its own, "thread"
 * from a thread of this one, beside the light client's nng. */
void bf_chunks(wave_client *light, const char *ipc, unsigned iters,
               unsigned chunks, wave_dtype dtype, int own_process);

/* The sender process: bench_fair --raw-sender IPC CHUNKS u32|f64. */
int bf_raw_sender_main(int argc, char **argv);

#endif
