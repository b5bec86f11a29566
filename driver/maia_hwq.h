/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Maia accelerator driver: the hardware-queue layer, the one place that
 * touches a hardware queue's registers (MAIA_REG_Q(), MAIA_Q_*) and its
 * doorbell. The kernel queue (maia_queue.c), the scheduled queues
 * (maia_sched.c), user queues (maia_userq.c) and recovery (maia_reset.c)
 * program and read their queues through it.
 */
#ifndef __MAIA_HWQ_H__
#define __MAIA_HWQ_H__

#include <linux/types.h>

struct maia_device;

/* How a queue is to run (Documentation/hw/queues.rst). */
struct maia_hwq_config {
	dma_addr_t sq, cq;		/* the submission ring and the completion array */
	u32 entries;			/* a power of two */
	u32 prio;			/* MAIA_QUEUE_PRIO_* */
	/* Hardware 1.3: a user queue, bound to one ASID, interrupting when armed. */
	bool user;
	u32 asid;			/* with @user */
};

/* A queue's registers as the device shows them, for logs and reports. */
struct maia_hwq_state {
	u32 status, head, tail, fetched, completed;
};

int maia_hwq_enable(struct maia_device *mdev, unsigned int q, const struct maia_hwq_config *cfg,
		    u32 *status);
void maia_hwq_disable(struct maia_device *mdev, unsigned int q);
void maia_hwq_unbind(struct maia_device *mdev, unsigned int q);
void maia_hwq_doorbell(struct maia_device *mdev, unsigned int q, u32 tail);
void maia_hwq_arm_irq(struct maia_device *mdev, unsigned int q);
u32 maia_hwq_status(struct maia_device *mdev, unsigned int q);
bool maia_hwq_failed(struct maia_device *mdev, unsigned int q);
u32 maia_hwq_fetched(struct maia_device *mdev, unsigned int q);
u32 maia_hwq_completed(struct maia_device *mdev, unsigned int q);
u32 maia_hwq_fabric_waits(struct maia_device *mdev, unsigned int q);
void maia_hwq_read_state(struct maia_device *mdev, unsigned int q, struct maia_hwq_state *st);

#endif /* __MAIA_HWQ_H__ */
