#!/bin/sh
# check_includes.sh DAEMON_DIR - the daemon's seams, checked by ctest:
#  1. no include cycle among daemon/*.h (no header reaches itself through
#     the "daemon/..." headers it includes);
#  2. no backend slot is called from daemon/ (only workers/ calls the
#     vtable, through workers/wvdev.h).
set -eu
dir=$1
fail=0
reach() {  # reach HEADER VISITED: print every daemon header HEADER includes
  for inc in $(sed -n 's/^#include "daemon\/\([a-z_/]*\.h\)".*/\1/p' "$dir/$1"); do
    case " $2 " in *" $inc "*) continue ;; esac
    echo "$inc"
    reach "$inc" "$2 $inc"
  done
}
for h in "$dir"/*.h "$dir"/*/*.h; do
  b=${h#"$dir"/}
  if reach "$b" "" | grep -qx "$b"; then
    echo "include cycle: daemon/$b includes itself (through: $(reach "$b" "" | sort -u | tr '\n' ' '))"
    fail=1
  fi
done
if grep -nE -- '->(open|close|caps|reduce|hash_prepare|hash_prepare_step|hash|hash_batch|host_register|host_unregister)\(' "$dir"/*.c "$dir"/*/*.c; then
  echo "a backend slot is called from daemon/ (use workers/wvdev.h)"
  fail=1
fi
[ $fail = 0 ] && echo "daemon/: no include cycle, no direct backend slot call"
exit $fail
