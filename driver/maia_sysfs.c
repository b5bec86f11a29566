// SPDX-License-Identifier: GPL-2.0-only
/*
 * Maia accelerator driver: sysfs attributes of the PCI device, also
 * reachable as /sys/class/accel/accelN/device/<attr>.
 *
 * The driver core adds them once probe has succeeded and removes them
 * before remove, so the device is always booted while they exist. The
 * groups of other files (HBM, reset, telemetry) are listed here too.
 */

#include <linux/device.h>
#include <linux/pci.h>

#include <maia/hw/boot.h>

#include "maia_drv.h"
#include "maia_fabric.h"
#include "maia_hbm.h"
#include "maia_reset.h"
#include "maia_sysfs.h"
#include "maia_telemetry.h"

/* Running firmware version, "major.minor.patch". */
static ssize_t fw_version_show(struct device *dev, struct device_attribute *attr,
			       char *buf)
{
	u32 v = maia_from_dev(dev)->fw.version;

	return sysfs_emit(buf, "%u.%u.%u\n", MAIA_FW_VERSION_MAJOR(v),
			  MAIA_FW_VERSION_MINOR(v), MAIA_FW_VERSION_PATCH(v));
}
static DEVICE_ATTR_RO(fw_version);

/* Firmware ABI the running firmware implements, "major.minor". */
static ssize_t fw_abi_show(struct device *dev, struct device_attribute *attr,
			   char *buf)
{
	u32 abi = maia_from_dev(dev)->fw.abi;

	return sysfs_emit(buf, "%u.%u\n", abi >> 16, abi & 0xffffu);
}
static DEVICE_ATTR_RO(fw_abi);

/* Build identifier from the firmware image header. */
static ssize_t fw_build_id_show(struct device *dev, struct device_attribute *attr,
				char *buf)
{
	return sysfs_emit(buf, "%s\n", maia_from_dev(dev)->fw.build_id);
}
static DEVICE_ATTR_RO(fw_build_id);

/* Firmware file that was loaded, relative to the firmware search path. */
static ssize_t fw_file_show(struct device *dev, struct device_attribute *attr,
			    char *buf)
{
	return sysfs_emit(buf, "%s\n", maia_from_dev(dev)->fw.name);
}
static DEVICE_ATTR_RO(fw_file);

/* Device memory, bytes. */
static ssize_t hbm_size_show(struct device *dev, struct device_attribute *attr,
			     char *buf)
{
	return sysfs_emit(buf, "%llu\n", maia_from_dev(dev)->hw.hbm_size);
}
static DEVICE_ATTR_RO(hbm_size);

/* "<clusters>x<tiles per cluster>", e.g. "16x4". */
static ssize_t topology_show(struct device *dev, struct device_attribute *attr,
			     char *buf)
{
	struct maia_device *mdev = maia_from_dev(dev);

	return sysfs_emit(buf, "%ux%u\n", mdev->hw.clusters,
			  mdev->hw.tiles_per_cluster);
}
static DEVICE_ATTR_RO(topology);

/* Bytes of host buffer objects pinned while mapped on the device. */
static ssize_t host_pinned_bytes_show(struct device *dev, struct device_attribute *attr,
				      char *buf)
{
	return sysfs_emit(buf, "%lld\n", atomic64_read(&maia_from_dev(dev)->gem.pinned_bytes));
}
static DEVICE_ATTR_RO(host_pinned_bytes);

/* The device's fabric serial, its identity on the links (only with a fabric). */
static ssize_t fabric_serial_show(struct device *dev, struct device_attribute *attr,
				  char *buf)
{
	return sysfs_emit(buf, "0x%016llx\n", maia_fabric_serial(maia_from_dev(dev)));
}
static DEVICE_ATTR_RO(fabric_serial);

/* Fabric ports (only with a fabric; their counters are in fabric/portN/). */
static ssize_t fabric_ports_show(struct device *dev, struct device_attribute *attr,
				 char *buf)
{
	return sysfs_emit(buf, "%u\n", maia_fabric_ports(maia_from_dev(dev)));
}
static DEVICE_ATTR_RO(fabric_ports);

static struct attribute *maia_attrs[] = {
	&dev_attr_fw_version.attr,
	&dev_attr_fw_abi.attr,
	&dev_attr_fw_build_id.attr,
	&dev_attr_fw_file.attr,
	&dev_attr_hbm_size.attr,
	&dev_attr_topology.attr,
	&dev_attr_host_pinned_bytes.attr,
	&dev_attr_fabric_serial.attr,
	&dev_attr_fabric_ports.attr,
	NULL,
};

static umode_t maia_attr_visible(struct kobject *kobj, struct attribute *attr, int n)
{
	struct maia_device *mdev = maia_from_dev(kobj_to_dev(kobj));

	if ((attr == &dev_attr_fabric_serial.attr || attr == &dev_attr_fabric_ports.attr) &&
	    !maia_fabric_ports(mdev))
		return 0;
	return attr->mode;
}

static const struct attribute_group maia_attr_group = {
	.attrs = maia_attrs,
	.is_visible = maia_attr_visible,
};

const struct attribute_group *maia_sysfs_groups[] = {
	&maia_attr_group,
	&maia_hbm_attr_group,
	&maia_reset_attr_group,
	&maia_telemetry_attr_group,
	NULL,
};
