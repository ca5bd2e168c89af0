/* wave/types.h - the job vocabulary shared by the daemon, workers and clients.
 * The numbers equal the wire enums of proto/wave.proto (wave.v1.DType, Op):
 * the 64-bit dtypes and argmin/argmax (issue 23) take the next free numbers,
 * which the wire will give the same values when it carries them (not yet:
 * docs/reduction.md, "Status"). */
#ifndef WAVE_TYPES_H
#define WAVE_TYPES_H

#include <stdint.h>
#include "wave/export.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum wave_dtype {
  WAVE_DTYPE_NONE = 0,
  WAVE_U32 = 1,
  WAVE_S32 = 2,
  WAVE_F32 = 3,
  WAVE_U64 = 4,    /* rows of 8 bytes */
  WAVE_S64 = 5,
  WAVE_F64 = 6,
} wave_dtype;

typedef enum wave_op {
  WAVE_OP_NONE = 0,
  WAVE_SUM = 1,
  WAVE_MIN = 2,
  WAVE_MAX = 3,
  WAVE_EXTENT = 4, /* two values: [min, max] */
  WAVE_AND = 5,    /* integer dtypes only */
  WAVE_OR = 6,
  WAVE_XOR = 7,
  WAVE_ARGMIN = 8, /* one value and its index (every dtype) */
  WAVE_ARGMAX = 9,
  WAVE_FSUM = 10,  /* float32, float64: the exact sum, correctly rounded */
} wave_op;

/* "u32" / "s32" / "f32" / "u64" / "s64" / "f64" (also accepts "uint32",
 * "sint32", "int32", "i32", "float32", "float", "uint64", "sint64",
 * "int64", "i64", "float64", "double"); WAVE_DTYPE_NONE for anything else. */
WAVE_API wave_dtype wave_dtype_parse(const char *s);
WAVE_API const char *wave_dtype_name(wave_dtype d); /* "uint32" ... or "?" */
WAVE_API wave_op wave_op_parse(const char *s);  /* "sum" ... "argmax", "fsum" */
WAVE_API const char *wave_op_name(wave_op op);
/* 0 when op is defined for dtype; WAVE_EDTYPE, WAVE_EOP or WAVE_EOPDTYPE. */
WAVE_API int wave_op_check(wave_dtype d, wave_op op);
/* 2 for extent, 1 otherwise (argmin/argmax: one value, and an index). */
WAVE_API unsigned wave_op_values(wave_op op);

#ifdef __cplusplus
}
#endif
#endif
