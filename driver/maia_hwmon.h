/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Maia accelerator driver: hwmon device (temperature, power, power cap,
 * energy, clock), Documentation/hwmon/sysfs-interface.rst units.
 */
#ifndef __MAIA_HWMON_H__
#define __MAIA_HWMON_H__

struct maia_device;

int maia_hwmon_init(struct maia_device *mdev);

#endif /* __MAIA_HWMON_H__ */
