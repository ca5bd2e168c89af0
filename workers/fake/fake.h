/* fake.h - the fake backend (fake.c): a CPU device that faults after a
 * set number of steps.  Test programs register it with wv_backend_add. */
#ifndef WV_FAKE_H
#define WV_FAKE_H

#include "workers/worker.h"

extern const wv_backend wv_fake_backend;

#endif
