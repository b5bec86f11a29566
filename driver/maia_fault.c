// SPDX-License-Identifier: GPL-2.0-only
/*
 * Maia accelerator driver: MMU faults.
 *
 * A fault must reach the context whose job caused it, with its address and
 * access, also when several contexts fault at once. Hardware 1.7 keeps
 * every fault in the fault queue (MAIA_REG_FAULTQ_*), a ring in host memory
 * that the device writes before the faulting job's completion entry; older
 * hardware keeps one record (MAIA_REG_FAULT_INFO), the first since its
 * cause was cleared, so a second context that faults before the driver
 * read it learns only that its address is unknown.
 *
 * This file is their one reader, under maia_faults.lock, from four places:
 * the event interrupt (maia_fault_latch()), a faulting kernel job's
 * completion (maia_fault_report_job()), the event thread
 * (maia_fault_handle_event()) and a closing context
 * (maia_fault_forget_asid()). Taking an entry from the queue marks the
 * context that owns its ASID at once, looked up in maia_contexts.by_asid;
 * a closing context leaves by_asid before maia_fault_forget_asid() takes
 * the lock, so no reader holds it once that returns. The event thread then
 * logs the fault and stops the user queue that faulted, if one did.
 */

#include <drm/drm_drv.h>
#include <linux/bitfield.h>
#include <linux/delay.h>
#include <linux/dma-mapping.h>
#include <linux/interrupt.h>
#include <linux/moduleparam.h>
#include <linux/pci.h>

#include "maia_drv.h"
#include "maia_fault.h"
#include "maia_hw.h"
#include "maia_reset.h"
#include "maia_userq.h"
#include "maia_vm.h"

/*
 * For tests: how long the event thread waits before it reports an MMU
 * fault, standing in for a thread that runs late on a loaded machine.
 */
static unsigned int maia_fault_report_delay_ms;
module_param_named(fault_report_delay_ms, maia_fault_report_delay_ms, uint, 0644);
MODULE_PARM_DESC(fault_report_delay_ms,
		 "Test only: delay before the interrupt thread reports an MMU fault, in ms (default 0)");

int maia_fault_init(struct maia_device *mdev)
{
	struct maia_faults *f = &mdev->faults;

	spin_lock_init(&f->lock);
	if (!maia_hw_has(mdev, MAIA_HW_REVISION_FAULTQ))
		return 0;
	/* Managed: freed after the device was quiesced (maia_device_quiesce()). */
	f->ring = dmam_alloc_coherent(mdev->drm.dev, MAIA_FAULTQ_ENTRIES * sizeof(*f->ring),
				      &f->ring_dma, GFP_KERNEL);
	return f->ring ? 0 : -ENOMEM;
}

/* After the device (re)started: the queue is empty, PROD and CONS are 0. */
void maia_fault_queue_start(struct maia_device *mdev)
{
	struct maia_faults *f = &mdev->faults;
	unsigned long flags;

	if (!f->ring)
		return;
	spin_lock_irqsave(&f->lock, flags);
	f->cons = 0;
	f->overflows_hw = 0;
	maia_wr(mdev, MAIA_REG_FAULTQ_BASE_LO, lower_32_bits(f->ring_dma));
	maia_wr(mdev, MAIA_REG_FAULTQ_BASE_HI, upper_32_bits(f->ring_dma));
	maia_wr(mdev, MAIA_REG_FAULTQ_SIZE, MAIA_FAULTQ_ENTRIES);
	spin_unlock_irqrestore(&f->lock, flags);
}

/* The device's latched record: valid only while MAIA_INT_MMU_FAULT is pending. */
static void maia_fault_read_record(struct maia_device *mdev, struct maia_fault_record *rec)
{
	rec->info = maia_rd(mdev, MAIA_REG_FAULT_INFO);
	rec->addr = maia_rd(mdev, MAIA_REG_FAULT_ADDR_LO) |
		    (u64)maia_rd(mdev, MAIA_REG_FAULT_ADDR_HI) << 32;
}

static void maia_fault_notice_locked(struct maia_faults *f, const struct maia_fault_record *rec)
{
	if (f->notice_head - f->notice_tail == MAIA_FAULT_NOTICES) {
		f->notice_tail++;	/* the oldest goes: the event thread is far behind */
		f->notices_lost++;
	}
	f->notices[f->notice_head++ % MAIA_FAULT_NOTICES] = *rec;
}

/*
 * Takes every new entry of the fault queue: marks the context that owns its
 * ASID (the first fault of a context is the one it keeps) and leaves a
 * notice for the event thread.
 */
static void maia_fault_take_locked(struct maia_device *mdev)
{
	struct maia_faults *f = &mdev->faults;
	u32 prod, overflows;

	lockdep_assert_held(&f->lock);
	if (!f->ring)
		return;
	prod = maia_rd(mdev, MAIA_REG_FAULTQ_PROD);
	overflows = maia_rd(mdev, MAIA_REG_FAULTQ_OVERFLOWS);
	f->overflows += overflows - f->overflows_hw;
	f->overflows_hw = overflows;
	if (prod - f->cons > MAIA_FAULTQ_ENTRIES) {
		/* A reset emptied the queue before maia_fault_queue_start(): nothing to take. */
		f->cons = prod;
		return;
	}
	/* The entries are read after PROD counted them. */
	dma_rmb();
	while (f->cons != prod) {
		const struct maia_fault_entry *e = &f->ring[f->cons % MAIA_FAULTQ_ENTRIES];
		struct maia_fault_record rec = {
			.info = READ_ONCE(e->info),
			.addr = READ_ONCE(e->addr),
		};
		struct maia_context *ctx;

		f->cons++;
		f->queued++;
		ctx = xa_load(&mdev->contexts.by_asid, FIELD_GET(MAIA_FAULT_ASID_MASK, rec.info));
		if (ctx)
			maia_ctx_report_fault(ctx, true, rec.addr,
					      FIELD_GET(MAIA_FAULT_ACCESS_MASK, rec.info));
		maia_fault_notice_locked(f, &rec);
	}
	maia_wr(mdev, MAIA_REG_FAULTQ_CONS, f->cons);
}

/* The event interrupt saw MAIA_INT_MMU_FAULT, before it acknowledges it. */
void maia_fault_latch(struct maia_device *mdev)
{
	struct maia_faults *f = &mdev->faults;

	spin_lock(&f->lock);
	maia_fault_read_record(mdev, &f->latched);
	maia_fault_take_locked(mdev);
	spin_unlock(&f->lock);
}

/*
 * A kernel job of @ctx (ASID @asid) completed with an MMU fault (its
 * queue's completion handler): @ctx is marked before the job's fence
 * signals. With the fault queue, the job's entry is there already and
 * marks it (the first fault of a context is the one it keeps, so what
 * follows is then a no-op). Without it, or when the full queue could not
 * keep the fault, the one record is used if it names @ctx's ASID: a record
 * of a context that has closed is forgotten before its ASID is free, and
 * ASIDs are reused last (maia_vm.c), so a matching ASID is @ctx's;
 * otherwise the address is unknown (DRM_MAIA_CTX_FAULT_ADDR_UNKNOWN),
 * never the other's.
 */
void maia_fault_report_job(struct maia_device *mdev, struct maia_context *ctx, u32 asid)
{
	struct maia_faults *f = &mdev->faults;
	struct maia_fault_record rec;

	spin_lock(&f->lock);
	maia_fault_take_locked(mdev);
	if (maia_rd(mdev, MAIA_REG_INT_STATUS) & MAIA_INT_MMU_FAULT)
		maia_fault_read_record(mdev, &rec);
	else
		rec = f->latched;
	spin_unlock(&f->lock);

	maia_ctx_report_fault(ctx, FIELD_GET(MAIA_FAULT_ASID_MASK, rec.info) == asid, rec.addr,
			      FIELD_GET(MAIA_FAULT_ACCESS_MASK, rec.info));
}

static void maia_fault_log(struct maia_device *mdev, const struct maia_fault_record *rec)
{
	maia_err_ratelimited(mdev, "MMU fault: asid %u queue %u %s at %#llx\n",
			     FIELD_GET(MAIA_FAULT_ASID_MASK, rec->info),
			     FIELD_GET(MAIA_FAULT_QUEUE_MASK, rec->info),
			     FIELD_GET(MAIA_FAULT_ACCESS_MASK, rec->info) ==
			     MAIA_ACCESS_WRITE ? "write" : "read", rec->addr);
}

/*
 * The event thread, after MAIA_INT_MMU_FAULT: logs each fault and hands it
 * to the user queues (a user queue's fault has no job to report it).
 */
void maia_fault_handle_event(struct maia_device *mdev)
{
	unsigned int delay_ms = READ_ONCE(maia_fault_report_delay_ms);
	struct maia_faults *f = &mdev->faults;
	struct maia_fault_record batch[16];
	unsigned int i, n;

	if (delay_ms)
		msleep(delay_ms);
	do {
		spin_lock_irq(&f->lock);
		n = 0;
		if (f->ring) {
			maia_fault_take_locked(mdev);
			while (n < ARRAY_SIZE(batch) && f->notice_tail != f->notice_head)
				batch[n++] = f->notices[f->notice_tail++ % MAIA_FAULT_NOTICES];
		} else {
			batch[n++] = f->latched;
		}
		spin_unlock_irq(&f->lock);
		for (i = 0; i < n; i++) {
			maia_fault_log(mdev, &batch[i]);
			if (!batch[i].forgotten)
				maia_userq_handle_fault(mdev, &batch[i]);
		}
	} while (n == ARRAY_SIZE(batch));
}

/*
 * @asid is being given up; its context has left maia_contexts.by_asid. A
 * reader that found the context before finishes first (a hard handler
 * still copying the record, a completion taking the queue), the entries
 * still queued go nowhere, and a record or notice that names the ASID is
 * forgotten, so that none is taken for a fault of the ASID's next owner.
 * The event thread, which only logs and looks at user queues, is not
 * waited for. After the device's removal (a file closed late) there is
 * nothing to take.
 */
void maia_fault_forget_asid(struct maia_device *mdev, u32 asid)
{
	struct pci_dev *pdev = to_pci_dev(mdev->drm.dev);
	struct maia_faults *f = &mdev->faults;
	bool present;
	int idx;
	u32 i;

	maia_reset_assert_read_held(mdev);
	lockdep_assert_held(&mdev->contexts.lock);
	synchronize_hardirq(pci_irq_vector(pdev, MAIA_VEC_EVENT));
	present = drm_dev_enter(&mdev->drm, &idx);
	spin_lock_irq(&f->lock);
	if (present)
		maia_fault_take_locked(mdev);
	if (FIELD_GET(MAIA_FAULT_ASID_MASK, f->latched.info) == asid)
		f->latched = (struct maia_fault_record) { .info = MAIA_ASID_PHYS };
	for (i = f->notice_tail; i != f->notice_head; i++) {
		struct maia_fault_record *rec = &f->notices[i % MAIA_FAULT_NOTICES];

		if (FIELD_GET(MAIA_FAULT_ASID_MASK, rec->info) == asid)
			rec->forgotten = true;
	}
	spin_unlock_irq(&f->lock);
	if (present)
		drm_dev_exit(idx);
}

void maia_fault_counts(struct maia_device *mdev, u64 *queued, u64 *overflows, u64 *lost)
{
	struct maia_faults *f = &mdev->faults;

	spin_lock_irq(&f->lock);
	*queued = f->queued;
	*overflows = f->overflows;
	*lost = f->notices_lost;
	spin_unlock_irq(&f->lock);
}
