// SPDX-License-Identifier: GPL-2.0-only
/*
 * Maia accelerator driver: telemetry. The device's power controller keeps
 * the counters (maia/hw/telemetry.h); this file reads them, sets the power
 * cap through the mailbox, and shows the activity counters as sysfs
 * attributes of the PCI device (/sys/class/accel/accelN/device/). The
 * hwmon device (maia_hwmon.c) shows power, energy, temperature and clock.
 *
 * The counters live in an always-on domain: they keep counting across
 * device resets, so every attribute here is monotonic except the gauges
 * (utilization, throttle_reasons).
 */

#include <drm/drm_managed.h>
#include <linux/device.h>
#include <linux/pci.h>
#include <linux/sysfs.h>

#include <maia/hw/mbox.h>
#include <maia/hw/regs.h>
#include <maia/hw/telemetry.h>

#include "maia_drv.h"
#include "maia_hw.h"
#include "maia_hwmon.h"
#include "maia_mbox.h"
#include "maia_sysfs.h"
#include "maia_telemetry.h"

u32 maia_telemetry_read32(struct maia_device *mdev, u32 reg)
{
	return maia_rd(mdev, reg);
}

u64 maia_telemetry_read64(struct maia_device *mdev, u32 lo)
{
	struct maia_telemetry *tm = mdev->telemetry;
	u32 l, h;

	mutex_lock(&tm->lock);
	l = maia_rd(mdev, lo);		/* latches HI */
	h = maia_rd(mdev, lo + 4);
	mutex_unlock(&tm->lock);
	return (u64)h << 32 | l;
}

void maia_telemetry_throttle_event(struct maia_device *mdev)
{
	u32 reasons, mhz, temp_mc;

	if (!mdev->telemetry)
		return;
	reasons = maia_rd(mdev, MAIA_REG_TELEM_THROTTLE_REASONS);
	mhz = maia_rd(mdev, MAIA_REG_TELEM_CLOCK_MHZ);
	temp_mc = maia_rd(mdev, MAIA_REG_TELEM_TEMP_MC);
	maia_warn_ratelimited(mdev, "clock throttled to %u MHz:%s%s (%u.%u C)\n", mhz,
			      reasons & MAIA_THROTTLE_POWER ? " power cap" : "",
			      reasons & MAIA_THROTTLE_THERMAL ? " temperature" : "",
			      temp_mc / 1000, temp_mc % 1000 / 100);
	sysfs_notify(&mdev->drm.dev->kobj, NULL, "throttle_reasons");
}

static int maia_telemetry_send_cap(struct maia_device *mdev, u32 cap_mw)
{
	u32 args[MAIA_MBOX_NARGS] = { cap_mw };

	return maia_mbox_cmd(mdev, MAIA_MBOX_SET_POWER_CAP, args, NULL);
}

int maia_telemetry_set_cap(struct maia_device *mdev, u32 cap_mw)
{
	struct maia_telemetry *tm = mdev->telemetry;
	int ret;

	if (cap_mw < tm->cap_min_mw || cap_mw > tm->cap_max_mw)
		return -EINVAL;
	mutex_lock(&tm->lock);
	ret = maia_telemetry_send_cap(mdev, cap_mw);
	if (!ret)
		tm->user_cap_mw = cap_mw;
	mutex_unlock(&tm->lock);
	return ret;
}

int maia_telemetry_restore(struct maia_device *mdev)
{
	struct maia_telemetry *tm = mdev->telemetry;
	int ret = 0;

	if (!tm)
		return 0;
	mutex_lock(&tm->lock);
	if (tm->user_cap_mw)
		ret = maia_telemetry_send_cap(mdev, tm->user_cap_mw);
	mutex_unlock(&tm->lock);
	return ret;
}

/* A 64-bit nanosecond counter shown in microseconds. */
#define MAIA_TELEM_US_ATTR(name, reg)						\
static ssize_t name##_show(struct device *dev, struct device_attribute *attr,	\
			   char *buf)						\
{										\
	u64 ns = maia_telemetry_read64(maia_from_dev(dev), reg);	\
										\
	return sysfs_emit(buf, "%llu\n", div_u64(ns, NSEC_PER_USEC));		\
}										\
static DEVICE_ATTR_RO(name)

/* A 64-bit counter shown as it is. */
#define MAIA_TELEM_U64_ATTR(name, reg)						\
static ssize_t name##_show(struct device *dev, struct device_attribute *attr,	\
			   char *buf)						\
{										\
	return sysfs_emit(buf, "%llu\n",					\
			  maia_telemetry_read64(maia_from_dev(dev), reg)); \
}										\
static DEVICE_ATTR_RO(name)

/* Time any command ran, and per engine class. */
MAIA_TELEM_US_ATTR(busy_time_us, MAIA_REG_TELEM_BUSY_NS_LO);
MAIA_TELEM_US_ATTR(tensor_busy_time_us, MAIA_REG_TELEM_TENSOR_NS_LO);
MAIA_TELEM_US_ATTR(vector_busy_time_us, MAIA_REG_TELEM_VECTOR_NS_LO);
MAIA_TELEM_US_ATTR(dma_busy_time_us, MAIA_REG_TELEM_DMA_NS_LO);
/* Time the clock spent below nominal. */
MAIA_TELEM_US_ATTR(throttled_time_us, MAIA_REG_TELEM_THROTTLED_NS_LO);
/* Bytes moved and operations done by commands. */
MAIA_TELEM_U64_ATTR(hbm_bytes_read, MAIA_REG_TELEM_HBM_READ_LO);
MAIA_TELEM_U64_ATTR(hbm_bytes_written, MAIA_REG_TELEM_HBM_WRITE_LO);
MAIA_TELEM_U64_ATTR(dma_bytes, MAIA_REG_TELEM_DMA_BYTES_LO);
MAIA_TELEM_U64_ATTR(flops, MAIA_REG_TELEM_FLOPS_LO);
MAIA_TELEM_U64_ATTR(commands, MAIA_REG_TELEM_COMMANDS_LO);
/*
 * (telemetry 1.2) Modeled time since power-on, and what the flops done
 * would take at the data types' peaks, in ns: a job of a few microseconds
 * still moves them (MFU = d(peak_time_ns) / d(modeled_time_ns)).
 */
MAIA_TELEM_U64_ATTR(modeled_time_ns, MAIA_REG_TELEM_TIME_NS_LO);
MAIA_TELEM_U64_ATTR(peak_time_ns, MAIA_REG_TELEM_PEAK_NS_LO);

/* A 0..10000 register of the window shown in percent. */
#define MAIA_TELEM_PCT_ATTR(name, reg)						\
static ssize_t name##_show(struct device *dev, struct device_attribute *attr,	\
			   char *buf)						\
{										\
	u32 v = maia_telemetry_read32(maia_from_dev(dev), reg);		\
										\
	return sysfs_emit(buf, "%u\n", DIV_ROUND_CLOSEST(min(v, 10000u), 100u));	\
}										\
static DEVICE_ATTR_RO(name)

/*
 * Percent of the device's averaging window (MAIA_REG_TELEM_WINDOW_US:
 * 1 s of host time before telemetry 1.2, 10 ms of modeled time since) any
 * command ran.
 */
MAIA_TELEM_PCT_ATTR(utilization, MAIA_REG_TELEM_UTIL);
/* (1.2) HBM bytes moved over the window as a percent of the HBM bandwidth. */
MAIA_TELEM_PCT_ATTR(hbm_utilization, MAIA_REG_TELEM_HBM_UTIL);
/* (1.2) Model flops utilization: the flops done over the window at the peak, percent. */
MAIA_TELEM_PCT_ATTR(mfu, MAIA_REG_TELEM_MFU);

/* Percent of the window a matrix (tensor-unit) operation ran. */
MAIA_TELEM_PCT_ATTR(tensor_utilization, MAIA_REG_TELEM_TENSOR_UTIL);

/* Why the clock is below nominal now: MAIA_THROTTLE_* bits, 0x1 power, 0x2 thermal. */
static ssize_t throttle_reasons_show(struct device *dev,
				     struct device_attribute *attr, char *buf)
{
	u32 v = maia_telemetry_read32(maia_from_dev(dev),
				      MAIA_REG_TELEM_THROTTLE_REASONS);

	return sysfs_emit(buf, "0x%x\n", v & MAIA_THROTTLE_ALL);
}
static DEVICE_ATTR_RO(throttle_reasons);

/* Clock step-downs since power-on. */
static ssize_t throttle_count_show(struct device *dev,
				   struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%u\n",
			  maia_telemetry_read32(maia_from_dev(dev),
						MAIA_REG_TELEM_THROTTLE_EVENTS));
}
static DEVICE_ATTR_RO(throttle_count);

/*
 * Busy time of each tile in microseconds, space separated, tile t being
 * tile t % tiles-per-cluster of cluster t / tiles-per-cluster (an array of
 * one type, as sysfs allows). Lists as many tiles as fit in the page.
 */
static ssize_t tile_busy_time_us_show(struct device *dev, struct device_attribute *attr,
				      char *buf)
{
	struct maia_device *mdev = maia_from_dev(dev);
	u32 tiles = min(maia_telemetry_read32(mdev, MAIA_REG_TELEM_TILES), MAIA_TELEM_MAX_TILES);
	int len = 0, n;
	u32 t;

	for (t = 0; t < tiles; t++) {
		u64 ns = maia_telemetry_read64(mdev, MAIA_REG_TELEM_TILE_NS_LO(t));

		/* room for this value and the newline */
		if (len + 22 >= PAGE_SIZE)
			break;
		n = sysfs_emit_at(buf, len, "%s%llu", t ? " " : "", div_u64(ns, NSEC_PER_USEC));
		len += n;
	}
	return len + sysfs_emit_at(buf, len, "\n");
}
static DEVICE_ATTR_RO(tile_busy_time_us);

static struct attribute *maia_telemetry_attrs[] = {
	&dev_attr_busy_time_us.attr,
	&dev_attr_tensor_busy_time_us.attr,
	&dev_attr_vector_busy_time_us.attr,
	&dev_attr_dma_busy_time_us.attr,
	&dev_attr_throttled_time_us.attr,
	&dev_attr_hbm_bytes_read.attr,
	&dev_attr_hbm_bytes_written.attr,
	&dev_attr_dma_bytes.attr,
	&dev_attr_flops.attr,
	&dev_attr_commands.attr,
	&dev_attr_utilization.attr,
	&dev_attr_tensor_utilization.attr,
	&dev_attr_throttle_reasons.attr,
	&dev_attr_throttle_count.attr,
	&dev_attr_tile_busy_time_us.attr,
	&dev_attr_modeled_time_ns.attr,
	&dev_attr_peak_time_ns.attr,
	&dev_attr_hbm_utilization.attr,
	&dev_attr_mfu.attr,
	NULL,
};

/* None without a telemetry block; the per-tile window came with telemetry 1.1. */
static umode_t maia_telemetry_attr_visible(struct kobject *kobj, struct attribute *attr, int n)
{
	struct maia_device *mdev = maia_from_dev(kobj_to_dev(kobj));

	if (!mdev->telemetry)
		return 0;
	if (attr == &dev_attr_tile_busy_time_us.attr &&
	    mdev->telemetry->version < MAIA_TELEM_VERSION_1_1)
		return 0;
	/* Modeled time, HBM saturation and MFU came with telemetry 1.2. */
	if ((attr == &dev_attr_modeled_time_ns.attr || attr == &dev_attr_peak_time_ns.attr ||
	     attr == &dev_attr_hbm_utilization.attr || attr == &dev_attr_mfu.attr) &&
	    mdev->telemetry->version < MAIA_TELEM_VERSION_1_2)
		return 0;
	return attr->mode;
}

const struct attribute_group maia_telemetry_attr_group = {
	.attrs = maia_telemetry_attrs,
	.is_visible = maia_telemetry_attr_visible,
};

int maia_telemetry_init(struct maia_device *mdev)
{
	struct maia_telemetry *tm;
	u32 version;
	int ret;

	if (!(mdev->hw.caps & MAIA_CAP_TELEMETRY)) {
		maia_info(mdev, "device has no telemetry block\n");
		return 0;
	}
	version = maia_rd(mdev, MAIA_REG_TELEM_VERSION);
	if (version >> 16 != MAIA_TELEM_VERSION_1 >> 16) {
		maia_warn(mdev, "telemetry version %u.%u not supported (driver supports 1.x)\n",
			  version >> 16, version & 0xffff);
		return 0;
	}

	tm = drmm_kzalloc(&mdev->drm, sizeof(*tm), GFP_KERNEL);
	if (!tm)
		return -ENOMEM;
	ret = drmm_mutex_init(&mdev->drm, &tm->lock);
	if (ret)
		return ret;
	tm->mdev = mdev;
	tm->version = version;
	tm->cap_min_mw = maia_rd(mdev, MAIA_REG_TELEM_POWER_CAP_MIN_MW);
	tm->cap_max_mw = maia_rd(mdev, MAIA_REG_TELEM_POWER_CAP_MAX_MW);
	mdev->telemetry = tm;
	return maia_hwmon_init(mdev);
}
