/* wavedd_test.c - wavedd-test: wavedd with the fake backend (workers/fake/)
 * registered, for the tests that need a device to fault (test_daemon,
 * test_jobs, test_fleet_daemons, tests/slurm/fleet_test.sh).
 *
 * daemon/main.c is included with main renamed wd_main; this main
 * registers the fake backend and hands over.  Everything else is the
 * product's code (wvdcore), so a test against wavedd-test tests wavedd.
 */
#include "workers/fake/fake.h"

#define main wd_main
int wd_main(int argc, char **argv);
#include "daemon/main.c"
#undef main

int main(int argc, char **argv)
{
  if (wv_backend_add(&wv_fake_backend) != 0)
    return 1;
  return wd_main(argc, argv);
}
