/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Maia accelerator driver: sysfs attributes of the PCI device.
 */
#ifndef __MAIA_SYSFS_H__
#define __MAIA_SYSFS_H__

#include <linux/pci.h>
#include <linux/sysfs.h>

struct maia_device;

/*
 * Every attribute group of the PCI device, in maia_pci_driver.dev_groups:
 * the driver core adds them after probe succeeded, before the uevent that
 * announces the bound driver, and removes them before remove.
 */
extern const struct attribute_group *maia_sysfs_groups[];

/* The device of an attribute's PCI device (drvdata is set early in probe). */
static inline struct maia_device *maia_from_dev(struct device *dev)
{
	return pci_get_drvdata(to_pci_dev(dev));
}

#endif /* __MAIA_SYSFS_H__ */
