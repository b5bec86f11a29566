/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Maia accelerator driver: telemetry (maia/hw/telemetry.h), the power cap
 * and the sysfs counters on the PCI device.
 */
#ifndef __MAIA_TELEMETRY_H__
#define __MAIA_TELEMETRY_H__

#include <linux/mutex.h>
#include <linux/sysfs.h>
#include <linux/types.h>

struct device;
struct maia_device;

struct maia_telemetry {
	struct maia_device *mdev;
	/*
	 * Serializes reads of 64-bit counters (reading LO latches that
	 * counter's HI in the device, so two readers must not interleave)
	 * and protects @user_cap_mw.
	 */
	struct mutex lock;
	/* Cap set through hwmon, mW, re-applied after a reset; 0 = none. */
	u32 user_cap_mw;
	u32 cap_min_mw, cap_max_mw;	/* what the firmware accepts */
	u32 version;			/* MAIA_REG_TELEM_VERSION */
};

/* After the firmware is up; a device without MAIA_CAP_TELEMETRY gets nothing. */
int maia_telemetry_init(struct maia_device *mdev);
/* After a device reset and firmware reboot: re-applies the user's cap. */
int maia_telemetry_restore(struct maia_device *mdev);

u32 maia_telemetry_read32(struct maia_device *mdev, u32 reg);
u64 maia_telemetry_read64(struct maia_device *mdev, u32 lo);
/*
 * MAIA_INT_THERMAL: the power controller started throttling the clock (for
 * the power cap or the temperature). Logs it, rate-limited, and wakes
 * poll() on the throttle_reasons attribute. Event IRQ thread context.
 */
void maia_telemetry_throttle_event(struct maia_device *mdev);
/* Sets the power cap through the mailbox; -EINVAL outside the device's range. */
int maia_telemetry_set_cap(struct maia_device *mdev, u32 cap_mw);

/* sysfs: counters and utilization (none without a telemetry block), in maia_sysfs_groups */
extern const struct attribute_group maia_telemetry_attr_group;

#endif /* __MAIA_TELEMETRY_H__ */
