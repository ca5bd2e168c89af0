/* regionpin.h - pinning a registered region on the devices that can, and
 * unpinning it on the device of one slot (bulk/region.h: slot i is device
 * i of the list).  Loop thread; the items run on the device threads.
 */
#ifndef WD_BULK_REGIONPIN_H
#define WD_BULK_REGIONPIN_H

#include <stddef.h>

#include "daemon/bulk/region.h"
#include "daemon/exec/device.h"

/* Queue a pin item on each device that can pin (it holds a reference to r
 * until done); a device that cannot take it leaves r staged, only slower. */
void wd_regionpin_start(wd_device *const *devs, size_t n_devs, wd_region *r);
/* r, pinned on device slot, is released: that device unpins it, then r is
 * unmapped; a device that cannot take the item leaves the pin to its
 * context's end and r is unmapped now. */
void wd_regionpin_unpin(wd_device *const *devs, size_t n_devs, wd_region *r,
                        unsigned slot);

#endif
