/* tokenmode.h - who may read a token file, one rule for wavedd and its
 * clients (docs/security.md, "Tokens").
 *
 * A token file is a regular file that no one outside its owner and, at
 * most, one group of ours can read:
 *  - no permission bit for others, ever;
 *  - no group write or execute bit;
 *  - the group read bit only when the file's group is one this process is
 *    in (its effective group or a supplementary one): a Kubernetes Secret
 *    mounted with defaultMode 0440 and the pod's fsGroup, or a file of the
 *    daemon's own group wavedd.  A group of others' (users, staff) is
 *    refused, as before.
 * The owner rule (the daemon's user or root) is the daemon's alone.
 */
#ifndef WV_TOKENMODE_H
#define WV_TOKENMODE_H

#include <stddef.h>
#include <sys/stat.h>

/* 0 when st's mode and group let this process keep a token in it; else -1
 * with the reason (beginning "mode NNNN: ") in why (n bytes). */
int wv_token_mode_ok(const struct stat *st, char *why, size_t n);

#endif
