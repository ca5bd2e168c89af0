/* ctl_gen.c - wvctl-gen, run by the build: writes the OPTIONS and
 * ENVIRONMENT sections of wavectl(1) and the bash, zsh and fish completions
 * from the option table of ctl_opts.c, so none of them can fall behind
 * `wavectl --help`.
 *
 *   wvctl-gen man TEMPLATE OUT   TEMPLATE with the lines `.\" GENERATED-OPTIONS`
 *                                and `.\" GENERATED-ENVIRONMENT` filled in
 *   wvctl-gen bash|zsh|fish OUT  a completion script
 *
 * Value completion follows wv_opt.values: files, the daemon's pack and
 * device names (asked of the daemon with --json, quietly), job ids for
 * wait/cancel, or a fixed word list.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/ctl.h"

/* Commands that take options of their own, as the word the shells see
 * last ("reduce" for submit reduce). */
static const struct gn_cmd {
  wv_cmd cmd;
  const char *word;
} gn_cmds[] = {
  {WV_CMD_REDUCE, "reduce"}, {WV_CMD_HASH, "hash"},
  {WV_CMD_STATUS, "status"}, {WV_CMD_PACKS, "packs"},
  {WV_CMD_JOBS, "jobs"}, {WV_CMD_WAIT, "wait"}, {WV_CMD_CANCEL, "cancel"},
  {WV_CMD_TOP, "top"}, {WV_CMD_BENCH, "bench"},
};
#define GN_NCMDS (sizeof gn_cmds / sizeof gn_cmds[0])
static const char gn_words[] = "submit status packs jobs wait cancel top bench help";
static const char gn_help_words[] = "submit status packs jobs wait cancel top bench";

/* The shell commands that list the daemon's names (quiet when it is not
 * there). */
#define GN_PACKS "wavectl packs --json 2>/dev/null | grep -o '\"name\": \"[^\"]*\"' | cut -d'\"' -f4"
#define GN_DEVICES "wavectl status --json 2>/dev/null | grep -o '\"name\": \"[^\"]*\"' | cut -d'\"' -f4"
#define GN_JOBS "wavectl jobs --json 2>/dev/null | grep -o '\"job\": [0-9]*' | cut -d' ' -f2"

/* The first row of each name only (the parser's view). */
static int gn_first(size_t i)
{
  for (size_t k = 0; k < i; k++)
    if (strcmp(wv_opts[k].name, wv_opts[i].name) == 0)
      return 0;
  return 1;
}

/* Whether the name of row i is taken by cmd on any of its rows. */
static int gn_takes(size_t i, wv_cmd cmd)
{
  for (size_t k = 0; k < wv_n_opts; k++)
    if (strcmp(wv_opts[k].name, wv_opts[i].name) == 0 &&
        (wv_opts[k].cmds & WV_CMD_BIT(cmd)))
      return 1;
  return 0;
}

/* ---- man ----------------------------------------------------------------- */

static void gn_roff(FILE *f, const char *s)
{
  if (*s == '.' || *s == '\'')
    fputs("\\&", f);
  for (; *s; s++) {
    if (*s == '\\')
      fputs("\\e", f);
    else if (*s == '-')
      fputs("\\-", f);
    else
      fputc(*s, f);
  }
}

/* "submit hash, wait" for the commands of row o (none when it is for all). */
static void gn_roff_cmds(FILE *f, const wv_opt *o)
{
  if (o->cmds == WV_CMDS_ALL)
    return;
  int n = 0;
  for (unsigned c = 0; c < WV_CMD_COUNT; c++) {
    if (!(o->cmds & WV_CMD_BIT(c)))
      continue;
    fputs(n++ ? ", " : "(", f);
    fputs(c == WV_CMD_NONE ? "no command" : wv_cmd_name((wv_cmd)c), f);
  }
  fputs(") ", f);
}

static void gn_man_options(FILE *f)
{
  /* every command's options first, then each command's own */
  for (int pass = 0; pass < 2; pass++)
    for (size_t i = 0; i < wv_n_opts; i++) {
      const wv_opt *o = &wv_opts[i];
      int common = o->cmds == WV_CMDS_ALL || o->cmds == WV_CMD_BIT(WV_CMD_NONE);
      if (!gn_first(i) || common != (pass == 0))
        continue;
      fputs(".TP\n", f);
      if (o->arg) {
        fputs(".BI \"", f);
        gn_roff(f, "--");
        gn_roff(f, o->name);
        fputs("\" \" ", f);
        gn_roff(f, o->arg);
        fputs("\"\n", f);
      } else {
        fputs(".B ", f);
        gn_roff(f, "--");
        gn_roff(f, o->name);
        fputc('\n', f);
      }
      int rows = 0;
      for (size_t k = i; k < wv_n_opts; k++) {
        const wv_opt *r = &wv_opts[k];
        if (strcmp(r->name, o->name) != 0)
          continue;
        if (rows++)
          fputs(".br\n", f);
        gn_roff_cmds(f, r);
        if (rows > 1 && r->arg && strcmp(r->arg, o->arg) != 0) {
          gn_roff(f, r->arg);
          fputs(": ", f);
        }
        gn_roff(f, r->help);
        fputs(".\n", f);
      }
    }
}

static void gn_man_env(FILE *f)
{
  for (size_t i = 0; i < wv_n_envs; i++) {
    fputs(".TP\n.B ", f);
    gn_roff(f, wv_envs[i].name);
    fputc('\n', f);
    gn_roff(f, wv_envs[i].help);
    fputs(".\n", f);
  }
}

static int gn_man(const char *tmpl, FILE *out)
{
  FILE *in = fopen(tmpl, "r");
  if (in == NULL) {
    perror(tmpl);
    return 1;
  }
  char line[4096];
  int seen = 0;
  while (fgets(line, sizeof line, in) != NULL) {
    if (strcmp(line, ".\\\" GENERATED-OPTIONS\n") == 0) {
      gn_man_options(out);
      seen |= 1;
    } else if (strcmp(line, ".\\\" GENERATED-ENVIRONMENT\n") == 0) {
      gn_man_env(out);
      seen |= 2;
    } else {
      fputs(line, out);
    }
  }
  fclose(in);
  if (seen != 3) {
    fprintf(stderr, "%s: lacks the GENERATED-OPTIONS or GENERATED-ENVIRONMENT "
            "line\n", tmpl);
    return 1;
  }
  return 0;
}

/* ---- bash ---------------------------------------------------------------- */

/* Options whose values are of kind v ("=file", NULL: free text), as
 * "--a|--b"; 0 when there are none. */
static int gn_case_names(FILE *f, const char *v, int words)
{
  int n = 0;
  for (size_t i = 0; i < wv_n_opts; i++) {
    const wv_opt *o = &wv_opts[i];
    if (!gn_first(i) || o->arg == NULL)
      continue;
    int match = words ? o->values != NULL && o->values[0] != '='
                : v == NULL ? o->values == NULL
                            : o->values != NULL && strcmp(o->values, v) == 0;
    if (!match)
      continue;
    fprintf(f, "%s--%s", n++ ? "|" : "", o->name);
  }
  return n;
}

static void gn_opt_words(FILE *f, wv_cmd cmd)
{
  int n = 0;
  for (size_t i = 0; i < wv_n_opts; i++)
    if (gn_first(i) && gn_takes(i, cmd))
      fprintf(f, "%s--%s", n++ ? " " : "", wv_opts[i].name);
}

static int gn_bash(FILE *f)
{
  fputs("# bash completion for wavectl, generated from wavectl's option table\n"
        "# (client/ctl_opts.c) by wvctl-gen; installed as\n"
        "# share/bash-completion/completions/wavectl\n"
        "_wavectl()\n{\n"
        "  local cur prev words cword\n"
        "  _init_completion || return\n"
        "  case $prev in\n", f);
  for (size_t i = 0; i < wv_n_opts; i++) {
    const wv_opt *o = &wv_opts[i];
    if (gn_first(i) && o->values != NULL && o->values[0] != '=')
      fprintf(f, "    --%s) COMPREPLY=($(compgen -W \"%s\" -- \"$cur\")); "
              "return ;;\n", o->name, o->values);
  }
  fputs("    ", f);
  if (gn_case_names(f, "=file", 0))
    fputs(") _filedir; return ;;\n    ", f);
  if (gn_case_names(f, "=pack", 0))
    fputs(")\n      COMPREPLY=($(compgen -W \"$(" GN_PACKS ")\" -- \"$cur\")); "
          "return ;;\n    ", f);
  if (gn_case_names(f, "=device", 0))
    fputs(")\n      COMPREPLY=($(compgen -W \"$(" GN_DEVICES ")\" -- \"$cur\")); "
          "return ;;\n    ", f);
  if (gn_case_names(f, NULL, 0))
    fputs(") return ;;\n", f);
  fprintf(f, "    submit) COMPREPLY=($(compgen -W \"reduce hash\" -- \"$cur\")); "
          "return ;;\n"
          "    wait|cancel)\n      COMPREPLY=($(compgen -W \"$(" GN_JOBS ")\" "
          "-- \"$cur\")); return ;;\n"
          "    help) COMPREPLY=($(compgen -W \"%s\" -- \"$cur\")); return ;;\n"
          "  esac\n"
          "  local cmd=\"\" i\n"
          "  for ((i = 1; i < cword; i++)); do\n"
          "    case ${words[i]} in\n"
          "      reduce|hash|status|packs|jobs|wait|cancel|top|bench) cmd=${words[i]} ;;\n"
          "    esac\n"
          "  done\n"
          "  case $cmd in\n", gn_help_words);
  for (size_t c = 0; c < GN_NCMDS; c++) {
    fprintf(f, "    %s) COMPREPLY=($(compgen -W \"", gn_cmds[c].word);
    gn_opt_words(f, gn_cmds[c].cmd);
    fputs("\" -- \"$cur\")) ;;\n", f);
  }
  fprintf(f, "    *) COMPREPLY=($(compgen -W \"%s ", gn_words);
  gn_opt_words(f, WV_CMD_NONE);
  fputs("\" -- \"$cur\")) ;;\n  esac\n} && complete -F _wavectl wavectl\n", f);
  return 0;
}

/* ---- zsh ----------------------------------------------------------------- */

/* s in single quotes for sh/zsh (the names, before _describe's colon,
 * have no colons to quote). */
static void gn_sq(FILE *f, const char *s)
{
  fputc('\'', f);
  for (; *s; s++) {
    if (*s == '\'')
      fputs("'\\''", f);
    else
      fputc(*s, f);
  }
  fputc('\'', f);
}

static void gn_zsh_opts(FILE *f, wv_cmd cmd)
{
  for (size_t i = 0; i < wv_n_opts; i++) {
    if (!gn_first(i) || !gn_takes(i, cmd))
      continue;
    /* the help of the row for this command */
    const char *help = wv_opts[i].help;
    for (size_t k = i; k < wv_n_opts; k++)
      if (strcmp(wv_opts[k].name, wv_opts[i].name) == 0 &&
          (wv_opts[k].cmds & WV_CMD_BIT(cmd))) {
        help = wv_opts[k].help;
        break;
      }
    fputs("      ", f);
    fputc('\'', f);
    fprintf(f, "--%s:", wv_opts[i].name);
    fputc('\'', f);
    gn_sq(f, help);
    fputc('\n', f);
  }
}

static int gn_zsh(FILE *f)
{
  fputs("#compdef wavectl\n"
        "# zsh completion for wavectl, generated from wavectl's option table\n"
        "# (client/ctl_opts.c) by wvctl-gen; installed as\n"
        "# share/zsh/vendor-completions/_wavectl\n"
        "_wavectl() {\n"
        "  local cmd word\n"
        "  local -a opts\n"
        "  for word in ${words[2,CURRENT-1]}; do\n"
        "    case $word in\n"
        "      reduce|hash|status|packs|jobs|wait|cancel|top|bench) cmd=$word ;;\n"
        "    esac\n"
        "  done\n"
        "  case ${words[CURRENT-1]} in\n", f);
  for (size_t i = 0; i < wv_n_opts; i++) {
    const wv_opt *o = &wv_opts[i];
    if (gn_first(i) && o->values != NULL && o->values[0] != '=')
      fprintf(f, "    --%s) compadd -- %s; return ;;\n", o->name, o->values);
  }
  fputs("    ", f);
  if (gn_case_names(f, "=file", 0))
    fputs(") _files; return ;;\n    ", f);
  if (gn_case_names(f, "=pack", 0))
    fputs(") compadd -- ${(f)\"$(" GN_PACKS ")\"}; return ;;\n    ", f);
  if (gn_case_names(f, "=device", 0))
    fputs(") compadd -- ${(f)\"$(" GN_DEVICES ")\"}; return ;;\n    ", f);
  if (gn_case_names(f, NULL, 0))
    fputs(") _message 'a value'; return ;;\n", f);
  fprintf(f, "    submit) compadd -- reduce hash; return ;;\n"
          "    wait|cancel) compadd -- ${(f)\"$(" GN_JOBS ")\"}; return ;;\n"
          "    help) compadd -- %s; return ;;\n"
          "  esac\n"
          "  case $cmd in\n", gn_help_words);
  for (size_t c = 0; c < GN_NCMDS; c++) {
    fprintf(f, "    %s) opts=(\n", gn_cmds[c].word);
    gn_zsh_opts(f, gn_cmds[c].cmd);
    fputs("    ) ;;\n", f);
  }
  fputs("    *) opts=(\n", f);
  gn_zsh_opts(f, WV_CMD_NONE);
  fputs("    )\n", f);
  fprintf(f, "       compadd -- %s ;;\n"
          "  esac\n"
          "  _describe -t options 'wavectl option' opts\n"
          "}\n"
          "_wavectl \"$@\"\n", gn_words);
  return 0;
}

/* ---- fish ---------------------------------------------------------------- */

static void gn_fish_sq(FILE *f, const char *s)
{
  fputc('\'', f);
  for (; *s; s++) {
    if (*s == '\'' || *s == '\\')
      fputc('\\', f);
    fputc(*s, f);
  }
  fputc('\'', f);
}

static int gn_fish(FILE *f)
{
  fprintf(f, "# fish completion for wavectl, generated from wavectl's option\n"
          "# table (client/ctl_opts.c) by wvctl-gen; installed as\n"
          "# share/fish/vendor_completions.d/wavectl.fish\n"
          "complete -c wavectl -f\n"
          "complete -c wavectl -n __fish_use_subcommand -a '%s'\n"
          "complete -c wavectl -n '__fish_seen_subcommand_from submit; and "
          "not __fish_seen_subcommand_from reduce hash' -a 'reduce hash'\n"
          "complete -c wavectl -n '__fish_seen_subcommand_from help' -a '%s'\n"
          "complete -c wavectl -n '__fish_seen_subcommand_from wait cancel' "
          "-a ", gn_words, gn_help_words);
  gn_fish_sq(f, "(" GN_JOBS ")");
  fputc('\n', f);
  for (size_t i = 0; i < wv_n_opts; i++) {
    const wv_opt *o = &wv_opts[i];
    fputs("complete -c wavectl", f);
    if (o->cmds == WV_CMD_BIT(WV_CMD_NONE)) {
      fputs(" -n __fish_use_subcommand", f);
    } else if (o->cmds != WV_CMDS_ALL) {
      fputs(" -n '__fish_seen_subcommand_from", f);
      for (size_t c = 0; c < GN_NCMDS; c++)
        if (o->cmds & WV_CMD_BIT(gn_cmds[c].cmd))
          fprintf(f, " %s", gn_cmds[c].word);
      fputc('\'', f);
    }
    fprintf(f, " -l %s", o->name);
    if (o->arg != NULL) {
      if (o->values == NULL)
        fputs(" -x", f);
      else if (strcmp(o->values, "=file") == 0)
        fputs(" -r -F", f);
      else if (strcmp(o->values, "=pack") == 0) {
        fputs(" -x -a ", f);
        gn_fish_sq(f, "(" GN_PACKS ")");
      } else if (strcmp(o->values, "=device") == 0) {
        fputs(" -x -a ", f);
        gn_fish_sq(f, "(" GN_DEVICES ")");
      }
      else
        fprintf(f, " -x -a '%s'", o->values);
    }
    fputs(" -d ", f);
    gn_fish_sq(f, o->help);
    fputc('\n', f);
  }
  return 0;
}

int main(int argc, char **argv)
{
  const char *kind = argc > 1 ? argv[1] : "";
  int is_man = strcmp(kind, "man") == 0;
  if (argc != (is_man ? 4 : 3)) {
    fprintf(stderr, "usage: wvctl-gen man TEMPLATE OUT | bash|zsh|fish OUT\n");
    return 2;
  }
  const char *path = argv[argc - 1];
  FILE *f = fopen(path, "w");
  if (f == NULL) {
    perror(path);
    return 1;
  }
  int rv = is_man                      ? gn_man(argv[2], f)
           : strcmp(kind, "bash") == 0 ? gn_bash(f)
           : strcmp(kind, "zsh") == 0  ? gn_zsh(f)
           : strcmp(kind, "fish") == 0 ? gn_fish(f)
                                       : 2;
  if (rv == 2)
    fprintf(stderr, "wvctl-gen: unknown kind '%s'\n", kind);
  if (fclose(f) != 0 && rv == 0) {
    perror(path);
    rv = 1;
  }
  if (rv != 0)
    remove(path);
  return rv;
}
