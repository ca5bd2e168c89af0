/* error.c - wave_strerror()/wave_errname() generated from WAVE_ERRNO_MAP,
 * and wv_seterr(), the one way code fills in a wave_error. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "wave/error.h"
#include "core/base.h"

const char *wave_strerror(int err)
{
  switch (err) {
#define WAVE_ERR_MSG_(name, num, msg) case num: return msg;
    WAVE_ERRNO_MAP(WAVE_ERR_MSG_)
#undef WAVE_ERR_MSG_
  }
  return "unknown error";
}

const char *wave_errname(int err)
{
  switch (err) {
#define WAVE_ERR_NAME_(name, num, msg) case num: return #name;
    WAVE_ERRNO_MAP(WAVE_ERR_NAME_)
#undef WAVE_ERR_NAME_
  }
  return "UNKNOWN";
}

int wv_seterr(wave_error *e, int code, const char *fmt, ...)
{
  if (e == NULL)
    return code;
  e->code = code;
  if (fmt == NULL) {
    snprintf(e->message, sizeof e->message, "%s", wave_strerror(code));
  } else {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->message, sizeof e->message, fmt, ap);
    va_end(ap);
  }
  return code;
}
