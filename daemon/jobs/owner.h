/* owner.h - what a hash job's owner needs beyond its principal
 * (net/principal.h): the job key of an owner that is only its connection.
 */
#ifndef WD_JOBS_OWNER_H
#define WD_JOBS_OWNER_H

#include <stddef.h>
#include <stdint.h>

/* Job keys: a principal that is only its connection ("pipe:N", tcp without
 * a token) could never reach its job from another connection, so each of
 * its jobs gets WD_JOB_KEY_BYTES random bytes (getrandom) that the submit
 * reply carries; whoever presents them may see that one job and no other
 * (docs/protocol.md "Job ownership"). */
#define WD_JOB_KEY_BYTES 16
int wd_peer_anonymous(const char *principal);
/* 0 with key filled, -1 when the kernel gave no random bytes. */
int wd_job_key_new(uint8_t key[WD_JOB_KEY_BYTES]);
/* Does the presented key (len bytes) equal want?  In time that does not
 * depend on the bytes (only on len, which is public). */
int wd_job_key_equal(const uint8_t want[WD_JOB_KEY_BYTES], const uint8_t *key,
                     size_t len);

#endif
