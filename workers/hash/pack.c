/* pack.c - the pack file loader (docs/hash.md "Pack files").
 *
 * core/yamlconf gives every node its file position, so each error names
 * file:line:column and the key it is under, and reads numbers by the same
 * rule as devices.yaml.  A pack is parsed into a fresh wv_pack, validated whole (program
 * shape, registers, exchanges, dataset sizes, known answers) and only then
 * handed out; a packs directory is all-or-nothing.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/base.h"
#include "core/yamlconf.h"
#include "workers/hash/hash.h"
#include "workers/hash/pack.h"

struct wv_packset {
  size_t n;
  wv_pack **packs;
};

/* ---- instructions ------------------------------------------------------- */

static const char *const pc_mnemonics[WV_OP_COUNT_] = {
  "add", "sub", "xor", "mul", "rotl", "xshr", "addi", "muli", "load", "xchg",
};

const char *wv_opcode_name(unsigned op)
{
  return op < WV_OP_COUNT_ ? pc_mnemonics[op] : NULL;
}

static int pc_reg(const char *tok, unsigned nregs, uint32_t *out)
{
  uint64_t v;
  /* r0..r31 in decimal only: "r0x1f" or "r1_0" are not register names. */
  if (tok[0] != 'r' || tok[1] == '\0' ||
      strspn(tok + 1, "0123456789") != strlen(tok + 1) ||
      wv_yc_parse_u64(tok + 1, &v) != 0 || v >= nregs)
    return -1;
  *out = (uint32_t)v;
  return 0;
}

/* One program entry, e.g. "xchg r3, r5, 4". */
static int pc_insn(wv_yc *c, const yaml_node_t *n, unsigned idx,
                   unsigned nregs, wv_insn *in)
{
  char key[32], buf[128];
  char *tok[5];
  int nt = 0;
  snprintf(key, sizeof key, "program[%u]", idx);
  const char *s = wv_yc_scalar(n);
  if (s == NULL)
    return wv_yc_fail(c, n, key, "an instruction must be a string");
  if (strlen(s) >= sizeof buf)
    return wv_yc_fail(c, n, key, "instruction too long");
  strcpy(buf, s);
  char *save = NULL;
  for (char *p = strtok_r(buf, " \t,", &save); p != NULL;
       p = strtok_r(NULL, " \t,", &save)) {
    if (nt == 5)
      return wv_yc_fail(c, n, key, "too many operands in '%s'", s);
    tok[nt++] = p;
  }
  if (nt == 0)
    return wv_yc_fail(c, n, key, "empty instruction");
  memset(in, 0, sizeof *in);
  unsigned op;
  for (op = 0; op < WV_OP_COUNT_; op++)
    if (strcmp(tok[0], pc_mnemonics[op]) == 0)
      break;
  if (op == WV_OP_COUNT_)
    return wv_yc_fail(c, n, key, "unknown instruction '%s'", tok[0]);
  in->op = op;
  int want = op == WV_OP_LOAD ? 3 : 4;
  if (nt != want)
    return wv_yc_fail(c, n, key, "'%s' takes %d operands, got %d", tok[0],
                   want - 1, nt - 1);
  if (pc_reg(tok[1], nregs, &in->dst) != 0)
    return wv_yc_fail(c, n, key, "'%s' is not a register r0..r%u", tok[1],
                   nregs - 1);
  if (pc_reg(tok[2], nregs, &in->a) != 0)
    return wv_yc_fail(c, n, key, "'%s' is not a register r0..r%u", tok[2],
                   nregs - 1);
  uint64_t v;
  switch (op) {
  case WV_OP_ADD: case WV_OP_SUB: case WV_OP_XOR: case WV_OP_MUL:
    if (pc_reg(tok[3], nregs, &in->b) != 0)
      return wv_yc_fail(c, n, key, "'%s' is not a register r0..r%u", tok[3],
                     nregs - 1);
    break;
  case WV_OP_ROTL: case WV_OP_XSHR:
    if (wv_yc_parse_u64(tok[3], &v) != 0 || v < 1 || v > 63)
      return wv_yc_fail(c, n, key, "shift '%s' is not in 1..63", tok[3]);
    in->b = (uint32_t)v;
    break;
  case WV_OP_ADDI: case WV_OP_MULI:
    if (wv_yc_parse_u64(tok[3], &v) != 0)
      return wv_yc_fail(c, n, key, "'%s' is not a 64-bit immediate", tok[3]);
    in->imm = v;
    break;
  case WV_OP_XCHG:
    if (wv_yc_parse_u64(tok[3], &v) != 0 ||
        !(v == 1 || v == 2 || v == 4 || v == 8 || v == 16))
      return wv_yc_fail(c, n, key,
                     "exchange distance '%s' is not 1, 2, 4, 8 or 16", tok[3]);
    in->b = (uint32_t)v;
    break;
  default:
    break;
  }
  return 0;
}

/* ---- sections ----------------------------------------------------------- */

static int pc_dataset(wv_yc *c, yaml_node_t *n, wv_pack *p)
{
  if (n->type != YAML_MAPPING_NODE)
    return wv_yc_fail(c, n, "dataset", "expected a mapping");
  static const char *const keys[] = {"cache_bytes", "dataset_bytes",
                                     "parents", "closed"};
  yaml_node_t *val[4] = {0};
  int rv = wv_yc_keys(c, n, "dataset", keys, 4, val);
  if (rv != 0)
    return rv;
  yaml_node_t *cache = val[0], *data = val[1], *parents = val[2],
              *closed = val[3];
  if (closed != NULL) {
    const char *s = wv_yc_scalar(closed);
    if (s == NULL || strcmp(s, "true") != 0)
      return wv_yc_fail(c, closed, "dataset.closed", "must be true when given");
    if (cache || data || parents)
      return wv_yc_fail(c, n, "dataset",
                     "a closed-form dataset has no cache_bytes, dataset_bytes "
                     "or parents");
    p->closed = 1;
    p->item_mask = WV_CLOSED_ITEM_MASK;
    p->closed_key = wv_mix64(p->seed ^ WV_TAG_CLOSED);
    return 0;
  }
  if (!cache || !data || !parents)
    return wv_yc_fail(c, n, "dataset",
                   "needs cache_bytes, dataset_bytes and parents (or "
                   "closed: true)");
  uint64_t cb, db, pa;
  if ((rv = wv_yc_pow2(c, cache, "dataset.cache_bytes", 64, 1ull << 30, &cb)))
    return rv;
  if ((rv = wv_yc_pow2(c, data, "dataset.dataset_bytes", cb, WV_DATASET_MAX,
                    &db)))
    return rv;
  if ((rv = wv_yc_uint(c, parents, "dataset.parents", 1, 256, &pa)))
    return rv;
  p->cache_items = cb / 8;
  p->dataset_items = db / 8;
  p->parents = (unsigned)pa;
  p->item_mask = p->dataset_items - 1;
  return 0;
}

static int pc_program(wv_yc *c, yaml_node_t *n, wv_pack *p)
{
  if (n->type != YAML_SEQUENCE_NODE)
    return wv_yc_fail(c, n, "program", "expected a sequence of instructions");
  size_t len = wv_yc_len(n);
  if (len != WV_PROGRAM_LEN)
    return wv_yc_fail(c, n, "program", "has %zu instructions, must be exactly %u",
                   len, WV_PROGRAM_LEN);
  unsigned xchg = 0, loads = 0;
  for (unsigned i = 0; i < WV_PROGRAM_LEN; i++) {
    yaml_node_t *it = wv_yc_item(c, n, i);
    int rv = pc_insn(c, it, i, p->registers, &p->program[i]);
    if (rv != 0)
      return rv;
    xchg += p->program[i].op == WV_OP_XCHG;
    loads += p->program[i].op == WV_OP_LOAD;
  }
  if (xchg != WV_EXCHANGES)
    return wv_yc_fail(c, n, "program", "has %u xchg instructions, must be "
                   "exactly %u", xchg, WV_EXCHANGES);
  p->loads = loads;
  return 0;
}

static int pc_vector(wv_yc *c, yaml_node_t *n, const char *key,
                     wv_pack_vector *v)
{
  if (n->type != YAML_MAPPING_NODE)
    return wv_yc_fail(c, n, key, "expected a mapping {nonce, outputs}");
  static const char *const keys[] = {"nonce", "outputs"};
  yaml_node_t *val[2] = {0};
  int rm = wv_yc_keys(c, n, key, keys, 2, val);
  if (rm != 0)
    return rm;
  yaml_node_t *nonce = val[0], *outs = val[1];
  if (!nonce || !outs)
    return wv_yc_fail(c, n, key, "needs nonce and outputs");
  int rv = wv_yc_uint(c, nonce, key, 0, UINT64_MAX, &v->nonce);
  if (rv)
    return rv;
  if (v->nonce % WV_LANES != 0)
    return wv_yc_fail(c, nonce, key, "nonce is not a multiple of 32");
  if (outs->type != YAML_SEQUENCE_NODE || wv_yc_len(outs) != WV_LANES)
    return wv_yc_fail(c, outs, key, "outputs must be a sequence of 32 values");
  for (unsigned i = 0; i < WV_LANES; i++) {
    yaml_node_t *o = wv_yc_item(c, outs, i);
    if ((rv = wv_yc_uint(c, o, key, 0, UINT64_MAX, &v->outputs[i])))
      return rv;
  }
  return 0;
}

/* known.job: {nonce, count, fingerprint}, count 1 .. 2^20 within the
 * nonce space. */
static int pc_job(wv_yc *c, yaml_node_t *n, wv_pack *p)
{
  if (n->type != YAML_MAPPING_NODE)
    return wv_yc_fail(c, n, "known.job",
                      "expected a mapping {nonce, count, fingerprint}");
  static const char *const keys[] = {"nonce", "count", "fingerprint"};
  yaml_node_t *val[3] = {0};
  int rv = wv_yc_keys(c, n, "known.job", keys, 3, val);
  if (rv != 0)
    return rv;
  if (!val[0] || !val[1] || !val[2])
    return wv_yc_fail(c, n, "known.job", "needs nonce, count and fingerprint");
  if ((rv = wv_yc_uint(c, val[0], "known.job.nonce", 0, UINT64_MAX,
                       &p->job_nonce)) ||
      (rv = wv_yc_uint(c, val[1], "known.job.count", 1, 1u << 20,
                       &p->job_count)) ||
      (rv = wv_yc_uint(c, val[2], "known.job.fingerprint", 0, UINT64_MAX,
                       &p->job_fingerprint)))
    return rv;
  if (p->job_nonce > UINT64_MAX - (p->job_count - 1))
    return wv_yc_fail(c, val[1], "known.job.count",
                      "runs past nonce 2^64 - 1");
  p->has_job = 1;
  return 0;
}

static int pc_known(wv_yc *c, yaml_node_t *n, wv_pack *p)
{
  if (n->type != YAML_MAPPING_NODE)
    return wv_yc_fail(c, n, "known", "expected a mapping");
  static const char *const keys[] = {"cache_fnv", "batch_fnv", "vectors",
                                     "job"};
  yaml_node_t *val[4] = {0};
  int rm = wv_yc_keys(c, n, "known", keys, 4, val);
  if (rm != 0)
    return rm;
  yaml_node_t *cache = val[0], *batch = val[1], *vecs = val[2];
  int rv;
  if (p->closed && cache)
    return wv_yc_fail(c, cache, "known.cache_fnv",
                   "a closed-form pack has no cache");
  if (!p->closed && !cache)
    return wv_yc_fail(c, n, "known", "missing key 'cache_fnv'");
  if (cache && (rv = wv_yc_uint(c, cache, "known.cache_fnv", 0, UINT64_MAX,
                            &p->cache_fnv)))
    return rv;
  if (!batch)
    return wv_yc_fail(c, n, "known", "missing key 'batch_fnv'");
  if ((rv = wv_yc_uint(c, batch, "known.batch_fnv", 0, UINT64_MAX, &p->batch_fnv)))
    return rv;
  if (!vecs)
    return wv_yc_fail(c, n, "known", "missing key 'vectors'");
  if (vecs->type != YAML_SEQUENCE_NODE)
    return wv_yc_fail(c, vecs, "known.vectors", "expected a sequence");
  size_t nv = wv_yc_len(vecs);
  if (nv < 1 || nv > WV_MAX_VECTORS)
    return wv_yc_fail(c, vecs, "known.vectors", "has %zu vectors, must be 1..%u",
                   nv, WV_MAX_VECTORS);
  for (size_t i = 0; i < nv; i++) {
    char key[32];
    snprintf(key, sizeof key, "known.vectors[%zu]", i);
    yaml_node_t *v = wv_yc_item(c, vecs, i);
    if ((rv = pc_vector(c, v, key, &p->vectors[i])))
      return rv;
  }
  p->n_vectors = nv;
  if (val[3] != NULL && (rv = pc_job(c, val[3], p)))
    return rv;
  p->has_known = 1;
  return 0;
}

static int pc_name_ok(const char *s)
{
  size_t n = strlen(s);
  if (n == 0 || n > 63)
    return 0;
  for (; *s; s++)
    if (!isalnum((unsigned char)*s) && *s != '_' && *s != '.' && *s != '-')
      return 0;
  return 1;
}

/* The top-level mapping, in two steps: collect the keys (so that seed and
 * registers are known before program and dataset are parsed), then parse. */
static int pc_document(wv_yc *c, wv_pack *p)
{
  enum { K_NAME, K_VERSION, K_DESC, K_SEED, K_REGS, K_ROUNDS, K_DATASET,
         K_PROGRAM, K_KNOWN, K_COUNT };
  static const char *const keys[K_COUNT] = {
    "name", "version", "description", "seed", "registers", "rounds",
    "dataset", "program", "known",
  };
  yaml_node_t *val[K_COUNT] = {0};
  yaml_node_t *root = wv_yc_root(c);
  if (root == NULL)
    return wv_yc_fail(c, NULL, NULL, "empty file");
  if (root->type != YAML_MAPPING_NODE)
    return wv_yc_fail(c, root, NULL, "a pack is a mapping of keys");
  for (yaml_node_pair_t *pr = root->data.mapping.pairs.start;
       pr < root->data.mapping.pairs.top; pr++) {
    yaml_node_t *k = yaml_document_get_node(&c->doc, pr->key);
    const char *ks = wv_yc_scalar(k);
    int i;
    for (i = 0; i < K_COUNT; i++)
      if (ks && strcmp(ks, keys[i]) == 0)
        break;
    if (i == K_COUNT)
      return wv_yc_fail(c, k, ks ? ks : "?", "unknown key");
    if (val[i] != NULL)
      return wv_yc_fail(c, k, ks, "duplicate key");
    val[i] = yaml_document_get_node(&c->doc, pr->value);
  }
  for (int i = 0; i < K_COUNT; i++)
    if (val[i] == NULL && i != K_DESC && i != K_KNOWN)
      return wv_yc_fail(c, root, keys[i], "missing key");

  const char *s = wv_yc_scalar(val[K_NAME]);
  if (s == NULL || !pc_name_ok(s))
    return wv_yc_fail(c, val[K_NAME], "name",
                   "must be 1..63 characters of [A-Za-z0-9_.-]");
  snprintf(p->name, sizeof p->name, "%s", s);
  if (val[K_DESC] != NULL) {
    s = wv_yc_scalar(val[K_DESC]);
    if (s == NULL || strlen(s) >= sizeof p->description)
      return wv_yc_fail(c, val[K_DESC], "description",
                     "must be a string of at most %zu characters",
                     sizeof p->description - 1);
    snprintf(p->description, sizeof p->description, "%s", s);
  }
  uint64_t v;
  int rv;
  if ((rv = wv_yc_uint(c, val[K_VERSION], "version", 1, UINT32_MAX, &v)))
    return rv;
  p->version = (unsigned)v;
  if ((rv = wv_yc_uint(c, val[K_SEED], "seed", 0, UINT64_MAX, &p->seed)))
    return rv;
  if ((rv = wv_yc_uint(c, val[K_REGS], "registers", WV_REGS_MIN, WV_REGS_MAX,
                   &v)))
    return rv;
  p->registers = (unsigned)v;
  if ((rv = wv_yc_uint(c, val[K_ROUNDS], "rounds", 1, WV_ROUNDS_MAX, &v)))
    return rv;
  p->rounds = (unsigned)v;
  if ((rv = pc_dataset(c, val[K_DATASET], p)))
    return rv;
  if ((rv = pc_program(c, val[K_PROGRAM], p)))
    return rv;
  if (val[K_KNOWN] != NULL && (rv = pc_known(c, val[K_KNOWN], p)))
    return rv;
  return 0;
}

int wv_pack_load_file(const char *path, wv_pack **out, wave_error *err)
{
  *out = NULL;
  wv_yc c;
  int rv = wv_yc_open(&c, path, WAVE_EPACKFILE, WAVE_EIO, err);
  if (rv != 0) {
    wv_yc_close(&c);
    return rv;
  }
  wv_pack *p = calloc(1, sizeof *p);
  if (p == NULL) {
    rv = wv_seterr(err, WAVE_ENOMEM, "pack %s", path);
  } else {
    pthread_mutex_init(&p->lock_, NULL);
    snprintf(p->path, sizeof p->path, "%s", path);
    rv = pc_document(&c, p);
  }
  wv_yc_close(&c);
  if (rv != 0) {
    wv_pack_free(p);
    return rv;
  }
  *out = p;
  return 0;
}

void wv_pack_free(wv_pack *p)
{
  if (p == NULL)
    return;
  free(p->cache_);
  pthread_mutex_destroy(&p->lock_);
  free(p);
}

/* ---- pack sets ---------------------------------------------------------- */

static int pc_cmp_str(const void *a, const void *b)
{
  return strcmp(*(char *const *)a, *(char *const *)b);
}

int wv_packset_load(const char *dir, wv_packset **out, wave_error *err)
{
  *out = NULL;
  DIR *d = opendir(dir);
  if (d == NULL)
    return wv_seterr(err, WAVE_EIO, "packs directory %s: %s", dir,
                     strerror(errno));
  char **names = NULL;
  size_t n = 0, cap = 0;
  int rv = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    size_t len = strlen(e->d_name);
    if (len <= 5 || e->d_name[0] == '.' ||
        strcmp(e->d_name + len - 5, ".yaml") != 0)
      continue;
    if (n == cap) {
      cap = cap ? 2 * cap : 8;
      char **nn = realloc(names, cap * sizeof *nn);
      if (nn == NULL) {
        rv = wv_seterr(err, WAVE_ENOMEM, "packs directory");
        break;
      }
      names = nn;
    }
    if ((names[n] = strdup(e->d_name)) == NULL) {
      rv = wv_seterr(err, WAVE_ENOMEM, "packs directory");
      break;
    }
    n++;
  }
  closedir(d);
  wv_packset *s = NULL;
  if (rv == 0) {
    /* Sorted, so that the daemon lists packs in a stable order (an empty
     * folder has names NULL, which qsort may not be given). */
    if (n > 1)
      qsort(names, n, sizeof *names, pc_cmp_str);
    s = calloc(1, sizeof *s);
    if (s == NULL || (n && (s->packs = calloc(n, sizeof *s->packs)) == NULL))
      rv = wv_seterr(err, WAVE_ENOMEM, "packs");
  }
  for (size_t i = 0; rv == 0 && i < n; i++) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, names[i]);
    wv_pack *p;
    if ((rv = wv_pack_load_file(path, &p, err)) != 0)
      break;
    s->packs[s->n++] = p;
    if (!p->has_known) {
      rv = wv_seterr(err, WAVE_EPACKFILE,
                     "%s:1:1: known: missing (run wvhash-gen -w %s)", path,
                     path);
      break;
    }
    for (size_t j = 0; j + 1 < s->n; j++)
      if (strcmp(s->packs[j]->name, p->name) == 0) {
        rv = wv_seterr(err, WAVE_EPACKFILE,
                       "%s:1:1: name: pack '%s' is also defined in %s", path,
                       p->name, s->packs[j]->path);
        break;
      }
  }
  for (size_t i = 0; i < n; i++)
    free(names[i]);
  free(names);
  if (rv != 0) {
    wv_packset_free(s);
    return rv;
  }
  *out = s;
  return 0;
}

void wv_packset_free(wv_packset *s)
{
  if (s == NULL)
    return;
  for (size_t i = 0; i < s->n; i++)
    wv_pack_free(s->packs[i]);
  free(s->packs);
  free(s);
}

size_t wv_packset_count(const wv_packset *s) { return s ? s->n : 0; }

const wv_pack *wv_packset_at(const wv_packset *s, size_t i)
{
  return s && i < s->n ? s->packs[i] : NULL;
}

const wv_pack *wv_packset_find(const wv_packset *s, const char *name)
{
  for (size_t i = 0; s && i < s->n; i++)
    if (strcmp(s->packs[i]->name, name) == 0)
      return s->packs[i];
  return NULL;
}

const char *wv_pack_name(const wv_pack *p) { return p->name; }
unsigned wv_pack_version(const wv_pack *p) { return p->version; }
const char *wv_pack_description(const wv_pack *p) { return p->description; }

uint64_t wv_pack_dataset_bytes(const wv_pack *p)
{
  return p->closed ? 0 : p->dataset_items * 8;
}

int wv_pack_equal(const wv_pack *p, const wv_pack *q)
{
  /* every field of wv_pack but path and the private cache: a new one
   * belongs here */
  return strcmp(p->name, q->name) == 0 && p->version == q->version &&
         strcmp(p->description, q->description) == 0 && p->seed == q->seed &&
         p->registers == q->registers && p->rounds == q->rounds &&
         p->closed == q->closed && p->cache_items == q->cache_items &&
         p->dataset_items == q->dataset_items && p->parents == q->parents &&
         p->item_mask == q->item_mask && p->closed_key == q->closed_key &&
         memcmp(p->program, q->program, sizeof p->program) == 0 &&
         p->loads == q->loads && p->has_known == q->has_known &&
         p->cache_fnv == q->cache_fnv && p->batch_fnv == q->batch_fnv &&
         p->n_vectors == q->n_vectors && p->has_job == q->has_job &&
         p->job_nonce == q->job_nonce && p->job_count == q->job_count &&
         p->job_fingerprint == q->job_fingerprint &&
         memcmp(p->vectors, q->vectors,
                p->n_vectors * sizeof p->vectors[0]) == 0;
}
