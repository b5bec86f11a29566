// SPDX-License-Identifier: GPL-2.0-only
/*
 * Maia accelerator driver: MSI-X vectors and the event interrupt.
 *
 * Vector MAIA_VEC_EVENT carries the causes in MAIA_REG_INT_STATUS (boot
 * done, mailbox, faults); vector MAIA_VEC_QUEUE(q) says queue q posted
 * completions. The event vector's hard handler only acknowledges and wakes
 * its thread, where the work happens. Queue vectors have no thread: their
 * handler drains the completion array in hard interrupt context, which only
 * takes IRQ-safe spinlocks and signals fences (allowed there), and saves a
 * wake-up and a context switch per interrupt.
 */

#include <linux/bitfield.h>
#include <linux/interrupt.h>
#include <linux/pci.h>

#include "maia_fabric.h"
#include "maia_fault.h"
#include "maia_hbm.h"
#include "maia_hw.h"
#include "maia_irq.h"
#include "maia_queue.h"
#include "maia_sched.h"
#include "maia_telemetry.h"
#include "maia_userq.h"

static irqreturn_t maia_irq_event(int irq, void *arg)
{
	struct maia_device *mdev = arg;
	u32 causes;

	causes = maia_rd(mdev, MAIA_REG_INT_STATUS);
	/* All ones: the device fell off the bus; nothing here is real. */
	if (causes == U32_MAX)
		return IRQ_NONE;
	causes &= MAIA_INT_ALL;
	if (!causes)
		return IRQ_NONE;

	/* The fault record is only valid until its cause is cleared. */
	if (causes & MAIA_INT_MMU_FAULT)
		maia_fault_latch(mdev);

	/*
	 * HBM_ECC is acknowledged by the thread once it has read the record:
	 * the ack lets the device latch its next bad page, so none is lost.
	 */
	maia_wr(mdev, MAIA_REG_INT_STATUS, causes & ~MAIA_INT_HBM_ECC);
	atomic_or(causes, &mdev->irq_causes);
	return IRQ_WAKE_THREAD;
}

/*
 * An uncorrectable HBM ECC error: the device has failed the job that read
 * the page (its completion says MAIA_STATUS_HBM_ECC) or found it without a
 * job (scrub). Here the page is retired and the record acknowledged. The
 * record is valid only while the cause is pending; a reset in between
 * clears both, hence the second look at INT_STATUS.
 */
static void maia_irq_handle_ecc(struct maia_device *mdev)
{
	u32 info;
	u64 page;

	if (!(maia_rd(mdev, MAIA_REG_INT_STATUS) & MAIA_INT_HBM_ECC))
		return;
	info = maia_rd(mdev, MAIA_REG_ECC_INFO);
	page = maia_rd(mdev, MAIA_REG_ECC_ADDR_LO) |
	       (u64)maia_rd(mdev, MAIA_REG_ECC_ADDR_HI) << 32;
	if (!(maia_rd(mdev, MAIA_REG_INT_STATUS) & MAIA_INT_HBM_ECC))
		return;
	if (info & MAIA_ECC_JOB)
		maia_err_ratelimited(mdev, "HBM ECC uncorrectable error at %#llx: read by asid %u queue %u\n",
				     page, FIELD_GET(MAIA_ECC_ASID_MASK, info),
				     FIELD_GET(MAIA_ECC_QUEUE_MASK, info));
	else
		maia_err_ratelimited(mdev, "HBM ECC uncorrectable error at %#llx\n", page);
	maia_hbm_retire_page(mdev, page);
	maia_wr(mdev, MAIA_REG_INT_STATUS, MAIA_INT_HBM_ECC);
}

static irqreturn_t maia_irq_event_thread(int irq, void *arg)
{
	struct maia_device *mdev = arg;
	u32 causes = atomic_xchg(&mdev->irq_causes, 0);

	if (causes & MAIA_INT_BOOT_DONE)
		complete(&mdev->fw.boot_done);
	if (causes & MAIA_INT_MBOX_DONE)
		maia_dbg(mdev, "mailbox done\n");
	if (causes & MAIA_INT_MMU_FAULT)
		maia_fault_handle_event(mdev);
	if (causes & MAIA_INT_QUEUE_ERROR) {
		maia_sched_report_queue_errors(mdev);
		maia_userq_report_errors(mdev);
	}
	if (causes & MAIA_INT_FW_ERROR)
		maia_err_ratelimited(mdev, "firmware reported an internal error\n");
	if (causes & MAIA_INT_THERMAL)
		maia_telemetry_throttle_event(mdev);
	if (causes & MAIA_INT_HBM_ECC)
		maia_irq_handle_ecc(mdev);
	if (causes & MAIA_INT_FABRIC_LINK)
		maia_fabric_link_event(mdev);

	return IRQ_HANDLED;
}

/*
 * Queue vectors have no status register: the completion array says it all.
 * The IRQ core never runs one vector's handler on two CPUs at once, so the
 * drain stays the only writer of the queue's completed count.
 */
static irqreturn_t maia_irq_queue(int irq, void *arg)
{
	maia_queue_drain(arg);
	return IRQ_HANDLED;
}

/*
 * Allocates one vector for events and one per hardware queue, and installs
 * handlers for the event vector and the kernel queue; the other queue
 * vectors wait for the queues that will use them. All of it is managed:
 * released after remove, handlers before vectors.
 */
int maia_irq_init(struct maia_device *mdev)
{
	struct pci_dev *pdev = to_pci_dev(mdev->drm.dev);
	unsigned int nvec = MAIA_NUM_VECTORS(mdev->hw.num_queues);
	int ret;

	ret = pci_alloc_irq_vectors(pdev, nvec, nvec, PCI_IRQ_MSIX);
	if (ret < 0) {
		maia_err(mdev, "cannot allocate %u MSI-X vectors: %pe\n",
			 nvec, ERR_PTR(ret));
		return ret;
	}

	ret = devm_request_threaded_irq(&pdev->dev, pci_irq_vector(pdev, MAIA_VEC_EVENT),
					maia_irq_event, maia_irq_event_thread,
					0, "maia-event", mdev);
	if (ret) {
		maia_err(mdev, "cannot request the event interrupt: %pe\n", ERR_PTR(ret));
		return ret;
	}

	return maia_irq_request_queue(mdev, &mdev->kq, "maia-kq");
}

/* Installs the completion handler of queue @q on its vector (managed). */
int maia_irq_request_queue(struct maia_device *mdev, struct maia_queue *q,
			   const char *name)
{
	struct pci_dev *pdev = to_pci_dev(mdev->drm.dev);
	int ret;

	ret = devm_request_irq(&pdev->dev, pci_irq_vector(pdev, MAIA_VEC_QUEUE(q->index)),
			       maia_irq_queue, 0, name, q);
	if (ret)
		maia_err(mdev, "cannot request the interrupt of queue %u: %pe\n",
			 q->index, ERR_PTR(ret));
	return ret;
}

/* Unmasks every event cause, dropping any left over from before. */
void maia_irq_enable(struct maia_device *mdev)
{
	maia_wr(mdev, MAIA_REG_INT_STATUS, MAIA_INT_ALL);
	maia_wr(mdev, MAIA_REG_INT_MASK, 0);
}

void maia_irq_disable(struct maia_device *mdev)
{
	maia_wr(mdev, MAIA_REG_INT_MASK, MAIA_INT_ALL);
}

/* Waits for running handlers, hard and threaded, to finish. */
void maia_irq_sync(struct maia_device *mdev)
{
	struct pci_dev *pdev = to_pci_dev(mdev->drm.dev);
	unsigned int vec;

	for (vec = 0; vec < MAIA_NUM_VECTORS(mdev->hw.num_queues); vec++)
		synchronize_irq(pci_irq_vector(pdev, vec));
}
