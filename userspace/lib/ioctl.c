// SPDX-License-Identifier: MIT
/* The one place libmaia enters the kernel: drmIoctl plus optional tracing. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <time.h>

#include <xf86drm.h>

#include "internal.h"

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int maia_ioctl(struct maia_device *dev, unsigned long request, void *arg)
{
	uint64_t start = maia_trace_enabled() ? now_ns() : 0;
	/* drmIoctl restarts on EINTR and EAGAIN, as libdrm's callers expect. */
	int ret = drmIoctl(dev->fd, request, arg);
	int err = ret ? -errno : 0;

	if (maia_trace_enabled())
		fprintf(stderr, "maia-trace: accel%d ioctl nr=0x%02lx size=%lu -> %d (%s) %.1f us\n",
			dev->index, (unsigned long)_IOC_NR(request),
			(unsigned long)_IOC_SIZE(request), err,
			err ? maia_strerror(err) : "ok", (now_ns() - start) / 1e3);
	return err;
}
