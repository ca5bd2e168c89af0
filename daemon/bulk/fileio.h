/* fileio.h - the small pieces of file reading that the file-region
 * pipeline (bulk/filered.c) and the copy region's one bounded read share:
 * a whole pread that says REGION when the file shrank, monotonic
 * deadlines on a condition variable, and the warning of readers left
 * blocked in reads that never returned (filered.h "Stalls"; the reader
 * pool counts them, wd_readers_stuck).
 */
#ifndef WD_FILEIO_H
#define WD_FILEIO_H

#include <pthread.h>
#include <stdint.h>

#include "daemon/bulk/readers.h"
#include "wave/error.h"

double wd_fio_now_s(void);   /* CLOCK_MONOTONIC, seconds */
uint64_t wd_fio_now_ms(void);
/* cv whose timed waits use CLOCK_MONOTONIC (wd_fio_wait_until). */
void wd_fio_cv_init(pthread_cond_t *cv);
/* Wait on cv (mu held) until deadline_ms (monotonic); 1 when it passed. */
int wd_fio_wait_until(pthread_cond_t *cv, pthread_mutex_t *mu,
                      uint64_t deadline_ms);
/* All of [off, off + bytes) of fd into buf: 0, or WAVE_EREGION (an error,
 * or the file ends before; region and extent_end are for the message). */
int wd_fio_pread(int fd, uint8_t *buf, uint64_t bytes, uint64_t off,
                 uint64_t region, uint64_t extent_end, wave_error *err);
/* The next bytes of the pipe fd (O_NONBLOCK; bytes [at, at + bytes) of
 * a pipe region of total bytes) into buf, waiting for them in polls of at
 * most 50 ms, each after a look at *halt (its job stopped: CANCELLED):
 * 0, or WAVE_EREGION when the pipe ends first or fails.  The job's wait
 * for its slot bounds a stall (filered.h). */
int wd_fio_read_pipe(int fd, uint8_t *buf, uint64_t bytes, uint64_t at,
                     uint64_t region, uint64_t total, const _Atomic int *halt,
                     wave_error *err);
/* Said at warn level: n readers of r were left in reads that did not
 * return. */
void wd_fio_stuck_warn(wd_readers *r, unsigned n);

#endif
