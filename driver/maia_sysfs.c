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
#include <maia/hw/dtype.h>

#include "maia_drv.h"
#include "maia_fabric.h"
#include "maia_hbm.h"
#include "maia_hw.h"
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

/*
 * model/: the chip model and the parameters of its time model (hardware
 * 1.8; the directory is absent on an older device). Each file holds one
 * number in the unit its name says, but name ("maia100", "maia200").
 */
static ssize_t name_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%s\n", maia_model_name(maia_from_dev(dev)));
}
static DEVICE_ATTR_RO(name);

/* HBM capacity, bytes: the same as hbm_size, beside the model's bandwidth. */
static ssize_t hbm_bytes_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%llu\n", maia_from_dev(dev)->hw.hbm_size);
}
static DEVICE_ATTR_RO(hbm_bytes);

#define MAIA_MODEL_ATTR(file, field)						\
static ssize_t file##_show(struct device *dev, struct device_attribute *attr,	\
			   char *buf)						\
{										\
	return sysfs_emit(buf, "%u\n", maia_from_dev(dev)->model.field);	\
}										\
static DEVICE_ATTR_RO(file)

MAIA_MODEL_ATTR(hbm_mbps, hbm_mbps);
MAIA_MODEL_ATTR(host_mbps, host_mbps);
MAIA_MODEL_ATTR(link_mbps, link_mbps);
MAIA_MODEL_ATTR(link_latency_ns, link_lat_ns);
MAIA_MODEL_ATTR(command_ns, cmd_ns);
MAIA_MODEL_ATTR(job_ns, job_ns);
MAIA_MODEL_ATTR(vector_gflops, vector_gflops);
MAIA_MODEL_ATTR(sram_kib, sram_kib);
MAIA_MODEL_ATTR(design_power_mw, design_power_mw);

/* Dense tensor peak of one data type, GFLOP/s; only types that have one. */
#define MAIA_PEAK_ATTR(type, dtype)						\
MAIA_MODEL_ATTR(peak_gflops_##type, peak_gflops[dtype])

MAIA_PEAK_ATTR(fp32, MAIA_DTYPE_FP32);
MAIA_PEAK_ATTR(fp16, MAIA_DTYPE_FP16);
MAIA_PEAK_ATTR(bf16, MAIA_DTYPE_BF16);
MAIA_PEAK_ATTR(fp8_e4m3, MAIA_DTYPE_FP8_E4M3);
MAIA_PEAK_ATTR(fp8_e5m2, MAIA_DTYPE_FP8_E5M2);
MAIA_PEAK_ATTR(int8, MAIA_DTYPE_INT8);
MAIA_PEAK_ATTR(int32, MAIA_DTYPE_INT32);
MAIA_PEAK_ATTR(mxfp8_e4m3, MAIA_DTYPE_MXFP8_E4M3);
MAIA_PEAK_ATTR(mxfp8_e5m2, MAIA_DTYPE_MXFP8_E5M2);
MAIA_PEAK_ATTR(mxfp6_e3m2, MAIA_DTYPE_MXFP6_E3M2);
MAIA_PEAK_ATTR(mxfp6_e2m3, MAIA_DTYPE_MXFP6_E2M3);
MAIA_PEAK_ATTR(mxfp4_e2m1, MAIA_DTYPE_MXFP4_E2M1);
MAIA_PEAK_ATTR(mxint8, MAIA_DTYPE_MXINT8);
MAIA_PEAK_ATTR(mx9, MAIA_DTYPE_MX9);
MAIA_PEAK_ATTR(mx6, MAIA_DTYPE_MX6);
MAIA_PEAK_ATTR(mx4, MAIA_DTYPE_MX4);

/* The peak attributes, at index MAIA_DTYPE_* */
static struct attribute *maia_peak_attrs[MAIA_DTYPE_COUNT] = {
	[MAIA_DTYPE_FP32] = &dev_attr_peak_gflops_fp32.attr,
	[MAIA_DTYPE_FP16] = &dev_attr_peak_gflops_fp16.attr,
	[MAIA_DTYPE_BF16] = &dev_attr_peak_gflops_bf16.attr,
	[MAIA_DTYPE_FP8_E4M3] = &dev_attr_peak_gflops_fp8_e4m3.attr,
	[MAIA_DTYPE_FP8_E5M2] = &dev_attr_peak_gflops_fp8_e5m2.attr,
	[MAIA_DTYPE_INT8] = &dev_attr_peak_gflops_int8.attr,
	[MAIA_DTYPE_INT32] = &dev_attr_peak_gflops_int32.attr,
	[MAIA_DTYPE_MXFP8_E4M3] = &dev_attr_peak_gflops_mxfp8_e4m3.attr,
	[MAIA_DTYPE_MXFP8_E5M2] = &dev_attr_peak_gflops_mxfp8_e5m2.attr,
	[MAIA_DTYPE_MXFP6_E3M2] = &dev_attr_peak_gflops_mxfp6_e3m2.attr,
	[MAIA_DTYPE_MXFP6_E2M3] = &dev_attr_peak_gflops_mxfp6_e2m3.attr,
	[MAIA_DTYPE_MXFP4_E2M1] = &dev_attr_peak_gflops_mxfp4_e2m1.attr,
	[MAIA_DTYPE_MXINT8] = &dev_attr_peak_gflops_mxint8.attr,
	[MAIA_DTYPE_MX9] = &dev_attr_peak_gflops_mx9.attr,
	[MAIA_DTYPE_MX6] = &dev_attr_peak_gflops_mx6.attr,
	[MAIA_DTYPE_MX4] = &dev_attr_peak_gflops_mx4.attr,
};

static struct attribute *maia_model_attrs[] = {
	&dev_attr_name.attr,
	&dev_attr_hbm_bytes.attr,
	&dev_attr_hbm_mbps.attr,
	&dev_attr_host_mbps.attr,
	&dev_attr_link_mbps.attr,
	&dev_attr_link_latency_ns.attr,
	&dev_attr_command_ns.attr,
	&dev_attr_job_ns.attr,
	&dev_attr_vector_gflops.attr,
	&dev_attr_sram_kib.attr,
	&dev_attr_design_power_mw.attr,
	&dev_attr_peak_gflops_fp32.attr,
	&dev_attr_peak_gflops_fp16.attr,
	&dev_attr_peak_gflops_bf16.attr,
	&dev_attr_peak_gflops_fp8_e4m3.attr,
	&dev_attr_peak_gflops_fp8_e5m2.attr,
	&dev_attr_peak_gflops_int8.attr,
	&dev_attr_peak_gflops_int32.attr,
	&dev_attr_peak_gflops_mxfp8_e4m3.attr,
	&dev_attr_peak_gflops_mxfp8_e5m2.attr,
	&dev_attr_peak_gflops_mxfp6_e3m2.attr,
	&dev_attr_peak_gflops_mxfp6_e2m3.attr,
	&dev_attr_peak_gflops_mxfp4_e2m1.attr,
	&dev_attr_peak_gflops_mxint8.attr,
	&dev_attr_peak_gflops_mx9.attr,
	&dev_attr_peak_gflops_mx6.attr,
	&dev_attr_peak_gflops_mx4.attr,
	NULL,
};

static bool maia_model_group_visible(struct kobject *kobj)
{
	return maia_from_dev(kobj_to_dev(kobj))->model.id != 0;
}

/* A data type without a matrix rate (INT32, or one the chip lacks) has no peak file. */
static umode_t maia_model_attr_visible(struct kobject *kobj, struct attribute *attr, int n)
{
	struct maia_device *mdev = maia_from_dev(kobj_to_dev(kobj));
	unsigned int d;

	for (d = 0; d < MAIA_DTYPE_COUNT; d++)
		if (attr == maia_peak_attrs[d] && !mdev->model.peak_gflops[d])
			return 0;
	return attr->mode;
}

DEFINE_SYSFS_GROUP_VISIBLE(maia_model);

static const struct attribute_group maia_model_attr_group = {
	.name = "model",
	.attrs = maia_model_attrs,
	.is_visible = SYSFS_GROUP_VISIBLE(maia_model),
};

const struct attribute_group *maia_sysfs_groups[] = {
	&maia_attr_group,
	&maia_model_attr_group,
	&maia_hbm_attr_group,
	&maia_reset_attr_group,
	&maia_telemetry_attr_group,
	NULL,
};
