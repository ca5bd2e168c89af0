/* bench_gpu_pin.cu - how fast can the first use of a 1 GiB shared-memory
 * region reach the GPU (issue 10)?  Every figure against a pinned
 * host->device copy of the same bytes in the same run.
 *
 *   wvbench-gpu-pin [LOG2_BYTES [fresh]]  (default 30: 1 GiB; fresh: only
 *                                          the fresh-mapping parts)
 *
 * On a memfd mapping filled beforehand (as a client's region is):
 *   - pin: cudaHostRegister of the whole mapping, and of disjoint pieces of
 *     it from T threads at once (does pinning scale across threads?);
 *   - span: after a pinning in pieces, one cudaMemcpy across all of them
 *     (does a copy cross registrations, and at what rate?);
 *   - staged: T threads memcpy the mapping into a ring of pinned staging
 *     buffers, each sent by cudaMemcpyAsync as soon as it is full;
 *   - pipelined: T threads pin 64 MiB pieces in order while the main thread
 *     sends each piece as soon as it is pinned (first use that leaves the
 *     region pinned for the next).
 * Then as the daemon meets a region: a fresh read-only mapping of the same
 * memfd (its pages not yet in this mapping's page table), staged by memcpy
 * from it, by memcpy after MADV_POPULATE_READ of each thread's share, and
 * by pread(2) from the descriptor (no page table at all); and pinned whole.
 * The same once more on a memfd of 2 MiB huge pages (MFD_HUGETLB), when
 * the host has them reserved (vm.nr_hugepages): 512 page-table entries a
 * GiB instead of 262,144.
 * Times are host wall clock around the whole operation, best of 3 where
 * repeated; the bytes are checked on the device (a checksum) once.
 */
#include <cuda_runtime.h>

#include <pthread.h>
#include <atomic>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define CK(x)                                                            \
  do {                                                                   \
    cudaError_t e_ = (x);                                                \
    if (e_ != cudaSuccess) {                                             \
      fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x,          \
              cudaGetErrorString(e_));                                   \
      exit(1);                                                           \
    }                                                                    \
  } while (0)

static double gpn_s(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static size_t g_bytes;
static double g_base;  /* pinned copy, seconds */

static void row(const char *what, double s)
{
  printf("| %s | %.2f ms | %.1f GB/s | %.2fx |\n", what, s * 1e3,
         (double)g_bytes / s / 1e9, g_base / s);
  fflush(stdout);
}

static int g_fd = -1;  /* the region's memfd, kept for the fresh mappings */

static uint8_t *region(void)
{
  int fd = memfd_create("pin", 0);
  if (fd < 0 || ftruncate(fd, (off_t)g_bytes) != 0) {
    perror("memfd");
    exit(1);
  }
  void *p = mmap(NULL, g_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  g_fd = fd;
  if (p == MAP_FAILED) {
    perror("mmap");
    exit(1);
  }
  for (size_t i = 0; i < g_bytes; i += 4096)
    ((uint8_t *)p)[i] = (uint8_t)(i >> 12);
  return (uint8_t *)p;
}

/* ---- pinning in pieces from threads -------------------------------------- */

typedef struct pin_job {
  uint8_t *base;
  size_t piece, n;
  std::atomic<size_t> next;  /* next piece to pin */
  std::atomic<int> *ready;   /* per piece: pinned */
  int fail;
} pin_job;

static void *pin_main(void *arg)
{
  pin_job *j = (pin_job *)arg;
  CK(cudaSetDevice(0));
  for (;;) {
    size_t i = j->next.fetch_add(1);
    if (i >= j->n)
      break;
    size_t len = i + 1 < j->n ? j->piece : g_bytes - i * j->piece;
    if (cudaHostRegister(j->base + i * j->piece, len,
                         cudaHostRegisterPortable |
                             cudaHostRegisterReadOnly) != cudaSuccess)
      j->fail = 1;
    j->ready[i].store(1);
  }
  return NULL;
}

static void unpin(uint8_t *base, size_t piece, size_t n)
{
  for (size_t i = 0; i < n; i++)
    CK(cudaHostUnregister(base + i * piece));
}

/* Pin in n pieces with t threads; with dev != NULL, send each piece as it
 * is pinned (in order). */
static double pin_pieces(uint8_t *base, size_t n, int t, uint8_t *dev,
                         cudaStream_t st)
{
  pin_job j;
  j.base = base;
  j.piece = g_bytes / n;
  j.n = n;
  j.next.store(0);
  j.ready = new std::atomic<int>[n];
  for (size_t i = 0; i < n; i++)
    j.ready[i].store(0);
  j.fail = 0;
  pthread_t th[64];
  double t0 = gpn_s();
  for (int i = 0; i < t; i++)
    pthread_create(&th[i], NULL, pin_main, &j);
  if (dev != NULL) {
    for (size_t i = 0; i < n; i++) {
      while (!j.ready[i].load())
        ;
      size_t len = i + 1 < n ? j.piece : g_bytes - i * j.piece;
      CK(cudaMemcpyAsync(dev + i * j.piece, base + i * j.piece, len,
                         cudaMemcpyHostToDevice, st));
    }
  }
  for (int i = 0; i < t; i++)
    pthread_join(th[i], NULL);
  if (dev != NULL)
    CK(cudaStreamSynchronize(st));
  double s = gpn_s() - t0;
  delete[] j.ready;
  if (j.fail) {
    fprintf(stderr, "cudaHostRegister of a piece failed\n");
    exit(1);
  }
  return s;
}

/* ---- staged copy ----------------------------------------------------------- */

#define ST_SLOTS 4
enum { ST_MEMCPY, ST_POPULATE, ST_PREAD };
typedef struct gps_job {
  const uint8_t *src;
  int how;  /* ST_* */
  uint8_t *stage[ST_SLOTS];
  size_t slot_bytes, off;
  int t;
  pthread_barrier_t go, done;
  int stop;
} gps_job;

typedef struct gps_arg { gps_job *j; int id; } gps_arg;

static void *gps_main(void *arg)
{
  gps_arg *a = (gps_arg *)arg;
  gps_job *j = a->j;
  for (;;) {
    pthread_barrier_wait(&j->go);
    if (j->stop)
      return NULL;
    size_t len = g_bytes - j->off < j->slot_bytes ? g_bytes - j->off
                                                   : j->slot_bytes;
    size_t part = (len / (size_t)j->t + 63) & ~(size_t)63;
    size_t a0 = (size_t)a->id * part;
    if (a0 < len) {
      uint8_t *dst = j->stage[(j->off / j->slot_bytes) % ST_SLOTS] + a0;
      size_t n = a0 + part > len ? len - a0 : part;
      if (j->how == ST_PREAD) {
        for (size_t got = 0; got < n;) {
          ssize_t r = pread(g_fd, dst + got, n - got,
                            (off_t)(j->off + a0 + got));
          if (r <= 0) {
            perror("pread");
            exit(1);
          }
          got += (size_t)r;
        }
      } else {
        if (j->how == ST_POPULATE) {
          uintptr_t p0 = (uintptr_t)(j->src + j->off + a0) & ~(uintptr_t)4095;
          uintptr_t p1 = (uintptr_t)(j->src + j->off + a0 + n);
          (void)madvise((void *)p0, p1 - p0, MADV_POPULATE_READ);
        }
        memcpy(dst, j->src + j->off + a0, n);
      }
    }
    pthread_barrier_wait(&j->done);
  }
}

static double staged(const uint8_t *src, uint8_t *dev, int t,
                     size_t slot_bytes, cudaStream_t st, int how = ST_MEMCPY)
{
  gps_job j;
  memset(&j, 0, sizeof j);
  j.src = src;
  j.how = how;
  j.slot_bytes = slot_bytes;
  j.t = t;
  cudaEvent_t ev[ST_SLOTS];
  for (int i = 0; i < ST_SLOTS; i++) {
    CK(cudaHostAlloc((void **)&j.stage[i], slot_bytes, cudaHostAllocDefault));
    memset(j.stage[i], 0, slot_bytes);
    CK(cudaEventCreateWithFlags(&ev[i], cudaEventDisableTiming));
    CK(cudaEventRecord(ev[i], st));
  }
  pthread_barrier_init(&j.go, NULL, (unsigned)t + 1);
  pthread_barrier_init(&j.done, NULL, (unsigned)t + 1);
  pthread_t th[64];
  gps_arg args[64];
  for (int i = 0; i < t; i++) {
    args[i] = (gps_arg){&j, i};
    pthread_create(&th[i], NULL, gps_main, &args[i]);
  }
  CK(cudaStreamSynchronize(st));
  double t0 = gpn_s();
  for (j.off = 0; j.off < g_bytes; j.off += slot_bytes) {
    int k = (int)((j.off / slot_bytes) % ST_SLOTS);
    CK(cudaEventSynchronize(ev[k]));  /* its last copy is done */
    pthread_barrier_wait(&j.go);
    pthread_barrier_wait(&j.done);
    size_t len = g_bytes - j.off < slot_bytes ? g_bytes - j.off : slot_bytes;
    CK(cudaMemcpyAsync(dev + j.off, j.stage[k], len, cudaMemcpyHostToDevice,
                       st));
    CK(cudaEventRecord(ev[k], st));
  }
  CK(cudaStreamSynchronize(st));
  double s = gpn_s() - t0;
  j.stop = 1;
  pthread_barrier_wait(&j.go);
  for (int i = 0; i < t; i++)
    pthread_join(th[i], NULL);
  for (int i = 0; i < ST_SLOTS; i++) {
    CK(cudaFreeHost(j.stage[i]));
    CK(cudaEventDestroy(ev[i]));
  }
  pthread_barrier_destroy(&j.go);
  pthread_barrier_destroy(&j.done);
  return s;
}

__global__ void k_sum(const uint32_t *p, size_t n, unsigned long long *out)
{
  unsigned long long s = 0;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x)
    s += p[i];
  atomicAdd(out, s);
}

static unsigned long long gpd_sum(const uint8_t *dev)
{
  unsigned long long *d, h;
  CK(cudaMalloc(&d, sizeof *d));
  CK(cudaMemset(d, 0, sizeof *d));
  k_sum<<<1024, 256>>>((const uint32_t *)dev, g_bytes / 4, d);
  CK(cudaMemcpy(&h, d, sizeof h, cudaMemcpyDeviceToHost));
  CK(cudaFree(d));
  return h;
}

/* The daemon's view: its own read-only mapping of the client's memfd,
 * made just before the first use, so none of its pages is in the page
 * table yet. */
static uint8_t *fresh(void)
{
  void *p = mmap(NULL, g_bytes, PROT_READ, MAP_SHARED, g_fd, 0);
  if (p == MAP_FAILED) {
    perror("mmap");
    exit(1);
  }
  return (uint8_t *)p;
}

/* cudaHostRegister of a fresh mapping of g_fd, whole: best of 3; with
 * copy, also the best copy from it once pinned. */
static double pin_fresh(uint8_t *dev, double *copy)
{
  double best = 1e9;
  if (copy != NULL)
    *copy = 1e9;
  for (int rep = 0; rep < 3; rep++) {
    uint8_t *m = fresh();
    double t0 = gpn_s();
    CK(cudaHostRegister(m, g_bytes,
                        cudaHostRegisterPortable | cudaHostRegisterReadOnly));
    double s = gpn_s() - t0;
    best = s < best ? s : best;
    if (copy != NULL) {
      t0 = gpn_s();
      CK(cudaMemcpy(dev, m, g_bytes, cudaMemcpyHostToDevice));
      s = gpn_s() - t0;
      *copy = s < *copy ? s : *copy;
    }
    CK(cudaHostUnregister(m));
    munmap(m, g_bytes);
  }
  return best;
}

static void fresh_mapping(uint8_t *dev, unsigned long long want,
                          cudaStream_t st)
{
  char thp[128] = "?";
  FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/shmem_enabled", "r");
  if (f != NULL) {
    if (fgets(thp, sizeof thp, f) == NULL)
      snprintf(thp, sizeof thp, "?");
    thp[strcspn(thp, "\n")] = '\0';
    fclose(f);
  }
  printf("| first use from a fresh mapping (shmem THP: %s) | | | |\n", thp);
  static const char *names[] = {"memcpy", "MADV_POPULATE_READ + memcpy",
                                "pread"};
  for (int how = ST_MEMCPY; how <= ST_PREAD; how++)
    for (int t = 8; t <= 12; t += 4) {
      double best = 1e9;
      for (int rep = 0; rep < 3; rep++) {
        uint8_t *m = fresh();
        CK(cudaMemset(dev, 0, g_bytes));
        double s = staged(m, dev, t, (size_t)32 << 20, st, how);
        best = s < best ? s : best;
        munmap(m, g_bytes);
      }
      char what[112];
      snprintf(what, sizeof what, "fresh, staged by %s: %d threads",
               names[how], t);
      row(what, best);
      if (t == 12)
        printf("| ... device checksum | %s | | |\n",
               gpd_sum(dev) == want ? "ok" : "WRONG");
    }
  row("fresh, cudaHostRegister whole", pin_fresh(dev, NULL));
}

/* Why did staging a partly pinned region run 4-5x slower in the daemon?
 * One 32 MiB piece pinned, then the whole staged by 12 threads: the piece
 * in the mapping staged from, in another mapping of the same memfd, or
 * staged by pread. */
static void partly_pinned(uint8_t *dev, cudaStream_t st)
{
  static const char *what[] = {
      "fresh, one piece pinned in it, staged by memcpy",
      "fresh, one piece pinned in another mapping, staged by memcpy",
      "fresh, one piece pinned in it, staged by pread"};
  for (int k = 0; k < 3; k++) {
    double best = 1e9;
    for (int rep = 0; rep < 3; rep++) {
      uint8_t *m = fresh(), *o = k == 1 ? fresh() : m;
      CK(cudaHostRegister(o, (size_t)32 << 20,
                          cudaHostRegisterPortable | cudaHostRegisterReadOnly));
      double s = staged(m, dev, 12, (size_t)32 << 20, st,
                        k == 2 ? ST_PREAD : ST_MEMCPY);
      best = s < best ? s : best;
      CK(cudaHostUnregister(o));
      if (o != m)
        munmap(o, g_bytes);
      munmap(m, g_bytes);
    }
    row(what[k], best);
  }
}

static void hugetlb(uint8_t *dev, unsigned long long want, cudaStream_t st)
{
  int fd = memfd_create("huge", MFD_HUGETLB | MFD_ALLOW_SEALING);
  void *w = MAP_FAILED;
  if (fd >= 0 && ftruncate(fd, (off_t)g_bytes) == 0)
    w = mmap(NULL, g_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (w == MAP_FAILED) {
    printf("| huge pages: none (%s) | | | |\n", strerror(errno));
    if (fd >= 0)
      close(fd);
    return;
  }
  for (size_t i = 0; i < g_bytes; i += 4096)
    ((uint8_t *)w)[i] = (uint8_t)(i >> 12);
  int keep = g_fd;
  g_fd = fd;
  printf("| first use from a fresh mapping of 2 MiB huge pages | | | |\n");
  for (int how = ST_MEMCPY; how <= ST_PREAD; how += ST_PREAD - ST_MEMCPY) {
    double best = 1e9;
    for (int rep = 0; rep < 3; rep++) {
      uint8_t *m = fresh();
      CK(cudaMemset(dev, 0, g_bytes));
      double s = staged(m, dev, 12, (size_t)32 << 20, st, how);
      best = s < best ? s : best;
      munmap(m, g_bytes);
    }
    row(how == ST_PREAD ? "huge, staged by pread: 12 threads"
                        : "huge, staged by memcpy: 12 threads", best);
    printf("| ... device checksum | %s | | |\n",
           gpd_sum(dev) == want ? "ok" : "WRONG");
  }
  double copy;
  row("huge, cudaHostRegister whole (fresh mapping)", pin_fresh(dev, &copy));
  row("huge, copy once pinned", copy);
  g_fd = keep;
  munmap(w, g_bytes);
  close(fd);
}

int main(int argc, char **argv)
{
  int lg = argc > 1 ? atoi(argv[1]) : 30;
  g_bytes = (size_t)1 << lg;
  CK(cudaSetDevice(0));
  cudaStream_t st;
  CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  uint8_t *dev, *hp;
  CK(cudaMalloc(&dev, g_bytes));
  CK(cudaHostAlloc((void **)&hp, g_bytes, cudaHostAllocDefault));
  memset(hp, 1, g_bytes);
  g_base = 1e9;
  for (int i = 0; i < 5; i++) {
    double t0 = gpn_s();
    CK(cudaMemcpy(dev, hp, g_bytes, cudaMemcpyHostToDevice));
    double s = gpn_s() - t0;
    g_base = s < g_base ? s : g_base;
  }
  CK(cudaFreeHost(hp));
  printf("wvbench-gpu-pin: %zu bytes, %ld host cores\n", g_bytes,
         sysconf(_SC_NPROCESSORS_ONLN));
  printf("| what | time | rate | vs pinned copy |\n|---|---:|---:|---:|\n");
  row("pinned copy (baseline, best of 5)", g_base);
  uint8_t *r = region();
  unsigned long long want = 0;
  for (size_t i = 0; i < g_bytes; i += 4096)
    want += (uint8_t)(i >> 12);
  if (argc > 2 && strcmp(argv[2], "fresh") == 0) {  /* the daemon's view */
    fresh_mapping(dev, want, st);
    partly_pinned(dev, st);
    hugetlb(dev, want, st);
    munmap(r, g_bytes);
    CK(cudaFree(dev));
    return 0;
  }
  double t0 = gpn_s();
  CK(cudaMemcpy(dev, r, g_bytes, cudaMemcpyHostToDevice));
  row("pageable copy from the region (driver)", gpn_s() - t0);
  t0 = gpn_s();
  CK(cudaHostRegister(r, g_bytes,
                      cudaHostRegisterPortable | cudaHostRegisterReadOnly));
  row("cudaHostRegister, whole, 1 thread", gpn_s() - t0);
  t0 = gpn_s();
  CK(cudaMemcpy(dev, r, g_bytes, cudaMemcpyHostToDevice));
  row("copy from the region, pinned", gpn_s() - t0);
  t0 = gpn_s();
  CK(cudaHostUnregister(r));
  row("cudaHostUnregister, whole", gpn_s() - t0);
  static const int ts[] = {1, 2, 4, 8, 16};
  for (size_t k = 0; k < sizeof ts / sizeof ts[0]; k++) {
    size_t n = (size_t)ts[k] * 4;  /* pieces: 4 per thread */
    double best = 1e9;
    for (int rep = 0; rep < 2; rep++) {
      double s = pin_pieces(r, n, ts[k], NULL, st);
      best = s < best ? s : best;
      if (k == 3 && rep == 1) {  /* 32 pieces pinned: one copy over all */
        cudaError_t e = cudaSuccess;
        t0 = gpn_s();
        e = cudaMemcpy(dev, r, g_bytes, cudaMemcpyHostToDevice);
        double cs = gpn_s() - t0;
        if (e != cudaSuccess) {
          printf("| one copy across 32 registrations | %s | | |\n",
                 cudaGetErrorString(e));
          (void)cudaGetLastError();
        } else {
          row("one copy across 32 registrations", cs);
          printf("| ... device checksum | %s | | |\n",
                 gpd_sum(dev) == want ? "ok" : "WRONG");
        }
      }
      unpin(r, g_bytes / n, n);
    }
    char what[96];
    snprintf(what, sizeof what, "cudaHostRegister, %zu pieces, %d threads",
             n, ts[k]);
    row(what, best);
  }
  for (int t = 2; t <= 12; t += (t < 8 ? 2 : 4)) {
    double best = 1e9;
    for (int rep = 0; rep < 3; rep++) {
      CK(cudaMemset(dev, 0, g_bytes));
      double s = staged(r, dev, t, (size_t)32 << 20, st);
      best = s < best ? s : best;
    }
    char what[96];
    snprintf(what, sizeof what, "staged: %d memcpy threads, 4 x 32 MiB "
             "pinned ring", t);
    row(what, best);
    if (t == 8)
      printf("| ... device checksum | %s | | |\n",
             gpd_sum(dev) == want ? "ok" : "WRONG");
  }
  size_t pieces = g_bytes / ((size_t)64 << 20);
  pieces = pieces ? pieces : 1;
  for (int t = 4; t <= 16; t *= 2) {
    double best = 1e9;
    for (int rep = 0; rep < 3; rep++) {
      CK(cudaMemset(dev, 0, g_bytes));
      double s = pin_pieces(r, pieces, t, dev, st);
      best = s < best ? s : best;
      if (rep == 2 && t == 8)
        printf("| ... device checksum | %s | | |\n",
               gpd_sum(dev) == want ? "ok" : "WRONG");
      unpin(r, g_bytes / pieces, pieces);
    }
    char what[96];
    snprintf(what, sizeof what, "pipelined: pin 64 MiB pieces with %d "
             "threads, send each when pinned", t);
    row(what, best);
  }
  fresh_mapping(dev, want, st);
  partly_pinned(dev, st);
  hugetlb(dev, want, st);
  munmap(r, g_bytes);
  CK(cudaFree(dev));
  return 0;
}
