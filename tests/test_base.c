/* test_base.c - the error table and the dtype/op vocabulary (wvcore).
 *
 * The error numbers travel on the wire and must never change, so the test
 * pins them against a literal list here (written from the wire contract, not
 * generated from the header).  The dtype and op numbers are checked against
 * the enums protoc-c generates from proto/wave.proto, the other source of
 * truth they must agree with.  Which op is defined for which dtype is a
 * literal table transcribed from docs/reduction.md.  The thread helpers
 * (core/thread.h) are checked for the mask and name a started thread gets
 * and for leaving the caller's mask as it was.  The intrusive queue
 * (core/queue.h) is checked for order after pushes at both ends, removal
 * from the middle, pop and moving a whole list.
 */
#include <check.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "core/base.h"
#include "core/queue.h"
#include "core/thread.h"
#include "proto/wave.pb-c.h"
#include "wave/error.h"
#include "wave/types.h"

static const struct { int num; const char *name; } tb_errors[] = {
  {0, "OK"},           {1, "BADREQUEST"}, {2, "VERSION"},   {3, "UNSUPPORTED"},
  {4, "DTYPE"},        {5, "OP"},         {6, "OPDTYPE"},   {7, "LENGTH"},
  {8, "MASKLEN"},      {9, "TOOBIG"},     {10, "JOBSIZE"},  {11, "BUSY"},
  {12, "NODEV"},       {13, "DEVFAULT"},  {14, "DEVICE"},   {15, "PACK"},
  {16, "PACKFILE"},    {17, "SELFCHECK"}, {18, "RANGE"},    {19, "NOJOB"},
  {20, "CANCELLED"},   {21, "MISMATCH"},  {22, "CONFIG"},   {23, "NOMEM"},
  {24, "IO"},          {25, "TIMEDOUT"},  {26, "SHUTDOWN"}, {27, "INTERNAL"},
  {28, "ARG"},         {29, "REGION"},    {30, "INCOMPLETE"}, {31, "AUTH"},
  {32, "DEADLINE"},    {33, "PERM"},
};
#define TB_N_ERRORS (sizeof tb_errors / sizeof tb_errors[0])

START_TEST(error_numbers_are_stable)
{
  for (size_t i = 0; i < TB_N_ERRORS; i++)
    ck_assert_str_eq(wave_errname(tb_errors[i].num), tb_errors[i].name);
  /* Spot checks on the enum itself. */
  ck_assert_int_eq(WAVE_EOK, 0);
  ck_assert_int_eq(WAVE_EMASKLEN, 8);
  ck_assert_int_eq(WAVE_EOPDTYPE, 6);
  ck_assert_int_eq(WAVE_EDEVICE, 14);
  ck_assert_int_eq(WAVE_EARG, 28);
  /* A new error must be added to this test (and documented) on purpose. */
  ck_assert_int_eq(WAVE_ERR_COUNT_, (int)TB_N_ERRORS);
}
END_TEST

START_TEST(error_table_generated_consistently)
{
  /* Every row of the X-macro: enum value, name and message agree. */
  int rows = 0;
#define TB_ROW(name, num, msg)                                                 \
  ck_assert_int_eq(WAVE_E##name, num);                                         \
  ck_assert_str_eq(wave_errname(num), #name);                                  \
  ck_assert_str_eq(wave_strerror(num), msg);                                   \
  rows++;
  WAVE_ERRNO_MAP(TB_ROW)
#undef TB_ROW
  ck_assert_int_eq(rows, (int)TB_N_ERRORS);
}
END_TEST

START_TEST(error_messages_distinct_and_present)
{
  for (size_t i = 0; i < TB_N_ERRORS; i++) {
    const char *mi = wave_strerror(tb_errors[i].num);
    ck_assert_ptr_nonnull(mi);
    ck_assert_uint_gt(strlen(mi), 3);
    ck_assert_str_ne(mi, "unknown error");
    for (size_t j = i + 1; j < TB_N_ERRORS; j++)
      ck_assert_str_ne(mi, wave_strerror(tb_errors[j].num));
  }
}
END_TEST

START_TEST(error_unknown_numbers)
{
  const int bad[] = {-1, 64, 65, 100, 1 << 20};  /* 32 DEADLINE, 33 PERM taken */
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    ck_assert_str_eq(wave_strerror(bad[i]), "unknown error");
    ck_assert_str_eq(wave_errname(bad[i]), "UNKNOWN");
  }
}
END_TEST

START_TEST(seterr_fills_and_returns)
{
  wave_error e;
  memset(&e, 0x55, sizeof e);
  ck_assert_int_eq(wv_seterr(NULL, WAVE_EMASKLEN, "x %d", 1), WAVE_EMASKLEN);
  ck_assert_int_eq(wv_seterr(&e, WAVE_EBUSY, NULL), WAVE_EBUSY);
  ck_assert_int_eq(e.code, WAVE_EBUSY);
  ck_assert_str_eq(e.message, wave_strerror(WAVE_EBUSY));
  ck_assert_int_eq(wv_seterr(&e, WAVE_EMASKLEN, "mask has %d rows, input has "
                             "%d", 1000, 1024), WAVE_EMASKLEN);
  ck_assert_int_eq(e.code, WAVE_EMASKLEN);
  ck_assert_str_eq(e.message, "mask has 1000 rows, input has 1024");
}
END_TEST

START_TEST(seterr_truncates_long_messages)
{
  char big[600];
  memset(big, 'a', sizeof big - 1);
  big[sizeof big - 1] = '\0';
  wave_error e;
  wv_seterr(&e, WAVE_EIO, "%s", big);
  ck_assert_uint_eq(strlen(e.message), sizeof e.message - 1);
  ck_assert_int_eq(e.message[0], 'a');
}
END_TEST

START_TEST(dtype_numbers_match_wire)
{
  ck_assert_int_eq(WAVE_DTYPE_NONE, WAVE__V1__DTYPE__DTYPE_UNSPECIFIED);
  ck_assert_int_eq(WAVE_U32, WAVE__V1__DTYPE__U32);
  ck_assert_int_eq(WAVE_S32, WAVE__V1__DTYPE__S32);
  ck_assert_int_eq(WAVE_F32, WAVE__V1__DTYPE__F32);
  ck_assert_int_eq(WAVE_OP_NONE, WAVE__V1__OP__OP_UNSPECIFIED);
  ck_assert_int_eq(WAVE_SUM, WAVE__V1__OP__SUM);
  ck_assert_int_eq(WAVE_MIN, WAVE__V1__OP__MIN);
  ck_assert_int_eq(WAVE_MAX, WAVE__V1__OP__MAX);
  ck_assert_int_eq(WAVE_EXTENT, WAVE__V1__OP__EXTENT);
  ck_assert_int_eq(WAVE_AND, WAVE__V1__OP__AND);
  ck_assert_int_eq(WAVE_OR, WAVE__V1__OP__OR);
  ck_assert_int_eq(WAVE_XOR, WAVE__V1__OP__XOR);
  ck_assert_int_eq(WAVE_ARGMIN, WAVE__V1__OP__ARGMIN);
  ck_assert_int_eq(WAVE_ARGMAX, WAVE__V1__OP__ARGMAX);
  ck_assert_int_eq(WAVE_FSUM, WAVE__V1__OP__FSUM);
}
END_TEST

START_TEST(dtype_parse_and_name)
{
  static const struct { const char *s; wave_dtype d; } t[] = {
    {"u32", WAVE_U32},   {"uint32", WAVE_U32},  {"s32", WAVE_S32},
    {"sint32", WAVE_S32}, {"int32", WAVE_S32},  {"f32", WAVE_F32},
    {"float32", WAVE_F32}, {"i32", WAVE_S32}, {"float", WAVE_F32},
    {"uint64", WAVE_U64}, {"u64", WAVE_U64}, {"sint64", WAVE_S64},
    {"int64", WAVE_S64}, {"i64", WAVE_S64}, {"s64", WAVE_S64},
    {"float64", WAVE_F64}, {"f64", WAVE_F64}, {"double", WAVE_F64},
    {"", WAVE_DTYPE_NONE}, {"u128", WAVE_DTYPE_NONE}, {"U64", WAVE_DTYPE_NONE},
    {"float16", WAVE_DTYPE_NONE}, {"uint32 ", WAVE_DTYPE_NONE},
    {"int", WAVE_DTYPE_NONE},
  };
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
    ck_assert_msg(wave_dtype_parse(t[i].s) == t[i].d, "parse(\"%s\")",
                  t[i].s);
  ck_assert_int_eq(wave_dtype_parse(NULL), WAVE_DTYPE_NONE);
  ck_assert_str_eq(wave_dtype_name(WAVE_U32), "uint32");
  ck_assert_str_eq(wave_dtype_name(WAVE_S32), "sint32");
  ck_assert_str_eq(wave_dtype_name(WAVE_F32), "float32");
  ck_assert_str_eq(wave_dtype_name(WAVE_U64), "uint64");
  ck_assert_str_eq(wave_dtype_name(WAVE_S64), "sint64");
  ck_assert_str_eq(wave_dtype_name(WAVE_F64), "float64");
  ck_assert_str_eq(wave_dtype_name(WAVE_DTYPE_NONE), "?");
  ck_assert_str_eq(wave_dtype_name((wave_dtype)7), "?");
  ck_assert_str_eq(wave_dtype_name((wave_dtype)77), "?");
  for (int d = WAVE_U32; d <= WAVE_F64; d++)
    ck_assert_int_eq(wave_dtype_parse(wave_dtype_name((wave_dtype)d)), d);
  /* the row size: 8 bytes for the 64-bit dtypes (docs/reduction.md) */
  for (int d = WAVE_U32; d <= WAVE_F64; d++)
    ck_assert_uint_eq(wv_dtype_size((wave_dtype)d), d >= WAVE_U64 ? 8 : 4);
}
END_TEST

START_TEST(op_parse_and_name)
{
  static const char *const names[] = {"sum", "min", "max", "extent",
                                      "and", "or", "xor", "argmin",
                                      "argmax"};
  for (int i = 0; i < 9; i++) {
    ck_assert_int_eq(wave_op_parse(names[i]), WAVE_SUM + i);
    ck_assert_str_eq(wave_op_name((wave_op)(WAVE_SUM + i)), names[i]);
  }
  ck_assert_int_eq(wave_op_parse(NULL), WAVE_OP_NONE);
  ck_assert_int_eq(wave_op_parse(""), WAVE_OP_NONE);
  ck_assert_int_eq(wave_op_parse("mul"), WAVE_OP_NONE);
  ck_assert_int_eq(wave_op_parse("SUM"), WAVE_OP_NONE);
  ck_assert_int_eq(wave_op_parse("arg"), WAVE_OP_NONE);
  ck_assert_int_eq(wave_op_parse("argmaxx"), WAVE_OP_NONE);
  ck_assert_int_eq(WAVE_ARGMIN, 8);  /* the wire's next free numbers */
  ck_assert_int_eq(WAVE_ARGMAX, 9);
  ck_assert_str_eq(wave_op_name(WAVE_OP_NONE), "?");
  ck_assert_int_eq(WAVE_FSUM, 10);
  ck_assert_int_eq(wave_op_parse("fsum"), WAVE_FSUM);
  ck_assert_str_eq(wave_op_name(WAVE_FSUM), "fsum");
  ck_assert_str_eq(wave_op_name((wave_op)11), "?");
  ck_assert_str_eq(wave_op_name((wave_op)-1), "?");
}
END_TEST

START_TEST(op_check_matrix)
{
  /* docs/reduction.md: every dtype has sum/min/max/extent; only the
   * integer dtypes have and/or/xor; every dtype has argmin/argmax; only
   * the float dtypes have fsum.  Rows: dtype 0..7, columns: op 0..11
   * (4 = DTYPE, 5 = OP, 6 = OPDTYPE). */
  static const int want[8][12] = {
    /* none */ {4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4},
    /* u32  */ {5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 6, 5},
    /* s32  */ {5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 6, 5},
    /* f32  */ {5, 0, 0, 0, 0, 6, 6, 6, 0, 0, 0, 5},
    /* u64  */ {5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 6, 5},
    /* s64  */ {5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 6, 5},
    /* f64  */ {5, 0, 0, 0, 0, 6, 6, 6, 0, 0, 0, 5},
    /* 7    */ {4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4},
  };
  for (int d = 0; d < 8; d++)
    for (int op = 0; op < 12; op++)
      ck_assert_msg(wave_op_check((wave_dtype)d, (wave_op)op) == want[d][op],
                    "dtype %d op %d: got %d want %d", d, op,
                    wave_op_check((wave_dtype)d, (wave_op)op), want[d][op]);
  ck_assert_int_eq(wave_op_check((wave_dtype)-1, WAVE_SUM), WAVE_EDTYPE);
  ck_assert_int_eq(wave_op_check(WAVE_U32, (wave_op)-3), WAVE_EOP);
}
END_TEST

START_TEST(op_values)
{
  for (int op = WAVE_SUM; op <= WAVE_FSUM; op++)
    ck_assert_uint_eq(wave_op_values((wave_op)op), op == WAVE_EXTENT ? 2 : 1);
}
END_TEST

/* What a started thread saw of its mask (SIGTERM, SIGHUP, SIGUSR1
 * blocked?); it stays until released, so that its name can be read. */
typedef struct tb_seen {
  int term, hup, usr1;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int go;
} tb_seen;

static void *tb_look(void *arg)
{
  tb_seen *s = arg;
  sigset_t now;
  pthread_sigmask(SIG_SETMASK, NULL, &now);
  s->term = sigismember(&now, SIGTERM);
  s->hup = sigismember(&now, SIGHUP);
  s->usr1 = sigismember(&now, SIGUSR1);
  pthread_mutex_lock(&s->mu);
  while (!s->go)
    pthread_cond_wait(&s->cv, &s->mu);
  pthread_mutex_unlock(&s->mu);
  return NULL;
}

/* The caller's mask holds none of the three; the thread has all blocked,
 * its name cut to the kernel's 15 bytes; the caller's mask is unchanged. */
START_TEST(thread_start_blocks_and_names)
{
  sigset_t none, before, after;
  sigemptyset(&none);
  pthread_sigmask(SIG_SETMASK, &none, &before);
  tb_seen seen = {.mu = PTHREAD_MUTEX_INITIALIZER,
                  .cv = PTHREAD_COND_INITIALIZER};
  pthread_t t;
  ck_assert_int_eq(wv_thread_start(&t, "wv:a-long-thread-name", tb_look,
                                   &seen), 0);
  char name[16];
  ck_assert_int_eq(pthread_getname_np(t, name, sizeof name), 0);
  pthread_mutex_lock(&seen.mu);
  seen.go = 1;
  pthread_cond_signal(&seen.cv);
  pthread_mutex_unlock(&seen.mu);
  pthread_join(t, NULL);
  ck_assert_int_eq(seen.term, 1);
  ck_assert_int_eq(seen.hup, 1);
  ck_assert_int_eq(seen.usr1, 1);
  ck_assert_str_eq(name, "wv:a-long-threa");  /* 15 bytes */
  pthread_sigmask(SIG_SETMASK, NULL, &after);
  ck_assert_int_eq(sigismember(&after, SIGTERM), 0);
  ck_assert_int_eq(sigismember(&after, SIGUSR1), 0);
  pthread_sigmask(SIG_SETMASK, &before, NULL);
}
END_TEST

static int tb_masked_term(void)
{
  sigset_t now;
  pthread_sigmask(SIG_SETMASK, NULL, &now);
  return sigismember(&now, SIGTERM);
}

START_TEST(masked_runs_blocked_then_restores)
{
  sigset_t none, before;
  sigemptyset(&none);
  pthread_sigmask(SIG_SETMASK, &none, &before);
  int inside = -1;
  WV_MASKED(inside = tb_masked_term());
  ck_assert_int_eq(inside, 1);
  ck_assert_int_eq(tb_masked_term(), 0);
  sigset_t old;
  wv_sigmask_block(&old);
  ck_assert_int_eq(tb_masked_term(), 1);
  wv_sigmask_restore(&old);
  ck_assert_int_eq(tb_masked_term(), 0);
  pthread_sigmask(SIG_SETMASK, &before, NULL);
}
END_TEST

typedef struct tb_item {
  int v;
  wv_qnode q;
} tb_item;

/* The values of q in order, as digits ("" when empty). */
static const char *tb_order(const wv_qnode *q)
{
  static char out[16];
  size_t k = 0;
  const wv_qnode *n;
  WV_Q_EACH(n, q)
    if (k < sizeof out - 1)
      out[k++] = (char)('0' + WV_Q_ENTRY(n, tb_item, q)->v);
  out[k] = '\0';
  return out;
}

START_TEST(queue_order_remove_pop_move)
{
  tb_item it[6];
  wv_qnode a, b;
  wv_q_init(&a);
  wv_q_init(&b);
  ck_assert(wv_q_empty(&a));
  ck_assert_ptr_null(wv_q_pop(&a));
  for (int i = 0; i < 6; i++) {
    it[i].v = i;
    wv_q_init(&it[i].q);
    ck_assert(!wv_q_linked(&it[i].q));
  }
  wv_q_push(&a, &it[1].q);
  wv_q_push(&a, &it[2].q);
  wv_q_push_head(&a, &it[0].q);
  wv_q_push(&a, &it[3].q);
  ck_assert_str_eq(tb_order(&a), "0123");
  wv_q_remove(&it[2].q);              /* the middle */
  ck_assert(!wv_q_linked(&it[2].q));
  ck_assert_str_eq(tb_order(&a), "013");
  wv_qnode *n = wv_q_pop(&a);
  ck_assert_ptr_eq(n, &it[0].q);
  ck_assert_str_eq(tb_order(&a), "13");
  wv_q_push(&b, &it[4].q);
  wv_q_move(&a, &b);                  /* a's nodes after b's */
  ck_assert(wv_q_empty(&a));
  ck_assert_str_eq(tb_order(&b), "413");
  wv_q_move(&a, &b);                  /* an empty list moves nothing */
  ck_assert_str_eq(tb_order(&b), "413");
  wv_q_move(&b, &a);
  ck_assert_str_eq(tb_order(&a), "413");
  ck_assert(wv_q_empty(&b));
  wv_qnode *x, *nx;
  WV_Q_EACH_SAFE(x, nx, &a)           /* removing while walking */
    if (WV_Q_ENTRY(x, tb_item, q)->v != 3)
      wv_q_remove(x);
  ck_assert_str_eq(tb_order(&a), "3");
  ck_assert_ptr_eq(a.prev, &it[3].q);
  ck_assert_ptr_eq(it[3].q.next, &a);
}
END_TEST

int main(void)
{
  Suite *s = suite_create("base");
  TCase *tc = tcase_create("errors");
  tcase_add_test(tc, error_numbers_are_stable);
  tcase_add_test(tc, error_table_generated_consistently);
  tcase_add_test(tc, error_messages_distinct_and_present);
  tcase_add_test(tc, error_unknown_numbers);
  tcase_add_test(tc, seterr_fills_and_returns);
  tcase_add_test(tc, seterr_truncates_long_messages);
  suite_add_tcase(s, tc);
  tc = tcase_create("types");
  tcase_add_test(tc, dtype_numbers_match_wire);
  tcase_add_test(tc, dtype_parse_and_name);
  tcase_add_test(tc, op_parse_and_name);
  tcase_add_test(tc, op_check_matrix);
  tcase_add_test(tc, op_values);
  suite_add_tcase(s, tc);
  tc = tcase_create("threads");
  tcase_add_test(tc, thread_start_blocks_and_names);
  tcase_add_test(tc, masked_runs_blocked_then_restores);
  suite_add_tcase(s, tc);
  tc = tcase_create("queue");
  tcase_add_test(tc, queue_order_remove_pop_move);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
