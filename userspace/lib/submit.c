// SPDX-License-Identifier: MIT
/* Submission, waiting and context status. */
#include <errno.h>
#include <stddef.h>
#include <time.h>

#include "drm/maia_accel.h"
#include "internal.h"

MAIA_EXPORT int maia_submit(struct maia_device *dev, struct maia_cmdbuf *cb,
			    const struct maia_submit_opts *opts, uint64_t *seqno)
{
	maia_error_clear();
	if (!dev || !cb || !seqno)
		return maia_error(-EINVAL, "maia_submit: NULL device, command buffer or seqno");
	if (cb->dev != dev)
		return maia_error(-EINVAL, "maia_submit: the command buffer belongs to another "
				  "device");
	if (!cb->used)
		return maia_error(-EINVAL, "maia_submit: empty command buffer");
	return maia_submit_checked(dev, cb, opts, seqno);
}

int maia_submit_checked(struct maia_device *dev, struct maia_cmdbuf *cb,
			const struct maia_submit_opts *opts, uint64_t *seqno)
{
	int err = maia_userq_submit(dev, cb, opts, seqno);

	if (err <= 0)
		return err ? maia_error(err, "maia_submit: user queue submission failed") : 0;
	return maia_submit_kernel(dev, cb, opts, seqno);
}

int maia_submit_kernel(struct maia_device *dev, struct maia_cmdbuf *cb,
		       const struct maia_submit_opts *opts, uint64_t *seqno)
{
	struct drm_maia_submit s = { .priority = DRM_MAIA_PRIO_NORMAL };
	uint32_t tmp_syncobj = 0;
	int err;

	/* The kernel path: NORMAL jobs after those on the user queue. */
	if (!opts || opts->priority == DRM_MAIA_PRIO_NORMAL) {
		err = maia_userq_drain(dev);
		if (err)
			return maia_error(err, "maia_submit: waiting for the user queue failed");
	}
	s.cmdbuf_handle = cb->bo->handle;
	s.cmdbuf_size = cb->used;
	if (opts) {
		if (opts->priority > DRM_MAIA_PRIO_HIGH)
			return maia_error(-EINVAL, "maia_submit: priority %u is not "
					  "DRM_MAIA_PRIO_LOW/NORMAL/HIGH", opts->priority);
		if (opts->num_in_syncobjs && !opts->in_syncobjs)
			return maia_error(-EINVAL, "maia_submit: num_in_syncobjs without "
					  "in_syncobjs");
		s.priority = opts->priority;
		s.in_syncobjs = (uintptr_t)opts->in_syncobjs;
		s.num_in_syncobjs = opts->num_in_syncobjs;
		s.out_syncobj = opts->out_syncobj;
		if (opts->out_fence_fd) {
			*opts->out_fence_fd = -1;
			/* A fence fd needs a syncobj to carry the job's fence out. */
			if (!s.out_syncobj) {
				err = maia_syncobj_create(dev, &tmp_syncobj);
				if (err)
					return err;
				s.out_syncobj = tmp_syncobj;
			}
		}
	}
	err = maia_ioctl(dev, DRM_IOCTL_MAIA_SUBMIT, &s);
	if (err) {
		maia_syncobj_destroy(dev, tmp_syncobj);
		if (err == -EBADFD)
			return maia_error(err, "maia_submit: this context faulted earlier; open the "
					  "device again");
		return maia_error(err, "maia_submit: DRM_IOCTL_MAIA_SUBMIT failed");
	}
	*seqno = s.seqno;
	if (s.priority == DRM_MAIA_PRIO_NORMAL)
		maia_userq_note_kernel_job(dev, s.seqno);
	if (opts && opts->out_fence_fd)
		err = maia_syncobj_export(dev, s.out_syncobj, opts->out_fence_fd);
	maia_syncobj_destroy(dev, tmp_syncobj);
	return err;
}

/*
 * DRM_MAIA_WAIT with the struct as long as the driver knows it: a driver
 * refuses a longer one (Documentation/uapi.rst), and one before minor 7
 * has no host_time_ns (left 0 here).
 */
int maia_wait_ioctl(struct maia_device *dev, struct drm_maia_wait *w)
{
	size_t size = dev->driver_minor >= 7 ? sizeof(*w) :
		      offsetof(struct drm_maia_wait, host_time_ns);

	w->host_time_ns = 0;
	return maia_ioctl(dev, _IOC(_IOC_READ | _IOC_WRITE, DRM_IOCTL_BASE,
				    DRM_COMMAND_BASE + DRM_MAIA_WAIT, size), w);
}

MAIA_EXPORT int maia_wait(struct maia_device *dev, uint64_t seqno, int64_t timeout_ns,
			  struct maia_job_status *status)
{
	return maia_wait_times(dev, seqno, timeout_ns, status, NULL);
}

MAIA_EXPORT int maia_wait_times(struct maia_device *dev, uint64_t seqno, int64_t timeout_ns,
				struct maia_job_status *status, struct maia_job_times *times)
{
	maia_error_clear();
	if (!dev || timeout_ns < 0)
		return maia_error(-EINVAL, "maia_wait: NULL device or negative timeout");
	return maia_wait_checked(dev, seqno, timeout_ns, status, times);
}

int maia_wait_checked(struct maia_device *dev, uint64_t seqno, int64_t timeout_ns,
		      struct maia_job_status *status, struct maia_job_times *times)
{
	struct drm_maia_wait w = { .seqno = seqno };
	struct timespec now;
	int err;

	if (maia_userq_seqno(seqno)) {
		err = maia_userq_wait(dev, seqno, timeout_ns, status, times);
		if (err && err != -ETIME)
			return maia_error(err, "maia_wait: user-queue job %llu",
					  (unsigned long long)(seqno & ~(1ull << 62)));
		return err;
	}
	/* The kernel takes an absolute deadline so that a restarted wait keeps it. */
	clock_gettime(CLOCK_MONOTONIC, &now);
	w.timeout_ns = (int64_t)now.tv_sec * 1000000000ll + now.tv_nsec;
	w.timeout_ns = timeout_ns > INT64_MAX - w.timeout_ns ? INT64_MAX : w.timeout_ns + timeout_ns;
	err = maia_wait_ioctl(dev, &w);
	if (err && err != -ETIME)
		return maia_error(err, "maia_wait: DRM_IOCTL_MAIA_WAIT for job %llu failed",
				  (unsigned long long)seqno);
	if (!err && status) {
		status->status = w.status;
		status->device_status = maia_device_status_from_uapi(w.device_status);
		status->error_offset = w.error_offset;
	}
	if (!err && times) {
		/* An older driver left what it does not know at 0 (the struct is ours). */
		times->valid = (dev->driver_minor >= 1 ? MAIA_JOB_TIMES_DEVICE : 0) |
			       (dev->driver_minor >= 7 ? MAIA_JOB_TIMES_HOST : 0);
		times->device_ns = w.device_time_ns;
		times->host_ns = w.host_time_ns;
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
		err = -EFAULT;
		break;
	case DRM_MAIA_JOB_TIMEOUT:
		err = -ETIMEDOUT;
		break;
	case DRM_MAIA_JOB_ABORTED:
		err = -ECANCELED;
		break;
	default:
		err = -EIO;
		break;
	}
	return maia_error(err, "maia_run: job %llu: %s, device status %u (%s) at command "
			  "offset %u", (unsigned long long)seqno, maia_job_status_name(st.status),
			  st.device_status, maia_device_status_name(st.device_status),
			  st.error_offset);
}

MAIA_EXPORT int maia_context_status(struct maia_device *dev, struct maia_context_status *st)
{
	struct drm_maia_context_status cs = { 0 };
	int err;

	maia_error_clear();
	if (!dev || !st)
		return maia_error(-EINVAL, "maia_context_status: NULL argument");
	err = maia_ioctl(dev, DRM_IOCTL_MAIA_CONTEXT_STATUS, &cs);
	if (err)
		return maia_error(err, "maia_context_status: DRM_IOCTL_MAIA_CONTEXT_STATUS failed");
	st->faulted = cs.flags & DRM_MAIA_CTX_FAULTED;
	st->fault_addr_known = st->faulted && !(cs.flags & DRM_MAIA_CTX_FAULT_ADDR_UNKNOWN);
	st->asid = cs.asid;
	st->fault_addr = cs.fault_addr;
	st->fault_access = maia_access_from_uapi(cs.fault_access);
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

MAIA_EXPORT const char *maia_device_status_name(uint32_t device_status)
{
	switch (device_status) {
	case MAIA_STATUS_OK:
		return "ok";
	case MAIA_STATUS_BAD_OPCODE:
		return "bad-opcode: the device does not know the command";
	case MAIA_STATUS_BAD_CMD:
		return "bad-cmd: a malformed command (size, flags or fields)";
	case MAIA_STATUS_MMU_FAULT:
		return "mmu-fault: an access outside the context's mappings";
	case MAIA_STATUS_DMA_ERROR:
		return "dma-error: a host memory access failed";
	case MAIA_STATUS_BAD_DESC:
		return "bad-desc: a malformed tensor descriptor";
	case MAIA_STATUS_BAD_CONTEXT:
		return "bad-context: the address space is not set up";
	case MAIA_STATUS_ABORTED:
		return "aborted: stopped by a reset, or never ran";
	case MAIA_STATUS_SEM_TIMEOUT:
		return "sem-timeout: a semaphore wait gave up";
	case MAIA_STATUS_HBM_ECC:
		return "hbm-ecc: a read of HBM with an uncorrectable error";
	case MAIA_STATUS_FABRIC_LINK:
		return "fabric-link: no such port, or its link is down";
	case MAIA_STATUS_FABRIC_KEY:
		return "fabric-key: the peer refused the window key or range";
	case MAIA_STATUS_FABRIC_REMOTE:
		return "fabric-remote: the peer's memory access failed";
	case MAIA_STATUS_FABRIC_TIMEOUT:
		return "fabric-timeout: a collective's peer did not answer in time";
	case MAIA_STATUS_ASID_DENIED:
		return "asid-denied: the entry's address space is not the queue's";
	case MAIA_STATUS_FABRIC_COMM_BUSY:
		return "fabric-comm-busy: another communicator's collective runs";
	case MAIA_STATUS_KERNEL_INVALID:
		return "kernel-invalid: the TVP program failed the device's validation";
	case MAIA_STATUS_KERNEL_WATCHDOG:
		return "kernel-watchdog: a TVP program instance ran past its instruction budget";
	default:
		return "unknown status";
	}
}
