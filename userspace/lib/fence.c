// SPDX-License-Identifier: MIT
/*
 * Completion fences as file descriptors: DRM syncobjs and sync_files.
 *
 * A job's fence reaches userspace through a syncobj (drm_maia_submit's
 * out_syncobj); exporting it as a sync_file gives an fd that poll() reports
 * readable once the job is done, which an event loop can wait on next to
 * sockets, and which other drivers accept as an in-fence.
 */
#include <errno.h>
#include <poll.h>
#include <time.h>

#include <xf86drm.h>

#include "internal.h"

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

MAIA_EXPORT int maia_fence_wait(int fence_fd, int64_t timeout_ns)
{
	int64_t deadline = timeout_ns < 0 ? -1 : now_ns() + timeout_ns;
	struct pollfd pfd = { .fd = fence_fd, .events = POLLIN };

	maia_error_clear();
	if (fence_fd < 0)
		return maia_error(-EINVAL, "maia_fence_wait: bad fd %d", fence_fd);
	for (;;) {
		int64_t left = deadline < 0 ? -1 : deadline - now_ns();
		/* Round up so a short timeout still waits, and never busy-spins. */
		int ms = left < 0 ? (deadline < 0 ? -1 : 0) :
			 left > 1000000000ll * 3600 ? 3600000 : (int)((left + 999999) / 1000000);
		int ret = poll(&pfd, 1, ms);

		if (ret > 0) {
			if (pfd.revents & (POLLERR | POLLNVAL))
				return maia_error(-EINVAL, "maia_fence_wait: fd %d is not a fence",
						  fence_fd);
			return 0;
		}
		if (ret < 0 && errno != EINTR)
			return maia_error(-errno, "maia_fence_wait: poll failed");
		if (ret == 0 && deadline >= 0 && now_ns() >= deadline)
			return -ETIME;
	}
}

MAIA_EXPORT int maia_syncobj_create(struct maia_device *dev, uint32_t *handle)
{
	maia_error_clear();
	if (!dev || !handle)
		return maia_error(-EINVAL, "maia_syncobj_create: NULL argument");
	if (drmSyncobjCreate(dev->fd, 0, handle))
		return maia_error(-errno, "maia_syncobj_create: DRM_IOCTL_SYNCOBJ_CREATE failed");
	return 0;
}

MAIA_EXPORT void maia_syncobj_destroy(struct maia_device *dev, uint32_t handle)
{
	if (dev && handle)
		drmSyncobjDestroy(dev->fd, handle);
}

MAIA_EXPORT int maia_syncobj_export(struct maia_device *dev, uint32_t handle, int *fence_fd)
{
	maia_error_clear();
	if (!dev || !handle || !fence_fd)
		return maia_error(-EINVAL, "maia_syncobj_export: NULL argument or handle 0");
	/* DRM_IOCTL_SYNCOBJ_HANDLE_TO_FD with EXPORT_SYNC_FILE. */
	if (drmSyncobjExportSyncFile(dev->fd, handle, fence_fd))
		return maia_error(-errno, "maia_syncobj_export: syncobj %u has no fence to export "
				  "(nothing submitted to it yet?)", handle);
	return 0;
}

MAIA_EXPORT int maia_syncobj_wait(struct maia_device *dev, uint32_t handle, int64_t timeout_ns)
{
	int64_t deadline;

	maia_error_clear();
	if (!dev || !handle)
		return maia_error(-EINVAL, "maia_syncobj_wait: NULL device or handle 0");
	deadline = timeout_ns < 0 || timeout_ns > INT64_MAX - now_ns() ? INT64_MAX :
		   now_ns() + timeout_ns;
	if (drmSyncobjWait(dev->fd, &handle, 1, deadline,
			   DRM_SYNCOBJ_WAIT_FLAGS_WAIT_FOR_SUBMIT, NULL))
		return errno == ETIME ? -ETIME :
		       maia_error(-errno, "maia_syncobj_wait: DRM_IOCTL_SYNCOBJ_WAIT failed");
	return 0;
}
