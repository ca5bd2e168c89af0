/* fuzz_config.c - libFuzzer target: the config loader (daemon/config.c)
 * on arbitrary bytes.  Every input must load or fail with a
 * "file:line:column: key: what" (or file-prefixed) WAVE_ECONFIG message;
 * a crash, a leak, a sanitizer report or another error code is a finding.
 * Seeds: fuzz/corpus/config/.  Run: fuzz/README.md. */
#include <string.h>

#include "daemon/config.h"
#include "fuzz/fuzz_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  const char *path = wf_as_file(data, size);
  wd_config *c = NULL;
  wave_error err = {0};
  if (wd_config_load(path, &c, &err) == 0) {
    if (c == NULL || c->n_devices == 0 || c->n_listen == 0)
      abort();  /* a config handed out is whole */
    for (size_t i = 0; i < c->n_devices; i++)
      if (memchr(c->devices[i].name, '\0', sizeof c->devices[i].name) == NULL)
        abort();
    wd_config_free(c);
    return 0;
  }
  if (c != NULL || (err.code != WAVE_ECONFIG && err.code != WAVE_ENOMEM) ||
      strncmp(err.message, path, strlen(path)) != 0)
    abort();
  return 0;
}
