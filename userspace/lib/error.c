// SPDX-License-Identifier: MIT
/* Error text, the per-thread last-error message, and data-type names. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "maia/hw/dtype.h"

#include "internal.h"

/* One message per thread, so concurrent callers never see each other's. */
static __thread char last_error[256];

static int env_flag(const char *name)
{
	const char *env = getenv(name);

	return env && *env && strcmp(env, "0") != 0;
}

int maia_trace_enabled(void)
{
	static int enabled = -1;

	if (enabled < 0)
		enabled = env_flag("MAIA_TRACE");
	return enabled;
}

int maia_debug_enabled(void)
{
	static int enabled = -1;

	if (enabled < 0)
		enabled = env_flag("MAIA_DEBUG") || maia_trace_enabled();
	return enabled;
}

int maia_error(int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(last_error, sizeof(last_error), fmt, ap);
	va_end(ap);
	if (maia_debug_enabled())
		fprintf(stderr, "libmaia: %s (%s)\n", last_error, maia_strerror(err));
	return err;
}

void maia_error_clear(void)
{
	last_error[0] = '\0';
}

MAIA_EXPORT const char *maia_last_error(void)
{
	return last_error;
}

MAIA_EXPORT const char *maia_strerror(int err)
{
	switch (err) {
	case 0:
		return "success";
	case -ENODEV:
		return "no such Maia device (or it was removed)";
	case -EINVAL:
		return "invalid argument";
	case -ETIME:
		return "wait timed out (the job is still running)";
	case -ETIMEDOUT:
		return "the job hung and the device was reset";
	case -EFAULT:
		return "the job touched an unmapped device address (context faulted)";
	case -EBADFD:
		return "the context faulted earlier; open the device again";
	case -ECANCELED:
		return "the job was lost to a device reset caused by another job";
	case -EIO:
		return "the device rejected a command";
	case -ENOSPC:
		return "no space left (command buffer or device address space full)";
	case -ENOMEM:
		return "out of memory";
	case -EACCES:
		return "permission denied opening the device (see the udev rule in userspace/udev)";
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
