/* proto/frame.h - framed requests: a small protobuf header and raw payload
 * bytes in one nng message (docs/protocol.md "Framed requests").
 *
 * protobuf-c copies every `bytes` field when it unpacks, so a reduction's
 * rows sent as ReduceRequest.input exist twice in the daemon for a while.
 * A framed request instead carries them after the header, untouched:
 *
 *   "WVF1" | u32 LE header length H | H bytes: wave.v1.Request |
 *   zero padding to a multiple of 8 | payload
 *
 * The padding puts the payload 8-aligned from the body's start (nng's
 * message bodies are), so its rows are read in place as aligned uint32
 * (wv_span's contract) without a copy.
 * and the header's Extents with region 0 name byte ranges of the payload.
 * The first byte 'W' (0x57) is field 10 with wire type 7, which no valid
 * protobuf message starts with, so a daemon tells a frame from a plain
 * Request by its first four bytes.  Header only: wvcore, the daemon and
 * libwaveclient share it.
 */
#ifndef WV_FRAME_H
#define WV_FRAME_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define WV_FRAME_MAGIC "WVF1"
#define WV_FRAME_PREFIX 8 /* magic + header length */

/* Where the payload starts for a header of hlen bytes (padded to 8). */
static inline size_t wv_frame_payload_at(size_t hlen)
{
  return WV_FRAME_PREFIX + ((hlen + 7) & ~(size_t)7);
}

/* Write the 8-byte prefix for a header of hlen bytes. */
static inline void wv_frame_prefix(uint8_t *p, uint32_t hlen)
{
  memcpy(p, WV_FRAME_MAGIC, 4);
  p[4] = (uint8_t)hlen;
  p[5] = (uint8_t)(hlen >> 8);
  p[6] = (uint8_t)(hlen >> 16);
  p[7] = (uint8_t)(hlen >> 24);
}

/* 0: not a frame (the body is a plain Request); 1: a frame, header and
 * payload set; -1: the magic is there but the header (with its padding)
 * runs past the body. */
static inline int wv_frame_split(const uint8_t *body, size_t len,
                                 const uint8_t **hdr, size_t *hlen,
                                 const uint8_t **payload, size_t *plen)
{
  if (len < 4 || memcmp(body, WV_FRAME_MAGIC, 4) != 0)
    return 0;
  if (len < WV_FRAME_PREFIX)
    return -1;
  size_t h = (size_t)body[4] | (size_t)body[5] << 8 | (size_t)body[6] << 16 |
             (size_t)body[7] << 24;
  if (h > len - WV_FRAME_PREFIX || wv_frame_payload_at(h) > len)
    return -1;
  *hdr = body + WV_FRAME_PREFIX;
  *hlen = h;
  *payload = body + wv_frame_payload_at(h);
  *plen = len - wv_frame_payload_at(h);
  return 1;
}

#endif
