/* nngfix.c - nng 1.5's aborted-handshake bug (nanomsg/nng#1518) removed at
 * its cause, from outside libnng.
 *
 * The cause, as nng's own fix (1.6, commit 9248ed7 "Disconnect during
 * negotiation breaks listener") shows: a listener's transport (ipc, tcp,
 * tls) starts each connection by writing its 8-byte SP header.  When the
 * peer has already closed, that sendmsg(2) fails with EPIPE, which nng's
 * posix layer maps to NNG_ECLOSED, and the transport hands the error to
 * the listener's pending accept.  nng's core reads NNG_ECLOSED on an accept
 * as "this listener was closed" and never asks to accept again: the
 * listener is deaf for good, and the connections its transport still
 * negotiates wait in a list that nothing ever frees.  nng 1.6 passes
 * another error up instead (NNG_ECONNSHUT).
 *
 * Every write libnng makes on a connection is a call to sendmsg
 * (posix_ipcconn.c, posix_tcpconn.c), and a shared library's calls go
 * through the dynamic linker, which looks in the executable first.  So
 * wavedd defines sendmsg: it calls libc's, and when that fails with EPIPE
 * and the caller is libnng's code, errno becomes ECONNRESET.  nng maps
 * that to NNG_ECONNRESET, which its core counts as a peer's disconnect
 * and, at once and without the 100 ms pause it gives other errors (1.6's
 * NNG_ECONNSHUT included), accepts again.  Every other caller (libuv, our
 * descriptor sockets) gets libc's answer unchanged.  Other effects, all
 * on a peer that has gone: a pipe's send reports a reset instead of a
 * close (the pipe closes either way), the "disconnect" statistic counts it
 * instead of "other", and a dialer (the fleet's) that hit EPIPE during its
 * handshake dials again, where 1.5.2's would have stopped.
 *
 * wd_nngfix_init turns this on only where it is needed and works: nng
 * older than 1.6, libnng a shared object apart from ours (else its code
 * cannot be told from ours by address), and our sendmsg the one the
 * dynamic linker gives libnng.  Otherwise nothing changes, and
 * daemon/net/listen.c's watchdog (nng's statistics, a fresh listener)
 * remains the workaround.  A close after our header reached the peer is
 * EOF (NNG_ECONNSHUT), not this bug: the core pauses accepting for 100 ms
 * and then goes on by itself.
 */
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <nng/nng.h>

#include "daemon/net/nngfix.h"

typedef ssize_t (*nf_sendmsg_fn)(int, const struct msghdr *, int);

static _Atomic(nf_sendmsg_fn) nf_next;  /* the sendmsg after ours (libc's) */
static _Atomic uintptr_t nf_lo, nf_hi;  /* libnng's code; empty: off */
static _Atomic uint64_t nf_count;
static int nf_on;

ssize_t sendmsg(int fd, const struct msghdr *msg, int flags)
{
  nf_sendmsg_fn next = atomic_load(&nf_next);
  ssize_t n = next != NULL ? next(fd, msg, flags)
                           : (ssize_t)syscall(SYS_sendmsg, fd, msg, flags);
  if (n < 0 && errno == EPIPE) {
    uintptr_t at = (uintptr_t)__builtin_return_address(0);
    if (at >= atomic_load(&nf_lo) && at < atomic_load(&nf_hi)) {
      atomic_fetch_add(&nf_count, 1);
      errno = ECONNRESET;
    }
  }
  return n;
}

typedef struct nf_find {
  uintptr_t fn;      /* an address in libnng's code */
  uintptr_t lo, hi;  /* the executable segment that holds it */
} nf_find;

static int nf_segment(struct dl_phdr_info *info, size_t size, void *arg)
{
  nf_find *f = arg;
  (void)size;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    uintptr_t lo = (uintptr_t)(info->dlpi_addr + ph->p_vaddr);
    if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X) && f->fn >= lo &&
        f->fn < lo + ph->p_memsz) {
      f->lo = lo;
      f->hi = lo + ph->p_memsz;
      return 1;
    }
  }
  return 0;
}

int wd_nngfix_init(char *why, size_t n)
{
  int major = 0, minor = 0;
  why[0] = '\0';
  if (nf_on)
    return 1;
  if (sscanf(nng_version(), "%d.%d", &major, &minor) != 2 ||
      major > 1 || minor >= 6) {
    snprintf(why, n, "nng %s has the fix", nng_version());
    return 0;
  }
  void *nng_fn = dlsym(RTLD_DEFAULT, "nng_version");
  Dl_info in_nng, in_us;
  if (nng_fn == NULL || dladdr(nng_fn, &in_nng) == 0 ||
      dladdr((void *)wd_nngfix_init, &in_us) == 0 ||
      in_nng.dli_fbase == in_us.dli_fbase) {
    snprintf(why, n, "libnng is linked into wavedd (not a shared library)");
    return 0;
  }
  void *ours = dlsym(RTLD_DEFAULT, "sendmsg");
  void *next = dlsym(RTLD_NEXT, "sendmsg");
  if (ours != (void *)sendmsg || next == NULL || next == ours) {
    snprintf(why, n, "libnng's sendmsg is not wavedd's (not exported?)");
    return 0;
  }
  nf_find f = {.fn = (uintptr_t)nng_fn};
  if (dl_iterate_phdr(nf_segment, &f) == 0) {
    snprintf(why, n, "libnng's code not found in the process's objects");
    return 0;
  }
  atomic_store(&nf_next, (nf_sendmsg_fn)next);
  atomic_store(&nf_lo, f.lo);  /* lo first: [lo, 0) is empty until hi */
  atomic_store(&nf_hi, f.hi);
  nf_on = 1;
  return 1;
}

int wd_nngfix_on(void) { return nf_on; }

uint64_t wd_nngfix_count(void) { return atomic_load(&nf_count); }
