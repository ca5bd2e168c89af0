# bash completion for wavectl (installed as
# share/bash-completion/completions/wavectl)
_wavectl()
{
  local cur prev words cword
  _init_completion || return
  local cmds="submit status packs jobs wait cancel help"
  local common="--url --timeout --token-file --tls-ca --tls-server-name --json --help"
  case $prev in
    --op) COMPREPLY=($(compgen -W "sum min max extent and or xor" -- "$cur")); return ;;
    --dtype) COMPREPLY=($(compgen -W "uint32 sint32 float32" -- "$cur")); return ;;
    --format) COMPREPLY=($(compgen -W "auto raw npy text" -- "$cur")); return ;;
    --input|--mask|--token-file|--tls-ca) _filedir; return ;;
    --pack)
      COMPREPLY=($(compgen -W "$(wavectl packs --json 2>/dev/null |
        grep -o '"name": "[^"]*"' | cut -d'"' -f4)" -- "$cur")); return ;;
    --device)
      COMPREPLY=($(compgen -W "$(wavectl status --json 2>/dev/null |
        grep -o '"name": "[^"]*"' | cut -d'"' -f4)" -- "$cur")); return ;;
    --url|--timeout|--tls-server-name|--nonce|--count|--target|--max-winners) return ;;
    submit) COMPREPLY=($(compgen -W "reduce hash" -- "$cur")); return ;;
    wait|cancel)
      COMPREPLY=($(compgen -W "$(wavectl jobs --json 2>/dev/null |
        grep -o '"job": [0-9]*' | cut -d' ' -f2)" -- "$cur")); return ;;
    help) COMPREPLY=($(compgen -W "submit status packs jobs wait cancel" -- "$cur")); return ;;
  esac
  local cmd="" i
  for ((i = 1; i < cword; i++)); do
    case ${words[i]} in
      reduce|hash|status|packs|jobs|wait|cancel) cmd=${words[i]} ;;
    esac
  done
  case $cmd in
    reduce) COMPREPLY=($(compgen -W "--op --dtype --input --mask --format --device $common" -- "$cur")) ;;
    hash) COMPREPLY=($(compgen -W "--pack --nonce --count --target --max-winners --outputs --device --detach $common" -- "$cur")) ;;
    "") COMPREPLY=($(compgen -W "$cmds $common --version" -- "$cur")) ;;
    *) COMPREPLY=($(compgen -W "$common" -- "$cur")) ;;
  esac
} && complete -F _wavectl wavectl
