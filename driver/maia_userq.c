// SPDX-License-Identifier: GPL-2.0-only
/*
 * Maia accelerator driver: user queues.
 *
 * A user queue is a hardware queue (one of the last user_queues of the
 * device) given to one file. Its submission ring and completion array (a
 * page each) and its doorbell page (BAR1, hardware 1.3) are mapped into the
 * process, which writes entries and rings the doorbell without a system
 * call, polls the completion array and sleeps in USERQ_WAIT. The device
 * binds the queue to the file's ASID (MAIA_Q_ASID): an entry naming another
 * context fails, so a hostile ring can only hurt its own context.
 *
 * The kernel keeps:
 * - the page tables: an UNMAP waits for the jobs the file's queues had
 *   started when the mapping went (maia_userq_ctx_quiesce());
 * - hang detection: the watchdog stops a queue whose job ran
 *   job_timeout_ms since the device fetched it while the queue completed
 *   nothing (HUNG). The device returns from a queue disable only once no
 *   job of the queue runs (1.3), so stopping drops the job without a device
 *   reset and no other context loses work;
 * - faults and errors: a user job's MMU fault marks the context faulted and
 *   stops its queue (FAULTED); a queue error (tail out of range, ring not
 *   readable) stops it (ERROR);
 * - reset: a device reset for another cause stops every user queue (LOST);
 * - teardown: DESTROY and close unmap the pages from the process and
 *   disable the queue, dropping what it had not run.
 * A stopped queue stays its file's, disabled, until destroyed: a doorbell
 * on it is ignored by the device.
 *
 * This file has the queues' state, set-up, teardown and ioctls;
 * maia_userq_mmap.c their pages in the process, maia_userq_watch.c the
 * watchdog and the fault and error events (maia_userq_priv.h between them).
 */

#include <drm/drm_drv.h>
#include <drm/drm_file.h>
#include <drm/drm_managed.h>
#include <drm/drm_utils.h>
#include <drm/maia_accel.h>
#include <linux/bitfield.h>
#include <linux/dma-mapping.h>
#include <linux/kref.h>
#include <linux/mm.h>
#include <linux/moduleparam.h>
#include <linux/pci.h>
#include <linux/pfn_t.h>
#include <linux/slab.h>

#include "maia_hw.h"
#include "maia_hwq.h"
#include "maia_reset.h"
#include "maia_sched.h"
#include "maia_userq_priv.h"
#include "maia_vm.h"

static unsigned int maia_user_queues = 4;
module_param_named(user_queues, maia_user_queues, uint, 0444);
MODULE_PARM_DESC(user_queues,
		 "Hardware queues kept for user queues (hardware 1.3; at least one stays for the scheduler; default 4)");

void maia_userq_release(struct kref *ref)
{
	struct maia_userq *uq = container_of(ref, struct maia_userq, ref);

	/* No mapping is left to reach them (each holds a reference). */
	if (uq->sq_page)
		__free_page(uq->sq_page);
	if (uq->cq_page)
		__free_page(uq->cq_page);
	if (uq->dummy_page)
		__free_page(uq->dummy_page);
	kfree(uq);
}

/* The state word in the completion array's page (DRM_MAIA_USERQ_STATE_OFFSET). */
void maia_userq_set_state(struct maia_userq *uq, u32 state)
{
	u32 *word = page_address(uq->cq_page) + DRM_MAIA_USERQ_STATE_OFFSET;

	WRITE_ONCE(uq->state, state);
	WRITE_ONCE(*word, state);
}

unsigned int maia_userq_count(struct maia_device *mdev)
{
	return mdev->userqs ? mdev->userqs->count : 0;
}

/*
 * Stops @uq: disables its hardware queue, which returns once no job of it
 * runs, and wakes its waiters. Caller holds uqs->lock and makes sure the
 * device is there (drm_dev_enter) or gone.
 */
void maia_userq_stop_locked(struct maia_userq *uq, u32 state)
{
	lockdep_assert_held(&uq->uqs->lock);
	if (uq->state != DRM_MAIA_USERQ_ACTIVE)
		return;
	maia_hwq_disable(uq->uqs->mdev, uq->slot->hwq);
	uq->completed_at_stop = maia_hwq_completed(uq->uqs->mdev, uq->slot->hwq);
	maia_userq_set_state(uq, state);
	wake_up_all(&uq->slot->wq);
}

/* Queue interrupt (hard IRQ): an armed completion; the waiters check for theirs. */
static irqreturn_t maia_userq_irq(int irq, void *arg)
{
	struct maia_userq_slot *slot = arg;

	if (wq_has_sleeper(&slot->wq))
		wake_up_all(&slot->wq);
	return IRQ_HANDLED;
}

/*
 * Whether @uq has completed @count entries (modulo 2^32), or stopped, or
 * the device is gone; *completed gets the count.
 */
static bool maia_userq_reached(struct maia_userq *uq, u32 count, u32 *completed)
{
	u32 c;

	if (READ_ONCE(uq->state) != DRM_MAIA_USERQ_ACTIVE) {
		*completed = READ_ONCE(uq->completed_at_stop);
		return true;
	}
	if (drm_dev_is_unplugged(&uq->uqs->mdev->drm))
		return true;
	c = maia_hwq_completed(uq->uqs->mdev, uq->slot->hwq);
	*completed = c;
	return (s32)(c - count) >= 0;
}

/*
 * The queue interrupts only when armed (MAIA_Q_IRQ_ON_ARM, set at create):
 * a process that polls its completion array costs the guest no interrupt.
 * A sleeper arms it after joining the wait queue and before it checks the
 * count, so a completion is either counted or interrupts. Arming a queue
 * that just changed hands costs its new owner one spare interrupt, no more.
 */
static void maia_userq_arm(struct maia_userq *uq)
{
	int idx;

	if (READ_ONCE(uq->state) != DRM_MAIA_USERQ_ACTIVE ||
	    !drm_dev_enter(&uq->uqs->mdev->drm, &idx))
		return;
	maia_hwq_arm_irq(uq->uqs->mdev, uq->slot->hwq);
	drm_dev_exit(idx);
}

/*
 * Sleeps until maia_userq_reached(): > 0 then, 0 when @timeout (jiffies)
 * ran out first, -ERESTARTSYS on a signal when @interruptible.
 */
static long maia_userq_sleep(struct maia_userq *uq, u32 count, u32 *completed,
			     bool interruptible, long timeout)
{
	DEFINE_WAIT(wait);
	long ret;

	for (;;) {
		prepare_to_wait(&uq->slot->wq, &wait,
				interruptible ? TASK_INTERRUPTIBLE : TASK_UNINTERRUPTIBLE);
		maia_userq_arm(uq);
		if (maia_userq_reached(uq, count, completed)) {
			ret = 1;
			break;
		}
		if (interruptible && signal_pending(current)) {
			ret = -ERESTARTSYS;
			break;
		}
		if (!timeout) {
			ret = 0;
			break;
		}
		timeout = schedule_timeout(timeout);
	}
	finish_wait(&uq->slot->wq, &wait);
	return ret;
}

/*
 * Keeps the last user_queues hardware queues for user queues, on hardware
 * 1.3 with 4 KiB CPU pages (a bigger page would map neighbours' doorbells).
 */
int maia_userq_init(struct maia_device *mdev)
{
	struct pci_dev *pdev = to_pci_dev(mdev->drm.dev);
	struct maia_userqs *uqs;
	unsigned int n, i;
	int ret;

	uqs = drmm_kzalloc(&mdev->drm, sizeof(*uqs), GFP_KERNEL);
	if (!uqs)
		return -ENOMEM;
	uqs->mdev = mdev;
	mdev->userqs = uqs;
	ret = drmm_mutex_init(&mdev->drm, &uqs->lock);
	if (ret)
		return ret;
	INIT_DELAYED_WORK(&uqs->watchdog, maia_userq_watchdog);
	ret = devm_add_action_or_reset(&pdev->dev, maia_userq_cancel_watchdog, uqs);
	if (ret)
		return ret;

	n = mdev->hw.num_queues >= 2 ? min(maia_user_queues, mdev->hw.num_queues - 2) : 0;
	if (!n || !maia_hw_has(mdev, MAIA_HW_REVISION_USERQ))
		return 0;
	/* A CPU page bigger than a doorbell page would map neighbours' doorbells. */
	BUILD_BUG_ON(MAIA_UDB_PAGE_SIZE != 4096);
	if (PAGE_SHIFT != 12 ||
	    !(pci_resource_flags(pdev, MAIA_BAR_UDB) & IORESOURCE_MEM) ||
	    pci_resource_len(pdev, MAIA_BAR_UDB) < MAIA_UDB_PAGE(mdev->hw.num_queues)) {
		maia_warn(mdev, "no usable doorbell pages (BAR%d): no user queues\n",
			  MAIA_BAR_UDB);
		return 0;
	}
	uqs->doorbells = pci_resource_start(pdev, MAIA_BAR_UDB);
	uqs->first = mdev->hw.num_queues - n;

	for (i = 0; i < n; i++) {
		struct maia_userq_slot *slot = &uqs->slots[uqs->first + i];

		slot->uqs = uqs;
		slot->hwq = uqs->first + i;
		init_waitqueue_head(&slot->wq);
		snprintf(slot->name, sizeof(slot->name), "maia-uq%u", slot->hwq);
		ret = devm_request_irq(&pdev->dev,
				       pci_irq_vector(pdev, MAIA_VEC_QUEUE(slot->hwq)),
				       maia_userq_irq, 0, slot->name, slot);
		if (ret) {
			maia_err(mdev, "cannot request the interrupt of queue %u: %pe\n",
				 slot->hwq, ERR_PTR(ret));
			return ret;
		}
	}
	uqs->count = n;
	return 0;
}

/* The queue @queue_id of @file, with a reference, or NULL. */
static struct maia_userq *maia_userq_get(struct maia_userqs *uqs, struct drm_file *file,
					 u32 queue_id)
{
	struct maia_userq *uq = NULL;

	if (queue_id < uqs->first || queue_id >= uqs->first + uqs->count)
		return NULL;
	mutex_lock(&uqs->lock);
	uq = uqs->slots[queue_id].uq;
	if (uq && uq->file == file && !uq->dying)
		kref_get(&uq->ref);
	else
		uq = NULL;
	mutex_unlock(&uqs->lock);
	return uq;
}

/* The device lets go of the rings; the pages go with the last reference. */
static void maia_userq_unmap_pages(struct maia_device *mdev, struct maia_userq *uq)
{
	struct device *dev = mdev->drm.dev;

	if (uq->sq_dma)
		dma_unmap_page(dev, uq->sq_dma, PAGE_SIZE, DMA_BIDIRECTIONAL);
	if (uq->cq_dma)
		dma_unmap_page(dev, uq->cq_dma, PAGE_SIZE, DMA_BIDIRECTIONAL);
	uq->sq_dma = 0;
	uq->cq_dma = 0;
}

/*
 * The rings are ordinary pages, mapped into the process with
 * vm_insert_page() and into the device with the streaming DMA API (the
 * device ABI is for cache-coherent hosts, as the kernel queues' rings).
 */
static int maia_userq_alloc_pages(struct maia_device *mdev, struct maia_userq *uq)
{
	struct device *dev = mdev->drm.dev;

	uq->sq_page = alloc_page(GFP_KERNEL | __GFP_ZERO);
	uq->cq_page = alloc_page(GFP_KERNEL | __GFP_ZERO);
	uq->dummy_page = alloc_page(GFP_KERNEL | __GFP_ZERO);
	if (!uq->sq_page || !uq->cq_page || !uq->dummy_page)
		return -ENOMEM;
	uq->sq_dma = dma_map_page(dev, uq->sq_page, 0, PAGE_SIZE, DMA_BIDIRECTIONAL);
	if (dma_mapping_error(dev, uq->sq_dma)) {
		uq->sq_dma = 0;
		return -ENOMEM;
	}
	uq->cq_dma = dma_map_page(dev, uq->cq_page, 0, PAGE_SIZE, DMA_BIDIRECTIONAL);
	if (dma_mapping_error(dev, uq->cq_dma)) {
		uq->cq_dma = 0;
		return -ENOMEM;
	}
	return 0;
}

static const u32 maia_userq_hw_prio[] = {
	[DRM_MAIA_PRIO_LOW] = MAIA_QUEUE_PRIO_LOW,
	[DRM_MAIA_PRIO_NORMAL] = MAIA_QUEUE_PRIO_NORMAL,
	[DRM_MAIA_PRIO_HIGH] = MAIA_QUEUE_PRIO_HIGH,
};

/*
 * Programs and enables the free slot @slot for @uq; caller holds uqs->lock
 * and the reset lock for reading.
 */
static int maia_userq_enable_locked(struct maia_userq *uq, struct maia_userq_slot *slot,
				    u32 prio)
{
	struct maia_device *mdev = uq->uqs->mdev;
	const struct maia_hwq_config cfg = {
		.sq = uq->sq_dma, .cq = uq->cq_dma, .entries = MAIA_USERQ_ENTRIES, .prio = prio,
		.user = true, .asid = uq->ctx->asid,
	};
	u32 status;

	lockdep_assert_held(&uq->uqs->lock);
	maia_reset_assert_read_held(mdev);
	uq->slot = slot;
	if (maia_hwq_enable(mdev, slot->hwq, &cfg, &status)) {
		maia_err(mdev, "user queue %u refused its configuration (status %#x)\n",
			 slot->hwq, status);
		return -EIO;
	}
	uq->state = DRM_MAIA_USERQ_ACTIVE;
	uq->wd_completed = 0;
	maia_reset_hang_restart(&uq->wd, ktime_get());
	slot->uq = uq;
	queue_delayed_work(system_wq, &uq->uqs->watchdog,
			   msecs_to_jiffies(MAIA_USERQ_WATCHDOG_TICK_MS));
	return 0;
}

int maia_userq_create_ioctl(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct maia_device *mdev = to_maia_device(drm);
	struct maia_userqs *uqs = mdev->userqs;
	struct maia_context *ctx = maia_ctx_from_file(file);
	struct drm_maia_userq_create *args = data;
	struct maia_userq *uq;
	unsigned int i;
	int ret, idx;

	if (args->flags || args->priority > DRM_MAIA_PRIO_HIGH)
		return -EINVAL;
	if (!uqs->count)
		return -ENODEV;
	if (maia_ctx_faulted(ctx))
		return -EBADFD;

	uq = kzalloc(sizeof(*uq), GFP_KERNEL);
	if (!uq)
		return -ENOMEM;
	kref_init(&uq->ref);
	uq->uqs = uqs;
	uq->ctx = ctx;
	uq->file = file;
	ret = maia_userq_alloc_pages(mdev, uq);
	if (ret)
		goto err_free;

	ret = maia_reset_read_lock(mdev);
	if (ret)
		goto err_free;
	if (!drm_dev_enter(drm, &idx)) {
		ret = -ENODEV;
		goto err_unlock_reset;
	}
	mutex_lock(&uqs->lock);
	ret = -EBUSY;
	if (maia_reset_dead(mdev))
		ret = -ENODEV;
	else
		for (i = uqs->first; i < uqs->first + uqs->count; i++)
			if (!uqs->slots[i].uq) {
				ret = maia_userq_enable_locked(uq, &uqs->slots[i],
							       maia_userq_hw_prio[args->priority]);
				break;
			}
	mutex_unlock(&uqs->lock);
	drm_dev_exit(idx);
	maia_reset_read_unlock(mdev);
	if (ret)
		goto err_free;

	args->queue_id = uq->slot->hwq;
	args->entries = MAIA_USERQ_ENTRIES;
	args->sq_offset = (u64)MAIA_USERQ_PGOFF(uq->slot->hwq, MAIA_USERQ_PAGE_SQ) << PAGE_SHIFT;
	args->cq_offset = (u64)MAIA_USERQ_PGOFF(uq->slot->hwq, MAIA_USERQ_PAGE_CQ) << PAGE_SHIFT;
	args->doorbell_offset = (u64)MAIA_USERQ_PGOFF(uq->slot->hwq, MAIA_USERQ_PAGE_DB) <<
				PAGE_SHIFT;
	maia_dbg(mdev, "asid %u: user queue %u\n", ctx->asid, uq->slot->hwq);
	return 0;

err_unlock_reset:
	maia_reset_read_unlock(mdev);
err_free:
	maia_userq_unmap_pages(mdev, uq);
	kref_put(&uq->ref, maia_userq_release);
	return ret;
}

/*
 * Takes @uq (marked dying by the caller) off its slot: the process's
 * doorbell goes dead, the queue is disabled (dropping what it had not run,
 * the job it runs stopped) and unbound, waiters wake. The ring pages stay
 * the process's (each mapping holds its page) until it unmaps them.
 */
static void maia_userq_teardown(struct maia_userq *uq)
{
	struct maia_userqs *uqs = uq->uqs;
	struct maia_userq_slot *slot = uq->slot;
	struct maia_device *mdev = uqs->mdev;
	int idx;

	maia_userq_revoke_doorbell(mdev, slot->hwq);

	maia_reset_read_lock_uninterruptible(mdev);
	mutex_lock(&uqs->lock);
	if (drm_dev_enter(&mdev->drm, &idx)) {
		maia_userq_stop_locked(uq, DRM_MAIA_USERQ_LOST);
		maia_hwq_unbind(mdev, slot->hwq);
		drm_dev_exit(idx);
	}
	if (uq->state == DRM_MAIA_USERQ_ACTIVE)
		maia_userq_set_state(uq, DRM_MAIA_USERQ_LOST);
	/* Else the last mapping's close gives the slot back. */
	uq->torn_down = true;
	if (!uq->maps)
		slot->uq = NULL;
	wake_up_all(&slot->wq);
	mutex_unlock(&uqs->lock);
	maia_reset_read_unlock(mdev);

	maia_userq_unmap_pages(mdev, uq);
	kref_put(&uq->ref, maia_userq_release);
}

int maia_userq_destroy_ioctl(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct maia_device *mdev = to_maia_device(drm);
	struct maia_userqs *uqs = mdev->userqs;
	struct drm_maia_userq_destroy *args = data;
	struct maia_userq *uq;

	if (args->pad)
		return -EINVAL;
	uq = maia_userq_get(uqs, file, args->queue_id);
	if (!uq)
		return -ENOENT;
	mutex_lock(&uqs->lock);
	if (uq->dying) {
		/* Another thread of the process destroys it right now. */
		mutex_unlock(&uqs->lock);
		kref_put(&uq->ref, maia_userq_release);
		return -ENOENT;
	}
	uq->dying = true;
	mutex_unlock(&uqs->lock);
	kref_put(&uq->ref, maia_userq_release);
	maia_userq_teardown(uq);
	return 0;
}

int maia_userq_wait_ioctl(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct maia_device *mdev = to_maia_device(drm);
	struct drm_maia_userq_wait *args = data;
	struct maia_userq *uq;
	u32 completed = 0;
	long timeout, ret;

	uq = maia_userq_get(mdev->userqs, file, args->queue_id);
	if (!uq)
		return -ENOENT;
	/*
	 * The deadline is on CLOCK_MONOTONIC, the sleep in jiffies, which can
	 * run ahead of it in a guest (as in maia_wait_ioctl()): sleep again
	 * until the clock has passed it.
	 */
	do {
		timeout = drm_timeout_abs_to_jiffies(args->timeout_ns);
		ret = maia_userq_sleep(uq, args->count, &completed, true, timeout);
	} while (!ret && timeout);
	if (!ret)
		ret = -ETIME;
	else if (drm_dev_is_unplugged(drm))
		ret = -ENODEV;
	if (ret >= 0) {
		args->completed = completed;
		args->state = READ_ONCE(uq->state);
		ret = 0;
	}
	kref_put(&uq->ref, maia_userq_release);
	return ret;
}

/* Closing the file: its queues go (no mapping is left, they hold the file). */
void maia_userq_file_close(struct maia_device *mdev, struct drm_file *file)
{
	struct maia_userqs *uqs = mdev->userqs;
	unsigned int i;

	for (i = uqs->first; i < uqs->first + uqs->count; i++) {
		struct maia_userq *uq;

		mutex_lock(&uqs->lock);
		uq = uqs->slots[i].uq;
		if (uq && uq->file == file && !uq->dying)
			uq->dying = true;
		else
			uq = NULL;
		mutex_unlock(&uqs->lock);
		if (uq)
			maia_userq_teardown(uq);
	}
}

/*
 * The device is gone: every queue is GONE (its state word says so), its
 * doorbell mapping reaches the dummy page (the BAR may go to another
 * device), and every waiter wakes and returns -ENODEV.
 */
void maia_userq_unplug(struct maia_device *mdev)
{
	struct maia_userqs *uqs = mdev->userqs;
	unsigned int i;

	mutex_lock(&uqs->lock);
	for (i = uqs->first; i < uqs->first + uqs->count; i++) {
		struct maia_userq *uq = uqs->slots[i].uq;

		if (uq && uq->state == DRM_MAIA_USERQ_ACTIVE && uq->cq_page)
			maia_userq_set_state(uq, DRM_MAIA_USERQ_GONE);
	}
	mutex_unlock(&uqs->lock);
	for (i = uqs->first; i < uqs->first + uqs->count; i++) {
		maia_userq_revoke_doorbell(mdev, i);
		wake_up_all(&uqs->slots[i].wq);
	}
}

/* Recovery, before the device reset: every active user queue is lost. */
void maia_userq_reset(struct maia_device *mdev)
{
	struct maia_userqs *uqs = mdev->userqs;
	unsigned int i;

	mutex_lock(&uqs->lock);
	for (i = uqs->first; i < uqs->first + uqs->count; i++) {
		struct maia_userq *uq = uqs->slots[i].uq;

		if (uq)
			maia_userq_stop_locked(uq, DRM_MAIA_USERQ_LOST);
	}
	mutex_unlock(&uqs->lock);
}

/*
 * VM_BIND UNMAP, after the page tables and TLB dropped the range: waits
 * until every job the context's user queues had fetched by then is done
 * (jobs fetched later see the new tables), so the device never touches a
 * page after it is freed. Bounded by the watchdog, which stops a hung queue.
 */
void maia_userq_ctx_quiesce(struct maia_context *ctx)
{
	struct maia_userqs *uqs = ctx->mdev->userqs;
	unsigned int i;

	for (i = uqs->first; i < uqs->first + uqs->count; i++) {
		struct maia_userq *uq;
		u32 fetched = 0, completed;
		int idx;

		mutex_lock(&uqs->lock);
		uq = uqs->slots[i].uq;
		if (uq && uq->ctx == ctx && uq->state == DRM_MAIA_USERQ_ACTIVE &&
		    drm_dev_enter(&ctx->mdev->drm, &idx)) {
			kref_get(&uq->ref);
			fetched = maia_hwq_fetched(ctx->mdev, uq->slot->hwq);
			drm_dev_exit(idx);
		} else {
			uq = NULL;
		}
		mutex_unlock(&uqs->lock);
		if (!uq)
			continue;
		maia_userq_sleep(uq, fetched, &completed, false, MAX_SCHEDULE_TIMEOUT);
		kref_put(&uq->ref, maia_userq_release);
	}
}
