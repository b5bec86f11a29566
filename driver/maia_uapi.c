// SPDX-License-Identifier: GPL-2.0-only
/*
 * Maia accelerator driver: hardware values to uAPI values.
 *
 * The uAPI (uapi/drm/maia_accel.h) defines its own capability, data type,
 * device status and access codes. Today they have the numbers the device
 * uses; the pairs are listed once, in uapi/drm/maia_accel_hw.h, for this
 * file and libmaia's inverse. A hardware value without a uAPI meaning is
 * dropped (capabilities, data types) or reported as unknown (statuses).
 */

#include <drm/maia_accel_hw.h>
#include <linux/bits.h>
#include <linux/kernel.h>

#include "maia_uapi.h"

/* The uAPI value of hardware value @hw in @map, or @unknown. */
static u64 maia_uapi_lookup(const struct maia_accel_hw_pair *map, unsigned int n, u32 hw,
			    u64 unknown)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		if (map[i].hw == hw)
			return map[i].uapi;
	return unknown;
}

/* Capability bits: the hardware's mask in, a mask of DRM_MAIA_CAP_* out. */
u64 maia_uapi_caps(u32 hw_caps)
{
	u64 caps = 0;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(maia_accel_hw_caps); i++)
		if (hw_caps & maia_accel_hw_caps[i].hw)
			caps |= maia_accel_hw_caps[i].uapi;
	return caps;
}

/* Data type bits: 1 << MAIA_DTYPE_* in, 1 << DRM_MAIA_DTYPE_* out. */
u64 maia_uapi_dtypes(u32 hw_dtypes)
{
	u64 dtypes = 0;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(maia_accel_hw_dtypes); i++)
		if (hw_dtypes & BIT(maia_accel_hw_dtypes[i].hw))
			dtypes |= BIT_ULL(maia_accel_hw_dtypes[i].uapi);
	return dtypes;
}

/* MAIA_MODEL_* to DRM_MAIA_MODEL_*; DRM_MAIA_MODEL_NONE for one the uAPI does not know. */
u32 maia_uapi_model(u32 hw_model)
{
	return maia_uapi_lookup(maia_accel_hw_models, ARRAY_SIZE(maia_accel_hw_models),
				hw_model, DRM_MAIA_MODEL_NONE);
}

/* DRM_MAIA_DTYPE_* to MAIA_DTYPE_*: false for a number that is no uAPI data type. */
bool maia_uapi_dtype_to_hw(u32 uapi_dtype, u32 *hw_dtype)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(maia_accel_hw_dtypes); i++) {
		if (maia_accel_hw_dtypes[i].uapi == uapi_dtype) {
			*hw_dtype = maia_accel_hw_dtypes[i].hw;
			return true;
		}
	}
	return false;
}

u32 maia_uapi_device_status(u32 hw_status)
{
	return maia_uapi_lookup(maia_accel_hw_statuses, ARRAY_SIZE(maia_accel_hw_statuses),
				hw_status, DRM_MAIA_DEVICE_UNKNOWN);
}

/* MAIA_ACCESS_* to DRM_MAIA_ACCESS_*; 0 when the device did not say. */
u32 maia_uapi_access(u32 hw_access)
{
	return maia_uapi_lookup(maia_accel_hw_accesses, ARRAY_SIZE(maia_accel_hw_accesses),
				hw_access, 0);
}

/* DRM_MAIA_JOB_* of a job that ended on a command with @hw_status. */
u32 maia_uapi_job_status(u32 hw_status)
{
	return maia_accel_job_status(hw_status);
}
