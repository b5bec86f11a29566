/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Maia accelerator driver: sysfs attributes of the PCI device.
 */
#ifndef __MAIA_SYSFS_H__
#define __MAIA_SYSFS_H__

#include <linux/sysfs.h>

extern const struct attribute_group *maia_sysfs_groups[];

#endif /* __MAIA_SYSFS_H__ */
