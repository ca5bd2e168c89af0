#!/bin/sh
# check_includes.sh DAEMON_DIR - the seams of the daemon's wings and of
# core/, checked by ctest (docs/hacking.md "The wings" says why each holds):
#  1. no include cycle among the daemon's headers (no header under daemon/
#     reaches itself through the "daemon/..." headers it includes);
#  2. no backend slot is called from daemon/ (only workers/ calls the
#     vtable, through workers/wvdev.h);
#  3. the wire (proto/wave.pb-c.h, proto/wire.h) is included only by
#     daemon/net/, daemon/rq/ and daemon/bulk/decode.[ch];
#  4. no strcmp on a backend name outside workers/ (daemon/, core/, client/:
#     behaviour keyed on a backend is a caps bit of the backend);
#  5. nothing in daemon/net/ or daemon/exec/ includes a header of daemon/rq/
#     or daemon/jobs/, or calls a function they declare (net/ and exec/
#     know no handler and no job; server.c injects what they need), nor
#     server_int.h (net/ has its own state, wd_front, and its half of a
#     request, wd_req);
#  6. core/ includes nothing of the project but core/ (and the public
#     include/wave/ headers, whose error table and types it implements),
#     and no module of core/ (x.h with x.c) reaches itself through the
#     core/ headers its two files include;
#  7. a file-local prefix belongs to one file: the lowercase prefix of a
#     .c or .cu file's static functions, in every folder of the tree that
#     holds such sources (daemon/, core/, workers/, client/, proto/,
#     bench/, fuzz/, tests/; wd_, wv_ and wave_ are the shared tiers),
#     names no static function of another file;
#  8. the config (daemon/config*.c, autodev.c, token.c) includes nothing of
#     daemon/net/ but net/tls.h: net/auth reads the config, never the
#     reverse (the token reader is the config's, daemon/token.c).
# The known exceptions are listed below, each with the change that removes
# it; an exception that no longer occurs fails the check, so the lists
# shrink with the code.
set -eu
dir=$1
top=$(cd "$dir/.." && pwd)
fail=0

# Files that break rules 3 and 4 today, to fix (docs/hacking.md "Left").
wire_known=""
name_known=""
# Prefixes that rule 7 finds in two files today: none.
prefix_known=""
# The config's includes of daemon/net/ (rule 8): tls.h (wd_tls_check,
# wd_tls_url), until the TLS file checks move to the config as the token
# reader did.
config_net_known="net/tls.h"

reach() {  # reach HEADER VISITED: print every daemon header HEADER includes
  for inc in $(sed -n 's/^#include "daemon\/\([a-z_/]*\.h\)".*/\1/p' "$dir/$1"); do
    case " $2 " in *" $inc "*) continue ;; esac
    echo "$inc"
    reach "$inc" "$2 $inc"
  done
}
headers=$(cd "$dir" && ls *.h */*.h)
sources=$(cd "$dir" && ls *.c */*.c)
for b in $headers; do
  if reach "$b" "" | grep -qx "$b"; then
    echo "include cycle: daemon/$b includes itself (through: $(reach "$b" "" | sort -u | tr '\n' ' '))"
    fail=1
  fi
done

if (cd "$dir" && grep -nE -- '->(open|close|caps|reduce|hash_prepare|hash_prepare_step|hash|hash_batch|host_register|host_unregister)\(' $sources); then
  echo "a backend slot is called from daemon/ (use workers/wvdev.h)"
  fail=1
fi

for f in $headers $sources; do
  grep -qE '^#include "proto/(wave\.pb-c|wire)\.h"' "$dir/$f" || continue
  case $f in net/* | rq/* | bulk/decode.c | bulk/decode.h) continue ;; esac
  case " $wire_known " in *" $f "*) continue ;; esac
  echo "daemon/$f includes the wire: only net/, rq/ and bulk/decode.c may"
  fail=1
done
for f in $wire_known; do
  if ! grep -qE '^#include "proto/(wave\.pb-c|wire)\.h"|Wave__V1__' "$dir/$f"; then
    echo "daemon/$f no longer uses the wire: take it off wire_known"
    fail=1
  fi
done

backends='"(cpu|cuda|hip|vulkan|opencl|fake)"'
named=$(cd "$top" && grep -lE "str(n)?(case)?cmp\([^;]*$backends" \
          daemon/*.c daemon/*/*.c core/*.c client/*.c 2>/dev/null || true)
for f in $named; do
  case " $name_known " in *" ${f#daemon/} "*) continue ;; esac
  echo "$f compares a backend's name: make it a caps bit (workers/worker.h)"
  fail=1
done
for f in $name_known; do
  if ! grep -qE "str(n)?(case)?cmp\([^;]*$backends" "$dir/$f"; then
    echo "daemon/$f no longer compares a backend's name: take it off name_known"
    fail=1
  fi
done

# the functions rq/ and jobs/ declare
upper=$(cd "$dir" && sed -n 's/^[a-z].*[ *]\(wd_[a-z0-9_]*\)(.*/\1/p' rq/*.h jobs/*.h | sort -u)
for f in $(cd "$dir" && ls net/* exec/*); do
  if grep -nE '^#include "daemon/(rq|jobs)/' "$dir/$f"; then
    echo "daemon/$f includes rq/ or jobs/: net/ and exec/ call nothing above them"
    fail=1
  fi
  if grep -nE '^#include "daemon/server_int\.h"' "$dir/$f"; then
    echo "daemon/$f includes server_int.h: net/ and exec/ see their own state only"
    fail=1
  fi
  for fn in $upper; do
    if grep -nE "\\b$fn\\(" "$dir/$f" >/dev/null; then
      echo "daemon/$f calls $fn (rq/ or jobs/): inject it instead (server.c)"
      fail=1
    fi
  done
done

for f in "$top"/core/*; do
  if grep -nE '^#include "' "$f" | grep -vE '#include "(core|wave)/'; then
    echo "core/$(basename "$f") includes the project outside core/ (and include/wave/)"
    fail=1
  fi
done

core_uses() {  # core_uses MODULE: the core/ modules x.h or x.c includes
  cat "$top/core/$1".[ch] 2>/dev/null |
    sed -n 's/^#include "core\/\([a-z_]*\)\.h".*/\1/p' | grep -vx "$1" | sort -u
}
core_reach() {  # core_reach MODULE VISITED
  for m in $(core_uses "$1"); do
    case " $2 " in *" $m "*) continue ;; esac
    echo "$m"
    core_reach "$m" "$2 $m"
  done
}
for m in $(cd "$top/core" && ls *.h | sed 's/\.h$//'); do
  if core_reach "$m" "" | grep -qx "$m"; then
    echo "include cycle: core/$m reaches itself (through: $(core_reach "$m" "" | sort -u | tr '\n' ' '))"
    fail=1
  fi
done

# rule 7: "PREFIX FILE" for every file's static-function prefixes, in
# every folder of C and CUDA sources (a new one must be added here: the
# check fails on a folder with such sources that it does not name)
c_dirs="daemon core workers client proto bench fuzz tests"
unnamed=$(cd "$top" && find . -path ./.git -prune -o -path './build*' -prune -o \
  \( -name '*.c' -o -name '*.cu' \) -print | cut -d/ -f2 | sort -u |
  grep -vxE "$(echo $c_dirs | tr ' ' '|')" || true)
for d in $unnamed; do
  echo "$d/ holds C or CUDA sources that rule 7 does not read: add it to c_dirs"
  fail=1
done
prefixes=$(cd "$top" && find $c_dirs \( -name '*.c' -o -name '*.cu' \) -print0 |
  xargs -0 grep -HE '^static [^(=]*[ *][a-z][a-z0-9]*_[a-z0-9_]*\(' |
  sed -n 's/^\([^:]*\):static [^(=]*[ *]\([a-z][a-z0-9]*\)_[a-z0-9_]*(.*/\2 \1/p' |
  sort -u | grep -vE '^(wd|wv|wave) ' || true)
shared=$(echo "$prefixes" | awk 'NF == 2 {n[$1]++; f[$1] = f[$1] " " $2}
  END {for (p in n) if (n[p] > 1) print p ":" f[p]}' | sort)
for p in $(echo "$shared" | cut -d: -f1); do
  case " $prefix_known " in *" $p "*) continue ;; esac
  echo "prefix ${p}_ names static functions of more than one file:$(echo "$shared" | sed -n "s/^$p://p") (a file-local prefix belongs to one file: rename)"
  fail=1
done
for p in $prefix_known; do
  if ! echo "$shared" | grep -q "^$p:"; then
    echo "prefix ${p}_ is one file's now: take it off prefix_known"
    fail=1
  fi
done

# rule 8
for f in $(cd "$dir" && ls config*.c autodev.c token.c); do
  for inc in $(sed -n 's/^#include "daemon\/\(net\/[a-z_]*\.h\)".*/\1/p' "$dir/$f"); do
    case " $config_net_known " in *" $inc "*) continue ;; esac
    echo "daemon/$f includes daemon/$inc: the config is below net/ (net/ reads it)"
    fail=1
  done
done
for inc in $config_net_known; do
  if ! (cd "$dir" && grep -qs "^#include \"daemon/$inc\"" config*.c autodev.c token.c); then
    echo "the config no longer includes daemon/$inc: take it off config_net_known"
    fail=1
  fi
done

arrows=$(cd "$dir" && cat $headers $sources | grep -c '^#include "daemon/')
[ $fail = 0 ] && echo "daemon/: no include cycle, no direct backend slot call, the wire and backend names where they belong, net/ and exec/ below rq/ and jobs/, core/ alone and without a cycle, one file per prefix, the config below net/; $arrows include arrows"
exit $fail
