/* SPDX-License-Identifier: MIT */
/*
 * Maia hardware ABI: hardware queues.
 *
 * A queue is a ring of submission entries and a completion array of the
 * same size, both in host memory (bus addresses in MAIA_Q_SQ/CQ). The host
 * fills entries at the tail and writes the new tail to the queue's doorbell.
 * The device fetches entries from HEAD up to the tail, runs each job, writes
 * the completion entry with the same index, and raises MSI-X vector
 * MAIA_VEC_QUEUE(q). See Documentation/hw/queues.rst.
 */
#ifndef MAIA_HW_QUEUE_H
#define MAIA_HW_QUEUE_H

#include <linux/types.h>

#define MAIA_QUEUE_MIN_ENTRIES		2u
#define MAIA_QUEUE_MAX_ENTRIES		4096u

/* Priorities (MAIA_Q_CTRL_PRIO): higher runs first when both have work. */
#define MAIA_QUEUE_PRIO_LOW		0u
#define MAIA_QUEUE_PRIO_NORMAL		1u
#define MAIA_QUEUE_PRIO_HIGH		2u

/*
 * ASID 0 is the physical context for the kernel driver: an address is a host
 * bus address, or, with MAIA_PHYS_HBM set, an offset into HBM.
 */
#define MAIA_ASID_PHYS			0u
#define MAIA_PHYS_HBM			(1ull << 63)
#define MAIA_MAX_ASIDS			256u

struct maia_sq_entry {
	__u64 cmdbuf_addr;	/* device VA in asid (bus address for ASID 0) */
	__u32 cmdbuf_size;	/* bytes; 0 with MAIA_SQE_NOP */
	__u16 asid;
	__u16 flags;		/* MAIA_SQE_* */
	__u64 job_id;		/* opaque, echoed in the completion */
	__u64 reserved;		/* must be 0 */
};

#define MAIA_SQE_NOP			(1u << 0)	/* complete without fetching */

struct maia_cq_entry {
	__u64 job_id;
	__u32 status;		/* MAIA_STATUS_* */
	__u32 flags;		/* MAIA_CQE_VALID set by the device */
	__u64 start_ns;		/* device time the job started */
	__u64 end_ns;		/* device time the job ended */
	__u32 error_offset;	/* byte offset of the failing command */
	__u32 reserved;
};

#define MAIA_CQE_VALID			(1u << 0)

/* Job status codes */
#define MAIA_STATUS_OK			0u
#define MAIA_STATUS_BAD_OPCODE		1u	/* unknown command */
#define MAIA_STATUS_BAD_CMD		2u	/* malformed command (size, flags, fields) */
#define MAIA_STATUS_MMU_FAULT		3u	/* access outside the context's mappings */
#define MAIA_STATUS_DMA_ERROR		4u	/* host memory access failed */
#define MAIA_STATUS_BAD_DESC		5u	/* malformed tensor descriptor */
#define MAIA_STATUS_BAD_CONTEXT		6u	/* ASID not set up */
#define MAIA_STATUS_ABORTED		7u	/* killed by reset */
#define MAIA_STATUS_SEM_TIMEOUT		8u	/* semaphore wait gave up */
#define MAIA_STATUS_HBM_ECC		9u	/* read of a poisoned HBM page (1.2) */
/* Fabric commands (1.3, maia/hw/fabric.h) */
#define MAIA_STATUS_FABRIC_LINK		10u	/* no such port, port down, or went down mid-command */
#define MAIA_STATUS_FABRIC_KEY		11u	/* target refused: bad or revoked key, access, range */
#define MAIA_STATUS_FABRIC_REMOTE	12u	/* target's access failed (its MMU, ECC) */
#define MAIA_STATUS_FABRIC_TIMEOUT	13u	/* a collective waited too long for a peer */
#define MAIA_STATUS_ASID_DENIED		14u	/* entry's asid is not the queue's bound one (1.3) */
/* A collective of the same comm_id runs on another queue of this device (1.5) */
#define MAIA_STATUS_FABRIC_COMM_BUSY	15u

/*
 * One MMU fault in the fault queue (MAIA_REG_FAULTQ_*, revision 1.7),
 * written before the faulting job's completion entry.
 */
struct maia_fault_entry {
	__u32 info;		/* as MAIA_REG_FAULT_INFO: ASID, access, queue */
	__u32 reserved0;
	__u64 addr;		/* the faulting device virtual address */
	__u64 job_id;		/* the faulting job's maia_sq_entry.job_id */
	__u64 reserved1;
};

#endif /* MAIA_HW_QUEUE_H */
