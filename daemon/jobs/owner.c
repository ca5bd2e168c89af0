/* owner.c - job keys (see owner.h). */
#include <string.h>
#include <sys/random.h>

#include "daemon/jobs/owner.h"

int wd_peer_anonymous(const char *principal)
{
  return strncmp(principal, "pipe:", 5) == 0;
}

int wd_job_key_new(uint8_t key[WD_JOB_KEY_BYTES])
{
  return getrandom(key, WD_JOB_KEY_BYTES, 0) == WD_JOB_KEY_BYTES ? 0 : -1;
}

int wd_job_key_equal(const uint8_t want[WD_JOB_KEY_BYTES], const uint8_t *key,
                     size_t len)
{
  if (key == NULL || len != WD_JOB_KEY_BYTES)
    return 0;
  /* volatile: the compiler may not stop at the first difference */
  volatile uint8_t d = 0;
  for (size_t i = 0; i < WD_JOB_KEY_BYTES; i++)
    d |= want[i] ^ key[i];
  return d == 0;
}
