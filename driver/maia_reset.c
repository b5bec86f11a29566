// SPDX-License-Identifier: GPL-2.0-only
/*
 * Maia accelerator driver: hang detection, device reset and recovery.
 *
 * Hang detection: the scheduler's timeout handler runs every watchdog tick
 * while a queue has jobs in flight, on the oldest job of the queue. A job
 * is hung when it has run job_timeout_ms since the device fetched it while
 * its queue completed nothing. A job the device has not fetched yet
 * (MAIA_Q_FETCHED, hardware 1.1) is waiting behind other queues' work, not
 * hung, and its clock has not started; the time it started is the later of
 * the tick that first saw it fetched and its queue's last completion, so a
 * long job is not killed for waiting behind others. On hardware 1.0, which
 * has no FETCHED register, the clock starts at the doorbell. A job the
 * device reports waiting for the fabric (MAIA_Q_STATUS_FABRIC_WAIT) is not
 * hung either, for up to fabric_wait_max_ms per wait: the device bounds
 * each wait, and the clock starts again when it ends or a new one begins.
 *
 * Recovery, one at a time on the ordered reset workqueue: stop every
 * scheduler, reset the device, retire the jobs that were on it by what
 * became of them (maia_sched_retire_all(): the hung one TIMEOUT, completed
 * ones their result, ones the device never started run again, started ones
 * ABORTED since they may have partly run), boot the firmware, enable the
 * queues, register the live address spaces again, resubmit, restart the
 * schedulers, and tell userspace with a KOBJ_CHANGE uevent carrying
 * MAIA_RESET=1. Jobs still waiting in the schedulers run afterwards as usual.
 */

#include <drm/drm_drv.h>
#include <drm/drm_managed.h>
#include <linux/device.h>
#include <linux/kobject.h>
#include <linux/moduleparam.h>
#include <linux/pci.h>

#include "maia_fw.h"
#include "maia_hbm.h"
#include "maia_hw.h"
#include "maia_hwq.h"
#include "maia_irq.h"
#include "maia_job.h"
#include "maia_queue.h"
#include "maia_reset.h"
#include "maia_sched.h"
#include "maia_userq.h"
#include "maia_sysfs.h"
#include "maia_telemetry.h"
#include "maia_trace.h"
#include "maia_vm.h"

static unsigned int maia_job_timeout_ms = 5000;
module_param_named(job_timeout_ms, maia_job_timeout_ms, uint, 0644);
MODULE_PARM_DESC(job_timeout_ms,
		 "A job running this long since the device fetched it while its queue completes nothing is hung and the device is reset, in ms (0 = never; default 5000)");

static unsigned int maia_fabric_wait_max_ms = 120000;
module_param_named(fabric_wait_max_ms, maia_fabric_wait_max_ms, uint, 0644);
MODULE_PARM_DESC(fabric_wait_max_ms,
		 "A job the device reports waiting for the fabric is not hung for this long, in ms, however long its own timeout (default 120000)");

/*
 * Whether a queue whose job the device reports waiting for the fabric is
 * exempt from the hang verdict: for fabric_wait_max_ms of one wait at most,
 * so that a command with a huge timeout_ms cannot hold a hardware queue for
 * ever. One wait is one command: from hardware 1.4 a new wait
 * (MAIA_Q_FABRIC_WAITS moved, as in a group job of many collectives)
 * starts the clock again; before, one job's waits add up.
 */
static bool maia_reset_fabric_wait_ok(struct maia_device *mdev, unsigned int hwq, ktime_t now,
				      struct maia_hang_watch *hw)
{
	if (!(maia_hwq_status(mdev, hwq) & MAIA_Q_STATUS_FABRIC_WAIT)) {
		hw->fabric_since = 0;
		return false;
	}
	if (maia_hw_has(mdev, MAIA_HW_REVISION_FABRIC_WAITS)) {
		u32 waits = maia_hwq_fabric_waits(mdev, hwq);

		if (waits != hw->fabric_waits)
			hw->fabric_since = 0;
		hw->fabric_waits = waits;
	}
	if (!hw->fabric_since)
		hw->fabric_since = now;
	return ktime_ms_delta(now, hw->fabric_since) < READ_ONCE(maia_fabric_wait_max_ms);
}

/* The watched job moved (or started): its clock starts again at @now. */
void maia_reset_hang_restart(struct maia_hang_watch *hw, ktime_t now)
{
	hw->since = now;
	hw->fabric_since = 0;
}

/*
 * The hang monitor, for the scheduler's timeout handler (kernel jobs) and
 * the user queues' watchdog alike (driver.rst, "Hang rule"): one look at
 * the oldest job of hardware queue @hwq, which the device has fetched and
 * whose clock @hw->since the caller starts, and restarts on progress
 * (maia_reset_hang_restart()). A job the device reports waiting for the
 * fabric is not hung (its clock starts again when the wait ends); else it
 * is once it ran job_timeout_ms (0: never) by its clock. *@ran_ms gets
 * what it ran.
 */
bool maia_reset_hang_check(struct maia_device *mdev, unsigned int hwq, struct maia_hang_watch *hw,
			   ktime_t now, s64 *ran_ms)
{
	unsigned int timeout_ms = READ_ONCE(maia_job_timeout_ms);

	*ran_ms = 0;
	if (maia_reset_fabric_wait_ok(mdev, hwq, now, hw)) {
		hw->since = now;
		return false;
	}
	*ran_ms = ktime_ms_delta(now, hw->since);
	return timeout_ms && *ran_ms >= timeout_ms;
}

/* Interruptible: 0, or -EINTR when a signal came first. */
int maia_reset_read_lock(struct maia_device *mdev)
{
	return down_read_interruptible(&mdev->reset->lock);
}

/* For a periodic check that would rather skip a turn than wait: true if taken. */
bool maia_reset_read_trylock(struct maia_device *mdev)
{
	return down_read_trylock(&mdev->reset->lock);
}

/* For paths that must not fail, such as close and error unwinding. */
void maia_reset_read_lock_uninterruptible(struct maia_device *mdev)
{
	down_read(&mdev->reset->lock);
}

void maia_reset_read_unlock(struct maia_device *mdev)
{
	up_read(&mdev->reset->lock);
}

u32 maia_reset_count(struct maia_device *mdev)
{
	return atomic_read(&mdev->reset->count);
}

static void maia_reset_notify(struct maia_device *mdev, const char *reason, bool ok)
{
	char state[24], count[32], why[48];
	char *envp[4] = { state, count, why, NULL };

	strscpy(state, ok ? "MAIA_RESET=1" : "MAIA_RESET=failed", sizeof(state));
	snprintf(count, sizeof(count), "MAIA_RESET_COUNT=%u", maia_reset_count(mdev));
	snprintf(why, sizeof(why), "MAIA_RESET_REASON=%s", reason);
	kobject_uevent_env(&mdev->drm.dev->kobj, KOBJ_CHANGE, envp);
}

/* Brings the device back from reset to running, queues and contexts included. */
static int maia_reset_restart(struct maia_device *mdev)
{
	int ret;

	ret = maia_device_start(mdev);
	if (ret)
		return ret;
	ret = maia_sched_enable_all(mdev);
	if (ret)
		return ret;
	ret = maia_vm_restore(mdev);
	if (ret)
		return ret;
	/* The firmware came back with its default power cap: re-apply the user's. */
	return maia_telemetry_restore(mdev);
}

/*
 * Resets the device and recovers. @guilty is the hung job, or NULL for a
 * forced reset. Runs on the reset workqueue, inside drm_dev_enter().
 */
static void maia_reset_recover(struct maia_device *mdev, struct maia_job *guilty,
			       const char *reason)
{
	struct maia_reset *rs = mdev->reset;
	unsigned int rerun, aborted;
	int ret;

	down_write(&rs->lock);
	/* A kernel-queue job in flight ends (or times out) before its queue goes away. */
	mutex_lock(&mdev->kq.lock);

	maia_sched_stop_all(mdev, guilty);
	maia_userq_reset(mdev);
	maia_irq_disable(mdev);
	maia_queue_disable(&mdev->kq);
	ret = maia_hw_reset(mdev);
	/* No completion thread looks at the rings from here on. */
	maia_irq_sync(mdev);
	rerun = maia_sched_retire_all(mdev, guilty, &aborted);

	if (ret)
		maia_err(mdev, "device did not come out of reset\n");
	else
		ret = maia_reset_restart(mdev);
	atomic_inc(&rs->count);
	trace_maia_reset(mdev, reason, ret);
	if (ret) {
		maia_err(mdev, "recovery failed (%pe): jobs fail until the driver is reloaded\n",
			 ERR_PTR(ret));
		maia_reset_mark_dead(mdev);
		/* Jobs that finished keep their result; the rest fail with -ENODEV. */
		maia_sched_resubmit_all(mdev);
	} else {
		maia_info(mdev, "recovered from %s (reset %u): %u jobs run again, %u aborted\n",
			  reason, maia_reset_count(mdev), rerun, aborted);
		/* No device DMA from before the reset can land any more. */
		maia_hbm_release_quarantine(mdev);
		maia_sched_resubmit_all(mdev);
	}

	maia_sched_start_all(mdev);
	mutex_unlock(&mdev->kq.lock);
	up_write(&rs->lock);
	maia_reset_notify(mdev, reason, !ret);
}

/*
 * The timeout handler took @sjob off its pending list; a job that is not
 * hung goes back to the head, where it was, and the watchdog re-arms. The
 * pinned drm_sched has no helper for this (later kernels return
 * DRM_GPU_SCHED_STAT_NO_HANG instead); etnaviv and v3d do the same.
 */
static void maia_reset_requeue(struct drm_sched_job *sjob)
{
	struct drm_gpu_scheduler *sched = sjob->sched;

	spin_lock(&sched->job_list_lock);
	list_add(&sjob->list, &sched->pending_list);
	spin_unlock(&sched->job_list_lock);
}

enum drm_gpu_sched_stat maia_reset_job_timedout(struct drm_sched_job *sjob)
{
	struct maia_job *job = to_maia_job(sjob);
	struct maia_device *mdev = job->mdev;
	struct maia_sched_queue *sq = job->queue;
	ktime_t now, progress;
	struct maia_hwq_state st;
	s64 ran_ms;
	int idx;

	if (!drm_dev_enter(&mdev->drm, &idx)) {
		maia_reset_requeue(sjob);
		return DRM_GPU_SCHED_STAT_ENODEV;
	}

	if (!sq || dma_fence_is_signaled(job->hw_fence))
		goto not_hung;
	now = ktime_get();
	/*
	 * The job's clock starts when a tick first sees it fetched (hardware
	 * 1.1; before, at the doorbell), and again at its queue's last
	 * completion: it is never charged for time spent behind other work.
	 */
	if (maia_hw_has(mdev, MAIA_HW_REVISION_1_1)) {
		if (!maia_sched_job_fetched(sq, job))
			goto not_hung;
		if (!job->hang.since)
			maia_reset_hang_restart(&job->hang, now);
	} else if (!job->hang.since) {
		maia_reset_hang_restart(&job->hang, job->hw_submitted);
	}
	progress = READ_ONCE(sq->last_progress);
	if (ktime_before(job->hang.since, progress))
		job->hang.since = progress;
	if (!maia_reset_hang_check(mdev, sq->hwq.index, &job->hang, now, &ran_ms))
		goto not_hung;

	maia_hwq_read_state(mdev, sq->hwq.index, &st);
	maia_err(mdev, "queue %u: job %llu (asid %u) ran %lld ms without progress (head %u fetched %u completed %u): resetting the device\n",
		 sq->hwq.index, job->hw_seq, job->asid, ran_ms, st.head, st.fetched, st.completed);
	maia_reset_recover(mdev, job, "timeout");
	drm_dev_exit(idx);
	return DRM_GPU_SCHED_STAT_NOMINAL;

not_hung:
	maia_reset_requeue(sjob);
	drm_dev_exit(idx);
	return DRM_GPU_SCHED_STAT_NOMINAL;
}

static void maia_reset_force_work(struct work_struct *work)
{
	struct maia_reset *rs = container_of(work, struct maia_reset, force_work);
	struct maia_device *mdev = rs->mdev;
	int idx;

	if (!drm_dev_enter(&mdev->drm, &idx))
		return;
	maia_warn(mdev, "reset forced through debugfs\n");
	maia_reset_recover(mdev, NULL, "forced");
	drm_dev_exit(idx);
}

static void maia_reset_async_work(struct work_struct *work)
{
	struct maia_reset *rs = container_of(work, struct maia_reset, async_work);
	struct maia_device *mdev = rs->mdev;
	int idx;

	if (!drm_dev_enter(&mdev->drm, &idx))
		return;
	/* A reset since the request (of its own, or another's) already served it. */
	if (maia_reset_count(mdev) == (u32)atomic_read(&rs->async_count))
		maia_reset_recover(mdev, NULL, READ_ONCE(rs->async_reason));
	drm_dev_exit(idx);
}

/*
 * The device is stuck (a kernel-queue job timed out, the firmware stopped):
 * recovers on the reset workqueue, since the caller may hold locks that
 * recovery takes. @reason is a string constant. A request made before a
 * reset that has happened since is served by that reset, so two paths
 * asking about one stall reset the device once (the first reason named).
 */
void maia_reset_schedule(struct maia_device *mdev, const char *reason)
{
	struct maia_reset *rs = mdev->reset;

	if (!work_pending(&rs->async_work)) {
		WRITE_ONCE(rs->async_reason, reason);
		atomic_set(&rs->async_count, maia_reset_count(mdev));
	}
	queue_work(rs->wq, &rs->async_work);
}

/* Resets the device now (debugfs force_reset) and returns once it recovered. */
void maia_reset_force(struct maia_device *mdev)
{
	struct maia_reset *rs = mdev->reset;

	queue_work(rs->wq, &rs->force_work);
	flush_work(&rs->force_work);
}

/* Device resets since probe, on the PCI device. */
static ssize_t reset_count_show(struct device *dev, struct device_attribute *attr,
				char *buf)
{
	return sysfs_emit(buf, "%u\n", maia_reset_count(maia_from_dev(dev)));
}
static DEVICE_ATTR_RO(reset_count);

static struct attribute *maia_reset_attrs[] = {
	&dev_attr_reset_count.attr,
	NULL,
};

const struct attribute_group maia_reset_attr_group = {
	.attrs = maia_reset_attrs,
};

void maia_reset_mark_dead(struct maia_device *mdev)
{
	WRITE_ONCE(mdev->reset->dead, true);
}

static void maia_reset_destroy_wq(struct drm_device *drm, void *arg)
{
	destroy_workqueue(arg);
}

/* Before the user queues and the scheduler, which use the lock and the workqueue. */
int maia_reset_init(struct maia_device *mdev)
{
	struct maia_reset *rs;
	int ret;

	rs = drmm_kzalloc(&mdev->drm, sizeof(*rs), GFP_KERNEL);
	if (!rs)
		return -ENOMEM;
	rs->mdev = mdev;
	init_rwsem(&rs->lock);
	atomic_set(&rs->count, 0);
	INIT_WORK(&rs->force_work, maia_reset_force_work);
	INIT_WORK(&rs->async_work, maia_reset_async_work);
	rs->wq = alloc_ordered_workqueue("maia-reset", 0);
	if (!rs->wq)
		return -ENOMEM;
	ret = drmm_add_action_or_reset(&mdev->drm, maia_reset_destroy_wq, rs->wq);
	if (ret)
		return ret;
	mdev->reset = rs;
	return 0;
}
