#!/bin/bash
# tests/ctl_docs_test.sh BUILD - wavectl's man page and shell completions,
# generated from the option table (client/ctl_opts.c), name every option
# and environment variable that `wavectl --help` and `wavectl help CMD`
# print; the bash completion loads and registers, and (where zsh and fish are
# installed) the zsh and fish ones parse and complete.
set -u
build=$1
ctl=$build/wavectl
man=$build/man/wavectl.1
bash_c=$build/completions/wavectl.bash
zsh_c=$build/completions/_wavectl
fish_c=$build/completions/wavectl.fish
fail() { echo "ctl_docs_test: $*" >&2; exit 1; }
for f in "$ctl" "$man" "$bash_c" "$zsh_c" "$fish_c"; do
  [ -s "$f" ] || fail "missing: $f"
done

# every option of every usage text, and the environment of the overview
help=$("$ctl" --help) || fail "wavectl --help exits $?"
for c in "submit reduce" "submit hash" status packs jobs wait cancel top bench; do
  h=$("$ctl" help $c) || fail "wavectl help $c exits $?"
  help+=$'\n'$h
done
opts=$(grep -o -- '^  --[a-z0-9-]*' <<<"$help" | sed 's/^  //' | sort -u)
envs=$(sed -n '/^Environment:/,/^$/p' <<<"$help" | grep -o '^  [A-Z_][A-Z_]*' |
  sed 's/^  //' | sort -u)
[ "$(wc -l <<<"$opts")" -ge 25 ] || fail "only $(wc -l <<<"$opts") options in --help"
[ "$(wc -l <<<"$envs")" -ge 5 ] || fail "only $(wc -l <<<"$envs") variables in --help"
for o in $opts; do
  r=${o//-/\\\\-}   # roff: --fleet is \-\-fleet
  grep -q -- "^\.BI\? \"\?$r\b" "$man" || fail "wavectl.1 lacks $o"
  for c in "$bash_c" "$zsh_c" "$fish_c"; do
    case $c in
      *.fish) grep -q -- "-l ${o#--}\( \|$\)" "$c" || fail "$c lacks $o" ;;
      *) grep -q -- "$o\b" "$c" || fail "$c lacks $o" ;;
    esac
  done
done
for e in $envs; do
  grep -q "^\.B $e\$" "$man" || fail "wavectl.1 ENVIRONMENT lacks $e"
done
for o in --fleet --devices --segments --daemon-uid --piece --probe --progress --once --nonces --rows; do
  grep -qx -- "$o" <<<"$opts" || fail "--help lacks $o"
done

# the --op and --dtype words the completions offer: each one the parser
# takes (a missing input is then exit 1, not a usage error), named in
# wavectl(1)'s COMMANDS and in docs/cli.md's "submit reduce"
src=$(cd "$(dirname "$0")/.." && pwd)
words() { grep -o -- "--$1) COMPREPLY=(\$(compgen -W \"[^\"]*" "$bash_c" | sed 's/.*-W "//'; }
cmds=$(sed -n '/^\.SH COMMANDS/,/^\.SH /p' "$man")
cli=$(sed -n '/^## submit reduce/,/^## /p' "$src/docs/cli.md")
for kind in op dtype; do
  ws=$(words $kind)
  [ "$(wc -w <<<"$ws")" -ge 6 ] || fail "bash offers only '$ws' for --$kind"
  for w in $ws; do
    grep -qw -- "$w" <<<"$cmds" || fail "wavectl.1 COMMANDS lacks $kind $w"
    grep -q -- "\`$w\`" <<<"$cli" || fail "docs/cli.md submit reduce lacks \`$w\`"
    if [ $kind = op ]; then a=(--op "$w" --dtype u32); else a=(--op sum --dtype "$w"); fi
    "$ctl" submit reduce "${a[@]}" --input /nonexistent/x >/dev/null 2>&1
    [ $? -eq 1 ] || fail "wavectl does not take --$kind $w"
  done
done

# bash: loads, registers, and offers a command's options
out=$(bash -c "source '$bash_c' && complete -p wavectl") || fail "bash: $out"
[ "$out" = "complete -F _wavectl wavectl" ] || fail "bash registers: $out"
# (_init_completion, from the bash-completion package, fills _wavectl's
# locals; here a stand-in does)
out=$(bash -c "_init_completion() { words=(wavectl status --pr); cword=2
    cur=--pr; prev=status; }
  source '$bash_c'; _wavectl; echo \"\${COMPREPLY[*]}\"")
[ "$out" = "--probe" ] || fail "bash: 'wavectl status --pr' completes to '$out'"
out=$(bash -c "_init_completion() { words=(wavectl to); cword=1
    cur=to; prev=wavectl; }
  source '$bash_c'; _wavectl; echo \"\${COMPREPLY[*]}\"")
[ "$out" = "top" ] || fail "bash: 'wavectl to' completes to '$out'"
out=$(bash -c "_init_completion() { words=(wavectl top --o); cword=2
    cur=--o; prev=top; }
  source '$bash_c'; _wavectl; echo \"\${COMPREPLY[*]}\"")
[ "$out" = "--once" ] || fail "bash: 'wavectl top --o' completes to '$out'"

if command -v zsh >/dev/null; then
  zsh -n "$zsh_c" || fail "zsh -n $zsh_c"
fi
if command -v fish >/dev/null; then
  fish -n "$fish_c" || fail "fish -n $fish_c"
  out=$(fish -c "source '$fish_c'; complete -C'wavectl status --pr'" | cut -f1)
  [ "$out" = "--probe" ] || fail "fish: 'wavectl status --pr' completes to '$out'"
  out=$(fish -c "source '$fish_c'; complete -C'wavectl top --o'" | cut -f1)
  [ "$out" = "--once" ] || fail "fish: 'wavectl top --o' completes to '$out'"
fi
echo "ctl_docs_test: $(wc -l <<<"$opts") options, $(wc -l <<<"$envs") variables"
