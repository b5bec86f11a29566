// SPDX-License-Identifier: MIT
/*
 * Submission through a user queue (driver 1.3): the ring, the completion
 * array and the doorbell page are mapped into the process, so maia_submit()
 * writes a device entry and rings the doorbell with no system call, and
 * maia_wait() reads the completion array, sleeping in DRM_MAIA_USERQ_WAIT
 * only when the job is not done yet.
 *
 * Used by maia_submit() for a job without dependencies, fences or a
 * priority other than NORMAL, when the driver has user queues, unless
 * MAIA_USERQ=0 or maia_device_set_submit_path(MAIA_SUBMIT_KERNEL). The
 * kernel path and this one keep the NORMAL jobs of a device in submission
 * order: switching paths first waits for the other path's jobs.
 *
 * Job results are kept for the last LIBMAIA_USERQ_HISTORY jobs, as the
 * kernel keeps its own. When the kernel stops the queue (a job faulted or
 * hung, a device reset, a queue error), the jobs that have no completion
 * end as the kernel path would end them (TIMEOUT for the hung one, ABORTED
 * for the others), the queue is destroyed and the next submit makes a new
 * one, which fails with -EBADFD, as SUBMIT does, if the context faulted.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "drm/maia_accel.h"
#include "internal.h"
#include "maia/hw/queue.h"

/* User-queue seqnos carry this bit; the kernel's never reach it. */
#define USERQ_SEQ_TAG		(1ull << 62)

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

bool maia_userq_seqno(uint64_t seqno)
{
	return seqno & USERQ_SEQ_TAG;
}

static void unmap_queue(struct maia_userq *uq)
{
	if (uq->sq)
		munmap(uq->sq, 4096);
	if (uq->cq)
		munmap((void *)uq->cq, 4096);
	if (uq->doorbell)
		munmap((void *)uq->doorbell, 4096);
	uq->sq = NULL;
	uq->cq = NULL;
	uq->doorbell = NULL;
}

static void destroy_queue(struct maia_device *dev)
{
	struct maia_userq *uq = &dev->uq;
	struct drm_maia_userq_destroy d = { .queue_id = uq->id };

	if (!uq->created)
		return;
	unmap_queue(uq);
	maia_ioctl(dev, DRM_IOCTL_MAIA_USERQ_DESTROY, &d);
	uq->created = false;
}

static void *map_page(struct maia_device *dev, uint64_t offset)
{
	void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, dev->fd, (off_t)offset);

	return p == MAP_FAILED ? NULL : p;
}

/* Whether the driver offers user queues; decided once per device. */
static bool userq_available(struct maia_device *dev)
{
	struct maia_userq *uq = &dev->uq;
	const char *env;
	uint64_t n = 0;

	if (uq->mode == MAIA_USERQ_UNKNOWN) {
		env = getenv("MAIA_USERQ");
		uq->mode = MAIA_USERQ_OFF;
		if ((!env || strcmp(env, "0")) && dev->driver_minor >= 3 &&
		    !maia_query(dev, DRM_MAIA_PARAM_USER_QUEUES, &n) && n)
			uq->mode = MAIA_USERQ_ON;
	}
	return uq->mode == MAIA_USERQ_ON && dev->submit_path == MAIA_SUBMIT_AUTO;
}

static int create_queue(struct maia_device *dev)
{
	struct maia_userq *uq = &dev->uq;
	struct drm_maia_userq_create c = { .priority = DRM_MAIA_PRIO_NORMAL };
	struct drm_maia_context_status cs = { 0 };
	int err;

	err = maia_ioctl(dev, DRM_IOCTL_MAIA_CONTEXT_STATUS, &cs);
	if (err)
		return err;
	err = maia_ioctl(dev, DRM_IOCTL_MAIA_USERQ_CREATE, &c);
	if (err)
		return err;
	uq->created = true;
	uq->id = c.queue_id;
	uq->entries = c.entries;
	uq->asid = (uint16_t)cs.asid;
	uq->written = 0;
	uq->reaped = 0;
	uq->sq = map_page(dev, c.sq_offset);
	uq->cq = map_page(dev, c.cq_offset);
	uq->doorbell = map_page(dev, c.doorbell_offset);
	if (!uq->sq || !uq->cq || !uq->doorbell) {
		err = -errno;
		destroy_queue(dev);
		return err;
	}
	return 0;
}

static struct maia_userq_result *result_of(struct maia_userq *uq, uint64_t seq)
{
	return &uq->results[seq % LIBMAIA_USERQ_HISTORY];
}

static void record(struct maia_userq *uq, uint64_t seq, uint32_t status, uint32_t device_status,
		   uint32_t error_offset)
{
	struct maia_userq_result *r = result_of(uq, seq);

	r->seq = seq;
	r->done = true;
	r->st.status = status;
	r->st.device_status = device_status;
	r->st.error_offset = error_offset;
}

/* The device's completion entry as a job status (maia_job_status). */
static uint32_t job_status_of(uint32_t hw_status)
{
	switch (hw_status) {
	case MAIA_STATUS_OK:
		return DRM_MAIA_JOB_OK;
	case MAIA_STATUS_MMU_FAULT:
		return DRM_MAIA_JOB_FAULT;
	case MAIA_STATUS_ABORTED:
		return DRM_MAIA_JOB_ABORTED;
	default:
		return DRM_MAIA_JOB_ERROR;
	}
}

/*
 * Moves completions, in order, from the array to the results. Returns
 * whether one of them was an MMU fault.
 */
static bool reap(struct maia_device *dev)
{
	struct maia_userq *uq = &dev->uq;
	bool fault = false;

	while (uq->reaped < uq->written) {
		uint32_t slot = (uint32_t)(uq->reaped % uq->entries);
		volatile struct maia_cq_entry *cqe = &uq->cq[slot];
		uint32_t status;

		if (!(atomic_load_explicit((_Atomic uint32_t *)&cqe->flags, memory_order_acquire) &
		      MAIA_CQE_VALID))
			break;
		status = cqe->status;
		fault |= status == MAIA_STATUS_MMU_FAULT;
		record(uq, uq->base + uq->reaped, job_status_of(status), status, cqe->error_offset);
		/* The protocol: the host clears VALID before the slot is reused. */
		cqe->flags = 0;
		uq->reaped++;
	}
	return fault;
}

/*
 * The kernel stopped the queue (DRM_MAIA_USERQ_*): jobs without a
 * completion end as the kernel path ends them, and the queue goes.
 */
static void retire_stopped(struct maia_device *dev, uint32_t state)
{
	struct maia_userq *uq = &dev->uq;
	bool first = true;

	reap(dev);
	for (; uq->reaped < uq->written; uq->reaped++) {
		uint32_t st = state == DRM_MAIA_USERQ_HUNG && first ? DRM_MAIA_JOB_TIMEOUT :
			      DRM_MAIA_JOB_ABORTED;

		record(uq, uq->base + uq->reaped, st, MAIA_STATUS_ABORTED, 0);
		first = false;
	}
	uq->base += uq->written;
	uq->written = uq->reaped = 0;
	destroy_queue(dev);
}

/*
 * Sleeps until the queue completed its first @count entries or stopped;
 * a stopped queue is retired. -ETIME at @deadline (absolute, monotonic ns).
 */
static int sleep_until(struct maia_device *dev, uint64_t count, int64_t deadline)
{
	struct maia_userq *uq = &dev->uq;
	struct drm_maia_userq_wait w = {
		.queue_id = uq->id,
		.count = (uint32_t)count,
		.timeout_ns = deadline,
	};
	int err;

	err = maia_ioctl(dev, DRM_IOCTL_MAIA_USERQ_WAIT, &w);
	if (err)
		return err;
	if (w.state != DRM_MAIA_USERQ_ACTIVE)
		retire_stopped(dev, w.state);
	return 0;
}

static int64_t deadline_after(int64_t timeout_ns)
{
	uint64_t now = now_ns();

	return timeout_ns > INT64_MAX - (int64_t)now ? INT64_MAX : (int64_t)now + timeout_ns;
}

/*
 * A job of this queue hit an MMU fault: the kernel stops the queue and
 * marks the context once its interrupt thread has seen the fault. Wait for
 * that (a second), so that what follows sees the faulted context as it
 * would after a kernel-path job; then the queue goes either way.
 */
static void settle_fault(struct maia_device *dev)
{
	struct maia_userq *uq = &dev->uq;

	if (!uq->created)
		return;
	if (sleep_until(dev, uq->written + (1ull << 31), deadline_after(1000000000ll)) ||
	    uq->created)
		retire_stopped(dev, DRM_MAIA_USERQ_LOST);
}

/* Waits for every job on the user queue (a path switch, an unmap). */
int maia_userq_drain(struct maia_device *dev)
{
	struct maia_userq *uq = &dev->uq;
	int err = 0;

	while (uq->created && uq->reaped < uq->written && !err) {
		if (reap(dev)) {
			settle_fault(dev);
			break;
		}
		if (uq->reaped < uq->written)
			err = sleep_until(dev, uq->written, INT64_MAX);
	}
	return err;
}

/*
 * Submits @cb through the user queue if it can: 0 and *seqno, 1 when the
 * job must take the kernel path, or a negative errno.
 */
int maia_userq_submit(struct maia_device *dev, struct maia_cmdbuf *cb,
		      const struct maia_submit_opts *opts, uint64_t *seqno)
{
	struct maia_userq *uq = &dev->uq;
	struct maia_sq_entry e;
	uint32_t slot;
	int err;

	if (!userq_available(dev) || !cb->bo->va ||
	    (opts && (opts->priority != DRM_MAIA_PRIO_NORMAL || opts->num_in_syncobjs ||
		      opts->out_syncobj || opts->out_fence_fd)))
		return 1;
	if (!uq->created) {
		err = create_queue(dev);
		if (err == -EBUSY || err == -ENODEV || err == -ENOSPC)
			return 1;	/* every user queue taken: the kernel path serves */
		if (err)
			return err;
	}
	/* NORMAL jobs stay in order across the two paths. */
	if (dev->last_kernel_seqno) {
		struct drm_maia_wait w = { .seqno = dev->last_kernel_seqno, .timeout_ns = INT64_MAX };

		maia_ioctl(dev, DRM_IOCTL_MAIA_WAIT, &w);
		dev->last_kernel_seqno = 0;
	}
	if (reap(dev))
		settle_fault(dev);
	if (!uq->created)
		return maia_userq_submit(dev, cb, opts, seqno);
	while (uq->written - uq->reaped >= uq->entries - 1) {
		err = sleep_until(dev, uq->reaped + 1, INT64_MAX);
		if (err)
			return err;
		if (!uq->created)
			return maia_userq_submit(dev, cb, opts, seqno);
		if (reap(dev)) {
			settle_fault(dev);
			return maia_userq_submit(dev, cb, opts, seqno);
		}
	}

	slot = (uint32_t)(uq->written % uq->entries);
	memset(&e, 0, sizeof(e));
	e.cmdbuf_addr = cb->bo->va;
	e.cmdbuf_size = cb->used;
	e.asid = uq->asid;
	e.job_id = USERQ_SEQ_TAG | (uq->base + uq->written + 1);
	result_of(uq, uq->base + uq->written)->done = false;
	result_of(uq, uq->base + uq->written)->seq = uq->base + uq->written;
	uq->cq[slot].flags = 0;
	memcpy(&uq->sq[slot], &e, sizeof(e));
	uq->written++;
	/* Entry before doorbell; the doorbell page is uncached MMIO. */
	atomic_thread_fence(memory_order_release);
	*uq->doorbell = (uint32_t)(uq->written % uq->entries);
	*seqno = USERQ_SEQ_TAG | (uq->base + uq->written);
	return 0;
}

int maia_userq_wait(struct maia_device *dev, uint64_t seqno, int64_t timeout_ns,
		    struct maia_job_status *status)
{
	struct maia_userq *uq = &dev->uq;
	uint64_t seq = (seqno & ~USERQ_SEQ_TAG) - 1;	/* from 0 */
	int64_t deadline = deadline_after(timeout_ns);
	struct maia_userq_result *r;
	int err;

	if (!(seqno & ~USERQ_SEQ_TAG) || seq >= uq->base + uq->written)
		return -EINVAL;
	for (;;) {
		r = result_of(uq, seq);
		if (r->seq != seq)
			return -ENOENT;		/* too old to be remembered */
		if (r->done)
			break;
		if (reap(dev)) {
			settle_fault(dev);
			continue;
		}
		if (result_of(uq, seq)->done)
			continue;
		/* Not done: sleep until the queue completed it. */
		err = sleep_until(dev, seq - uq->base + 1, deadline);
		if (err)
			return err;
	}
	if (status)
		*status = r->st;
	return 0;
}

/* Before the device's fd closes: the mappings would keep it open. */
void maia_userq_close(struct maia_device *dev)
{
	destroy_queue(dev);
}
