// SPDX-License-Identifier: MIT
/* The one place libmaia enters the kernel: drmIoctl plus optional tracing. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <time.h>

#include <xf86drm.h>

#include "drm/maia_accel.h"
#include "internal.h"

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Names for the trace; the DRM core ioctls libmaia uses are named by libdrm. */
static const char *ioctl_name(unsigned long request)
{
	static const char *const maia[] = {
		[DRM_MAIA_GET_PARAM] = "MAIA_GET_PARAM", [DRM_MAIA_PING] = "MAIA_PING",
		[DRM_MAIA_BO_CREATE] = "MAIA_BO_CREATE", [DRM_MAIA_BO_INFO] = "MAIA_BO_INFO",
		[DRM_MAIA_VM_BIND] = "MAIA_VM_BIND", [DRM_MAIA_SUBMIT] = "MAIA_SUBMIT",
		[DRM_MAIA_WAIT] = "MAIA_WAIT", [DRM_MAIA_CONTEXT_STATUS] = "MAIA_CONTEXT_STATUS",
	};
	unsigned long nr = _IOC_NR(request);

	if (nr >= DRM_COMMAND_BASE && nr - DRM_COMMAND_BASE < sizeof(maia) / sizeof(maia[0]) &&
	    maia[nr - DRM_COMMAND_BASE])
		return maia[nr - DRM_COMMAND_BASE];
	if (request == DRM_IOCTL_GEM_CLOSE)
		return "GEM_CLOSE";
	return "drm";
}

int maia_ioctl(struct maia_device *dev, unsigned long request, void *arg)
{
	uint64_t start = maia_trace_enabled() ? now_ns() : 0;
	/* drmIoctl restarts on EINTR and EAGAIN, as libdrm's callers expect. */
	int ret = drmIoctl(dev->fd, request, arg);
	int err = ret ? -errno : 0;

	if (maia_trace_enabled())
		fprintf(stderr, "maia-trace: accel%d %s (nr 0x%02lx, %lu bytes) -> %d (%s) %.1f us\n",
			dev->index, ioctl_name(request), (unsigned long)_IOC_NR(request),
			(unsigned long)_IOC_SIZE(request), err,
			err ? maia_strerror(err) : "ok", (now_ns() - start) / 1e3);
	return err;
}
