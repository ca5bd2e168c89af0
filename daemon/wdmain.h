/* wdmain.h - wavedd's whole run as a call (wdmain.c): daemon/main.c is
 * this and nothing else; wavedd-test (tests/wavedd_test.c) registers the
 * fake backend first.  Returns the exit status (wavedd(8)). */
#ifndef WD_WDMAIN_H
#define WD_WDMAIN_H

int wd_main(int argc, char **argv);

#endif
