// SPDX-License-Identifier: GPL-2.0-only
/*
 * Maia accelerator driver: the hardware-queue layer (maia_hwq.h). Every
 * per-queue register access of the driver is here: set-up and enable,
 * disable, the ASID binding and interrupt mode of user queues, the
 * doorbell, and the reads that progress checks and reports need
 * (Documentation/hw/queues.rst has the registers).
 *
 * The callers own the queues and their locking: these functions only
 * write and read registers, and need the device present (drm_dev_enter,
 * or a path that runs before registration or under the reset lock).
 */

#include <linux/bitfield.h>

#include "maia_hw.h"
#include "maia_hwq.h"

static u32 maia_hwq_rd(struct maia_device *mdev, unsigned int q, u32 reg)
{
	return maia_rd(mdev, MAIA_REG_Q(q, reg));
}

static void maia_hwq_wr(struct maia_device *mdev, unsigned int q, u32 reg, u32 val)
{
	maia_wr(mdev, MAIA_REG_Q(q, reg), val);
}

/*
 * Points queue @q at its rings and enables it, from slot 0. A user queue
 * (@cfg->user) is bound to its ASID and interrupts only when armed. 0, or
 * -EIO when the device refused the configuration (then *status has its
 * MAIA_Q_STATUS, and the queue is left disabled and unbound).
 */
int maia_hwq_enable(struct maia_device *mdev, unsigned int q, const struct maia_hwq_config *cfg,
		    u32 *status)
{
	u32 asid = cfg->user ? MAIA_Q_ASID_BOUND | cfg->asid : 0;

	maia_hwq_wr(mdev, q, MAIA_Q_CTRL, 0);
	maia_hwq_wr(mdev, q, MAIA_Q_SQ_LO, lower_32_bits(cfg->sq));
	maia_hwq_wr(mdev, q, MAIA_Q_SQ_HI, upper_32_bits(cfg->sq));
	maia_hwq_wr(mdev, q, MAIA_Q_CQ_LO, lower_32_bits(cfg->cq));
	maia_hwq_wr(mdev, q, MAIA_Q_CQ_HI, upper_32_bits(cfg->cq));
	maia_hwq_wr(mdev, q, MAIA_Q_SIZE, cfg->entries);
	if (cfg->user) {
		maia_hwq_wr(mdev, q, MAIA_Q_ASID, asid);
		maia_hwq_wr(mdev, q, MAIA_Q_IRQ, MAIA_Q_IRQ_ON_ARM);
	}
	maia_hwq_wr(mdev, q, MAIA_Q_CTRL, MAIA_Q_CTRL_ENABLE |
		    FIELD_PREP(MAIA_Q_CTRL_PRIO_MASK, cfg->prio));

	*status = maia_hwq_rd(mdev, q, MAIA_Q_STATUS);
	if (!(*status & MAIA_Q_STATUS_ERRORS) &&
	    (!cfg->user || maia_hwq_rd(mdev, q, MAIA_Q_ASID) == asid))
		return 0;
	maia_hwq_wr(mdev, q, MAIA_Q_CTRL, 0);
	if (cfg->user)
		maia_hwq_wr(mdev, q, MAIA_Q_ASID, 0);
	return -EIO;
}

/*
 * Disables queue @q: the device drops the entries it has not run, and
 * (hardware 1.3) returns once the job it runs has stopped.
 */
void maia_hwq_disable(struct maia_device *mdev, unsigned int q)
{
	maia_hwq_wr(mdev, q, MAIA_Q_CTRL, 0);
}

/* A user queue given up: no ASID binding, no interrupt. */
void maia_hwq_unbind(struct maia_device *mdev, unsigned int q)
{
	maia_hwq_wr(mdev, q, MAIA_Q_ASID, 0);
	maia_hwq_wr(mdev, q, MAIA_Q_IRQ, 0);
}

/* The device runs the entries of queue @q up to @tail. */
void maia_hwq_doorbell(struct maia_device *mdev, unsigned int q, u32 tail)
{
	maia_wr(mdev, MAIA_REG_DOORBELL(q), tail);
}

/* A user queue's next completion interrupts (once). */
void maia_hwq_arm_irq(struct maia_device *mdev, unsigned int q)
{
	maia_hwq_wr(mdev, q, MAIA_Q_IRQ, MAIA_Q_IRQ_ON_ARM | MAIA_Q_IRQ_ARMED);
}

u32 maia_hwq_status(struct maia_device *mdev, unsigned int q)
{
	return maia_hwq_rd(mdev, q, MAIA_Q_STATUS);
}

/*
 * Whether queue @q has failed: an error bit of its status. A job waiting
 * for the fabric (MAIA_Q_STATUS_FABRIC_WAIT) is no error.
 */
bool maia_hwq_failed(struct maia_device *mdev, unsigned int q)
{
	return maia_hwq_status(mdev, q) & MAIA_Q_STATUS_ERRORS;
}

/* Entries the device has taken to run (hardware 1.1), modulo 2^32. */
u32 maia_hwq_fetched(struct maia_device *mdev, unsigned int q)
{
	return maia_hwq_rd(mdev, q, MAIA_Q_FETCHED);
}

/* Entries completed since the queue was enabled, modulo 2^32. */
u32 maia_hwq_completed(struct maia_device *mdev, unsigned int q)
{
	return maia_hwq_rd(mdev, q, MAIA_Q_COMPLETED);
}

/* Fabric waits begun on the queue (hardware 1.4), modulo 2^32. */
u32 maia_hwq_fabric_waits(struct maia_device *mdev, unsigned int q)
{
	return maia_hwq_rd(mdev, q, MAIA_Q_FABRIC_WAITS);
}

void maia_hwq_read_state(struct maia_device *mdev, unsigned int q, struct maia_hwq_state *st)
{
	st->status = maia_hwq_rd(mdev, q, MAIA_Q_STATUS);
	st->head = maia_hwq_rd(mdev, q, MAIA_Q_HEAD);
	st->tail = maia_hwq_rd(mdev, q, MAIA_Q_TAIL);
	st->fetched = maia_hwq_rd(mdev, q, MAIA_Q_FETCHED);
	st->completed = maia_hwq_rd(mdev, q, MAIA_Q_COMPLETED);
}
