/* SPDX-License-Identifier: MIT */
/*
 * The kernel uAPI's own values (DRM_MAIA_*) to the device's (maia/hw/), in
 * which libmaia's API speaks, since its callers build device commands. The
 * kernel translates the other way (driver/maia_uapi.c); both use the one
 * table of pairs per kind in uapi/drm/maia_accel_hw.h.
 */
#include <stddef.h>

#include <drm/maia_accel_hw.h>

#include "internal.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* The device value of uAPI value uapi in map, or unknown. */
static uint32_t lookup(const struct maia_accel_hw_pair *map, size_t n, uint64_t uapi,
		       uint32_t unknown)
{
	for (size_t i = 0; i < n; i++)
		if (map[i].uapi == uapi)
			return map[i].hw;
	return unknown;
}

uint32_t maia_caps_from_uapi(uint64_t caps)
{
	uint32_t hw = 0;
	size_t i;

	for (i = 0; i < N(maia_accel_hw_caps); i++)
		if (caps & maia_accel_hw_caps[i].uapi)
			hw |= maia_accel_hw_caps[i].hw;
	return hw;
}

uint32_t maia_dtypes_from_uapi(uint64_t dtypes)
{
	uint32_t hw = 0;
	size_t i;

	for (i = 0; i < N(maia_accel_hw_dtypes); i++)
		if (dtypes & (1ull << maia_accel_hw_dtypes[i].uapi))
			hw |= 1u << maia_accel_hw_dtypes[i].hw;
	return hw;
}

/* A status the library does not know stays as the kernel gave it. */
uint32_t maia_device_status_from_uapi(uint32_t status)
{
	return lookup(maia_accel_hw_statuses, N(maia_accel_hw_statuses), status, status);
}

uint32_t maia_access_from_uapi(uint32_t access)
{
	return lookup(maia_accel_hw_accesses, N(maia_accel_hw_accesses), access, 0);
}

uint32_t maia_model_from_uapi(uint64_t model)
{
	return lookup(maia_accel_hw_models, N(maia_accel_hw_models), model, 0);
}

/* The uAPI number of data type hw (MAIA_DTYPE_*), or -1. */
int maia_dtype_to_uapi(unsigned int hw)
{
	for (size_t i = 0; i < N(maia_accel_hw_dtypes); i++)
		if (maia_accel_hw_dtypes[i].hw == hw)
			return (int)maia_accel_hw_dtypes[i].uapi;
	return -1;
}
