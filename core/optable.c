/* optable.c - the op table (optable.h): one row per dtype and op, written
 * out, so that a reader checks each against docs/reduction.md at a glance
 * and tests/test_optable.c pins it.
 *
 * Columns: path, key kind, halves, fill (bits, dup, ok).  The rest of a
 * row follows from its dtype and op (row bytes, values, the float flags,
 * the identities, the accumulator's combine) and is filled in by the row
 * macros, once.  Float
 * and/or/xor and integer fsum are left zero: rc WAVE_EOPDTYPE, set by
 * wv_op_plan_of.
 */
#include <stddef.h>

#include "core/optable.h"
#include "wave/error.h"

#define OT_F(d) ((d) == WAVE_F32 || (d) == WAVE_F64)
#define OT_W(d) ((d) == WAVE_U64 || (d) == WAVE_S64 || (d) == WAVE_F64)
#define OT_ONES(d) (OT_W(d) ? UINT64_MAX : 0xffffffffu)

/* A defined row. */
#define OT_ROW(d, o, pth, k, h, fb, fdup, fok)                             \
  [d][o] = {                                                               \
    .rc = 0, .dtype = d, .op = o, .row_bytes = OT_W(d) ? 8 : 4,            \
    .path = pth, .keyed = (pth) == WV_PATH_KEYS || (pth) == WV_PATH_ARG,   \
    .key = k, .halves = h, .n_values = (o) == WAVE_EXTENT ? 2 : 1,         \
    .is_float = OT_F(d),                                                   \
    .finite_only = OT_F(d) && ((pth) == WV_PATH_KEYS || (pth) == WV_PATH_ARG), \
    .count_finite = OT_F(d) && (pth) == WV_PATH_ARG,                       \
    .says_finite = OT_F(d) && (pth) == WV_PATH_KEYS,                       \
    .ones = OT_ONES(d), .acc_init = (o) == WAVE_AND ? OT_ONES(d) : 0,      \
    .fill = {fb, fdup, fok},                                               \
    .acc = (o) == WAVE_SUM ? WV_ACC_ADD : (o) == WAVE_AND ? WV_ACC_AND :    \
           (o) == WAVE_OR ? WV_ACC_OR : (o) == WAVE_XOR ? WV_ACC_XOR :      \
           WV_ACC_NONE }

#define LO WV_HALF_LO
#define HI WV_HALF_HI
#define RAW WV_KEY_RAW
#define SGN WV_KEY_SIGNED
#define FLT WV_KEY_FLOAT

/* The rows of an integer dtype d: k its key kind, ones its all-ones. */
#define OT_INT(d, k, ones)                                                 \
  OT_ROW(d, WAVE_SUM,    WV_PATH_ISUM, RAW, 0,       0,    0, 1),          \
  OT_ROW(d, WAVE_MIN,    WV_PATH_KEYS, k,   LO,      0,    1, 1),          \
  OT_ROW(d, WAVE_MAX,    WV_PATH_KEYS, k,   HI,      0,    1, 1),          \
  OT_ROW(d, WAVE_EXTENT, WV_PATH_KEYS, k,   LO | HI, 0,    1, 1),          \
  OT_ROW(d, WAVE_AND,    WV_PATH_BITS, RAW, 0,       ones, 0, 1),          \
  OT_ROW(d, WAVE_OR,     WV_PATH_BITS, RAW, 0,       0,    0, 1),          \
  OT_ROW(d, WAVE_XOR,    WV_PATH_BITS, RAW, 0,       0,    0, 1),          \
  OT_ROW(d, WAVE_ARGMIN, WV_PATH_ARG,  k,   LO,      0,    0, 0),          \
  OT_ROW(d, WAVE_ARGMAX, WV_PATH_ARG,  k,   HI,      0,    0, 0)

/* The rows of a float dtype d: nz its -0.0, nan its canonical NaN. */
#define OT_FLOAT(d, nz, nan)                                               \
  OT_ROW(d, WAVE_SUM,    WV_PATH_FSUM, RAW, 0,       nz,   0, 1),          \
  OT_ROW(d, WAVE_MIN,    WV_PATH_KEYS, FLT, LO,      0,    1, 1),          \
  OT_ROW(d, WAVE_MAX,    WV_PATH_KEYS, FLT, HI,      0,    1, 1),          \
  OT_ROW(d, WAVE_EXTENT, WV_PATH_KEYS, FLT, LO | HI, 0,    1, 1),          \
  OT_ROW(d, WAVE_ARGMIN, WV_PATH_ARG,  FLT, LO,      nan,  0, 1),          \
  OT_ROW(d, WAVE_ARGMAX, WV_PATH_ARG,  FLT, HI,      nan,  0, 1),          \
  OT_ROW(d, WAVE_FSUM,   WV_PATH_XSUM, RAW, 0,       nz,   0, 1)

static const wv_op_plan ot_rows[WAVE_F64 + 1][WAVE_FSUM + 1] = {
  OT_INT(WAVE_U32, RAW, 0xffffffffu),
  OT_INT(WAVE_S32, SGN, 0xffffffffu),
  OT_FLOAT(WAVE_F32, WV_F32_NEG_ZERO, WV_F32_CANON_NAN),
  OT_INT(WAVE_U64, RAW, UINT64_MAX),
  OT_INT(WAVE_S64, SGN, UINT64_MAX),
  OT_FLOAT(WAVE_F64, WV_F64_NEG_ZERO, WV_F64_CANON_NAN),
};

/* The undefined rows: unknown dtype, unknown op, the bitwise ops on a
 * float dtype and fsum on an integer one (one per dtype and op, so that
 * each names its pair). */
static const wv_op_plan ot_bad_dtype = {.rc = WAVE_EDTYPE};
static const wv_op_plan ot_bad_op = {.rc = WAVE_EOP};
static const wv_op_plan ot_opdtype[2][3] = {
  {{.rc = WAVE_EOPDTYPE, .dtype = WAVE_F32, .op = WAVE_AND},
   {.rc = WAVE_EOPDTYPE, .dtype = WAVE_F32, .op = WAVE_OR},
   {.rc = WAVE_EOPDTYPE, .dtype = WAVE_F32, .op = WAVE_XOR}},
  {{.rc = WAVE_EOPDTYPE, .dtype = WAVE_F64, .op = WAVE_AND},
   {.rc = WAVE_EOPDTYPE, .dtype = WAVE_F64, .op = WAVE_OR},
   {.rc = WAVE_EOPDTYPE, .dtype = WAVE_F64, .op = WAVE_XOR}},
};
static const wv_op_plan ot_fsum_int[WAVE_F64 + 1] = {
  [WAVE_U32] = {.rc = WAVE_EOPDTYPE, .dtype = WAVE_U32, .op = WAVE_FSUM},
  [WAVE_S32] = {.rc = WAVE_EOPDTYPE, .dtype = WAVE_S32, .op = WAVE_FSUM},
  [WAVE_U64] = {.rc = WAVE_EOPDTYPE, .dtype = WAVE_U64, .op = WAVE_FSUM},
  [WAVE_S64] = {.rc = WAVE_EOPDTYPE, .dtype = WAVE_S64, .op = WAVE_FSUM},
};

const wv_op_plan *wv_op_plan_of(wave_dtype dt, wave_op op)
{
  if ((int)dt < WAVE_U32 || (int)dt > WAVE_F64)
    return &ot_bad_dtype;
  if ((int)op < WAVE_SUM || (int)op > WAVE_FSUM)
    return &ot_bad_op;
  const wv_op_plan *p = &ot_rows[dt][op];
  if (p->path == WV_PATH_NONE && op == WAVE_FSUM)  /* an integer dtype */
    return &ot_fsum_int[dt];
  if (p->path == WV_PATH_NONE)  /* the bitwise ops on a float dtype */
    return &ot_opdtype[dt == WAVE_F64][op - WAVE_AND];
  return p;
}
