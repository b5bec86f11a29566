// SPDX-License-Identifier: GPL-2.0-only
/*
 * Maia accelerator driver: hardware values to uAPI values.
 *
 * The uAPI (uapi/drm/maia_accel.h) defines its own capability, data type,
 * device status and access codes. Today they have the numbers the device
 * uses; the tables below are the one place that would change if the device
 * numbered them differently. A hardware value without a uAPI meaning is
 * dropped (capabilities, data types) or reported as unknown (statuses).
 */

#include <drm/maia_accel.h>
#include <linux/bits.h>
#include <linux/kernel.h>

#include <maia/hw/dtype.h>
#include <maia/hw/queue.h>
#include <maia/hw/regs.h>

#include "maia_uapi.h"

struct maia_uapi_map {
	u32 hw;
	u64 uapi;
};

static const struct maia_uapi_map maia_uapi_cap_map[] = {
	{ MAIA_CAP_MMU, DRM_MAIA_CAP_MMU },
	{ MAIA_CAP_SEMAPHORES, DRM_MAIA_CAP_SEMAPHORES },
	{ MAIA_CAP_TENSOR, DRM_MAIA_CAP_TENSOR },
	{ MAIA_CAP_TELEMETRY, DRM_MAIA_CAP_TELEMETRY },
	{ MAIA_CAP_FLR, DRM_MAIA_CAP_FLR },
	{ MAIA_CAP_FABRIC, DRM_MAIA_CAP_FABRIC },
};

static const struct maia_uapi_map maia_uapi_dtype_map[] = {
	{ MAIA_DTYPE_FP32, DRM_MAIA_DTYPE_FP32 },
	{ MAIA_DTYPE_FP16, DRM_MAIA_DTYPE_FP16 },
	{ MAIA_DTYPE_BF16, DRM_MAIA_DTYPE_BF16 },
	{ MAIA_DTYPE_FP8_E4M3, DRM_MAIA_DTYPE_FP8_E4M3 },
	{ MAIA_DTYPE_FP8_E5M2, DRM_MAIA_DTYPE_FP8_E5M2 },
	{ MAIA_DTYPE_INT8, DRM_MAIA_DTYPE_INT8 },
	{ MAIA_DTYPE_INT32, DRM_MAIA_DTYPE_INT32 },
	{ MAIA_DTYPE_MXFP8_E4M3, DRM_MAIA_DTYPE_MXFP8_E4M3 },
	{ MAIA_DTYPE_MXFP8_E5M2, DRM_MAIA_DTYPE_MXFP8_E5M2 },
	{ MAIA_DTYPE_MXFP6_E3M2, DRM_MAIA_DTYPE_MXFP6_E3M2 },
	{ MAIA_DTYPE_MXFP6_E2M3, DRM_MAIA_DTYPE_MXFP6_E2M3 },
	{ MAIA_DTYPE_MXFP4_E2M1, DRM_MAIA_DTYPE_MXFP4_E2M1 },
	{ MAIA_DTYPE_MXINT8, DRM_MAIA_DTYPE_MXINT8 },
	{ MAIA_DTYPE_MX9, DRM_MAIA_DTYPE_MX9 },
	{ MAIA_DTYPE_MX6, DRM_MAIA_DTYPE_MX6 },
	{ MAIA_DTYPE_MX4, DRM_MAIA_DTYPE_MX4 },
};

static const struct maia_uapi_map maia_uapi_status_map[] = {
	{ MAIA_STATUS_OK, DRM_MAIA_DEVICE_OK },
	{ MAIA_STATUS_BAD_OPCODE, DRM_MAIA_DEVICE_BAD_OPCODE },
	{ MAIA_STATUS_BAD_CMD, DRM_MAIA_DEVICE_BAD_CMD },
	{ MAIA_STATUS_MMU_FAULT, DRM_MAIA_DEVICE_MMU_FAULT },
	{ MAIA_STATUS_DMA_ERROR, DRM_MAIA_DEVICE_DMA_ERROR },
	{ MAIA_STATUS_BAD_DESC, DRM_MAIA_DEVICE_BAD_DESC },
	{ MAIA_STATUS_BAD_CONTEXT, DRM_MAIA_DEVICE_BAD_CONTEXT },
	{ MAIA_STATUS_ABORTED, DRM_MAIA_DEVICE_ABORTED },
	{ MAIA_STATUS_SEM_TIMEOUT, DRM_MAIA_DEVICE_SEM_TIMEOUT },
	{ MAIA_STATUS_HBM_ECC, DRM_MAIA_DEVICE_HBM_ECC },
	{ MAIA_STATUS_FABRIC_LINK, DRM_MAIA_DEVICE_FABRIC_LINK },
	{ MAIA_STATUS_FABRIC_KEY, DRM_MAIA_DEVICE_FABRIC_KEY },
	{ MAIA_STATUS_FABRIC_REMOTE, DRM_MAIA_DEVICE_FABRIC_REMOTE },
	{ MAIA_STATUS_FABRIC_TIMEOUT, DRM_MAIA_DEVICE_FABRIC_TIMEOUT },
	{ MAIA_STATUS_ASID_DENIED, DRM_MAIA_DEVICE_ASID_DENIED },
	{ MAIA_STATUS_FABRIC_COMM_BUSY, DRM_MAIA_DEVICE_FABRIC_COMM_BUSY },
};

/* Capability bits: the hardware's mask in, a mask of DRM_MAIA_CAP_* out. */
u64 maia_uapi_caps(u32 hw_caps)
{
	u64 caps = 0;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(maia_uapi_cap_map); i++)
		if (hw_caps & maia_uapi_cap_map[i].hw)
			caps |= maia_uapi_cap_map[i].uapi;
	return caps;
}

/* Data type bits: 1 << MAIA_DTYPE_* in, 1 << DRM_MAIA_DTYPE_* out. */
u64 maia_uapi_dtypes(u32 hw_dtypes)
{
	u64 dtypes = 0;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(maia_uapi_dtype_map); i++)
		if (hw_dtypes & BIT(maia_uapi_dtype_map[i].hw))
			dtypes |= BIT_ULL(maia_uapi_dtype_map[i].uapi);
	return dtypes;
}

u32 maia_uapi_device_status(u32 hw_status)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(maia_uapi_status_map); i++)
		if (hw_status == maia_uapi_status_map[i].hw)
			return maia_uapi_status_map[i].uapi;
	return DRM_MAIA_DEVICE_UNKNOWN;
}

/* MAIA_ACCESS_* to DRM_MAIA_ACCESS_*; 0 when the device did not say. */
u32 maia_uapi_access(u32 hw_access)
{
	switch (hw_access) {
	case MAIA_ACCESS_READ:
		return DRM_MAIA_ACCESS_READ;
	case MAIA_ACCESS_WRITE:
		return DRM_MAIA_ACCESS_WRITE;
	default:
		return 0;
	}
}
