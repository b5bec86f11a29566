// SPDX-License-Identifier: GPL-2.0-only
/*
 * Maia accelerator driver: kernel-owned hardware queues and the PING ioctl.
 *
 * The driver fills submission entries at the tail and writes the new tail
 * to the queue's doorbell; the device writes the completion entry of the
 * same slot with MAIA_CQE_VALID set and raises the queue's vector; the
 * interrupt handler drains completions in order and wakes the waiters.
 */

#include <drm/drm_drv.h>
#include <drm/drm_managed.h>
#include <drm/maia_accel.h>
#include <linux/bitfield.h>
#include <linux/dma-mapping.h>
#include <linux/ktime.h>
#include <linux/log2.h>
#include <linux/moduleparam.h>

#include "maia_hw.h"
#include "maia_hwq.h"
#include "maia_queue.h"

/*
 * The kernel queue's lock is held across a device reset, which runs the job
 * queues again and takes their locks inside it: its own lockdep class, so
 * that this one nesting order is not reported as recursive locking.
 */
static struct lock_class_key maia_kq_lock_key;

static unsigned int maia_ping_timeout_ms = 1000;
module_param_named(ping_timeout_ms, maia_ping_timeout_ms, uint, 0644);
MODULE_PARM_DESC(ping_timeout_ms, "Time a PING may take before it fails, in ms (default 1000)");

/* Allocates the rings (managed); the queue stays disabled until enabled. */
int maia_queue_init(struct maia_device *mdev, struct maia_queue *q,
		    unsigned int index, u32 entries)
{
	struct device *dev = mdev->drm.dev;
	int ret;

	if (WARN_ON(!is_power_of_2(entries) || entries > ARRAY_SIZE(q->done) ||
		    entries < MAIA_QUEUE_MIN_ENTRIES))
		return -EINVAL;

	q->mdev = mdev;
	q->index = index;
	q->entries = entries;
	q->prio = MAIA_QUEUE_PRIO_NORMAL;
	init_waitqueue_head(&q->done_wq);
	ret = drmm_mutex_init(&mdev->drm, &q->lock);
	if (ret)
		return ret;
	if (index == MAIA_KQ_INDEX)
		lockdep_set_class(&q->lock, &maia_kq_lock_key);

	q->sq = dmam_alloc_coherent(dev, entries * sizeof(*q->sq), &q->sq_dma, GFP_KERNEL);
	q->cq = dmam_alloc_coherent(dev, entries * sizeof(*q->cq), &q->cq_dma, GFP_KERNEL);
	if (!q->sq || !q->cq) {
		maia_err(mdev, "cannot allocate rings for queue %u\n", index);
		return -ENOMEM;
	}
	return 0;
}

/* Points the device at the rings and enables the queue, both from slot 0. */
int maia_queue_enable(struct maia_queue *q)
{
	const struct maia_hwq_config cfg = {
		.sq = q->sq_dma, .cq = q->cq_dma, .entries = q->entries, .prio = q->prio,
	};
	u32 status;

	q->submitted = 0;
	q->completed = 0;
	if (maia_hwq_enable(q->mdev, q->index, &cfg, &status)) {
		maia_err(q->mdev, "queue %u refused its configuration (status %#x)\n",
			 q->index, status);
		return -EIO;
	}
	WRITE_ONCE(q->enabled, true);
	return 0;
}

void maia_queue_disable(struct maia_queue *q)
{
	WRITE_ONCE(q->enabled, false);
	maia_hwq_disable(q->mdev, q->index);
}

/*
 * Queue interrupt handler (hard IRQ): moves completions, in order, from
 * the device's array to @done, up to the last job submitted. Only this
 * handler writes @completed, so no lock is needed against itself.
 */
void maia_queue_drain(struct maia_queue *q)
{
	u64 submitted, completed = q->completed;
	bool progress = false;

	if (!READ_ONCE(q->enabled))
		return;

	/* Pairs with the release in maia_queue_write_locked(): entries up to here are written. */
	submitted = smp_load_acquire(&q->submitted);
	while (completed < submitted) {
		u32 slot = completed & (q->entries - 1);
		struct maia_cq_entry *cqe = &q->cq[slot];

		if (!(READ_ONCE(cqe->flags) & MAIA_CQE_VALID))
			break;
		/* Read the entry only after seeing the device set VALID. */
		dma_rmb();
		q->done[slot].cqe = *cqe;
		q->done[slot].handled = ktime_get();
		completed++;
		/* Publish done[slot] before the count that makes it visible. */
		smp_store_release(&q->completed, completed);
		progress = true;
		if (q->complete)
			q->complete(q, completed, &q->done[slot]);
	}

	if (progress)
		wake_up_all(&q->done_wq);
}

/*
 * Logs @q's error, if its status has an error bit: QUEUE_ERROR names no
 * queue, and a user's bad command must not make the log blame another (nor
 * a job waiting for the fabric count as a failure).
 * Rate-limited, as users can trigger it.
 */
void maia_queue_report_error(struct maia_queue *q)
{
	struct maia_hwq_state st;

	if (!maia_hwq_failed(q->mdev, q->index))
		return;
	maia_hwq_read_state(q->mdev, q->index, &st);
	maia_err_ratelimited(q->mdev, "queue %u error: status %#x head %u tail %u\n",
			     q->index, st.status, st.head, st.tail);
}

/* Jobs drained so far; their done[] records and cq[] reads are finished. */
static u64 maia_queue_completed(struct maia_queue *q)
{
	/* Pairs with the release in maia_queue_drain(). */
	return smp_load_acquire(&q->completed);
}

/*
 * Writes @entry at the tail of @q, with its completion slot cleared, and
 * publishes it to the interrupt handler; the device sees it at the next
 * doorbell. Caller holds @q->lock. Returns the entry's sequence number
 * (from 1; its slot is (seq - 1) % entries), or 0 when the ring is full.
 */
u64 maia_queue_write_locked(struct maia_queue *q, const struct maia_sq_entry *entry)
{
	u32 slot = q->submitted & (q->entries - 1);
	u64 seq = q->submitted + 1;

	lockdep_assert_held(&q->lock);
	/* One slot stays empty: HEAD == TAIL means an empty ring to the device. */
	if (q->submitted - maia_queue_completed(q) >= q->entries - 1)
		return 0;

	memset(&q->cq[slot], 0, sizeof(q->cq[slot]));
	q->sq[slot] = *entry;
	/* The interrupt handler may drain up to this job once it is published. */
	smp_store_release(&q->submitted, seq);
	return seq;
}

/*
 * Hands the entries up to @seq to the device. maia_wr() (writel) orders the
 * ring writes before the doorbell write reaches the device.
 */
void maia_queue_doorbell(struct maia_queue *q, u64 seq)
{
	maia_hwq_doorbell(q->mdev, q->index, seq & (q->entries - 1));
}

/**
 * maia_queue_run_sync - run one entry on a kernel-owned queue and wait for it
 * @q: the queue
 * @entry: what to run
 * @timeout_ms: how long the device may take
 * @interruptible: whether a signal ends the wait (-ERESTARTSYS)
 * @done: out, the completion as drained; may be NULL
 * @doorbell_time: out, host time the doorbell was written; may be NULL
 *
 * The one synchronous submit of the driver: PING and the HBM clear use it.
 * Holds @q->lock for the whole round trip, so entries run one at a time and
 * the completion slot is the caller's until it returns. An entry whose
 * waiter gave up stays accounted: it is drained when the device gets to it,
 * and later entries wait for their own slot.
 *
 * Return: 0; -ENODEV if the queue is disabled; -EBUSY when the ring is full
 * (the device still holds entries that timed out); -ETIMEDOUT;
 * -ERESTARTSYS; -EIO if the device completed the entry with an error.
 */
int maia_queue_run_sync(struct maia_queue *q, const struct maia_sq_entry *entry,
			unsigned int timeout_ms, bool interruptible,
			struct maia_queue_done *done, ktime_t *doorbell_time)
{
	struct maia_device *mdev = q->mdev;
	struct maia_queue_done result;
	ktime_t rung;
	long left;
	u64 seq;
	int ret;

	if (interruptible) {
		ret = mutex_lock_interruptible(&q->lock);
		if (ret)
			return ret;
	} else {
		mutex_lock(&q->lock);
	}
	if (!READ_ONCE(q->enabled)) {
		ret = -ENODEV;
		goto out_unlock;
	}

	seq = maia_queue_write_locked(q, entry);
	if (!seq) {
		ret = -EBUSY;
		goto out_unlock;
	}
	rung = ktime_get();
	maia_queue_doorbell(q, seq);

	if (interruptible)
		left = wait_event_interruptible_timeout(q->done_wq, maia_queue_completed(q) >= seq,
							msecs_to_jiffies(timeout_ms));
	else
		left = wait_event_timeout(q->done_wq, maia_queue_completed(q) >= seq,
					  msecs_to_jiffies(timeout_ms));
	if (left < 0) {
		ret = left;
		goto out_unlock;
	}
	if (!left) {
		struct maia_hwq_state st;

		maia_hwq_read_state(mdev, q->index, &st);
		maia_err_ratelimited(mdev, "queue %u: job %llu not completed within %u ms (head %u completed %u status %#x)\n",
				     q->index, seq, timeout_ms, st.head, st.completed, st.status);
		ret = -ETIMEDOUT;
		goto out_unlock;
	}

	/* Nobody else submits while we hold the lock, so the slot is ours. */
	result = q->done[(seq - 1) & (q->entries - 1)];
	ret = 0;
	if (result.cqe.status != MAIA_STATUS_OK) {
		maia_err_ratelimited(mdev, "queue %u: job %#llx failed with status %u\n",
				     q->index, entry->job_id, result.cqe.status);
		ret = -EIO;
	}
	if (done)
		*done = result;
	if (doorbell_time)
		*doorbell_time = rung;

out_unlock:
	mutex_unlock(&q->lock);
	return ret;
}

int maia_ping_ioctl(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct maia_device *mdev = to_maia_device(drm);
	struct drm_maia_ping *args = data;
	const struct maia_sq_entry entry = {
		.asid = MAIA_ASID_PHYS,
		.flags = MAIA_SQE_NOP,
		.job_id = args->cookie,
	};
	struct maia_queue_done done;
	ktime_t doorbell_time;
	int ret, idx;

	if (args->flags || args->pad)
		return -EINVAL;

	if (!drm_dev_enter(drm, &idx))
		return -ENODEV;
	ret = maia_queue_run_sync(&mdev->kq, &entry, maia_ping_timeout_ms, true,
				  &done, &doorbell_time);
	drm_dev_exit(idx);
	if (ret)
		return ret;

	args->echo = done.cqe.job_id;
	args->round_trip_ns = ktime_to_ns(ktime_sub(done.handled, doorbell_time));
	args->device_ns = done.cqe.end_ns;
	return 0;
}
