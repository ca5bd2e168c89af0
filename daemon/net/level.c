/* level.c - who may ask for the high level (see level.h).
 *
 * priority.high_allow is a list of words: "uid:N" and "token:NAME" match
 * the request's principal; "gid:N" matches an ipc peer whose primary group
 * (SO_PEERCRED, nng's NNG_OPT_IPC_PEER_GID) is N or whose user has N among
 * its supplementary groups (getgrouplist).  Root over ipc may always. */
#include <grp.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "daemon/net/level.h"
#include "wave/error.h"

/* Is gid one of an ipc peer's groups (its primary, or its user's)? */
static int lv_in_group(nng_pipe p, uint64_t uid, gid_t gid)
{
  uint64_t g = 0;
  if (nng_pipe_get_uint64(p, NNG_OPT_IPC_PEER_GID, &g) == 0 && g == gid)
    return 1;
  char buf[4096];
  struct passwd pw, *pp = NULL;
  if (getpwuid_r((uid_t)uid, &pw, buf, sizeof buf, &pp) != 0 || pp == NULL)
    return 0;
  gid_t groups[256];
  int ng = 256;
  if (getgrouplist(pw.pw_name, pw.pw_gid, groups, &ng) < 0)
    return 0;  /* more than 256: the primary group was compared above */
  for (int i = 0; i < ng; i++)
    if (groups[i] == gid)
      return 1;
  return 0;
}

/* Does the allow list name who (or, over ipc, one of its groups)? */
static int lv_allowed(const char *list, const char *who, nng_pipe p)
{
  if (strcmp(who, "uid:0") == 0)
    return 1;
  uint64_t uid = 0;
  int ipc = sscanf(who, "uid:%" SCNu64, &uid) == 1;
  const char *s = list;
  while (*s != '\0') {
    size_t len = strcspn(s, " ,\t");
    if (len > 0) {
      char word[256];
      snprintf(word, sizeof word, "%.*s", (int)len, s);
      unsigned long gid;
      char end;
      if (strcmp(word, who) == 0)
        return 1;
      if (ipc && sscanf(word, "gid:%lu%c", &gid, &end) == 1 &&
          lv_in_group(p, uid, (gid_t)gid))
        return 1;
    }
    s += len;
    s += strspn(s, " ,\t");
  }
  return 0;
}

int wd_level_gate(const wd_config *cfg, const Wave__V1__Request *rq,
                  const char *who, nng_pipe p, char *msg, size_t n)
{
  int level;
  switch (rq->body_case) {
  case WAVE__V1__REQUEST__BODY_REDUCE:
    level = (int)rq->reduce->priority;
    break;
  case WAVE__V1__REQUEST__BODY_STREAM_OPEN:
    level = (int)rq->stream_open->priority;
    break;
  case WAVE__V1__REQUEST__BODY_HASH:
    level = (int)rq->hash->priority;
    break;
  default:
    return 0;
  }
  if (level != WAVE__V1__PRIORITY__PRIORITY_NORMAL &&
      level != WAVE__V1__PRIORITY__PRIORITY_HIGH &&
      level != WAVE__V1__PRIORITY__PRIORITY_LOW) {
    snprintf(msg, n, "unknown priority %d (0 normal, 1 high, 2 low)", level);
    return WAVE_EBADREQUEST;
  }
  if (level == WAVE__V1__PRIORITY__PRIORITY_HIGH &&
      !lv_allowed(cfg->prio.high_allow, who, p)) {
    snprintf(msg, n, "%s may not ask for priority high (priority.high_allow "
             "does not name it)", who);
    return WAVE_EPERM;
  }
  return 0;
}
