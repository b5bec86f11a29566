/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Maia accelerator driver: jobs. The SUBMIT, WAIT and CONTEXT_STATUS ioctls,
 * job completion and status, and the per-file submission state.
 *
 * With the memory code (maia_vm.[ch]): the per-file state is
 * maia_file.jobs, created by maia_job_file_open() after
 * maia_vm_open() and torn down by maia_job_file_close() before
 * maia_vm_close(); VM_BIND UNMAP calls maia_job_wait_idle(). Lock order:
 * maia_context.lock, then the reset lock (maia_reset.h), then the file's job
 * lock. Nobody waits for a job fence while holding the reset lock.
 */
#ifndef __MAIA_JOB_H__
#define __MAIA_JOB_H__

#include <drm/gpu_scheduler.h>
#include <linux/dma-fence.h>
#include <linux/kref.h>

#include "maia_drv.h"
#include "maia_reset.h"

struct drm_file;
struct drm_gem_object;
struct drm_printer;
struct maia_context;
struct maia_job_file;
struct maia_sched_queue;

/*
 * A job: one command buffer run on one hardware queue.
 *
 * Lifetime: the scheduler owns one reference from SUBMIT to free_job; the
 * file's history ring owns another while WAIT may still ask for it. The
 * command buffer BO is released at free_job.
 */
struct maia_job {
	struct drm_sched_job base;
	struct kref ref;
	struct maia_device *mdev;
	struct maia_job_file *jf;	/* valid until the file waited for its jobs */
	u64 seqno;			/* per file, from 1 */
	u32 priority;			/* DRM_MAIA_PRIO_* */
	u16 asid;
	u64 cmdbuf_va;
	u32 cmdbuf_size;
	struct drm_gem_object *cmdbuf;	/* reference held until free_job */

	/* The scheduler's finished fence, referenced for WAIT. */
	struct dma_fence *done;
	/*
	 * Hardware fence, returned by run_job and signalled by the queue's
	 * completion interrupt or by recovery. Allocated at SUBMIT so that
	 * run_job never allocates (but for a job run again after a reset);
	 * @hw_fence_live says dma_fence_init() ran (from then on the fence's
	 * refcount owns the memory).
	 */
	struct dma_fence *hw_fence;
	bool hw_fence_live;
	/* Recovery found it never started: run_job runs it again (maia_sched.c). */
	bool rerun;
	struct maia_sched_queue *queue;	/* set by run_job */
	u64 hw_seq;			/* position on that queue, from 1 */
	ktime_t hw_submitted;		/* host time the doorbell was rung */
	/*
	 * The hang monitor's view (maia_reset_hang_check()): since 0 until a
	 * tick first saw the device fetch the job (MAIA_Q_FETCHED). Only the
	 * timeout handler, on the ordered reset workqueue, reads and writes it.
	 */
	struct maia_hang_watch hang;

	/* Result, written before @hw_fence signals, read after @done signals. */
	u32 status;			/* DRM_MAIA_JOB_* */
	u32 device_status;		/* MAIA_STATUS_* */
	u32 error_offset;
	u64 device_ns;			/* device start to completion; 0 if it never ran */
	ktime_t submitted;		/* host time of the SUBMIT */
	u64 host_ns;			/* SUBMIT to completion handled (or failure), host time */
};

static inline struct maia_job *to_maia_job(struct drm_sched_job *job)
{
	return container_of(job, struct maia_job, base);
}

int maia_job_file_open(struct maia_device *mdev, struct drm_file *file);
void maia_job_file_close(struct maia_device *mdev, struct drm_file *file);
int maia_job_wait_idle(struct maia_job_file *jf);
void maia_job_show_fdinfo(struct drm_printer *p, struct drm_file *file);

/* For the scheduler, completion and recovery paths; queue lock held. */
void maia_job_complete(struct maia_job *job, const struct maia_cq_entry *cqe);
void maia_job_fail(struct maia_job *job, u32 status, int error);
void maia_job_retire_for_rerun(struct maia_job *job);
void maia_job_put(struct maia_job *job);

int maia_submit_ioctl(struct drm_device *drm, void *data, struct drm_file *file);
int maia_wait_ioctl(struct drm_device *drm, void *data, struct drm_file *file);
int maia_context_status_ioctl(struct drm_device *drm, void *data, struct drm_file *file);

#endif /* __MAIA_JOB_H__ */
