/* share.h - each client's share of what the daemon holds for it
 * (docs/config.md "Limits", docs/security.md "Shares").
 *
 * Regions and streams are capped in all (limits.max_region_bytes,
 * limits.max_stream_bytes), and one client alone could fill those caps, so
 * that every other client's region or stream is refused.  So each
 * principal (daemon/net/principal.h: "uid:N" over ipc, "pipe:N" on tcp, keyed
 * by wd_peer_key) also has a share of each: region bytes
 * (limits.max_client_region_bytes), buffered bytes, copy regions and
 * streams counted together as max_stream_bytes counts them
 * (limits.max_client_stream_bytes), and descriptors kept by file regions
 * (limits.max_client_files).  The buffered kind's total lives here too,
 * so that copies and streams draw on one count.  One mutex; the region and
 * stream tables take a share before they hold anything and give it back
 * when the last reference goes.
 */
#ifndef WD_SHARE_H
#define WD_SHARE_H

#include <stddef.h>
#include <stdint.h>

#include "daemon/config.h"
#include "wave/error.h"

typedef enum {
  WD_SHARE_REGION,  /* bytes of regions (mapped, copied or file) */
  WD_SHARE_BUF,     /* bytes of copy regions and streams, together */
  WD_SHARE_FILES,   /* descriptors kept by file regions */
  WD_SHARE_KINDS
} wd_share_kind;

typedef struct wd_shares wd_shares;

wd_shares *wd_shares_new(const wd_limits *lim);
void wd_shares_free(wd_shares *s);
/* Take n of kind for principal who, whose key is key (wd_peer_key(who)):
 * 0, or code (the caller's error for "full": EREGION, EBUSY) with a message
 * naming the limit passed.  who names the share in status. */
int wd_share_take(wd_shares *s, uint64_t key, const char *who,
                  wd_share_kind kind, uint64_t n, int code, wave_error *err);
void wd_share_give(wd_shares *s, uint64_t key, wd_share_kind kind,
                   uint64_t n);
/* What key holds of kind (tests, status). */
uint64_t wd_share_used(wd_shares *s, uint64_t key, wd_share_kind kind);

/* One principal's share as status shows it. */
#define WD_SHARE_WHO 64  /* = WD_PRINCIPAL_MAX (daemon/net/principal.h) */
typedef struct wd_share_row {
  char who[WD_SHARE_WHO];
  uint64_t used[WD_SHARE_KINDS];
} wd_share_row;
/* Every principal that holds anything: *rows malloc'd (free() it; may be
 * NULL with *n 0), *max the share of each kind.  0 or WAVE_ENOMEM. */
int wd_shares_list(wd_shares *s, wd_share_row **rows, size_t *n,
                   uint64_t max[WD_SHARE_KINDS]);

#endif
