/* wave/export.h - symbol visibility for the public API (everything else in
 * libwaveclient is built with -fvisibility=hidden). */
#ifndef WAVE_EXPORT_H
#define WAVE_EXPORT_H
#if defined(__GNUC__)
#define WAVE_API __attribute__((visibility("default")))
#else
#define WAVE_API
#endif
#endif
