/* sockdir.c - the default socket's place (see sockdir.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/sockdir.h"

const char *wv_default_url(char *url, size_t n, int for_client)
{
  const char *xdg = getenv("XDG_RUNTIME_DIR");
  char user[160];
  int have_user = geteuid() != 0 && xdg != NULL && xdg[0] == '/' &&
                  strlen(xdg) + sizeof "/wavedd/wavedd.sock" <= 108;
  if (have_user)
    snprintf(user, sizeof user, "%s/wavedd/wavedd.sock", xdg);
  struct stat st;
  if (have_user && (!for_client || lstat(user, &st) == 0))
    snprintf(url, n, "ipc://%s", user);
  else
    snprintf(url, n, "ipc://%s", WV_SYSTEM_SOCKET);
  return url;
}
