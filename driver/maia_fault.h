/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Maia accelerator driver: MMU faults, the one reader of the device's fault
 * record and fault queue.
 */
#ifndef __MAIA_FAULT_H__
#define __MAIA_FAULT_H__

#include <linux/spinlock.h>
#include <linux/types.h>

#include <maia/hw/queue.h>

struct maia_context;
struct maia_device;

/* An MMU fault as the device recorded it. */
struct maia_fault_record {
	u32 info;			/* as MAIA_REG_FAULT_INFO: ASID, access, queue */
	bool forgotten;			/* its ASID was given up: only logged */
	u64 addr;
};

/* Fault-queue entries the driver keeps (revision 1.7). */
#define MAIA_FAULTQ_ENTRIES		256u
/* Faults taken from the queue that the event thread has not logged yet. */
#define MAIA_FAULT_NOTICES		256u

struct maia_faults {
	/*
	 * Protects everything below and the device's fault record and queue
	 * registers. Taken in hard interrupt context (the event handler, a
	 * queue's completion handler), so IRQ-safe; nests inside
	 * maia_sched_queue.lock and outside maia_context.fault_lock.
	 */
	spinlock_t lock;
	/* The FAULT_INFO record as the event handler last latched it. */
	struct maia_fault_record latched;
	/* The fault queue, hardware 1.7 (NULL before): entries taken so far. */
	struct maia_fault_entry *ring;
	dma_addr_t ring_dma;
	u32 cons;
	/* Faults taken from the queue, for the event thread: [tail, head). */
	struct maia_fault_record notices[MAIA_FAULT_NOTICES];
	u32 notice_head, notice_tail;
	/* Counts since probe, for debugfs. */
	u64 queued;			/* entries taken from the queue */
	u64 overflows;			/* faults the full queue could not keep */
	u32 overflows_hw;		/* MAIA_REG_FAULTQ_OVERFLOWS at the last look */
	u64 notices_lost;		/* notices the event thread never saw */
};

int maia_fault_init(struct maia_device *mdev);
void maia_fault_queue_start(struct maia_device *mdev);
void maia_fault_latch(struct maia_device *mdev);
void maia_fault_report_job(struct maia_device *mdev, struct maia_context *ctx, u32 asid);
void maia_fault_handle_event(struct maia_device *mdev);
void maia_fault_forget_asid(struct maia_device *mdev, u32 asid);
void maia_fault_counts(struct maia_device *mdev, u64 *queued, u64 *overflows, u64 *lost);

#endif /* __MAIA_FAULT_H__ */
