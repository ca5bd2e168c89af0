# bash completion for wavedd (installed as
# share/bash-completion/completions/wavedd)
_wavedd()
{
  local cur prev words cword
  _init_completion || return
  case $prev in
    -c|--config) _filedir '@(yaml|yml)'; return ;;
  esac
  COMPREPLY=($(compgen -W "--config --foreground --check-config --version --help" -- "$cur"))
} && complete -F _wavedd wavedd
