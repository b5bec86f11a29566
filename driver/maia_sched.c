// SPDX-License-Identifier: GPL-2.0-only
/*
 * Maia accelerator driver: user hardware queues and their schedulers.
 *
 * Hardware queue 0 belongs to the kernel (maia_queue.c). Queues 1..N-1 run
 * user jobs; each is fed by its own drm_gpu_scheduler, whose credit limit is
 * the ring size, so run_job always finds a free slot. run_job writes the
 * submission entry and rings the doorbell; the queue's interrupt handler
 * drains the completion array and signals the hardware fences.
 *
 * Priorities: with three or more user queues, queue 1 runs at hardware
 * priority HIGH, queue 2 at LOW and the others at NORMAL, and each
 * DRM_MAIA_PRIO_* goes to the queues of its own hardware priority. With
 * fewer queues, priorities without a queue of their own share the NORMAL
 * queues and are ordered there by the scheduler's entity priority.
 */

#include <drm/drm_managed.h>
#include <linux/dma-fence.h>
#include <linux/ktime.h>
#include <linux/slab.h>

#include "maia_hw.h"
#include "maia_hwq.h"
#include "maia_irq.h"
#include "maia_job.h"
#include "maia_queue.h"
#include "maia_reset.h"
#include "maia_sched.h"
#include "maia_trace.h"
#include "maia_userq.h"

/*
 * How often the scheduler's timeout handler looks at a queue that has jobs
 * in flight; the hang verdict itself uses the job_timeout_ms parameter.
 */
#define MAIA_WATCHDOG_TICK_MS	250

/*
 * Whether a queue whose MAIA_Q_FETCHED reads @fetched has started @job: the
 * register counts the entries fetched since the queue was enabled as
 * @job->hw_seq counts those written, and the two compare modulo 2^32.
 * Hardware 1.1 and later only.
 */
static bool maia_job_fetched_by(const struct maia_job *job, u32 fetched)
{
	return (s32)(fetched - lower_32_bits(job->hw_seq)) >= 0;
}

static const char *maia_hw_fence_driver_name(struct dma_fence *fence)
{
	return MAIA_DRIVER_NAME;
}

/* The fence lock is the queue's lock: that names the timeline. */
static const char *maia_hw_fence_timeline_name(struct dma_fence *fence)
{
	return container_of(fence->lock, struct maia_sched_queue, lock)->name;
}

static const struct dma_fence_ops maia_hw_fence_ops = {
	.get_driver_name = maia_hw_fence_driver_name,
	.get_timeline_name = maia_hw_fence_timeline_name,
};

static struct maia_sched_queue *to_maia_sched_queue(struct drm_gpu_scheduler *sched)
{
	return container_of(sched, struct maia_sched_queue, sched);
}

static struct dma_fence *maia_sched_run_job(struct drm_sched_job *sjob)
{
	struct maia_sched_queue *sq = to_maia_sched_queue(sjob->sched);
	struct maia_job *job = to_maia_job(sjob);
	struct maia_queue *q = &sq->hwq;
	struct maia_sq_entry entry;
	unsigned long flags;
	u32 slot;
	u64 seq;

	/*
	 * Resubmitted after a reset (drm_sched_resubmit_jobs()) with its result
	 * (done, failed, hung, aborted): that stands, whatever became of the
	 * device since.
	 */
	if (job->hw_fence_live && !job->rerun)
		return dma_fence_get(job->hw_fence);
	if (maia_reset_dead(sq->ms->mdev))
		return ERR_PTR(-ENODEV);
	/* A job cancelled before it ran (its entity was killed) never reaches the device. */
	if (sjob->s_fence->finished.error)
		return ERR_PTR(sjob->s_fence->finished.error);

	if (job->hw_fence_live) {
		struct dma_fence *fence;

		/* Never started before a reset: it runs again, on a new hardware fence. */
		fence = kzalloc(sizeof(*fence), GFP_NOWAIT);
		if (!fence)
			return dma_fence_get(job->hw_fence);	/* ended: ABORTED */
		dma_fence_put(job->hw_fence);
		job->hw_fence = fence;
		job->hw_fence_live = false;
		job->rerun = false;
		job->hang = (struct maia_hang_watch){};
	}

	dma_fence_init(job->hw_fence, &maia_hw_fence_ops, &sq->lock,
		       sq->fence_context, ++sq->fence_seqno);
	job->hw_fence_live = true;

	entry = (struct maia_sq_entry) {
		.cmdbuf_addr = job->cmdbuf_va,
		.cmdbuf_size = job->cmdbuf_size,
		.asid = job->asid,
		.job_id = job->hw_fence->seqno,
	};

	mutex_lock(&q->lock);
	seq = maia_queue_write_locked(q, &entry);
	if (WARN_ON_ONCE(!seq)) {
		/* Cannot happen: the credit limit keeps one slot free. */
		mutex_unlock(&q->lock);
		spin_lock_irqsave(&sq->lock, flags);
		maia_job_fail(job, DRM_MAIA_JOB_ABORTED, -ENOSPC);
		spin_unlock_irqrestore(&sq->lock, flags);
		return dma_fence_get(job->hw_fence);
	}
	slot = (seq - 1) & (q->entries - 1);

	spin_lock_irqsave(&sq->lock, flags);
	job->queue = sq;
	job->hw_seq = seq;
	job->hw_submitted = ktime_get();
	/* An idle queue starts this job now: that is progress. */
	if (seq - 1 == smp_load_acquire(&q->completed))
		sq->last_progress = job->hw_submitted;
	sq->jobs[slot] = job;
	spin_unlock_irqrestore(&sq->lock, flags);

	maia_queue_doorbell(q, seq);
	mutex_unlock(&q->lock);

	trace_maia_job_run(job, q->index, seq);
	/* The scheduler's reference; the job keeps the one from dma_fence_init(). */
	return dma_fence_get(job->hw_fence);
}

static void maia_sched_free_job(struct drm_sched_job *sjob)
{
	struct maia_job *job = to_maia_job(sjob);

	drm_sched_job_cleanup(sjob);
	maia_job_put(job);
}

static const struct drm_sched_backend_ops maia_sched_ops = {
	.run_job = maia_sched_run_job,
	.timedout_job = maia_reset_job_timedout,
	.free_job = maia_sched_free_job,
};

/*
 * Queue interrupt handler, once per completion, in ring order: retires the
 * job of that slot. A completion for a slot without a job (after a reset
 * raced with the device) is dropped.
 */
static void maia_sched_queue_complete(struct maia_queue *q, u64 seq,
				      const struct maia_queue_done *done)
{
	struct maia_sched_queue *sq = container_of(q, struct maia_sched_queue, hwq);
	u32 slot = (seq - 1) & (q->entries - 1);
	struct maia_job *job;
	unsigned long flags;

	trace_maia_queue_irq(q->index, seq);
	spin_lock_irqsave(&sq->lock, flags);
	job = sq->jobs[slot];
	if (!job || job->hw_seq != seq) {
		spin_unlock_irqrestore(&sq->lock, flags);
		maia_warn_ratelimited(q->mdev, "queue %u: completion %llu has no job\n",
				      q->index, seq);
		return;
	}
	sq->jobs[slot] = NULL;
	sq->last_progress = done->handled;
	if (done->cqe.job_id != job->hw_fence->seqno)
		maia_warn_ratelimited(q->mdev, "queue %u: device completed job id %llu in the slot of %llu\n",
				      q->index, done->cqe.job_id, job->hw_fence->seqno);
	maia_job_complete(job, &done->cqe);
	spin_unlock_irqrestore(&sq->lock, flags);
}

/*
 * Stops every scheduler: no run_job, no timeout handler, and the jobs on
 * the device are detached from their hardware fences (drm_sched_stop). The
 * timeout handler took @guilty off its pending list; it goes back there.
 */
void maia_sched_stop_all(struct maia_device *mdev, struct maia_job *guilty)
{
	struct maia_sched *ms = mdev->sched;
	unsigned int i;

	for (i = 0; i < ms->num_queues; i++) {
		struct maia_sched_queue *sq = &ms->queues[i];

		drm_sched_stop(&sq->sched, guilty && guilty->queue == sq ?
			       &guilty->base : NULL);
		maia_queue_disable(&sq->hwq);
		/* A disabled queue fetches nothing more; the reset clears the count. */
		sq->fetched_known = maia_hw_has(mdev, MAIA_HW_REVISION_1_1);
		if (sq->fetched_known)
			sq->fetched_at_stop = maia_hwq_fetched(mdev, sq->hwq.index);
	}
}

/*
 * After a device reset, with the schedulers stopped and the interrupt
 * threads synchronized, each job still on a ring is retired by what became
 * of it on the device:
 *  - completed before the reset (its completion entry is VALID, the IRQ
 *    handler had not got to it): its real result, even for @guilty;
 *  - @guilty hung: TIMEOUT;
 *  - never fetched (beyond MAIA_Q_FETCHED when its queue stopped): it did
 *    nothing, so it runs again once the device is back
 *    (maia_sched_resubmit_all()); only hardware 1.1 tells;
 *  - started and cut off by the reset: ABORTED (it may have partly run).
 * Returns the number of jobs to run again and fills @aborted.
 */
unsigned int maia_sched_retire_all(struct maia_device *mdev, struct maia_job *guilty,
				   unsigned int *aborted)
{
	struct maia_sched *ms = mdev->sched;
	unsigned int i, slot, rerun = 0;

	*aborted = 0;
	for (i = 0; i < ms->num_queues; i++) {
		struct maia_sched_queue *sq = &ms->queues[i];
		unsigned long flags;

		spin_lock_irqsave(&sq->lock, flags);
		for (slot = 0; slot < ARRAY_SIZE(sq->jobs); slot++) {
			struct maia_job *job = sq->jobs[slot];
			struct maia_cq_entry *cqe = &sq->hwq.cq[slot];

			if (!job)
				continue;
			sq->jobs[slot] = NULL;
			if (READ_ONCE(cqe->flags) & MAIA_CQE_VALID &&
			    READ_ONCE(cqe->status) != MAIA_STATUS_ABORTED) {
				/* Completed after all (even the one thought hung). */
				dma_rmb();	/* the entry only after seeing VALID */
				maia_job_complete(job, cqe);
			} else if (job == guilty) {
				maia_job_fail(job, DRM_MAIA_JOB_TIMEOUT, -ETIMEDOUT);
			} else if (sq->fetched_known &&
				   !maia_job_fetched_by(job, sq->fetched_at_stop)) {
				maia_job_retire_for_rerun(job);
				rerun++;
			} else {
				maia_job_fail(job, DRM_MAIA_JOB_ABORTED, -ECANCELED);
				(*aborted)++;
			}
		}
		spin_unlock_irqrestore(&sq->lock, flags);
	}
	return rerun;
}

/*
 * The device is back: the schedulers run again, from their pending lists,
 * the jobs retire_all() marked to run again; the others return their
 * retired hardware fences (maia_sched_run_job()).
 */
void maia_sched_resubmit_all(struct maia_device *mdev)
{
	struct maia_sched *ms = mdev->sched;
	unsigned int i;

	for (i = 0; i < ms->num_queues; i++)
		drm_sched_resubmit_jobs(&ms->queues[i].sched);
}

/* Points the device at the (empty) rings again after a reset. */
int maia_sched_enable_all(struct maia_device *mdev)
{
	struct maia_sched *ms = mdev->sched;
	unsigned int i;
	int ret;

	for (i = 0; i < ms->num_queues; i++) {
		ret = maia_queue_enable(&ms->queues[i].hwq);
		if (ret)
			return ret;
	}
	return 0;
}

/* Restarts the schedulers; finished jobs are reaped, queued ones run. */
void maia_sched_start_all(struct maia_device *mdev)
{
	struct maia_sched *ms = mdev->sched;
	unsigned int i;

	for (i = 0; i < ms->num_queues; i++)
		drm_sched_start(&ms->queues[i].sched);
}

void maia_sched_report_queue_errors(struct maia_device *mdev)
{
	struct maia_sched *ms = mdev->sched;
	unsigned int i;

	maia_queue_report_error(&mdev->kq);
	for (i = 0; ms && i < ms->num_queues; i++)
		maia_queue_report_error(&ms->queues[i].hwq);
}

/* Whether the device has fetched (started) @job: see maia_job_fetched_by(). */
bool maia_sched_job_fetched(struct maia_sched_queue *sq, const struct maia_job *job)
{
	return maia_job_fetched_by(job, maia_hwq_fetched(sq->ms->mdev, sq->hwq.index));
}

/* Hardware priority of user queue @i of @n (see the top of this file). */
static u32 maia_sched_queue_prio(unsigned int i, unsigned int n)
{
	if (n == 1)
		return MAIA_QUEUE_PRIO_NORMAL;
	if (i == 0)
		return MAIA_QUEUE_PRIO_HIGH;
	if (i == 1 && n >= 3)
		return MAIA_QUEUE_PRIO_LOW;
	return MAIA_QUEUE_PRIO_NORMAL;
}

static void maia_sched_map_prios(struct maia_sched *ms)
{
	static const struct {
		u32 hw_prio;
		enum drm_sched_priority entity_prio;
	} map[MAIA_NUM_PRIOS] = {
		[DRM_MAIA_PRIO_LOW] = { MAIA_QUEUE_PRIO_LOW, DRM_SCHED_PRIORITY_LOW },
		[DRM_MAIA_PRIO_NORMAL] = { MAIA_QUEUE_PRIO_NORMAL, DRM_SCHED_PRIORITY_NORMAL },
		[DRM_MAIA_PRIO_HIGH] = { MAIA_QUEUE_PRIO_HIGH, DRM_SCHED_PRIORITY_HIGH },
	};
	unsigned int p, i, n;

	for (p = 0; p < MAIA_NUM_PRIOS; p++) {
		u32 want = map[p].hw_prio;

		ms->prio_entity[p] = map[p].entity_prio;
		for (n = 0, i = 0; i < ms->num_queues; i++)
			if (ms->queues[i].hw_prio == want)
				ms->prio_scheds[p][n++] = &ms->queues[i].sched;
		if (!n)	/* no queue of its own: share the NORMAL ones */
			for (i = 0; i < ms->num_queues; i++)
				if (ms->queues[i].hw_prio == MAIA_QUEUE_PRIO_NORMAL)
					ms->prio_scheds[p][n++] = &ms->queues[i].sched;
		ms->prio_num_scheds[p] = n;
	}
}

/* Runs when the DRM device is released: every file, and so every entity, is gone. */
static void maia_sched_queue_fini(struct drm_device *drm, void *arg)
{
	struct maia_sched_queue *sq = arg;

	drm_sched_fini(&sq->sched);
}

/*
 * Managed action at remove (and on probe failure), before the device is
 * quiesced and the rings are freed: new work fails, and every job on the
 * device completes with an error so nobody waits for it forever.
 */
static void maia_sched_kill(void *arg)
{
	struct maia_device *mdev = arg;
	struct maia_sched *ms = mdev->sched;
	unsigned int aborted;

	unsigned int i;

	maia_reset_mark_dead(mdev);
	/* A recovery in progress finishes first; later ones see the unplug. */
	flush_workqueue(mdev->reset->wq);
	/*
	 * A timeout handler armed before the flush could still run beside the
	 * stop below and move a job on the pending list it walks: no new
	 * run_job or free_job work, and wait for a handler already running (it
	 * sees the unplug and does not re-arm).
	 */
	for (i = 0; i < ms->num_queues; i++) {
		drm_sched_wqueue_stop(&ms->queues[i].sched);
		cancel_delayed_work_sync(&ms->queues[i].sched.work_tdr);
	}
	maia_sched_stop_all(mdev, NULL);
	if (maia_hw_reset(mdev))
		maia_warn(mdev, "device did not come out of reset\n");
	maia_irq_sync(mdev);
	maia_sched_retire_all(mdev, NULL, &aborted);
	/* Finished jobs keep their result; nothing runs again on a device that is gone. */
	maia_sched_resubmit_all(mdev);
	maia_sched_start_all(mdev);
}

static int maia_sched_queue_init(struct maia_sched *ms, unsigned int i)
{
	struct maia_device *mdev = ms->mdev;
	struct maia_sched_queue *sq = &ms->queues[i];
	struct drm_sched_init_args args = {
		.ops = &maia_sched_ops,
		.timeout_wq = mdev->reset->wq,
		.num_rqs = DRM_SCHED_PRIORITY_COUNT,
		.credit_limit = MAIA_UQ_ENTRIES - 1,
		.timeout = msecs_to_jiffies(MAIA_WATCHDOG_TICK_MS),
		.name = sq->name,
		.dev = mdev->drm.dev,
	};
	int ret;

	sq->ms = ms;
	spin_lock_init(&sq->lock);
	sq->fence_context = dma_fence_context_alloc(1);
	snprintf(sq->name, sizeof(sq->name), "maia-q%u", i + 1);

	ret = maia_queue_init(mdev, &sq->hwq, i + 1, MAIA_UQ_ENTRIES);
	if (ret)
		return ret;
	sq->hwq.prio = sq->hw_prio;
	sq->hwq.complete = maia_sched_queue_complete;

	ret = maia_irq_request_queue(mdev, &sq->hwq, sq->name);
	if (ret)
		return ret;

	ret = maia_queue_enable(&sq->hwq);
	if (ret)
		return ret;

	ret = drm_sched_init(&sq->sched, &args);
	if (ret) {
		maia_err(mdev, "cannot create the scheduler of queue %u: %pe\n",
			 i + 1, ERR_PTR(ret));
		return ret;
	}
	return drmm_add_action_or_reset(&mdev->drm, maia_sched_queue_fini, sq);
}

/*
 * Sets up every user queue (rings, interrupt, scheduler) once the firmware
 * runs. A device with only the kernel queue gets no job submission.
 */
int maia_sched_init(struct maia_device *mdev)
{
	struct drm_device *drm = &mdev->drm;
	struct maia_sched *ms;
	unsigned int i;
	int ret;

	ms = drmm_kzalloc(drm, sizeof(*ms), GFP_KERNEL);
	if (!ms)
		return -ENOMEM;
	ms->mdev = mdev;
	mdev->sched = ms;

	/* The last hardware queues may be kept for user queues (maia_userq.c). */
	ms->num_queues = mdev->hw.num_queues - 1 - maia_userq_count(mdev);
	if (!ms->num_queues) {
		maia_warn(mdev, "the device has only the kernel queue: job submission is disabled\n");
		return 0;
	}
	ms->queues = drmm_kcalloc(drm, ms->num_queues, sizeof(*ms->queues), GFP_KERNEL);
	if (!ms->queues)
		return -ENOMEM;
	for (i = 0; i < ms->num_queues; i++)
		ms->queues[i].hw_prio = maia_sched_queue_prio(i, ms->num_queues);
	maia_sched_map_prios(ms);

	for (i = 0; i < ms->num_queues; i++) {
		ret = maia_sched_queue_init(ms, i);
		if (ret) {
			/* Queues set up so far are torn down by the managed actions. */
			ms->num_queues = i;
			break;
		}
	}
	/* Registered last, so it runs first at remove. */
	return devm_add_action_or_reset(drm->dev, maia_sched_kill, mdev) ?: ret;
}
