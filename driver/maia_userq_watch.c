// SPDX-License-Identifier: GPL-2.0-only
/*
 * Maia accelerator driver: the kernel's watch over running user queues
 * (maia_userq.c has the queues): the watchdog that stops a hung queue
 * (the hang monitor of maia_reset.c, without a device reset), and the
 * fault and error events that stop a queue.
 */

#include <drm/drm_drv.h>
#include <linux/bitfield.h>

#include "maia_hw.h"
#include "maia_hwq.h"
#include "maia_userq_priv.h"
#include "maia_vm.h"

/*
 * Watchdog: a queue whose job (FETCHED ahead of COMPLETED) has seen no
 * completion for job_timeout_ms is hung and stopped; a job the device says
 * waits for the fabric (MAIA_Q_STATUS_FABRIC_WAIT) restarts the clock, for
 * up to fabric_wait_max_ms per wait. Skips a turn while a reset runs.
 */
void maia_userq_watchdog(struct work_struct *work)
{
	struct maia_userqs *uqs = container_of(to_delayed_work(work), struct maia_userqs,
					       watchdog);
	struct maia_device *mdev = uqs->mdev;
	bool any = false;
	unsigned int i;
	ktime_t now;
	int idx;

	if (!drm_dev_enter(&mdev->drm, &idx))
		return;
	if (!maia_reset_read_trylock(mdev)) {
		any = true;
		goto out;
	}
	mutex_lock(&uqs->lock);
	now = ktime_get();
	for (i = 0; i < uqs->count; i++) {
		struct maia_userq *uq = uqs->slots[uqs->first + i].uq;
		u32 completed, fetched;
		s64 ran_ms;

		if (!uq || uq->state != DRM_MAIA_USERQ_ACTIVE)
			continue;
		any = true;
		completed = maia_hwq_completed(mdev, uq->slot->hwq);
		fetched = maia_hwq_fetched(mdev, uq->slot->hwq);
		/* Idle, or it moved: the oldest entry's clock starts now. */
		if (fetched == completed || completed != uq->wd_completed) {
			uq->wd_completed = completed;
			maia_reset_hang_restart(&uq->wd, now);
			continue;
		}
		if (!maia_reset_hang_check(mdev, uq->slot->hwq, &uq->wd, now, &ran_ms))
			continue;
		maia_err(mdev, "user queue %u (asid %u): entry %u ran %lld ms without progress: queue stopped\n",
			 uq->slot->hwq, uq->ctx->asid, completed + 1, ran_ms);
		maia_userq_stop_locked(uq, DRM_MAIA_USERQ_HUNG);
	}
	mutex_unlock(&uqs->lock);
	maia_reset_read_unlock(mdev);
out:
	if (any)
		queue_delayed_work(system_wq, &uqs->watchdog,
				   msecs_to_jiffies(MAIA_USERQ_WATCHDOG_TICK_MS));
	drm_dev_exit(idx);
}

void maia_userq_cancel_watchdog(void *arg)
{
	struct maia_userqs *uqs = arg;

	cancel_delayed_work_sync(&uqs->watchdog);
}

/*
 * The event thread saw an MMU fault record (maia_irq.c). One on a user
 * queue marks the queue's context faulted and stops the queue, when the
 * record's ASID is the one the queue is bound to.
 */
void maia_userq_handle_fault(struct maia_device *mdev, const struct maia_fault_record *fault)
{
	struct maia_userqs *uqs = mdev->userqs;
	u32 q = FIELD_GET(MAIA_FAULT_QUEUE_MASK, fault->info);
	struct maia_userq *uq;
	int idx;

	if (q < uqs->first || q >= uqs->first + uqs->count)
		return;
	if (!drm_dev_enter(&mdev->drm, &idx))
		return;
	mutex_lock(&uqs->lock);
	uq = uqs->slots[q].uq;
	if (uq && uq->state == DRM_MAIA_USERQ_ACTIVE &&
	    uq->ctx->asid == FIELD_GET(MAIA_FAULT_ASID_MASK, fault->info)) {
		maia_ctx_report_fault(uq->ctx, true, fault->addr,
				      FIELD_GET(MAIA_FAULT_ACCESS_MASK, fault->info));
		maia_userq_stop_locked(uq, DRM_MAIA_USERQ_FAULTED);
	}
	mutex_unlock(&uqs->lock);
	drm_dev_exit(idx);
}

/* MAIA_INT_QUEUE_ERROR (event thread): a user queue in error is stopped. */
void maia_userq_report_errors(struct maia_device *mdev)
{
	struct maia_userqs *uqs = mdev->userqs;
	unsigned int i;
	int idx;

	if (!uqs->count || !drm_dev_enter(&mdev->drm, &idx))
		return;
	mutex_lock(&uqs->lock);
	for (i = uqs->first; i < uqs->first + uqs->count; i++) {
		struct maia_userq *uq = uqs->slots[i].uq;
		struct maia_hwq_state st;

		if (!uq || uq->state != DRM_MAIA_USERQ_ACTIVE ||
		    !maia_hwq_failed(mdev, uq->slot->hwq))
			continue;
		maia_hwq_read_state(mdev, uq->slot->hwq, &st);
		maia_err_ratelimited(mdev, "user queue %u (asid %u) error: status %#x head %u tail %u: queue stopped\n",
				     i, uq->ctx->asid, st.status, st.head, st.tail);
		maia_userq_stop_locked(uq, DRM_MAIA_USERQ_ERROR);
	}
	mutex_unlock(&uqs->lock);
	drm_dev_exit(idx);
}

