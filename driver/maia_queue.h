/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Maia accelerator driver: kernel-owned hardware queues and the PING ioctl.
 */
#ifndef __MAIA_QUEUE_H__
#define __MAIA_QUEUE_H__

#include "maia_drv.h"

struct drm_file;

int maia_queue_init(struct maia_device *mdev, struct maia_queue *q,
		    unsigned int index, u32 entries);
int maia_queue_enable(struct maia_queue *q);
void maia_queue_disable(struct maia_queue *q);
u64 maia_queue_write_locked(struct maia_queue *q, const struct maia_sq_entry *entry);
void maia_queue_doorbell(struct maia_queue *q, u64 seq);
void maia_queue_drain(struct maia_queue *q);
void maia_queue_report_error(struct maia_queue *q);
int maia_queue_run_sync(struct maia_queue *q, const struct maia_sq_entry *entry,
			unsigned int timeout_ms, bool interruptible,
			struct maia_queue_done *done, ktime_t *doorbell_time);

int maia_ping_ioctl(struct drm_device *drm, void *data, struct drm_file *file);

#endif /* __MAIA_QUEUE_H__ */
