// SPDX-License-Identifier: GPL-2.0-only
/*
 * Maia accelerator driver: jobs, the SUBMIT, WAIT and CONTEXT_STATUS
 * ioctls, and per-file submission state.
 *
 * SUBMIT checks the request, finds the command buffer's device address in
 * the file's address space, and hands a job to the scheduler entity of the
 * file and priority; the job's sequence number (per file, from 1) is what
 * WAIT takes. Its finished fence goes to the out-syncobj, so syncobj waits
 * and sync_file export work as they do for any DRM driver.
 *
 * A file remembers its last MAIA_JOB_HISTORY jobs for WAIT; submitting
 * waits while the job that many submissions back is still running, which
 * also bounds a file's jobs in flight. WAIT on an older job is -ENOENT.
 */

#include <drm/drm_drv.h>
#include <drm/drm_file.h>
#include <drm/drm_gem.h>
#include <drm/drm_print.h>
#include <drm/drm_syncobj.h>
#include <drm/drm_utils.h>
#include <drm/maia_accel.h>
#include <linux/bitfield.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include <maia/hw/cmd.h>

#include "maia_hw.h"
#include "maia_job.h"
#include "maia_reset.h"
#include "maia_sched.h"
#include "maia_trace.h"
#include "maia_uapi.h"
#include "maia_userq.h"
#include "maia_vm.h"

#define MAIA_JOB_HISTORY	1024u	/* power of two */

/* Submission state of one open file (maia_file.jobs). */
struct maia_job_file {
	struct maia_context *ctx;
	u32 resets_at_open;		/* device reset count when opened */
	struct drm_sched_entity entities[MAIA_NUM_PRIOS];
	/*
	 * Protects @seqno, @history and @last_done, and makes seqnos follow
	 * the order jobs are pushed to the entities.
	 */
	struct mutex lock;
	u64 seqno;			/* last one handed out */
	struct dma_fence *last_done[MAIA_NUM_PRIOS];	/* per entity, in order */
	/* A job of this file completed with an MMU fault (before the fault IRQ told us why). */
	bool job_faulted;
	atomic64_t busy_ns[MAIA_MAX_QUEUES];	/* device time per hardware queue */
	atomic64_t host_busy_ns[MAIA_MAX_QUEUES];	/* host time per hardware queue */
	struct maia_job *history[MAIA_JOB_HISTORY];	/* seqno % size -> job */
};

static struct maia_job_file *maia_job_file(struct drm_file *file)
{
	return to_maia_file(file)->jobs;
}

static void maia_job_release(struct kref *ref)
{
	struct maia_job *job = container_of(ref, struct maia_job, ref);

	if (job->cmdbuf)
		drm_gem_object_put(job->cmdbuf);
	if (job->done)
		dma_fence_put(job->done);
	if (job->hw_fence_live)
		dma_fence_put(job->hw_fence);
	else
		kfree(job->hw_fence);
	kfree(job);
}

void maia_job_put(struct maia_job *job)
{
	kref_put(&job->ref, maia_job_release);
}

/* Device status to job status (libmaia's user queues say the same), and the fences' error. */
static u32 maia_job_status(u32 device_status, int *error)
{
	u32 status = maia_uapi_job_status(device_status);

	switch (status) {
	case DRM_MAIA_JOB_OK:
		*error = 0;
		break;
	case DRM_MAIA_JOB_FAULT:
		*error = -EFAULT;
		break;
	case DRM_MAIA_JOB_ABORTED:
		*error = -ECANCELED;
		break;
	default:
		*error = -EIO;
		break;
	}
	return status;
}

/*
 * The device completed @job (queue interrupt handler): records the result
 * and the device time it used, then signals. Caller holds the lock of the
 * job's hardware fence (its queue's maia_sched_queue.lock).
 */
void maia_job_complete(struct maia_job *job, const struct maia_cq_entry *cqe)
{
	struct maia_sched_queue *sq = job->queue;
	struct maia_job_file *jf = job->jf;
	ktime_t now = ktime_get(), start;
	int error;

	lockdep_assert_held(job->hw_fence->lock);
	job->host_ns = ktime_to_ns(ktime_sub(now, job->submitted));
	/* Host time the queue spent on it: from its doorbell or the previous completion. */
	start = ktime_after(sq->last_done, job->hw_submitted) ? sq->last_done : job->hw_submitted;
	if (ktime_after(now, start))
		atomic64_add(ktime_to_ns(ktime_sub(now, start)),
			     &jf->host_busy_ns[sq->hwq.index]);
	sq->last_done = now;
	job->device_status = cqe->status;
	job->error_offset = cqe->error_offset;
	job->status = maia_job_status(cqe->status, &error);
	if (job->status == DRM_MAIA_JOB_FAULT) {
		WRITE_ONCE(jf->job_faulted, true);
		/* Before the fence signals: a CONTEXT_STATUS after WAIT sees the fault. */
		maia_fault_report_job(job->mdev, jf->ctx, job->asid);
	}
	if (cqe->end_ns > cqe->start_ns) {
		job->device_ns = cqe->end_ns - cqe->start_ns;
		atomic64_add(job->device_ns, &jf->busy_ns[job->queue->hwq.index]);
	}
	trace_maia_job_done(job, job->device_ns);
	if (error)
		dma_fence_set_error(job->hw_fence, error);
	dma_fence_signal_locked(job->hw_fence);
}

/*
 * The job will not complete on the device (reset, removal). Caller holds
 * the lock of the job's hardware fence, as for maia_job_complete().
 */
void maia_job_fail(struct maia_job *job, u32 status, int error)
{
	lockdep_assert_held(job->hw_fence->lock);
	job->host_ns = ktime_to_ns(ktime_sub(ktime_get(), job->submitted));
	job->status = status;
	job->device_status = MAIA_STATUS_ABORTED;
	job->error_offset = 0;
	trace_maia_job_done(job, 0);
	dma_fence_set_error(job->hw_fence, error);
	dma_fence_signal_locked(job->hw_fence);
}

/*
 * A reset came before the device started the job: its hardware fence ends
 * (with -ECANCELED, for nobody: the scheduler is stopped) and run_job gives
 * it a new one when the scheduler resubmits it. Its result is still to
 * come, so WAIT keeps waiting. Caller holds the hardware fence's lock.
 */
void maia_job_retire_for_rerun(struct maia_job *job)
{
	lockdep_assert_held(job->hw_fence->lock);
	job->rerun = true;
	dma_fence_set_error(job->hw_fence, -ECANCELED);
	dma_fence_signal_locked(job->hw_fence);
}

/*
 * Waits until no job of the file (@jf, may be NULL) submitted before the
 * call can still touch memory; interruptible (0 or -ERESTARTSYS). VM_BIND
 * UNMAP calls it with the context's lock held, so the completion path
 * never takes that lock.
 */
int maia_job_wait_idle(struct maia_job_file *jf)
{
	struct dma_fence *fence;
	unsigned int p;
	long ret;

	if (!jf)
		return 0;
	for (p = 0; p < MAIA_NUM_PRIOS; p++) {
		mutex_lock(&jf->lock);
		fence = dma_fence_get(jf->last_done[p]);
		mutex_unlock(&jf->lock);
		if (!fence)
			continue;
		ret = dma_fence_wait(fence, true);
		dma_fence_put(fence);
		if (ret)
			return ret;
	}
	return 0;
}

/*
 * At close, before the address space goes (maia_vm_close()): jobs not yet
 * on the device are cancelled if the process is exiting
 * (drm_sched_entity_destroy), the others are waited for, so the device
 * never runs a job of a dead context.
 */
void maia_job_file_close(struct maia_device *mdev, struct drm_file *file)
{
	struct maia_file *mf = to_maia_file(file);
	struct maia_job_file *jf = mf->jobs;
	unsigned int p, i;

	if (!jf)
		return;
	for (p = 0; p < MAIA_NUM_PRIOS; p++)
		drm_sched_entity_destroy(&jf->entities[p]);
	for (p = 0; p < MAIA_NUM_PRIOS; p++) {
		if (jf->last_done[p]) {
			dma_fence_wait(jf->last_done[p], false);
			dma_fence_put(jf->last_done[p]);
		}
	}
	for (i = 0; i < MAIA_JOB_HISTORY; i++)
		if (jf->history[i])
			maia_job_put(jf->history[i]);
	mutex_destroy(&jf->lock);
	mf->jobs = NULL;
	kvfree(jf);
}

/* After maia_vm_open(): the file's context exists. */
int maia_job_file_open(struct maia_device *mdev, struct drm_file *file)
{
	struct maia_context *ctx = maia_ctx_from_file(file);
	struct maia_sched *ms = mdev->sched;
	struct maia_job_file *jf;
	unsigned int p;
	int ret;

	jf = kvzalloc(sizeof(*jf), GFP_KERNEL);
	if (!jf)
		return -ENOMEM;
	jf->ctx = ctx;
	jf->resets_at_open = maia_reset_count(mdev);
	mutex_init(&jf->lock);

	for (p = 0; ms->num_queues && p < MAIA_NUM_PRIOS; p++) {
		ret = drm_sched_entity_init(&jf->entities[p], ms->prio_entity[p],
					    ms->prio_scheds[p], ms->prio_num_scheds[p],
					    NULL);
		if (ret) {
			while (p--)
				drm_sched_entity_destroy(&jf->entities[p]);
			mutex_destroy(&jf->lock);
			kvfree(jf);
			return ret;
		}
	}
	if (!ms->num_queues) {
		mutex_destroy(&jf->lock);
		kvfree(jf);
		return 0;
	}
	to_maia_file(file)->jobs = jf;
	return 0;
}

static int maia_submit_check(const struct drm_maia_submit *args)
{
	if (args->flags || args->pad || args->priority > DRM_MAIA_PRIO_HIGH)
		return -EINVAL;
	/* Commands are 8-byte multiples: a size that is not could only fail on the device. */
	if (!args->cmdbuf_size || args->cmdbuf_size > MAIA_CMDBUF_MAX_SIZE ||
	    !IS_ALIGNED(args->cmdbuf_offset | args->cmdbuf_size, sizeof(u64)))
		return -EINVAL;
	if (args->num_in_syncobjs > DRM_MAIA_MAX_IN_SYNCOBJS)
		return -EINVAL;
	return 0;
}

static struct maia_job *maia_job_alloc(struct maia_device *mdev,
				       struct maia_job_file *jf,
				       const struct drm_maia_submit *args)
{
	struct maia_job *job;

	job = kzalloc(sizeof(*job), GFP_KERNEL);
	if (!job)
		return NULL;
	job->hw_fence = kzalloc(sizeof(*job->hw_fence), GFP_KERNEL);
	if (!job->hw_fence) {
		kfree(job);
		return NULL;
	}
	kref_init(&job->ref);
	job->mdev = mdev;
	job->jf = jf;
	job->priority = args->priority;
	job->asid = jf->ctx->asid;
	job->cmdbuf_size = args->cmdbuf_size;
	job->submitted = ktime_get();
	/* What a job reports if it never reaches the device. */
	job->status = DRM_MAIA_JOB_ABORTED;
	job->device_status = MAIA_STATUS_ABORTED;
	return job;
}

static int maia_job_add_deps(struct maia_job *job, struct drm_file *file,
			     const struct drm_maia_submit *args)
{
	u32 __user *uhandles = u64_to_user_ptr(args->in_syncobjs);
	u32 *handles;
	unsigned int i;
	int ret = 0;

	if (!args->num_in_syncobjs)
		return 0;
	handles = kvmalloc_array(args->num_in_syncobjs, sizeof(*handles), GFP_KERNEL);
	if (!handles)
		return -ENOMEM;
	if (copy_from_user(handles, uhandles, args->num_in_syncobjs * sizeof(*handles))) {
		ret = -EFAULT;
		goto out;
	}
	for (i = 0; i < args->num_in_syncobjs; i++) {
		ret = drm_sched_job_add_syncobj_dependency(&job->base, file, handles[i], 0);
		if (ret)
			break;
	}
out:
	kvfree(handles);
	return ret;
}

/*
 * Queues @job on its entity under the file's locks and stores its seqno in
 * *@seqno (the job may be done and freed as soon as it is pushed). Returns
 * -EAGAIN when the history slot of the next seqno still holds a running
 * job: the caller waits for *@busy outside every lock and tries again.
 */
static int maia_job_push(struct maia_job *job, struct maia_context *ctx,
			 struct drm_syncobj *out, const struct drm_maia_submit *args,
			 struct dma_fence **busy, u64 *seqno)
{
	struct maia_job_file *jf = job->jf;
	struct maia_device *mdev = job->mdev;
	struct maia_job *old;
	u32 slot;
	int ret;

	ret = mutex_lock_interruptible(&ctx->lock);
	if (ret)
		return ret;
	ret = maia_reset_read_lock(mdev);
	if (ret)
		goto out_ctx;

	if (maia_ctx_faulted(ctx) || READ_ONCE(jf->job_faulted)) {
		ret = -EBADFD;
		goto out_reset;
	}
	/* The mapping stays while ctx->lock is held: UNMAP then waits for the job. */
	ret = maia_vm_find_bo_va(ctx, job->cmdbuf, args->cmdbuf_offset,
				 args->cmdbuf_size, &job->cmdbuf_va);
	if (ret)
		goto out_reset;

	mutex_lock(&jf->lock);
	slot = (jf->seqno + 1) & (MAIA_JOB_HISTORY - 1);
	old = jf->history[slot];
	if (old && !dma_fence_is_signaled(old->done)) {
		*busy = dma_fence_get(old->done);
		ret = -EAGAIN;
		goto out_jf;
	}

	job->seqno = ++jf->seqno;
	drm_sched_job_arm(&job->base);
	job->done = dma_fence_get(&job->base.s_fence->finished);
	kref_get(&job->ref);
	jf->history[slot] = job;
	if (old)
		maia_job_put(old);
	dma_fence_put(jf->last_done[job->priority]);
	jf->last_done[job->priority] = dma_fence_get(job->done);
	if (out)
		drm_syncobj_replace_fence(out, job->done);
	trace_maia_job_submit(job);
	*seqno = job->seqno;
	drm_sched_entity_push_job(&job->base);

out_jf:
	mutex_unlock(&jf->lock);
out_reset:
	maia_reset_read_unlock(mdev);
out_ctx:
	mutex_unlock(&ctx->lock);
	return ret;
}

int maia_submit_ioctl(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct maia_device *mdev = to_maia_device(drm);
	struct maia_context *ctx = maia_ctx_from_file(file);
	struct maia_job_file *jf = maia_job_file(file);
	struct drm_maia_submit *args = data;
	struct drm_syncobj *out = NULL;
	struct drm_gem_object *obj;
	struct dma_fence *busy;
	struct maia_job *job;
	u64 seqno = 0;
	int ret, idx;

	ret = maia_submit_check(args);
	if (ret)
		return ret;
	if (!jf)
		return -EOPNOTSUPP;	/* a device without user queues */
	if (maia_reset_dead(mdev))
		return -ENODEV;		/* removed, or recovery failed */
	if (maia_ctx_faulted(ctx) || READ_ONCE(jf->job_faulted))
		return -EBADFD;

	obj = drm_gem_object_lookup(file, args->cmdbuf_handle);
	if (!obj)
		return -ENOENT;
	if (args->cmdbuf_offset > obj->size ||
	    args->cmdbuf_size > obj->size - args->cmdbuf_offset) {
		drm_gem_object_put(obj);
		return -EINVAL;
	}

	job = maia_job_alloc(mdev, jf, args);
	if (!job) {
		drm_gem_object_put(obj);
		return -ENOMEM;
	}
	job->cmdbuf = obj;

	ret = drm_sched_job_init(&job->base, &jf->entities[args->priority], 1, jf,
				 file->client_id);
	if (ret) {
		maia_job_put(job);
		return ret;
	}
	ret = maia_job_add_deps(job, file, args);
	if (ret)
		goto err_cleanup;

	if (args->out_syncobj) {
		out = drm_syncobj_find(file, args->out_syncobj);
		if (!out) {
			ret = -ENOENT;
			goto err_cleanup;
		}
	}

	/*
	 * Wait for a busy history slot outside drm_dev_enter(): removal waits
	 * for every such section to end (drm_dev_unplug()) before it fails the
	 * jobs (maia_sched_kill()), the one we would wait for included.
	 */
	for (;;) {
		if (!drm_dev_enter(drm, &idx)) {
			ret = -ENODEV;
			break;
		}
		busy = NULL;
		ret = maia_job_push(job, ctx, out, args, &busy, &seqno);
		drm_dev_exit(idx);
		if (ret != -EAGAIN)
			break;
		ret = dma_fence_wait(busy, true);
		dma_fence_put(busy);
		if (ret)
			break;
	}
	if (ret)
		goto err_cleanup;

	args->seqno = seqno;
	if (out)
		drm_syncobj_put(out);
	return 0;

err_cleanup:
	if (out)
		drm_syncobj_put(out);
	drm_sched_job_cleanup(&job->base);
	maia_job_put(job);
	return ret;
}

int maia_wait_ioctl(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct maia_job_file *jf = maia_job_file(file);
	struct drm_maia_wait *args = data;
	struct maia_job *job;
	long timeout, ret;

	if (args->pad)
		return -EINVAL;
	if (!jf)
		return -EOPNOTSUPP;

	mutex_lock(&jf->lock);
	if (!args->seqno || args->seqno > jf->seqno) {
		mutex_unlock(&jf->lock);
		return -EINVAL;
	}
	job = jf->history[args->seqno & (MAIA_JOB_HISTORY - 1)];
	if (!job || job->seqno != args->seqno) {
		mutex_unlock(&jf->lock);
		return -ENOENT;	/* too old to be remembered */
	}
	kref_get(&job->ref);
	mutex_unlock(&jf->lock);

	/*
	 * The deadline is on CLOCK_MONOTONIC, the wait in jiffies, which can
	 * run ahead of it in a guest whose vCPU was not scheduled (ticks are
	 * caught up at once): wait again until the clock has passed it.
	 */
	while (!dma_fence_is_signaled(job->done)) {
		timeout = drm_timeout_abs_to_jiffies(args->timeout_ns);
		ret = timeout ? dma_fence_wait_timeout(job->done, true, timeout) : 0;
		if (ret > 0)
			break;
		if (ret < 0 || !timeout) {
			maia_job_put(job);
			/* The deadline is absolute: a restarted call keeps it. */
			return ret ? ret : -ETIME;
		}
	}

	args->status = job->status;
	args->device_status = maia_uapi_device_status(job->device_status);
	args->error_offset = job->error_offset;
	args->device_time_ns = job->device_ns;
	args->host_time_ns = job->host_ns;
	maia_job_put(job);
	return 0;
}

int maia_context_status_ioctl(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct maia_device *mdev = to_maia_device(drm);
	struct maia_context *ctx = maia_ctx_from_file(file);
	struct maia_job_file *jf = maia_job_file(file);
	struct drm_maia_context_status *args = data;
	u32 access = 0, resets_at_open = 0;
	bool faulted, known = false;
	u64 addr = 0;

	if (args->pad)
		return -EINVAL;

	faulted = maia_ctx_fault_info(ctx, &known, &addr, &access);
	if (jf) {
		faulted |= READ_ONCE(jf->job_faulted);
		resets_at_open = jf->resets_at_open;
	}
	args->flags = 0;
	if (faulted)
		args->flags = DRM_MAIA_CTX_FAULTED | (known ? 0 : DRM_MAIA_CTX_FAULT_ADDR_UNKNOWN);
	args->asid = ctx->asid;
	args->fault_addr = faulted ? addr : 0;
	args->fault_access = faulted ? maia_uapi_access(access) : 0;
	args->device_resets = maia_reset_count(mdev) - resets_at_open;
	return 0;
}

/*
 * drm-usage-stats: device time each hardware queue spent on this file's
 * jobs (modeled time on hardware 1.8: drm-engine-*), and the host time it
 * took the host to run them there, doorbell to completion handled
 * (maia-host-engine-*; Documentation/driver.rst).
 */
void maia_job_show_fdinfo(struct drm_printer *p, struct drm_file *file)
{
	struct maia_device *mdev = to_maia_device(file->minor->dev);
	struct maia_job_file *jf = maia_job_file(file);
	unsigned int q;

	if (!jf)
		return;
	for (q = 1; q < mdev->hw.num_queues; q++)
		drm_printf(p, "drm-engine-queue%u:\t%llu ns\n", q,
			   (u64)atomic64_read(&jf->busy_ns[q]));
	for (q = 1; q < mdev->hw.num_queues; q++)
		drm_printf(p, "maia-host-engine-queue%u:\t%llu ns\n", q,
			   (u64)atomic64_read(&jf->host_busy_ns[q]));
}

