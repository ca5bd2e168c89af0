/* main.c - wavedd: its whole run is wd_main (wdmain.c, in wvdcore), so that
 * wavedd-test runs the same start-up with a test backend added. */
#include "daemon/wdmain.h"

int main(int argc, char **argv) { return wd_main(argc, argv); }
