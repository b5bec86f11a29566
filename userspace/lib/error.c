// SPDX-License-Identifier: MIT
/* Error text and data-type names. */
#include <errno.h>
#include <string.h>

#include "maia/hw/dtype.h"

#include "internal.h"

MAIA_EXPORT const char *maia_strerror(int err)
{
	switch (err) {
	case 0:
		return "success";
	case -ENODEV:
		return "no such Maia device (or it was removed)";
	case -EINVAL:
		return "invalid argument";
	case -ETIMEDOUT:
		return "timed out waiting for the device";
	case -ENOMEM:
		return "out of memory";
	case -EACCES:
		return "permission denied opening the device (see the udev rule in userspace/udev)";
	case -EIO:
		return "device error";
	default:
		return err < 0 ? strerror(-err) : "unknown error";
	}
}

static const char *const dtype_names[MAIA_DTYPE_COUNT] = {
	[MAIA_DTYPE_FP32] = "fp32",
	[MAIA_DTYPE_FP16] = "fp16",
	[MAIA_DTYPE_BF16] = "bf16",
	[MAIA_DTYPE_FP8_E4M3] = "fp8_e4m3",
	[MAIA_DTYPE_FP8_E5M2] = "fp8_e5m2",
	[MAIA_DTYPE_INT8] = "int8",
	[MAIA_DTYPE_INT32] = "int32",
	[MAIA_DTYPE_MXFP8_E4M3] = "mxfp8_e4m3",
	[MAIA_DTYPE_MXFP8_E5M2] = "mxfp8_e5m2",
	[MAIA_DTYPE_MXFP6_E3M2] = "mxfp6_e3m2",
	[MAIA_DTYPE_MXFP6_E2M3] = "mxfp6_e2m3",
	[MAIA_DTYPE_MXFP4_E2M1] = "mxfp4_e2m1",
	[MAIA_DTYPE_MXINT8] = "mxint8",
	[MAIA_DTYPE_MX9] = "mx9",
	[MAIA_DTYPE_MX6] = "mx6",
	[MAIA_DTYPE_MX4] = "mx4",
};

MAIA_EXPORT const char *maia_dtype_name(unsigned int dtype)
{
	return dtype < MAIA_DTYPE_COUNT ? dtype_names[dtype] : NULL;
}
