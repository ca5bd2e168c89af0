#!/usr/bin/env bash
# tests/readme/blocks.sh FILE DIR - split FILE's runnable examples into
# DIR/NNN.sh, one per block, each with DIR/NNN.meta: "LINE MARK REASON...".
#
#  * a fenced ```sh (or ```bash) block of a Markdown file;
#  * the marker is an HTML comment on the line before the fence (blank
#    lines allowed between): `<!-- test: skip REASON -->` (the README test
#    does not run it, and prints the reason), `<!-- test: container -->`
#    (tests/container/run.sh runs it), none: MARK is "run";
#  * with FILE docs/cli.md: the indented (4-space) lines of its
#    "## Examples" section, one block, de-indented (its other indented
#    blocks are synopses and sample output, not commands).
# The blocks are copied byte for byte: the tests run what the page says.
set -euo pipefail
file=$1 dir=$2
mkdir -p "$dir"
case $file in
  *cli.md)
    awk -v dir="$dir" '
      /^## / { ex = ($0 == "## Examples") ; next }
      ex && /^    / { if (!open) { n++; f = sprintf("%s/%03d", dir, n);
                                   printf "%d run\n", NR > f ".meta"; open = 1 }
                      print substr($0, 5) > f ".sh"; next }
      ex && /^$/ && open { print "" > f ".sh" }' "$file"
    ;;
  *)
    awk -v dir="$dir" '
      inb && /^```/ { inb = 0; next }
      inb { print > (f ".sh"); next }
      /^```(sh|bash)$/ { n++; f = sprintf("%s/%03d", dir, n); inb = 1
                         printf "" > (f ".sh")
                         m = "run"; r = ""
                         if (last ~ /^<!-- test: [a-z]+( .*)? -->$/) {
                           s = last; sub(/^<!-- test: /, "", s); sub(/ -->$/, "", s)
                           m = s; sub(/ .*/, "", m)
                           r = s; if (r == m) r = ""; else sub(/^[a-z]+ /, "", r)
                         }
                         printf "%d %s %s\n", NR + 1, m, r > (f ".meta"); next }
      /^[ \t]*$/ { next }
      { last = $0 }' "$file"
    ;;
esac
