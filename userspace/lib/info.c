// SPDX-License-Identifier: MIT
/* maia_device_info(): the driver's parameters plus what libpci knows. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <pci/pci.h>
#include <xf86drm.h>

#include "drm/maia_accel.h"
#include "internal.h"

/* PCIe link status from the PCI Express capability, via libpci. */
static void pci_link_info(const char *address, struct maia_device_info *info)
{
	unsigned int domain, bus, slot, func;
	struct pci_access *pacc;
	struct pci_dev *pdev;
	struct pci_cap *cap;

	if (sscanf(address, "%x:%x:%x.%x", &domain, &bus, &slot, &func) != 4)
		return;
	pacc = pci_alloc();
	if (!pacc)
		return;
	pci_init(pacc);
	pdev = pci_get_dev(pacc, (int)domain, (int)bus, (int)slot, (int)func);
	if (pdev) {
		pci_fill_info(pdev, PCI_FILL_IDENT | PCI_FILL_CAPS);
		info->vendor_id = pdev->vendor_id;
		info->device_id = pdev->device_id;
		cap = pci_find_cap(pdev, PCI_CAP_ID_EXP, PCI_CAP_NORMAL);
		if (cap) {
			static const unsigned int speed_x10[] = { 0, 25, 50, 80, 160, 320, 640 };
			unsigned int lnksta = pci_read_word(pdev, cap->addr + PCI_EXP_LNKSTA);
			unsigned int speed = lnksta & PCI_EXP_LNKSTA_SPEED;

			info->link_speed_gts_x10 = speed < 7 ? speed_x10[speed] : 0;
			info->link_width = (lnksta & PCI_EXP_LNKSTA_WIDTH) >> 4;
		}
		pci_free_dev(pdev);
	}
	pci_cleanup(pacc);
}

MAIA_EXPORT int maia_device_info(struct maia_device *dev, struct maia_device_info *info)
{
	static const struct {
		uint32_t param;
		size_t offset;
		size_t size;
	} fields[] = {
#define F(p, f) { p, offsetof(struct maia_device_info, f), sizeof(((struct maia_device_info *)0)->f) }
		F(DRM_MAIA_PARAM_REVISION, revision),
		F(DRM_MAIA_PARAM_FW_VERSION, fw_version),
		F(DRM_MAIA_PARAM_FW_ABI, fw_abi),
		F(DRM_MAIA_PARAM_HBM_SIZE, hbm_size),
		F(DRM_MAIA_PARAM_NUM_CLUSTERS, clusters),
		F(DRM_MAIA_PARAM_TILES_PER_CLUSTER, tiles_per_cluster),
		F(DRM_MAIA_PARAM_SRAM_KIB, sram_kib),
		F(DRM_MAIA_PARAM_NUM_QUEUES, num_queues),
		F(DRM_MAIA_PARAM_DTYPES, dtypes),
		F(DRM_MAIA_PARAM_CAPABILITIES, capabilities),
#undef F
	};
	struct maia_device_info out = { 0 };
	drmVersionPtr ver;
	uint64_t value;
	size_t i;
	int err;

	if (!dev || !info)
		return -EINVAL;
	out.index = dev->index;
	snprintf(out.node, sizeof(out.node), "/dev/accel/accel%d", dev->index);
	snprintf(out.pci_address, sizeof(out.pci_address), "%s", dev->pci_address);
	for (i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		err = maia_query(dev, fields[i].param, &value);
		if (err)
			return err;
		if (fields[i].size == sizeof(uint64_t)) {
			memcpy((char *)&out + fields[i].offset, &value, sizeof(uint64_t));
		} else {
			uint32_t v32 = (uint32_t)value;

			memcpy((char *)&out + fields[i].offset, &v32, sizeof(v32));
		}
	}
	out.dtypes = maia_dtypes_from_uapi(out.dtypes);
	out.capabilities = maia_caps_from_uapi(out.capabilities);
	err = maia_query(dev, DRM_MAIA_PARAM_DEVICE_ID, &value);
	if (err)
		return err;
	out.vendor_id = (uint16_t)(value >> 16);
	out.device_id = (uint16_t)value;
	pci_link_info(dev->pci_address, &out);

	ver = drmGetVersion(dev->fd);
	if (ver) {
		snprintf(out.driver_version, sizeof(out.driver_version), "%.*s %d.%d.%d",
			 ver->name_len, ver->name, ver->version_major, ver->version_minor,
			 ver->version_patchlevel);
		drmFreeVersion(ver);
	}
	*info = out;
	return 0;
}

MAIA_EXPORT int maia_device_model(struct maia_device *dev, struct maia_device_model *m)
{
	static const struct {
		uint32_t param;
		size_t offset;
	} fields[] = {
#define F(p, f) { p, offsetof(struct maia_device_model, f) }
		F(DRM_MAIA_PARAM_HBM_MBPS, hbm_mbps),
		F(DRM_MAIA_PARAM_HOST_MBPS, host_mbps),
		F(DRM_MAIA_PARAM_LINK_MBPS, link_mbps),
		F(DRM_MAIA_PARAM_LINK_LAT_NS, link_lat_ns),
		F(DRM_MAIA_PARAM_CMD_NS, cmd_ns),
		F(DRM_MAIA_PARAM_JOB_NS, job_ns),
		F(DRM_MAIA_PARAM_VECTOR_GFLOPS, vector_gflops),
		F(DRM_MAIA_PARAM_CHIP_SRAM_KIB, sram_kib),
		F(DRM_MAIA_PARAM_DESIGN_POWER_MW, design_power_mw),
#undef F
	};
	struct maia_device_model out = { 0 };
	uint64_t value;
	size_t i;
	int err;

	maia_error_clear();
	if (!dev || !m)
		return maia_error(-EINVAL, "maia_device_model: NULL argument");
	if (dev->driver_minor < 7)
		return maia_error(-EOPNOTSUPP, "maia_device_model: driver minor %d has no chip "
				  "model (7 has)", dev->driver_minor);
	err = maia_query(dev, DRM_MAIA_PARAM_MODEL, &value);
	if (err)
		return err;
	if (value == DRM_MAIA_MODEL_NONE)
		return maia_error(-EOPNOTSUPP, "maia_device_model: the device (hardware before "
				  "1.8) has no chip model");
	out.model = maia_model_from_uapi(value);
	snprintf(out.name, sizeof(out.name), "%s", maia_model_name_of(out.model));
	for (i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		uint32_t v32;

		err = maia_query(dev, fields[i].param, &value);
		if (err)
			return err;
		v32 = (uint32_t)value;
		memcpy((char *)&out + fields[i].offset, &v32, sizeof(v32));
	}
	err = maia_query(dev, DRM_MAIA_PARAM_HBM_SIZE, &out.hbm_bytes);
	if (err)
		return err;
	for (i = 0; i < sizeof(out.peak_gflops) / sizeof(out.peak_gflops[0]); i++) {
		struct drm_maia_get_param gp = { .param = DRM_MAIA_PARAM_PEAK_GFLOPS };
		int u = maia_dtype_to_uapi((unsigned int)i);

		if (u < 0)
			continue;
		gp.index = (uint32_t)u;
		err = maia_ioctl(dev, DRM_IOCTL_MAIA_GET_PARAM, &gp);
		if (err)
			return maia_error(err, "maia_device_model: the peak of %s",
					  maia_dtype_name((unsigned int)i));
		out.peak_gflops[i] = (uint32_t)gp.value;
	}
	*m = out;
	return 0;
}
