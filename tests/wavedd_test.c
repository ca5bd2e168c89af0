/* wavedd_test.c - wavedd-test: wavedd with the fake backend (workers/fake/)
 * registered, for the tests that need a device to fault (test_daemon,
 * test_jobs, test_fleet_daemons, tests/slurm/fleet_test.sh).
 *
 * It registers the fake backend and calls wd_main (daemon/wdmain.c), the
 * whole of wavedd's run; everything else is the product's code (wvdcore),
 * so a test against wavedd-test tests wavedd.
 */
#include "daemon/wdmain.h"
#include "workers/fake/fake.h"
#include "workers/worker.h"

int main(int argc, char **argv)
{
  if (wv_backend_add(&wv_fake_backend) != 0)
    return 1;
  return wd_main(argc, argv);
}
