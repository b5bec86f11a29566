/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Maia accelerator driver: hang detection, device reset and recovery.
 */
#ifndef __MAIA_RESET_H__
#define __MAIA_RESET_H__

#include <drm/gpu_scheduler.h>
#include <linux/atomic.h>
#include <linux/lockdep.h>
#include <linux/rwsem.h>
#include <linux/workqueue.h>

#include "maia_drv.h"

struct maia_job;

/*
 * The hang monitor's view of one job between two looks
 * (maia_reset_hang_check()): the job's clock, and its fabric waits.
 */
struct maia_hang_watch {
	ktime_t since;			/* the clock's start: fetched, or last progress */
	ktime_t fabric_since;		/* waiting for the fabric since (0: not seen) */
	u32 fabric_waits;		/* MAIA_Q_FABRIC_WAITS then (hardware 1.4) */
};

struct maia_reset {
	struct maia_device *mdev;
	/*
	 * Protects the device's running state (firmware, queue and context
	 * registers) against a reset: ioctls and open paths that use the
	 * device hold it for reading, recovery holds it for writing. Never
	 * wait for a job while holding it: the job may need recovery to end.
	 */
	struct rw_semaphore lock;
	atomic_t count;			/* resets since probe */
	/*
	 * Ordered: the scheduler's timeout handlers of all queues, forced and
	 * scheduled recoveries run one at a time, since a reset takes down
	 * every queue.
	 */
	struct workqueue_struct *wq;
	/* Set when the device is gone or could not be recovered: jobs fail (-ENODEV). */
	bool dead;
	struct work_struct force_work;	/* debugfs force_reset, on the reset workqueue */
	/* Recovery asked for by a path that cannot wait for it (maia_reset_schedule()). */
	struct work_struct async_work;
	const char *async_reason;	/* why; written before queueing, read by the work */
	atomic_t async_count;		/* reset count when it was asked for */
};

extern const struct attribute_group maia_reset_attr_group;

int maia_reset_init(struct maia_device *mdev);
int maia_reset_read_lock(struct maia_device *mdev);
void maia_reset_read_lock_uninterruptible(struct maia_device *mdev);
bool maia_reset_read_trylock(struct maia_device *mdev);
void maia_reset_read_unlock(struct maia_device *mdev);
void maia_reset_force(struct maia_device *mdev);
void maia_reset_schedule(struct maia_device *mdev, const char *reason);
u32 maia_reset_count(struct maia_device *mdev);
void maia_reset_mark_dead(struct maia_device *mdev);

void maia_reset_hang_restart(struct maia_hang_watch *hw, ktime_t now);
bool maia_reset_hang_check(struct maia_device *mdev, unsigned int hwq, struct maia_hang_watch *hw,
			   ktime_t now, s64 *ran_ms);
enum drm_gpu_sched_stat maia_reset_job_timedout(struct drm_sched_job *sjob);

/* Whether the device is gone or could not be recovered. */
static inline bool maia_reset_dead(struct maia_device *mdev)
{
	return READ_ONCE(mdev->reset->dead);
}

/* For paths whose caller holds the reset lock for reading. */
static inline void maia_reset_assert_read_held(struct maia_device *mdev)
{
	lockdep_assert_held_read(&mdev->reset->lock);
}

#endif /* __MAIA_RESET_H__ */
