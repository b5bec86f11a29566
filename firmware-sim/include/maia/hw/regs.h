/* SPDX-License-Identifier: MIT */
/*
 * Maia accelerator hardware ABI: PCI identity, BAR layout, BAR0 register map,
 * interrupt causes and MSI-X vectors.
 *
 * This header set (maia/hw/) is the single source of truth for the
 * device interface. It is shared verbatim by firmware-sim, the QEMU glue, the
 * kernel driver, libmaia and the tests, and described in
 * Documentation/hw/registers.rst. All registers are 32 bits wide,
 * little-endian, and must be accessed with aligned 32-bit accesses.
 */
#ifndef MAIA_HW_REGS_H
#define MAIA_HW_REGS_H

/* PCI identity. The device ID is this model's own, not a silicon ID. */
#define MAIA_PCI_VENDOR_ID		0x1414u
#define MAIA_PCI_DEVICE_ID		0xa100u
#define MAIA_PCI_REVISION		0x01u
#define MAIA_PCI_CLASS			0x1200u	/* processing accelerator */

/* BARs */
#define MAIA_BAR_REGS			0	/* 32-bit MMIO, MAIA_BAR0_SIZE */
#define MAIA_BAR_HBM			2	/* 64-bit prefetchable, HBM aperture */
#define MAIA_BAR_MSIX			4	/* MSI-X table and PBA */
#define MAIA_BAR0_SIZE			0x4000u
/*
 * Revision 1.3: BAR1, 32-bit MMIO, one 4 KiB doorbell page per queue, so
 * that a driver can map one queue's doorbell, and nothing else, into a
 * process (user queues). Page q holds the doorbell of queue q at offset
 * MAIA_UDB_DOORBELL; it behaves as MAIA_REG_DOORBELL(q). The rest of each
 * page reads as 0 and ignores writes.
 */
#define MAIA_BAR_UDB			1
#define MAIA_UDB_PAGE_SIZE		0x1000u
#define MAIA_UDB_BAR_SIZE		(MAIA_UDB_PAGE_SIZE * MAIA_MAX_QUEUES)
#define MAIA_UDB_PAGE(q)		(MAIA_UDB_PAGE_SIZE * (q))
#define MAIA_UDB_DOORBELL		0x000u

#define MAIA_ID_MAGIC			0x4149414du	/* "MAIA" little-endian */
/*
 * major.minor = 1.12. Minor versions add registers a driver may use once it
 * sees them: 1.1 added MAIA_REG_FW_HEARTBEAT, MAIA_REG_DEBUG_INJECT and
 * MAIA_Q_FETCHED; 1.2 added HBM ECC (MAIA_REG_ECC_*,
 * MAIA_REG_DEBUG_INJECT_ADDR_*, the injection kinds MAIA_INJECT_ECC_*,
 * MAIA_INT_HBM_ECC and MAIA_STATUS_HBM_ECC); 1.3 added the fabric
 * (MAIA_CAP_FABRIC, the fabric register block, MAIA_INT_FABRIC_LINK, the
 * fabric window mailbox commands, MAIA_OP_FABRIC_* and MAIA_OP_COLLECTIVE,
 * MAIA_STATUS_FABRIC_*; maia/hw/fabric.h) and user queues (MAIA_Q_ASID,
 * MAIA_Q_IRQ, the BAR1 doorbell pages MAIA_UDB_*, MAIA_STATUS_ASID_DENIED);
 * 1.4 added MAIA_Q_FABRIC_WAITS; 1.5 added MAIA_STATUS_FABRIC_COMM_BUSY;
 * 1.6 the link NAK counters; 1.7 the fault queue; 1.8 the chip model block
 * (maia/hw/model.h): completion times, TIMESTAMP and telemetry in modeled time;
 * 1.9 the Tile Vector Processor (maia/hw/tvp.h): MAIA_OP_KERNEL,
 * MAIA_STATUS_KERNEL_INVALID and _WATCHDOG, the TVP telemetry counters;
 * 1.10 fabric failover (maia/hw/fabric.h): relayed collective chunks, the
 * MAIA_REG_FABRIC_FO_* thresholds and the per-port failover blocks;
 * 1.11 TVP atomics (maia/hw/tvp.h): AMOADD, AMOXCHG, AMOCAS, VAMOADD;
 * 1.12 the per-port spurious retransmit timeout counter (maia/hw/fabric.h,
 * MAIA_REG_FPORT_R block).
 */
#define MAIA_HW_REVISION		0x010cu
#define MAIA_HW_REVISION_1_1		0x0101u	/* heartbeat, DEBUG_INJECT, Q_FETCHED */
#define MAIA_HW_REVISION_ECC		0x0102u	/* first revision with HBM ECC */
#define MAIA_HW_REVISION_FABRIC		0x0103u	/* first revision with the fabric */
/* 1.3: user queues: MAIA_Q_ASID binding, BAR1 doorbell pages, STATUS_ASID_DENIED */
#define MAIA_HW_REVISION_USERQ		0x0103u
#define MAIA_HW_REVISION_FABRIC_WAITS	0x0104u	/* MAIA_Q_FABRIC_WAITS */
#define MAIA_HW_REVISION_COMM_BUSY	0x0105u	/* MAIA_STATUS_FABRIC_COMM_BUSY */
#define MAIA_HW_REVISION_LINK_NAKS	0x0106u	/* MAIA_FPORT_LINK_NAK_TX, RX_HELD */
#define MAIA_HW_REVISION_FAULTQ		0x0107u	/* MAIA_REG_FAULTQ_*: the fault queue */
/* 1.8: the chip model block and modeled time (maia/hw/model.h) */
#define MAIA_HW_REVISION_MODEL		0x0108u
/* 1.9: the Tile Vector Processor (maia/hw/tvp.h): MAIA_OP_KERNEL, its statuses and counters */
#define MAIA_HW_REVISION_TVP		0x0109u
/* 1.10: fabric failover: MAIA_REG_FABRIC_FO_*, MAIA_REG_FPORT_FO/_Q blocks, COLL relays */
#define MAIA_HW_REVISION_FAILOVER	0x010au
/* 1.11: TVP atomics (MAIA_TVP_OP_AMOADD, _AMOXCHG, _AMOCAS, _VAMOADD) */
#define MAIA_HW_REVISION_TVP_ATOMICS	0x010bu
/* 1.12: MAIA_REG_FPORT_R block: MAIA_FPORT_R_SPURIOUS_RTO */
#define MAIA_HW_REVISION_SPURIOUS_RTO	0x010cu

#define MAIA_MAX_QUEUES			16u
#define MAIA_DEFAULT_QUEUES		8u
#define MAIA_MAX_CLUSTERS		64u
#define MAIA_MAX_TILES_PER_CLUSTER	16u

/* Identification (read-only) */
#define MAIA_REG_ID			0x0000u
#define MAIA_REG_REVISION		0x0004u
#define MAIA_REG_CAPS			0x0008u
#define MAIA_REG_DTYPES			0x000cu	/* bitmask of 1 << MAIA_DTYPE_* */
#define MAIA_REG_TOPOLOGY		0x0010u
#define   MAIA_TOPOLOGY_CLUSTERS_MASK	0x000000ffu
#define   MAIA_TOPOLOGY_TILES_MASK	0x0000ff00u
#define   MAIA_TOPOLOGY_TILES_SHIFT	8
#define MAIA_REG_NUM_QUEUES		0x0014u
#define MAIA_REG_HBM_SIZE_LO		0x0018u
#define MAIA_REG_HBM_SIZE_HI		0x001cu
#define MAIA_REG_SRAM_KIB		0x0020u	/* on-chip SRAM per cluster, KiB */
#define MAIA_REG_MSIX_VECTORS		0x0024u

/* MAIA_REG_CAPS bits */
#define MAIA_CAP_MMU			(1u << 0)
#define MAIA_CAP_SEMAPHORES		(1u << 1)
#define MAIA_CAP_TENSOR			(1u << 2)
#define MAIA_CAP_TELEMETRY		(1u << 3)
#define MAIA_CAP_FLR			(1u << 4)
#define MAIA_CAP_FABRIC			(1u << 5)	/* MAIA_REG_FABRIC_PORTS > 0 */

/* Control */
#define MAIA_REG_RESET			0x0030u	/* write MAIA_RESET_MAGIC */
#define   MAIA_RESET_MAGIC		0x52534554u	/* "RSET" */
#define MAIA_REG_SCRATCH		0x0034u	/* read/write, cleared by reset */
/*
 * Error injection, for tests of recovery (reads as 0): what in the low byte,
 * the queue in the next. Until the next reset, as the real thing would.
 */
#define MAIA_REG_DEBUG_INJECT		0x003cu
#define   MAIA_INJECT_WHAT_MASK		0x000000ffu
#define   MAIA_INJECT_QUEUE_MASK	0x0000ff00u
#define   MAIA_INJECT_QUEUE_SHIFT	8
#define   MAIA_INJECT_HANG		1u	/* the next job on the queue never completes */
#define   MAIA_INJECT_MMU_FAULT		2u	/* the next job on the queue faults */
#define   MAIA_INJECT_FW_CRASH		3u	/* firmware stops: mailbox, jobs, heartbeat */
/*
 * HBM ECC errors (revision 1.2) in the 4 KiB page holding the HBM offset in
 * DEBUG_INJECT_ADDR_LO/HI (write those first; the queue byte must be 0).
 * CE: the next device read of the page is corrected and counted in
 * ECC_CE_COUNT. UE: the page is poisoned until reset; every device read of
 * it fails the reading job with MAIA_STATUS_HBM_ECC. See
 * Documentation/hw/registers.rst.
 */
#define   MAIA_INJECT_ECC_CE		4u
#define   MAIA_INJECT_ECC_UE		5u

/* Boot (see maia/hw/boot.h for the protocol) */
#define MAIA_REG_BOOT_STATUS		0x0040u
#define MAIA_REG_BOOT_ERROR		0x0044u
#define MAIA_REG_BOOT_ADDR_LO		0x0048u	/* bus address of the image */
#define MAIA_REG_BOOT_ADDR_HI		0x004cu
#define MAIA_REG_BOOT_SIZE		0x0050u	/* bytes */
#define MAIA_REG_BOOT_CTRL		0x0054u	/* write MAIA_BOOT_CTRL_START */
#define   MAIA_BOOT_CTRL_START		0x1u
#define MAIA_REG_FW_VERSION		0x0058u	/* valid once READY */
#define MAIA_REG_FW_ABI			0x005cu	/* major << 16 | minor */

/* Device time, nanoseconds since reset; read LO first, it latches HI. */
#define MAIA_REG_TIME_LO		0x0060u
#define MAIA_REG_TIME_HI		0x0064u
/*
 * Firmware heartbeat: while the firmware runs (BOOT_STATUS READY) it counts
 * up by one every MAIA_FW_HEARTBEAT_PERIOD_MS; it stops when the firmware
 * does. 0 before the firmware is ready.
 */
#define MAIA_REG_FW_HEARTBEAT		0x006cu
#define   MAIA_FW_HEARTBEAT_PERIOD_MS	100u
/* HBM offset for MAIA_INJECT_ECC_* (read/write, cleared by reset). */
#define MAIA_REG_DEBUG_INJECT_ADDR_LO	0x0070u
#define MAIA_REG_DEBUG_INJECT_ADDR_HI	0x0074u

/* Event interrupt (MSI-X vector MAIA_VEC_EVENT) */
#define MAIA_REG_INT_STATUS		0x0080u	/* write 1 to clear */
#define MAIA_REG_INT_MASK		0x0084u	/* 1 = cause masked */
#define   MAIA_INT_BOOT_DONE		(1u << 0)	/* READY or FAILED */
#define   MAIA_INT_MBOX_DONE		(1u << 1)
#define   MAIA_INT_MMU_FAULT		(1u << 2)
#define   MAIA_INT_QUEUE_ERROR		(1u << 3)
#define   MAIA_INT_FW_ERROR		(1u << 4)
#define   MAIA_INT_THERMAL		(1u << 5)
#define   MAIA_INT_HBM_ECC		(1u << 6)	/* ECC_INFO/ECC_ADDR hold a UE */
#define   MAIA_INT_FABRIC_LINK		(1u << 7)	/* a fabric port went up or down (1.3) */
#define   MAIA_INT_ALL			0xffu
/*
 * HBM ECC counters (read-only, since power-on: reset and FLR keep them).
 * CE: errors corrected on a device read. UE: pages that became
 * uncorrectable (poisoned), counted once per page when detected.
 */
#define MAIA_REG_ECC_CE_COUNT		0x0090u
#define MAIA_REG_ECC_UE_COUNT		0x0094u

/*
 * MMU fault record, valid while MAIA_INT_MMU_FAULT is set: the first fault
 * since the cause was last cleared. The fault queue (below) has them all.
 */
#define MAIA_REG_FAULT_INFO		0x00a0u
#define   MAIA_FAULT_ASID_MASK		0x0000ffffu
#define   MAIA_FAULT_ACCESS_MASK	0x00030000u	/* MAIA_ACCESS_* */
#define   MAIA_FAULT_ACCESS_SHIFT	16
#define   MAIA_FAULT_QUEUE_MASK		0xff000000u
#define   MAIA_FAULT_QUEUE_SHIFT	24
#define MAIA_REG_FAULT_ADDR_LO		0x00a4u
#define MAIA_REG_FAULT_ADDR_HI		0x00a8u
/*
 * Uncorrectable ECC record, valid while MAIA_INT_HBM_ECC is set. The first
 * one stays latched until the host clears the cause; clearing it latches
 * the next poisoned page not yet reported, if any, and asserts the cause
 * again, so every poisoned page is reported at least once.
 */
#define MAIA_REG_ECC_INFO		0x00b0u
#define   MAIA_ECC_ASID_MASK		0x0000ffffu	/* valid with MAIA_ECC_JOB */
#define   MAIA_ECC_JOB			(1u << 16)	/* a job's read hit it (else: scrub) */
#define   MAIA_ECC_QUEUE_MASK		0xff000000u	/* valid with MAIA_ECC_JOB */
#define   MAIA_ECC_QUEUE_SHIFT		24
#define MAIA_REG_ECC_ADDR_LO		0x00b4u	/* HBM offset of the 4 KiB page */
#define MAIA_REG_ECC_ADDR_HI		0x00b8u
#define MAIA_ECC_PAGE_SIZE		4096u
#define MAIA_ACCESS_READ		1u
#define MAIA_ACCESS_WRITE		2u

/* Mailbox (see maia/hw/mbox.h); completion raises MAIA_INT_MBOX_DONE */
#define MAIA_REG_MBOX_CMD		0x00c0u	/* write starts the command */
#define MAIA_REG_MBOX_STATUS		0x00c4u
#define   MAIA_MBOX_STATUS_BUSY		(1u << 31)
#define   MAIA_MBOX_STATUS_RESULT_MASK	0x0000ffffu	/* MAIA_MBOX_OK/E* */
#define MAIA_REG_MBOX_ARG(n)		(0x00c8u + 4u * (n))	/* n < 4 */
#define MAIA_REG_MBOX_RESP(n)		(0x00d8u + 4u * (n))	/* n < 4 */
#define MAIA_MBOX_NARGS			4u

/*
 * Fault queue (revision 1.7): every MMU fault as a struct maia_fault_entry
 * (maia/hw/queue.h) in a ring of host memory, so that faults close together each keep their
 * record. The host sets BASE (MAIA_FAULTQ_ALIGN-aligned) and SIZE (entries,
 * a power of two up to MAIA_FAULTQ_MAX_ENTRIES; 0 turns the queue off); a
 * SIZE write empties the queue (PROD, CONS and OVERFLOWS to 0). For a fault
 * the device writes entry PROD % SIZE, then increments PROD, before the
 * faulting job's completion entry and before MAIA_INT_MMU_FAULT; the host
 * reads entries up to PROD and writes CONS (entries it took). With
 * PROD - CONS == SIZE the fault is not queued and OVERFLOWS counts it (the
 * FAULT_INFO record still works as before). Reset and FLR turn the queue off.
 */
#define MAIA_REG_FAULTQ_BASE_LO		0x00e8u
#define MAIA_REG_FAULTQ_BASE_HI		0x00ecu
#define MAIA_REG_FAULTQ_SIZE		0x00f0u
#define MAIA_REG_FAULTQ_PROD		0x00f4u	/* read-only */
#define MAIA_REG_FAULTQ_CONS		0x00f8u
#define MAIA_REG_FAULTQ_OVERFLOWS	0x00fcu	/* read-only, since the SIZE write */
#define MAIA_FAULTQ_ALIGN		32u
#define MAIA_FAULTQ_MAX_ENTRIES		1024u

/* 0x0100 - 0x01ff: telemetry block (maia/hw/telemetry.h) */
#define MAIA_REG_TELEMETRY_BASE		0x0100u

/* 0x0200 - 0x02ff: chip model block (maia/hw/model.h, revision 1.8) */
/* 0x0300 - 0x0347: TVP telemetry counters (maia/hw/telemetry.h, revision 1.9) */

/* 0x0800 - 0x0fff: fabric block (maia/hw/fabric.h, revision 1.3; 1.10 up to 0x0fff) */
#define MAIA_REG_FABRIC_BASE		0x0800u

/* Queue register blocks (see maia/hw/queue.h) */
#define MAIA_REG_QUEUE_BASE		0x0400u
#define MAIA_REG_QUEUE_STRIDE		0x40u
#define MAIA_REG_Q(q, reg)		(MAIA_REG_QUEUE_BASE + MAIA_REG_QUEUE_STRIDE * (q) + (reg))
#define   MAIA_Q_SQ_LO			0x00u	/* bus address of the entry ring */
#define   MAIA_Q_SQ_HI			0x04u
#define   MAIA_Q_CQ_LO			0x08u	/* bus address of the completion array */
#define   MAIA_Q_CQ_HI			0x0cu
#define   MAIA_Q_SIZE			0x10u	/* entries, power of two */
#define   MAIA_Q_CTRL			0x14u
#define     MAIA_Q_CTRL_ENABLE		(1u << 0)
#define     MAIA_Q_CTRL_PRIO_MASK	0x00000300u
#define     MAIA_Q_CTRL_PRIO_SHIFT	8
#define   MAIA_Q_HEAD			0x18u	/* read-only: next entry to fetch */
#define   MAIA_Q_TAIL			0x1cu	/* read-only: last doorbell value */
#define   MAIA_Q_STATUS			0x20u	/* read-only */
#define     MAIA_Q_STATUS_ERR_CONFIG	(1u << 0)	/* bad base/size when enabled */
#define     MAIA_Q_STATUS_ERR_DOORBELL	(1u << 1)	/* tail out of range */
#define     MAIA_Q_STATUS_ERR_DMA	(1u << 2)	/* ring fetch failed */
/*
 * 1.3: the queue's job waits for the fabric (a remote write or read, a
 * collective waiting for its peers): no progress here is not a hang, the
 * device bounds the wait itself (the command's timeout_ms, the link's
 * dead-peer time). A driver's hang check skips such a queue.
 */
#define     MAIA_Q_STATUS_FABRIC_WAIT	(1u << 3)
/* The bits that mean the queue failed (FABRIC_WAIT is a state, not an error). */
#define     MAIA_Q_STATUS_ERRORS	(MAIA_Q_STATUS_ERR_CONFIG | MAIA_Q_STATUS_ERR_DOORBELL | \
					 MAIA_Q_STATUS_ERR_DMA)
#define   MAIA_Q_COMPLETED		0x24u	/* read-only: completions posted */
/*
 * Shadow tail (optional, like NVMe's shadow doorbells): bus address of a
 * 4-byte tail the host keeps in its memory. While set (nonzero), the value
 * written to the doorbell is ignored and the device reads the tail from
 * there, which lets the doorbell be a plain eventfd kick (ioeventfd).
 */
#define   MAIA_Q_SHADOW_LO		0x28u
#define   MAIA_Q_SHADOW_HI		0x2cu
/*
 * Read-only (revision 1.1): entries the device has fetched (jobs started)
 * since the queue was enabled, counting like COMPLETED. Entry n (from 1 since
 * enable) has started once FETCHED - n, as a signed 32-bit value, is >= 0.
 */
#define   MAIA_Q_FETCHED		0x30u
/*
 * Revision 1.3: binds the queue to one address space. While BOUND is set,
 * an entry whose asid is not ASID completes with MAIA_STATUS_ASID_DENIED
 * without running (NOP entries included). Read/write, but only while the
 * queue is disabled; cleared by reset. For user queues: the process writes
 * the ring, so the ring must not be able to name another context.
 */
#define   MAIA_Q_ASID			0x34u
#define     MAIA_Q_ASID_MASK		0x0000ffffu
#define     MAIA_Q_ASID_BOUND		(1u << 31)
/*
 * Revision 1.3: interrupt on request. With ON_ARM set, the queue raises its
 * vector for a completion only while ARMED, which it then clears (one
 * interrupt per arming). A host that sleeps arms, then reads COMPLETED,
 * then sleeps: a completion is either counted before the arming or raises
 * the vector. Writing ARMED arms; reads show whether it is still armed.
 * Read/write at any time; cleared by reset.
 */
#define   MAIA_Q_IRQ			0x38u
#define     MAIA_Q_IRQ_ON_ARM		(1u << 0)
#define     MAIA_Q_IRQ_ARMED		(1u << 1)
/*
 * Read-only (revision 1.4): fabric waits the queue's jobs began since the
 * queue was enabled (wraps). One job of many fabric commands (a group of
 * collectives) waits once per command: a driver that bounds one wait
 * (FABRIC_WAIT) starts its clock again when this count moves.
 */
#define   MAIA_Q_FABRIC_WAITS		0x3cu

/*
 * Doorbells: one 32-bit register per queue, in its own range so that each
 * can be an ioeventfd. The value written is the new tail index.
 */
#define MAIA_REG_DOORBELL_BASE		0x1000u
#define MAIA_REG_DOORBELL(q)		(MAIA_REG_DOORBELL_BASE + 4u * (q))

/* 0x2000 - 0x3fff: per-tile telemetry counters (maia/hw/telemetry.h) */

/* MSI-X vectors: events first, then one per queue. */
#define MAIA_VEC_EVENT			0u
#define MAIA_VEC_QUEUE(q)		(1u + (q))
#define MAIA_NUM_VECTORS(nq)		(1u + (nq))

#endif /* MAIA_HW_REGS_H */
