// SPDX-License-Identifier: MIT
/* Submission, waiting and context status. */
#include <errno.h>
#include <time.h>

#include "drm/maia_accel.h"
#include "internal.h"

MAIA_EXPORT int maia_submit(struct maia_device *dev, struct maia_cmdbuf *cb,
			    const struct maia_submit_opts *opts, uint64_t *seqno)
{
	struct drm_maia_submit s = { .priority = DRM_MAIA_PRIO_NORMAL };
	int err;

	if (!dev || !cb || !seqno || !cb->used)
		return -EINVAL;
	s.cmdbuf_handle = cb->bo->handle;
	s.cmdbuf_size = cb->used;
	if (opts) {
		s.priority = opts->priority;
		s.in_syncobjs = (uintptr_t)opts->in_syncobjs;
		s.num_in_syncobjs = opts->num_in_syncobjs;
		s.out_syncobj = opts->out_syncobj;
	}
	err = maia_ioctl(dev, DRM_IOCTL_MAIA_SUBMIT, &s);
	if (!err)
		*seqno = s.seqno;
	return err;
}

MAIA_EXPORT int maia_wait(struct maia_device *dev, uint64_t seqno, int64_t timeout_ns,
			  struct maia_job_status *status)
{
	struct drm_maia_wait w = { .seqno = seqno };
	struct timespec now;
	int err;

	if (!dev || timeout_ns < 0)
		return -EINVAL;
	/* The kernel takes an absolute deadline so that a restarted wait keeps it. */
	clock_gettime(CLOCK_MONOTONIC, &now);
	w.timeout_ns = (int64_t)now.tv_sec * 1000000000ll + now.tv_nsec;
	w.timeout_ns = timeout_ns > INT64_MAX - w.timeout_ns ? INT64_MAX : w.timeout_ns + timeout_ns;
	err = maia_ioctl(dev, DRM_IOCTL_MAIA_WAIT, &w);
	if (!err && status) {
		status->status = w.status;
		status->device_status = w.device_status;
		status->error_offset = w.error_offset;
	}
	return err;
}

MAIA_EXPORT int maia_run(struct maia_device *dev, struct maia_cmdbuf *cb, int64_t timeout_ns,
			 struct maia_job_status *status)
{
	struct maia_job_status st;
	uint64_t seqno;
	int err;

	err = maia_submit(dev, cb, NULL, &seqno);
	if (err)
		return err;
	err = maia_wait(dev, seqno, timeout_ns, &st);
	if (err)
		return err;
	if (status)
		*status = st;
	switch (st.status) {
	case DRM_MAIA_JOB_OK:
		return 0;
	case DRM_MAIA_JOB_FAULT:
		return -EFAULT;
	case DRM_MAIA_JOB_TIMEOUT:
		return -ETIMEDOUT;
	case DRM_MAIA_JOB_ABORTED:
		return -ECANCELED;
	default:
		return -EIO;
	}
}

MAIA_EXPORT int maia_context_status(struct maia_device *dev, struct maia_context_status *st)
{
	struct drm_maia_context_status cs = { 0 };
	int err;

	if (!dev || !st)
		return -EINVAL;
	err = maia_ioctl(dev, DRM_IOCTL_MAIA_CONTEXT_STATUS, &cs);
	if (err)
		return err;
	st->faulted = cs.flags & DRM_MAIA_CTX_FAULTED;
	st->asid = cs.asid;
	st->fault_addr = cs.fault_addr;
	st->fault_access = cs.fault_access;
	st->device_resets = cs.device_resets;
	return 0;
}

MAIA_EXPORT const char *maia_job_status_name(uint32_t status)
{
	switch (status) {
	case DRM_MAIA_JOB_OK:
		return "ok";
	case DRM_MAIA_JOB_ERROR:
		return "error";
	case DRM_MAIA_JOB_FAULT:
		return "mmu-fault";
	case DRM_MAIA_JOB_TIMEOUT:
		return "timeout";
	case DRM_MAIA_JOB_ABORTED:
		return "aborted";
	default:
		return "unknown";
	}
}
