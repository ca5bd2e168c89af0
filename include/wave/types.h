/* wave/types.h - the job vocabulary shared by the daemon, workers and clients.
 * The numbers equal the wire enums of proto/wave.proto (wave.v1.DType, Op). */
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
} wave_op;

/* "u32" / "s32" / "f32" (also accepts "uint32", "sint32", "int32",
 * "float32"); returns WAVE_DTYPE_NONE for anything else. */
WAVE_API wave_dtype wave_dtype_parse(const char *s);
WAVE_API const char *wave_dtype_name(wave_dtype d); /* "uint32" ... or "?" */
WAVE_API wave_op wave_op_parse(const char *s);      /* "sum" ... "xor" */
WAVE_API const char *wave_op_name(wave_op op);
/* 0 when op is defined for dtype; WAVE_EDTYPE, WAVE_EOP or WAVE_EOPDTYPE. */
WAVE_API int wave_op_check(wave_dtype d, wave_op op);
/* 2 for extent, 1 otherwise. */
WAVE_API unsigned wave_op_values(wave_op op);

#ifdef __cplusplus
}
#endif
#endif
