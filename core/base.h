/* core/base.h - internal helpers shared by every program (wvcore). */
#ifndef WV_BASE_H
#define WV_BASE_H

#include "wave/error.h"
#include "wave/types.h"

/* Fill *e (may be NULL) with code and a printf-style message (NULL fmt:
 * the table's message); returns code, so: return wv_seterr(err, ...). */
int wv_seterr(wave_error *e, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Size in bytes of one row of dtype: 8 for the 64-bit dtypes, else 4. */
static inline unsigned wv_dtype_size(wave_dtype d)
{
  return (d == WAVE_U64 || d == WAVE_S64 || d == WAVE_F64) ? 8 : 4;
}

#endif
