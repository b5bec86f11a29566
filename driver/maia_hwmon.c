// SPDX-License-Identifier: GPL-2.0-only
/*
 * Maia accelerator driver: hwmon device "maia" on the PCI device, in the
 * units of Documentation/hwmon/sysfs-interface.rst:
 *
 *   temp1_input, temp1_max, temp1_crit   die temperature, m°C (max: throttling starts)
 *   power1_input                         power over the last control period, uW
 *   power1_average                       power over power1_average_interval (ms), uW
 *   power1_cap                           power cap, uW, writable (enforced by firmware)
 *   power1_cap_min, power1_cap_max       range power1_cap accepts, uW
 *   energy1_input                        energy since power-on, uJ
 *   freq1_input                          tensor clock now, Hz (freq1_label "tensor")
 */

#include <linux/device.h>
#include <linux/hwmon.h>
#include <linux/hwmon-sysfs.h>
#include <linux/units.h>

#include <maia/hw/telemetry.h>

#include "maia_drv.h"
#include "maia_hwmon.h"
#include "maia_telemetry.h"

static umode_t maia_hwmon_is_visible(const void *data, enum hwmon_sensor_types type,
				     u32 attr, int channel)
{
	if (type == hwmon_power && attr == hwmon_power_cap)
		return 0644;
	return 0444;
}

static int maia_hwmon_read_temp(struct maia_device *mdev, u32 attr, long *val)
{
	switch (attr) {
	case hwmon_temp_input:
		*val = maia_telemetry_read32(mdev, MAIA_REG_TELEM_TEMP_MC);
		return 0;
	case hwmon_temp_max:
		*val = maia_telemetry_read32(mdev, MAIA_REG_TELEM_TEMP_THROTTLE_MC);
		return 0;
	case hwmon_temp_crit:
		*val = maia_telemetry_read32(mdev, MAIA_REG_TELEM_TEMP_CRIT_MC);
		return 0;
	default:
		return -EOPNOTSUPP;
	}
}

static int maia_hwmon_read_power(struct maia_device *mdev, u32 attr, long *val)
{
	u32 reg;

	switch (attr) {
	case hwmon_power_input:
		reg = MAIA_REG_TELEM_POWER_INST_MW;
		break;
	case hwmon_power_average:
		reg = MAIA_REG_TELEM_POWER_MW;
		break;
	case hwmon_power_cap:
		reg = MAIA_REG_TELEM_POWER_CAP_MW;
		break;
	case hwmon_power_cap_min:
		reg = MAIA_REG_TELEM_POWER_CAP_MIN_MW;
		break;
	case hwmon_power_cap_max:
		reg = MAIA_REG_TELEM_POWER_CAP_MAX_MW;
		break;
	case hwmon_power_average_interval:
		*val = maia_telemetry_read32(mdev, MAIA_REG_TELEM_WINDOW_US) / USEC_PER_MSEC;
		return 0;
	default:
		return -EOPNOTSUPP;
	}
	*val = (long)maia_telemetry_read32(mdev, reg) * MICROWATT_PER_MILLIWATT;
	return 0;
}

static int maia_hwmon_read(struct device *dev, enum hwmon_sensor_types type,
			   u32 attr, int channel, long *val)
{
	struct maia_device *mdev = dev_get_drvdata(dev);

	switch (type) {
	case hwmon_temp:
		return maia_hwmon_read_temp(mdev, attr, val);
	case hwmon_power:
		return maia_hwmon_read_power(mdev, attr, val);
	case hwmon_energy:
		if (attr != hwmon_energy_input)
			return -EOPNOTSUPP;
		*val = (long)maia_telemetry_read64(mdev, MAIA_REG_TELEM_ENERGY_UJ_LO);
		return 0;
	default:
		return -EOPNOTSUPP;
	}
}

static int maia_hwmon_read_string(struct device *dev, enum hwmon_sensor_types type,
				  u32 attr, int channel, const char **str)
{
	if (type == hwmon_temp && attr == hwmon_temp_label) {
		*str = "die";
		return 0;
	}
	return -EOPNOTSUPP;
}

/* power1_cap in uW: zero, negative or outside [cap_min, cap_max] is -EINVAL. */
static int maia_hwmon_write(struct device *dev, enum hwmon_sensor_types type,
			    u32 attr, int channel, long val)
{
	struct maia_device *mdev = dev_get_drvdata(dev);
	struct maia_telemetry *tm = mdev->telemetry;

	if (type != hwmon_power || attr != hwmon_power_cap)
		return -EOPNOTSUPP;
	/* Checked in uW: rounding to mW must not pull an outside value in. */
	if (val <= 0 || val < (long)tm->cap_min_mw * MICROWATT_PER_MILLIWATT ||
	    val > (long)tm->cap_max_mw * MICROWATT_PER_MILLIWATT)
		return -EINVAL;
	return maia_telemetry_set_cap(mdev, DIV_ROUND_CLOSEST(val, MICROWATT_PER_MILLIWATT));
}

static const struct hwmon_channel_info *const maia_hwmon_info[] = {
	HWMON_CHANNEL_INFO(temp, HWMON_T_INPUT | HWMON_T_MAX | HWMON_T_CRIT | HWMON_T_LABEL),
	HWMON_CHANNEL_INFO(power, HWMON_P_INPUT | HWMON_P_AVERAGE |
			   HWMON_P_AVERAGE_INTERVAL | HWMON_P_CAP |
			   HWMON_P_CAP_MIN | HWMON_P_CAP_MAX),
	HWMON_CHANNEL_INFO(energy, HWMON_E_INPUT),
	NULL,
};

static const struct hwmon_ops maia_hwmon_ops = {
	.is_visible = maia_hwmon_is_visible,
	.read = maia_hwmon_read,
	.read_string = maia_hwmon_read_string,
	.write = maia_hwmon_write,
};

static const struct hwmon_chip_info maia_hwmon_chip_info = {
	.ops = &maia_hwmon_ops,
	.info = maia_hwmon_info,
};

/* hwmon has no clock sensor type: freq1_* as amdgpu names them. */
static ssize_t freq1_input_show(struct device *dev, struct device_attribute *attr,
				char *buf)
{
	struct maia_device *mdev = dev_get_drvdata(dev);
	u64 mhz = maia_telemetry_read32(mdev, MAIA_REG_TELEM_CLOCK_MHZ);

	return sysfs_emit(buf, "%llu\n", mhz * HZ_PER_MHZ);
}
static DEVICE_ATTR_RO(freq1_input);

static ssize_t freq1_label_show(struct device *dev, struct device_attribute *attr,
				char *buf)
{
	return sysfs_emit(buf, "tensor\n");
}
static DEVICE_ATTR_RO(freq1_label);

static struct attribute *maia_hwmon_attrs[] = {
	&dev_attr_freq1_input.attr,
	&dev_attr_freq1_label.attr,
	NULL,
};
ATTRIBUTE_GROUPS(maia_hwmon);

int maia_hwmon_init(struct maia_device *mdev)
{
	struct device *hwmon;

	hwmon = devm_hwmon_device_register_with_info(mdev->drm.dev, "maia", mdev,
						     &maia_hwmon_chip_info,
						     maia_hwmon_groups);
	if (IS_ERR(hwmon)) {
		maia_err(mdev, "cannot register the hwmon device: %pe\n", hwmon);
		return PTR_ERR(hwmon);
	}
	return 0;
}
