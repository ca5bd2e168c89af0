/* nngfix.h - nng 1.5's aborted-handshake bug (nanomsg/nng#1518) removed at
 * its cause: libnng's failed writes to a peer that has gone read as a reset
 * (see nngfix.c). */
#ifndef WD_NNGFIX_H
#define WD_NNGFIX_H

#include <stddef.h>
#include <stdint.h>

/* Turn the fix on when this nng needs it and it can work here (nng older
 * than 1.6, a shared libnng, our sendmsg the one libnng calls).  Returns 1
 * when on; 0 otherwise, with why in why[0..n) (the ipc watchdog then
 * stays on, daemon/net/listen.c).  Call once, before any listener. */
int wd_nngfix_init(char *why, size_t n);
/* 1 once wd_nngfix_init turned it on. */
int wd_nngfix_on(void);
/* libnng's writes that failed with EPIPE and were told ECONNRESET. */
uint64_t wd_nngfix_count(void);

#endif
