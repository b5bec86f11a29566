/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Maia accelerator driver: the scale-out fabric (maia/hw/fabric.h): ports,
 * their counters in sysfs, link uevents, and fabric windows.
 */
#ifndef __MAIA_FABRIC_H__
#define __MAIA_FABRIC_H__

#include <linux/list.h>
#include <linux/types.h>

struct drm_device;
struct drm_file;
struct maia_context;
struct maia_device;
struct maia_file;

/*
 * A window of a file, in maia_file.fabric_windows under its context's lock.
 * @resets is the device's reset count when it was opened: a reset closes
 * every window on the device, so a window from before one is already gone.
 */
struct maia_fabric_window {
	struct list_head link;
	u64 va;
	u64 size;
	u32 key;
	u32 resets;
};

/* Probe: ports, sysfs directories (none without a fabric). */
int maia_fabric_init(struct maia_device *mdev);
/* Fabric ports of the device, 0 without a fabric. */
unsigned int maia_fabric_ports(struct maia_device *mdev);
u64 maia_fabric_serial(struct maia_device *mdev);
/* The event thread saw MAIA_INT_FABRIC_LINK: log and send uevents. */
void maia_fabric_link_event(struct maia_device *mdev);

/*
 * The mapping [@va, @va + @size) of @ctx is going away: close its windows
 * first, so nothing from the fabric lands after the unmap. Caller holds
 * @ctx->lock.
 */
void maia_fabric_close_range(struct maia_file *mf, u64 va, u64 size);
/*
 * The context is closing and its ASID is disabled (which closed its
 * windows on the device): free the bookkeeping. Caller holds @ctx->lock.
 */
void maia_fabric_free_windows(struct maia_file *mf);

int maia_fabric_port_ioctl(struct drm_device *drm, void *data, struct drm_file *file);
int maia_fabric_window_ioctl(struct drm_device *drm, void *data, struct drm_file *file);

#endif /* __MAIA_FABRIC_H__ */
