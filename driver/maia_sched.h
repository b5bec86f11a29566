/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Maia accelerator driver: user hardware queues, each fed by a DRM GPU
 * scheduler, and the mapping of job priorities onto them.
 */
#ifndef __MAIA_SCHED_H__
#define __MAIA_SCHED_H__

#include <drm/gpu_scheduler.h>
#include <drm/maia_accel.h>
#include <linux/spinlock.h>
#include <linux/workqueue.h>

#include "maia_drv.h"

struct maia_job;

/* Ring entries of a user queue; one stays empty, so entries - 1 jobs fly. */
#define MAIA_UQ_ENTRIES		MAIA_KQ_ENTRIES
#define MAIA_NUM_PRIOS		(DRM_MAIA_PRIO_HIGH + 1)

/*
 * One user hardware queue (hardware index 1..num_queues-1) and its
 * scheduler. The ring itself is the shared maia_queue code.
 */
struct maia_sched_queue {
	struct maia_queue hwq;
	struct drm_gpu_scheduler sched;
	struct maia_sched *ms;
	u32 hw_prio;			/* MAIA_QUEUE_PRIO_* */
	u64 fence_context;
	u64 fence_seqno;		/* last hardware fence; only run_job writes it */
	char name[24];			/* "maia-q<N>" */
	/*
	 * Protects @jobs and is the lock of the hardware fences of this
	 * queue: the completion thread and recovery both retire jobs under it,
	 * so a job is retired exactly once.
	 */
	spinlock_t lock;
	struct maia_job *jobs[MAIA_UQ_ENTRIES];	/* job in each ring slot */
	/*
	 * Host time of the last completion on this queue, or of the doorbell
	 * that gave an idle queue work: the oldest job in flight started no
	 * earlier than this. Written by run_job and the completion thread.
	 */
	ktime_t last_progress;
	/*
	 * Host time the last job completed on this queue: a job's host busy
	 * time starts at its doorbell or there, whichever is later (jobs run
	 * in order). Under @lock.
	 */
	ktime_t last_done;
	/* MAIA_Q_FETCHED when recovery stopped the queue (hardware 1.1: @fetched_known). */
	u32 fetched_at_stop;
	bool fetched_known;
};

/* Device-wide scheduling state, one per device (mdev->sched). */
struct maia_sched {
	struct maia_device *mdev;
	unsigned int num_queues;		/* user queues */
	struct maia_sched_queue *queues;	/* [i] is hardware queue i + 1 */
	/* Schedulers serving each DRM_MAIA_PRIO_*, and the entity priority used. */
	struct drm_gpu_scheduler *prio_scheds[MAIA_NUM_PRIOS][MAIA_MAX_QUEUES];
	unsigned int prio_num_scheds[MAIA_NUM_PRIOS];
	enum drm_sched_priority prio_entity[MAIA_NUM_PRIOS];
};

int maia_sched_init(struct maia_device *mdev);
void maia_sched_stop_all(struct maia_device *mdev, struct maia_job *guilty);
unsigned int maia_sched_retire_all(struct maia_device *mdev, struct maia_job *guilty,
				   unsigned int *aborted);
void maia_sched_resubmit_all(struct maia_device *mdev);
int maia_sched_enable_all(struct maia_device *mdev);
void maia_sched_start_all(struct maia_device *mdev);
void maia_sched_report_queue_errors(struct maia_device *mdev);
bool maia_sched_job_fetched(struct maia_sched_queue *sq, const struct maia_job *job);

#endif /* __MAIA_SCHED_H__ */
