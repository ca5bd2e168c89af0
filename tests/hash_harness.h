/* hash_harness.h - helpers shared by the hash suites (test_hash.c,
 * test_pack.c): the shipped packs, a scratch folder per test, synthetic
 * pack texts and a CPU device.  Each suite's fixture is th_setup/teardown.
 */
#ifndef WAVE_TESTS_HASH_HARNESS_H
#define WAVE_TESTS_HASH_HARNESS_H

#include "workers/hash/pack.h"
#include "workers/worker.h"

extern char th_dir[64];  /* the running test's scratch folder */

const char *th_packs_dir(void);
wv_pack *th_shipped(const char *name);
/* Write text to th_dir/<file> and return the path. */
const char *th_write(const char *file, const char *text);

#define TH_HEAD                                                                \
  "name: t\nversion: 1\nseed: 0x1234\nregisters: 8\nrounds: 1\n"              \
  "dataset:\n  closed: true\n"

/* A pack: head, `first` instructions, then xchg r3, r3, 1 up to 6 exchanges
 * in all (6 swaps, an even number, are the identity on r3; 5 are lane
 * l ^ 1), then xor r5, r6, r7 up to 64 instructions. */
char *th_program_text(const char *head, const char *const *first,
                      unsigned nfirst);
wv_pack *th_load_text(const char *text);
wv_device *th_cpu_open(unsigned threads);
void th_setup(void);
void th_teardown(void);

#endif
