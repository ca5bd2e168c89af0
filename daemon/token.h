/* token.h - the token files of auth.tokens: read one, generate the absent
 * ones (see token.c).  The config's (config_check.c reads a token file
 * as it validates one; wdmain.c and reload.c generate); net/auth.c only
 * compares what these read. */
#ifndef WD_TOKEN_H
#define WD_TOKEN_H

#include <stddef.h>

#include "daemon/config.h"
#include "wave/error.h"

/* Read a token file: a regular file owned by us or root, not readable or
 * writable by group or others, holding one line of 16..WD_TOKEN_MAX-1
 * printable non-blank ASCII bytes (trailing whitespace is dropped) that
 * carry at least 128 bits by token.c's estimate.  0, or -1 with why
 * filled. */
int wd_token_read(const char *path, char *secret, size_t cap, size_t *len,
                  char *why, size_t n);

/* Generate the token files that are absent and say generate: true (their
 * tokens are pending after wd_config_load): 128 random bits, 32 hex digits,
 * mode 0600, created exclusively, logged once at info.  A file that
 * appeared meanwhile is read instead.  Called at start and reload, never by
 * --check-config.  0, or an error (the folder is not writable, ...). */
int wd_token_generate(wd_config *cfg, wave_error *err);

#endif
