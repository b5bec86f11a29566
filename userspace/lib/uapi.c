/* SPDX-License-Identifier: MIT */
/*
 * The kernel uAPI's own values (DRM_MAIA_*) to the device's (maia/hw/), in
 * which libmaia's API speaks, since its callers build device commands. The
 * kernel translates the other way (driver/maia_uapi.c); each table here is the
 * one place that changes if the two ever number something differently.
 */
#include <stddef.h>

#include <drm/maia_accel.h>
#include <maia/hw/dtype.h>
#include <maia/hw/queue.h>
#include <maia/hw/regs.h>

#include "internal.h"

struct uapi_map {
	uint64_t uapi;
	uint32_t hw;
};

#define N(a) (sizeof(a) / sizeof((a)[0]))

static const struct uapi_map cap_map[] = {
	{ DRM_MAIA_CAP_MMU, MAIA_CAP_MMU },
	{ DRM_MAIA_CAP_SEMAPHORES, MAIA_CAP_SEMAPHORES },
	{ DRM_MAIA_CAP_TENSOR, MAIA_CAP_TENSOR },
	{ DRM_MAIA_CAP_TELEMETRY, MAIA_CAP_TELEMETRY },
	{ DRM_MAIA_CAP_FLR, MAIA_CAP_FLR },
	{ DRM_MAIA_CAP_FABRIC, MAIA_CAP_FABRIC },
};

static const struct uapi_map dtype_map[] = {
	{ DRM_MAIA_DTYPE_FP32, MAIA_DTYPE_FP32 },
	{ DRM_MAIA_DTYPE_FP16, MAIA_DTYPE_FP16 },
	{ DRM_MAIA_DTYPE_BF16, MAIA_DTYPE_BF16 },
	{ DRM_MAIA_DTYPE_FP8_E4M3, MAIA_DTYPE_FP8_E4M3 },
	{ DRM_MAIA_DTYPE_FP8_E5M2, MAIA_DTYPE_FP8_E5M2 },
	{ DRM_MAIA_DTYPE_INT8, MAIA_DTYPE_INT8 },
	{ DRM_MAIA_DTYPE_INT32, MAIA_DTYPE_INT32 },
	{ DRM_MAIA_DTYPE_MXFP8_E4M3, MAIA_DTYPE_MXFP8_E4M3 },
	{ DRM_MAIA_DTYPE_MXFP8_E5M2, MAIA_DTYPE_MXFP8_E5M2 },
	{ DRM_MAIA_DTYPE_MXFP6_E3M2, MAIA_DTYPE_MXFP6_E3M2 },
	{ DRM_MAIA_DTYPE_MXFP6_E2M3, MAIA_DTYPE_MXFP6_E2M3 },
	{ DRM_MAIA_DTYPE_MXFP4_E2M1, MAIA_DTYPE_MXFP4_E2M1 },
	{ DRM_MAIA_DTYPE_MXINT8, MAIA_DTYPE_MXINT8 },
	{ DRM_MAIA_DTYPE_MX9, MAIA_DTYPE_MX9 },
	{ DRM_MAIA_DTYPE_MX6, MAIA_DTYPE_MX6 },
	{ DRM_MAIA_DTYPE_MX4, MAIA_DTYPE_MX4 },
};

static const struct uapi_map status_map[] = {
	{ DRM_MAIA_DEVICE_OK, MAIA_STATUS_OK },
	{ DRM_MAIA_DEVICE_BAD_OPCODE, MAIA_STATUS_BAD_OPCODE },
	{ DRM_MAIA_DEVICE_BAD_CMD, MAIA_STATUS_BAD_CMD },
	{ DRM_MAIA_DEVICE_MMU_FAULT, MAIA_STATUS_MMU_FAULT },
	{ DRM_MAIA_DEVICE_DMA_ERROR, MAIA_STATUS_DMA_ERROR },
	{ DRM_MAIA_DEVICE_BAD_DESC, MAIA_STATUS_BAD_DESC },
	{ DRM_MAIA_DEVICE_BAD_CONTEXT, MAIA_STATUS_BAD_CONTEXT },
	{ DRM_MAIA_DEVICE_ABORTED, MAIA_STATUS_ABORTED },
	{ DRM_MAIA_DEVICE_SEM_TIMEOUT, MAIA_STATUS_SEM_TIMEOUT },
	{ DRM_MAIA_DEVICE_HBM_ECC, MAIA_STATUS_HBM_ECC },
	{ DRM_MAIA_DEVICE_FABRIC_LINK, MAIA_STATUS_FABRIC_LINK },
	{ DRM_MAIA_DEVICE_FABRIC_KEY, MAIA_STATUS_FABRIC_KEY },
	{ DRM_MAIA_DEVICE_FABRIC_REMOTE, MAIA_STATUS_FABRIC_REMOTE },
	{ DRM_MAIA_DEVICE_FABRIC_TIMEOUT, MAIA_STATUS_FABRIC_TIMEOUT },
	{ DRM_MAIA_DEVICE_ASID_DENIED, MAIA_STATUS_ASID_DENIED },
	{ DRM_MAIA_DEVICE_FABRIC_COMM_BUSY, MAIA_STATUS_FABRIC_COMM_BUSY },
};

uint32_t maia_caps_from_uapi(uint64_t caps)
{
	uint32_t hw = 0;
	size_t i;

	for (i = 0; i < N(cap_map); i++)
		if (caps & cap_map[i].uapi)
			hw |= cap_map[i].hw;
	return hw;
}

uint32_t maia_dtypes_from_uapi(uint64_t dtypes)
{
	uint32_t hw = 0;
	size_t i;

	for (i = 0; i < N(dtype_map); i++)
		if (dtypes & (1ull << dtype_map[i].uapi))
			hw |= 1u << dtype_map[i].hw;
	return hw;
}

/* A status the library does not know stays as the kernel gave it. */
uint32_t maia_device_status_from_uapi(uint32_t status)
{
	size_t i;

	for (i = 0; i < N(status_map); i++)
		if (status == status_map[i].uapi)
			return status_map[i].hw;
	return status;
}

uint32_t maia_access_from_uapi(uint32_t access)
{
	switch (access) {
	case DRM_MAIA_ACCESS_READ:
		return MAIA_ACCESS_READ;
	case DRM_MAIA_ACCESS_WRITE:
		return MAIA_ACCESS_WRITE;
	default:
		return 0;
	}
}
