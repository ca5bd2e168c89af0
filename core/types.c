/* types.c - names of dtypes and ops; which op is defined for which dtype
 * is the op table's (core/optable.c). */
#include <string.h>

#include "core/optable.h"
#include "wave/error.h"
#include "wave/types.h"

static const struct { const char *name; wave_dtype d; } dtype_names[] = {
  {"uint32", WAVE_U32}, {"u32", WAVE_U32},
  {"sint32", WAVE_S32}, {"s32", WAVE_S32}, {"int32", WAVE_S32}, {"i32", WAVE_S32},
  {"float32", WAVE_F32}, {"f32", WAVE_F32}, {"float", WAVE_F32},
  {"uint64", WAVE_U64}, {"u64", WAVE_U64},
  {"sint64", WAVE_S64}, {"s64", WAVE_S64}, {"int64", WAVE_S64}, {"i64", WAVE_S64},
  {"float64", WAVE_F64}, {"f64", WAVE_F64}, {"double", WAVE_F64},
};

static const char *const op_names[] = {
  [WAVE_SUM] = "sum", [WAVE_MIN] = "min", [WAVE_MAX] = "max",
  [WAVE_EXTENT] = "extent", [WAVE_AND] = "and", [WAVE_OR] = "or",
  [WAVE_XOR] = "xor", [WAVE_ARGMIN] = "argmin", [WAVE_ARGMAX] = "argmax",
  [WAVE_FSUM] = "fsum",
};

wave_dtype wave_dtype_parse(const char *s)
{
  if (s == NULL)
    return WAVE_DTYPE_NONE;
  for (size_t i = 0; i < sizeof dtype_names / sizeof dtype_names[0]; i++)
    if (strcmp(s, dtype_names[i].name) == 0)
      return dtype_names[i].d;
  return WAVE_DTYPE_NONE;
}

const char *wave_dtype_name(wave_dtype d)
{
  switch (d) {
  case WAVE_U32: return "uint32";
  case WAVE_S32: return "sint32";
  case WAVE_F32: return "float32";
  case WAVE_U64: return "uint64";
  case WAVE_S64: return "sint64";
  case WAVE_F64: return "float64";
  default: return "?";
  }
}

wave_op wave_op_parse(const char *s)
{
  if (s == NULL)
    return WAVE_OP_NONE;
  for (int op = WAVE_SUM; op <= WAVE_FSUM; op++)
    if (strcmp(s, op_names[op]) == 0)
      return (wave_op)op;
  return WAVE_OP_NONE;
}

const char *wave_op_name(wave_op op)
{
  return (op >= WAVE_SUM && op <= WAVE_FSUM) ? op_names[op] : "?";
}

/* The op table says which op is defined for which dtype (core/optable.c:
 * the bitwise ops are for the integer dtypes only). */
int wave_op_check(wave_dtype d, wave_op op)
{
  return wv_op_plan_of(d, op)->rc;
}

unsigned wave_op_values(wave_op op) { return op == WAVE_EXTENT ? 2 : 1; }
