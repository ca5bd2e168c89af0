/* fuzz_pack.c - libFuzzer target: the pack loader (workers/hash/pack.c)
 * on arbitrary bytes.  Every input must load or fail with WAVE_EPACKFILE
 * and a message that starts with the file's name; a pack that loads must
 * keep the documented shape (64 instructions, registers 4..32, a dataset
 * within WV_DATASET_MAX), and for a closed-form pack its first outputs are
 * computed with the 32-lane reference, so the loader's checks are what
 * keeps the hash in bounds.  Seeds: fuzz/corpus/pack/. */
#include <string.h>

#include "fuzz/fuzz_file.h"
#include "workers/hash/hash.h"
#include "workers/hash/pack.h"
#include "workers/hash/ref.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  const char *path = wf_as_file(data, size);
  wv_pack *p = NULL;
  wave_error err = {0};
  if (wv_pack_load_file(path, &p, &err) != 0) {
    if (p != NULL || (err.code != WAVE_EPACKFILE && err.code != WAVE_ENOMEM &&
                      err.code != WAVE_EIO) ||
        strncmp(err.message, path, strlen(path)) != 0)
      abort();
    return 0;
  }
  if (p->registers < WV_REGS_MIN || p->registers > WV_REGS_MAX ||
      p->rounds > WV_ROUNDS_MAX ||
      wv_pack_dataset_bytes(p) > WV_DATASET_MAX)
    abort();
  if (p->closed) {  /* no dataset to build: run one unit of lanes */
    wv_hash_mem m = {.pack = p};
    uint64_t out[WV_LANES];
    wv_ref_unit(&m, 0, out);
  }
  wv_pack_free(p);
  return 0;
}
