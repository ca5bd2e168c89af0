/* ctl_load.c - wavectl's input loaders: one file becomes one chunk.
 *
 * Three forms, because data arrives in all three:
 *  - raw: the bytes are the rows (little-endian, as on the wire);
 *  - .npy: NumPy's format, recognised by its magic in auto mode.  Versions
 *    1-3 (2- or 4-byte header length), C order, any shape (flattened), and
 *    exactly the dtype the job needs ('<u4', '<i4', '<f4', '<u8', '<i8',
 *    '<f8'): converting silently would change results, so a mismatch is
 *    an error naming both.  Without --dtype the headers name it
 *    (wv_inputs_dtype).  A mask may also be NumPy's bool ('|b1'): it is
 *    widened to uint32 rows of 0 and 1, the only mask the daemon takes;
 *  - text: numbers separated by whitespace and/or commas, '#' comments;
 *    floats accept nan, inf, -0.0 (strtof, strtod for float64), integers
 *    decimal or 0x-hex, exact to 64 bits: a number the dtype cannot hold
 *    is an error naming file:line, never a row that wraps.  In auto mode
 *    text is refused, not read as raw rows (naming the line of a word
 *    that is not a number, such as a CSV header).
 * An empty file is an empty chunk (except for --format npy, which needs a
 * header).  Rows are kept little-endian whatever the host is.
 *
 * Which form a file is, and whether it is refused, is wv_format_decide's
 * call alone, from the first WV_FORMAT_HEAD bytes and the size: the loaders
 * here and every region path of ctl_region.c ask it, so no way the rows
 * travel can read a file differently from another (tests/test_formats.c).
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "client/ctl.h"
#include "core/base.h"

#define LD_NPY_MAGIC "\x93NUMPY"
#define LD_DESCR 32

int wv_format_parse(const char *s, wv_format *out)
{
  static const struct { const char *name; wv_format f; } names[] = {
    {"auto", WV_FMT_AUTO}, {"raw", WV_FMT_RAW}, {"npy", WV_FMT_NPY},
    {"text", WV_FMT_TEXT},
  };
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (s != NULL && strcmp(s, names[i].name) == 0) {
      *out = names[i].f;
      return 0;
    }
  return WAVE_EARG;
}

void wv_chunk_buf_free(wv_chunk_buf *b)
{
  if (b == NULL)
    return;
  free(b->mem);
  memset(b, 0, sizeof *b);
}

/* The low `size` bytes of v, little-endian. */
static void ld_put(unsigned char *p, uint64_t v, unsigned size)
{
  for (unsigned i = 0; i < size; i++)
    p[i] = (unsigned char)(v >> (8 * i));
}

/* ---- .npy ---------------------------------------------------------------- */

const char *wv_npy_descr(wave_dtype dtype)
{
  switch (dtype) {
  case WAVE_U32: return "<u4";
  case WAVE_S32: return "<i4";
  case WAVE_F32: return "<f4";
  case WAVE_U64: return "<u8";
  case WAVE_S64: return "<i8";
  case WAVE_F64: return "<f8";
  default: return "?";
  }
}

/* A cursor over the header's Python dict literal. */
typedef struct ld_cur {
  const char *p, *end;
} ld_cur;

static void ld_ws(ld_cur *c)
{
  while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' ||
                           *c->p == '\r'))
    c->p++;
}

static int ld_eat(ld_cur *c, char ch)
{
  ld_ws(c);
  if (c->p < c->end && *c->p == ch) {
    c->p++;
    return 1;
  }
  return 0;
}

/* A quoted string ('...' or "...") without escapes, into buf. */
static int ld_string(ld_cur *c, char *buf, size_t n)
{
  ld_ws(c);
  if (c->p >= c->end || (*c->p != '\'' && *c->p != '"'))
    return -1;
  char q = *c->p++;
  size_t k = 0;
  while (c->p < c->end && *c->p != q) {
    if (*c->p == '\\' || k + 1 >= n)
      return -1;
    buf[k++] = *c->p++;
  }
  if (c->p >= c->end)
    return -1;
  c->p++;
  buf[k] = '\0';
  return 0;
}

static int ld_word(ld_cur *c, const char *w)
{
  ld_ws(c);
  size_t n = strlen(w);
  if ((size_t)(c->end - c->p) >= n && memcmp(c->p, w, n) == 0) {
    c->p += n;
    return 1;
  }
  return 0;
}

/* (d0, d1, ...) with an optional trailing comma; *rows = the product. */
static int ld_shape(ld_cur *c, uint64_t *rows)
{
  uint64_t prod = 1;
  if (!ld_eat(c, '('))
    return -1;
  for (;;) {
    if (ld_eat(c, ')'))
      break;
    ld_ws(c);
    if (c->p >= c->end || !isdigit((unsigned char)*c->p))
      return -1;
    uint64_t d = 0;
    while (c->p < c->end && isdigit((unsigned char)*c->p)) {
      if (d > (UINT64_MAX - 9) / 10)
        return -2;
      d = d * 10 + (uint64_t)(*c->p++ - '0');
    }
    /* numpy may write 10L in old files */
    if (c->p < c->end && *c->p == 'L')
      c->p++;
    if (d != 0 && prod > UINT64_MAX / d)
      return -2;
    prod *= d;
    if (!ld_eat(c, ',')) {
      if (!ld_eat(c, ')'))
        return -1;
      break;
    }
  }
  *rows = prod;
  return 0;
}

/* buf holds the first k bytes of a .npy image of len bytes in all: the
 * header must lie within them (k is at most WV_FORMAT_HEAD, so a header
 * longer than that is refused on every path alike). */
static int ld_npy_head(const char *name, const unsigned char *buf, size_t k,
                       uint64_t len, char *descr, size_t *data_off,
                       uint64_t *rows, wave_error *err)
{
  if (k < 10 || memcmp(buf, LD_NPY_MAGIC, 6) != 0)
    return wv_seterr(err, WAVE_EARG, "%s: not a .npy file (no \\x93NUMPY "
                     "magic)", name);
  unsigned major = buf[6], minor = buf[7];
  size_t hlen, off;
  if (major == 1) {
    hlen = (size_t)buf[8] | (size_t)buf[9] << 8;
    off = 10;
  } else if (major == 2 || major == 3) {
    if (k < 12)
      return wv_seterr(err, WAVE_EARG, "%s: truncated .npy header", name);
    hlen = (size_t)buf[8] | (size_t)buf[9] << 8 | (size_t)buf[10] << 16 |
           (size_t)buf[11] << 24;
    off = 12;
  } else {
    return wv_seterr(err, WAVE_EARG, "%s: unsupported .npy version %u.%u",
                     name, major, minor);
  }
  if (hlen > len - off)
    return wv_seterr(err, WAVE_EARG, "%s: truncated .npy header (%zu bytes "
                     "announced, %llu present)", name, hlen,
                     (unsigned long long)(len - off));
  if (hlen > k - off)
    return wv_seterr(err, WAVE_EARG, "%s: .npy header of %zu bytes is longer "
                     "than wavectl reads (%d bytes)", name, hlen,
                     WV_FORMAT_HEAD);

  ld_cur c = {(const char *)buf + off, (const char *)buf + off + hlen};
  char key[32];
  descr[0] = '\0';
  int have_descr = 0, have_order = 0, have_shape = 0, fortran = 0;
  uint64_t n = 0;
  if (!ld_eat(&c, '{'))
    goto bad;
  while (!ld_eat(&c, '}')) {
    if (ld_string(&c, key, sizeof key) != 0 || !ld_eat(&c, ':'))
      goto bad;
    if (strcmp(key, "descr") == 0) {
      if (ld_string(&c, descr, LD_DESCR) != 0)
        return wv_seterr(err, WAVE_EDTYPE, "%s: .npy dtype is not a simple "
                         "type (structured arrays are not supported)", name);
      have_descr = 1;
    } else if (strcmp(key, "fortran_order") == 0) {
      if (ld_word(&c, "True"))
        fortran = 1;
      else if (!ld_word(&c, "False"))
        goto bad;
      have_order = 1;
    } else if (strcmp(key, "shape") == 0) {
      int rv = ld_shape(&c, &n);
      if (rv == -2)
        return wv_seterr(err, WAVE_EARG, "%s: .npy shape overflows", name);
      if (rv != 0)
        goto bad;
      have_shape = 1;
    } else {
      return wv_seterr(err, WAVE_EARG, "%s: unexpected key '%s' in the .npy "
                       "header", name, key);
    }
    if (!ld_eat(&c, ',')) {
      if (!ld_eat(&c, '}'))
        goto bad;
      break;
    }
  }
  ld_ws(&c);
  if (c.p != c.end)
    goto bad;
  if (!have_descr || !have_order || !have_shape)
    return wv_seterr(err, WAVE_EARG, "%s: .npy header lacks %s", name,
                     !have_descr ? "'descr'" : !have_order ? "'fortran_order'"
                                                            : "'shape'");
  /* A 1-D array reads the same in either order; more dimensions would be
   * flattened in the wrong order. */
  if (fortran)
    return wv_seterr(err, WAVE_EARG, "%s: Fortran-ordered .npy arrays are "
                     "not supported (save with C order)", name);
  *data_off = off + hlen;
  *rows = n;
  return 0;
bad:
  return wv_seterr(err, WAVE_EARG, "%s: malformed .npy header near '%.20s'",
                   name, c.p < c.end ? c.p : "<end>");
}

/* The header, then its descr against dtype (WV_DTYPE_MASK: '<u4', or
 * '|b1' with *row 1), then the length against the shape. */
static int ld_npy(const char *name, const unsigned char *buf, size_t k,
                  uint64_t len, wave_dtype dtype, size_t *data_off,
                  uint64_t *rows, unsigned *row, wave_error *err)
{
  char descr[LD_DESCR];
  size_t off;
  uint64_t n;
  int rv = ld_npy_head(name, buf, k, len, descr, &off, &n, err);
  if (rv != 0)
    return rv;
  int mask = dtype == WV_DTYPE_MASK;
  wave_dtype want = mask ? WAVE_U32 : dtype;
  unsigned sz = wv_dtype_size(want);
  if (mask && strcmp(descr, "|b1") == 0)
    sz = 1;  /* NumPy's bool mask: one byte a row, widened by the caller */
  else if (strcmp(descr, wv_npy_descr(want)) != 0 && mask)
    return wv_seterr(err, WAVE_EDTYPE, "%s: .npy dtype '%s' is not a mask's "
                     "(expected '|b1', NumPy's bool, or '<u4')", name, descr);
  else if (strcmp(descr, wv_npy_descr(want)) != 0)
    return wv_seterr(err, WAVE_EDTYPE, "%s: .npy dtype '%s' does not match "
                     "%s (expected '%s')", name, descr, wave_dtype_name(want),
                     wv_npy_descr(want));
  if (n > (UINT64_MAX / sz) || n * sz != len - off)
    return wv_seterr(err, WAVE_ELENGTH, "%s: .npy shape holds %llu rows "
                     "(%llu bytes) but %llu data bytes follow the header",
                     name, (unsigned long long)n,
                     (unsigned long long)(n <= UINT64_MAX / sz ? n * sz : 0),
                     (unsigned long long)(len - off));
  *data_off = off;
  *rows = n;
  *row = sz;
  return 0;
}

int wv_npy_parse(const char *name, const unsigned char *buf, size_t len,
                 wave_dtype dtype, size_t *data_off, uint64_t *rows,
                 wave_error *err)
{
  unsigned row;
  return ld_npy(name, buf, len < WV_FORMAT_HEAD ? len : WV_FORMAT_HEAD, len,
                dtype, data_off, rows, &row, err);
}

int wv_npy_dtype(const char *name, const void *head, size_t k, uint64_t size,
                 wave_dtype *out, wave_error *err)
{
  char descr[LD_DESCR];
  size_t off;
  uint64_t n;
  int rv = ld_npy_head(name, head, k, size, descr, &off, &n, err);
  if (rv != 0)
    return rv;
  for (wave_dtype d = WAVE_U32; d <= WAVE_F64; d++)
    if (strcmp(descr, wv_npy_descr(d)) == 0) {
      *out = d;
      return 0;
    }
  return wv_seterr(err, WAVE_EDTYPE, "%s: .npy dtype '%s' is not one wavedd "
                   "reduces ('<u4', '<i4', '<f4', '<u8', '<i8', '<f8')",
                   name, descr);
}

void wv_mask_widen(unsigned char *dst, const unsigned char *src, size_t n)
{
  for (size_t i = 0; i < n; i++)
    ld_put(dst + 4 * i, src[i] != 0, 4);
}

/* ---- text ---------------------------------------------------------------- */

static int ld_sep(char ch)
{
  return ch == ',' || isspace((unsigned char)ch);
}

/* Integer token [s, e): optional sign, decimal or 0x-hex, exact to 64
 * bits; -2 when the dtype cannot hold it (the magnitude is checked before
 * every step, so nothing wraps on the way). */
static int ld_int(const char *s, const char *e, wave_dtype dtype, uint64_t *out)
{
  int neg = 0;
  if (s < e && (*s == '+' || *s == '-'))
    neg = *s++ == '-';
  unsigned base = 10;
  if (e - s > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    base = 16;
    s += 2;
  }
  if (s == e)
    return -1;
  int sign = dtype == WAVE_S32 || dtype == WAVE_S64;
  uint64_t umax = wv_dtype_size(dtype) == 8 ? UINT64_MAX : 0xffffffffull;
  /* the largest magnitude the dtype holds with this sign */
  uint64_t lim = !sign ? (neg ? 0 : umax) : (umax >> 1) + (neg ? 1 : 0);
  uint64_t v = 0;
  int big = 0;
  for (; s < e; s++) {
    unsigned d;
    if (*s >= '0' && *s <= '9')
      d = (unsigned)(*s - '0');
    else if (base == 16 && isxdigit((unsigned char)*s))
      d = (unsigned)(tolower((unsigned char)*s) - 'a' + 10);
    else
      return -1;
    if (v > (UINT64_MAX - d) / base)
      big = 1;  /* past 2^64: read on (a bad digit is still "not a"), -2 */
    else
      v = v * base + d;
  }
  if (big || v > lim)
    return -2;
  *out = neg ? (0 - v) & umax : v;
  return 0;
}

/* Float token [s, e): strtof, or strtod for float64; -2 for a finite
 * number beyond the dtype's range (not one that rounds to 0). */
static int ld_float(const char *s, const char *e, wave_dtype dtype,
                    uint64_t *out)
{
  char *end;
  errno = 0;
  if (dtype == WAVE_F64) {
    double d = strtod(s, &end);
    if (end != e || end == s)
      return -1;
    if (errno == ERANGE && isinf(d))
      return -2;
    memcpy(out, &d, 8);
    return 0;
  }
  float f = strtof(s, &end);
  if (end != e || end == s)
    return -1;
  if (errno == ERANGE && isinf(f))
    return -2;
  uint32_t b;
  memcpy(&b, &f, 4);
  *out = b;
  return 0;
}

/* buf holds len bytes and a NUL after them. */
static int ld_text(const char *name, const char *buf, size_t len,
                   wave_dtype dtype, wv_chunk_buf *out, wave_error *err)
{
  size_t cap = 0, n = 0;
  unsigned char *rows = NULL;
  unsigned line = 1, sz = wv_dtype_size(dtype);
  const char *p = buf, *end = buf + len;
  while (p < end) {
    if (*p == '\n') {
      line++;
      p++;
      continue;
    }
    if (ld_sep(*p)) {
      p++;
      continue;
    }
    if (*p == '#') {
      while (p < end && *p != '\n')
        p++;
      continue;
    }
    const char *t = p;
    while (p < end && !ld_sep(*p) && *p != '#')
      p++;
    uint64_t v;
    int rv = dtype == WAVE_F32 || dtype == WAVE_F64
                 ? ld_float(t, p, dtype, &v)
                 : ld_int(t, p, dtype, &v);
    if (rv != 0) {
      free(rows);
      int w = (int)(p - t > 40 ? 40 : p - t);
      return wv_seterr(err, WAVE_EARG, "%s:%u: '%.*s' is %s %s", name, line,
                       w, t, rv == -2 ? "out of range for" : "not a",
                       wave_dtype_name(dtype));
    }
    if (n == cap) {
      cap = cap ? cap * 2 : 1024;
      unsigned char *nr = realloc(rows, cap * sz);
      if (nr == NULL) {
        free(rows);
        return wv_seterr(err, WAVE_ENOMEM, "%s: %zu rows", name, n);
      }
      rows = nr;
    }
    ld_put(rows + n * sz, v, sz);
    n++;
  }
  out->mem = rows;
  out->data = rows;
  out->bytes = n * sz;
  return 0;
}

/* ---- the one format decision ------------------------------------------- */

/* --format auto: text that --format text would read (digits, signs,
 * points, separators, a newline) is far likelier than raw rows whose every
 * byte happens to be one of those, so it is refused rather than read as
 * rows (a raw file of such bytes still loads with --format raw).  So is
 * printable text with digits and a newline that holds some other word (a
 * CSV's header line, a label): the refusal names its first such line.
 * Only the head is looked at, so that a region path decides the same as
 * the message path without reading the whole file first.  Returns -1 for
 * no text, 0 for numbers only, else the first line with another word. */
static long ld_looks_like_text(const unsigned char *head, size_t k,
                               uint64_t size, unsigned row, size_t *at)
{
  int digit = 0, newline = 0;
  long line = 1, other = 0;
  for (size_t i = 0; i < k; i++) {
    unsigned char ch = head[i];
    if (ch >= '0' && ch <= '9') {
      digit = 1;
    } else if (ch == '\n') {
      newline = 1;
      line++;
    } else if (ch == 0 || !strchr(" \t\r,;+-.eExXabcdefABCDEFinfINFnaNA#",
                                  ch)) {
      if ((ch < 0x20 && ch != '\t' && ch != '\r') || ch > 0x7e)
        return -1;
      if (other == 0) {
        other = line;
        *at = i;
      }
    }
  }
  if (!digit)
    return -1;
  if (other == 0)
    return newline || size < row || size % row != 0 ? 0 : -1;
  return newline ? other : -1;
}

int wv_format_decide(const char *name, const void *head_, size_t k,
                     uint64_t size, wv_format fmt, wave_dtype dtype,
                     wv_layout *out, wave_error *err)
{
  const unsigned char *head = head_;
  memset(out, 0, sizeof *out);
  int mask = dtype == WV_DTYPE_MASK;
  if (mask)
    dtype = WAVE_U32;  /* uint32 rows, or a bool .npy (ld_npy) */
  if (dtype < WAVE_U32 || dtype > WAVE_F64)
    return wv_seterr(err, WAVE_EDTYPE, "%s: no dtype to read it as", name);
  unsigned sz = wv_dtype_size(dtype);
  out->row = sz;
  /* the caller hands the whole head, never a shorter piece of it: the
   * answer must not depend on how much some path happened to read */
  if (k > size || (k < WV_FORMAT_HEAD && k != size))
    return wv_seterr(err, WAVE_EARG, "%s: changed while read (%zu bytes of "
                     "%llu)", name, k, (unsigned long long)size);
  if (fmt == WV_FMT_AUTO) {
    size_t at = 0;
    long line;
    if (k >= 6 && memcmp(head, LD_NPY_MAGIC, 6) == 0) {
      fmt = WV_FMT_NPY;
    } else if ((line = ld_looks_like_text(head, k, size, sz, &at)) == 0) {
      return wv_seterr(err, WAVE_EARG, "%s: looks like text (numbers), not "
                       "raw rows; say --format text, or --format raw to read "
                       "its bytes as rows", name);
    } else if (line > 0) {
      size_t s = at;  /* the line, from its start, up to 40 bytes */
      while (s > 0 && head[s - 1] != '\n')
        s--;
      int w = 0;
      while (w < 40 && s + (size_t)w < k && head[s + (size_t)w] != '\n' &&
             head[s + (size_t)w] != '\r')
        w++;
      return wv_seterr(err, WAVE_EARG, "%s:%ld: looks like text ('%.*s' is "
                       "not numbers), not raw rows; --format text reads "
                       "numbers only: remove that line (a header?) and say "
                       "--format text", name, line, w,
                       (const char *)head + s);
    } else {
      fmt = WV_FMT_RAW;
    }
  }
  out->format = fmt;
  switch (fmt) {
  case WV_FMT_TEXT:
    out->bytes = size;  /* the caller parses it all (wv_load_buffer) */
    return 0;
  case WV_FMT_NPY: {
    uint64_t rows = 0;
    int rv = ld_npy(name, head, k, size, mask ? WV_DTYPE_MASK : dtype,
                    &out->offset, &rows, &out->row, err);
    if (rv == 0)
      out->bytes = rows * out->row;
    return rv;
  }
  default:
    if (size % sz != 0)
      return wv_seterr(err, WAVE_ELENGTH, "%s: %llu bytes is not a whole "
                       "number of %u-byte %s rows", name,
                       (unsigned long long)size, sz, wave_dtype_name(dtype));
    out->format = WV_FMT_RAW;
    out->bytes = size;
    return 0;
  }
}

/* ---- entry points -------------------------------------------------------- */

int wv_inputs_dtype(const char *const *paths, size_t n, wv_format fmt,
                    wave_dtype *out, wave_error *err)
{
  unsigned char head[WV_FORMAT_HEAD];
  const char *from = NULL;
  *out = WAVE_DTYPE_NONE;
  for (size_t i = 0; i < n && (fmt == WV_FMT_AUTO || fmt == WV_FMT_NPY);
       i++) {
    struct stat st;
    /* "-": standard input, when it is a file (`< x.npy`); pread leaves
     * its offset where the loader will start reading */
    int stdin_ = strcmp(paths[i], "-") == 0;
    int fd = stdin_ ? 0 : open(paths[i], O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
      return wv_seterr(err, WAVE_EIO, "%s: %s", paths[i], strerror(errno));
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
        (stdin_ && lseek(fd, 0, SEEK_CUR) != 0)) {
      if (!stdin_)
        close(fd);
      continue;
    }
    size_t k = (uint64_t)st.st_size < sizeof head ? (size_t)st.st_size
                                                  : sizeof head;
    ssize_t got = pread(fd, head, k, 0);
    if (!stdin_)
      close(fd);
    if (got != (ssize_t)k)
      return wv_seterr(err, WAVE_EIO, "%s: %s", paths[i],
                       got < 0 ? strerror(errno) : "changed while read");
    if (k < 6 || memcmp(head, LD_NPY_MAGIC, 6) != 0)
      continue;
    wave_dtype d;
    int rv = wv_npy_dtype(paths[i], head, k, (uint64_t)st.st_size, &d, err);
    if (rv != 0)
      return rv;
    if (*out != WAVE_DTYPE_NONE && d != *out)
      return wv_seterr(err, WAVE_EDTYPE, "%s holds %s, %s holds %s: one job "
                       "reduces one dtype", from, wave_dtype_name(*out),
                       paths[i], wave_dtype_name(d));
    if (*out == WAVE_DTYPE_NONE)
      from = paths[i];
    *out = d;
  }
  if (*out == WAVE_DTYPE_NONE)
    return wv_seterr(err, WAVE_EARG, "submit reduce: missing --dtype (only a "
                     ".npy input, whose header names it, needs none)");
  return 0;
}


int wv_load_buffer(const char *name, char *buf, size_t len, wv_format fmt,
                   wave_dtype dtype, wv_chunk_buf *out, wave_error *err)
{
  memset(out, 0, sizeof *out);
  buf[len] = '\0';
  wv_layout lay;
  int rv = wv_format_decide(name, buf,
                            len < WV_FORMAT_HEAD ? len : WV_FORMAT_HEAD, len,
                            fmt, dtype, &lay, err);
  if (rv == 0 && lay.format == WV_FMT_TEXT) {
    rv = ld_text(name, buf, len,
                 dtype == WV_DTYPE_MASK ? WAVE_U32 : dtype, out, err);
  } else if (rv == 0 && lay.row == 1) {  /* a bool mask: uint32 rows */
    size_t n = (size_t)lay.bytes;
    unsigned char *w = malloc(n ? n * 4 : 1);
    if (w == NULL) {
      rv = wv_seterr(err, WAVE_ENOMEM, "%s: %zu mask rows", name, n);
    } else {
      wv_mask_widen(w, (unsigned char *)buf + lay.offset, n);
      out->mem = w;
      out->data = w;
      out->bytes = n * 4;
    }
  } else if (rv == 0) {
    out->mem = buf;
    out->data = buf + lay.offset;
    out->bytes = (size_t)lay.bytes;
    return 0;
  }
  free(buf);
  return rv;
}

int wv_load_file(const char *path, wv_format fmt, wave_dtype dtype,
                 wv_chunk_buf *out, wave_error *err)
{
  int stdin_ = strcmp(path, "-") == 0;
  int fd = stdin_ ? 0 : open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return wv_seterr(err, WAVE_EIO, "%s: %s", path, strerror(errno));
  /* Read to the end rather than trusting st_size: pipes and /dev/stdin. */
  size_t cap = 1 << 16, len = 0;
  char *buf = malloc(cap + 1);
  if (buf == NULL)
    goto nomem;
  for (;;) {
    if (len == cap) {
      char *nb = cap > SIZE_MAX / 4 ? NULL : realloc(buf, cap * 2 + 1);
      if (nb == NULL)
        goto nomem;
      buf = nb;
      cap *= 2;
    }
    ssize_t r = read(fd, buf + len, cap - len);
    if (r == 0)
      break;
    if (r < 0) {
      if (errno == EINTR)
        continue;
      int e = errno;
      free(buf);
      if (!stdin_)
        close(fd);
      return wv_seterr(err, WAVE_EIO, "%s: %s", path, strerror(e));
    }
    len += (size_t)r;
  }
  if (!stdin_)
    close(fd);
  return wv_load_buffer(stdin_ ? "<stdin>" : path, buf, len, fmt, dtype, out,
                        err);
nomem:
  free(buf);
  if (!stdin_)
    close(fd);
  return wv_seterr(err, WAVE_ENOMEM, "%s: out of memory reading it", path);
}
