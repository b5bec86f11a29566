/* SPDX-License-Identifier: MIT */
/*
 * Maia hardware ABI: command buffer format.
 *
 * A command buffer is a sequence of commands, each starting with a
 * struct maia_cmd_header whose size covers the whole command (header
 * included) and is a multiple of 8. The device runs them in order; the first
 * failing command ends the job with its status and offset in the completion.
 * All addresses are device virtual addresses in the job's ASID.
 * Tensor operations are in maia/hw/tensor.h. See Documentation/hw/commands.rst.
 */
#ifndef MAIA_HW_CMD_H
#define MAIA_HW_CMD_H

#include <linux/types.h>

struct maia_cmd_header {
	__u16 opcode;		/* MAIA_OP_* */
	__u16 flags;		/* must be 0 unless the command defines some */
	__u32 size;		/* bytes, including this header, multiple of 8 */
};

/* Opcodes below 64 are advertised in the firmware's MAIA_FW_TLV_OPCODES. */
#define MAIA_OP_NOP			0x00u
#define MAIA_OP_DMA_COPY		0x01u
#define MAIA_OP_FILL			0x02u
#define MAIA_OP_FENCE_WRITE		0x03u
#define MAIA_OP_TIMESTAMP		0x04u
#define MAIA_OP_SEM_SIGNAL		0x05u
#define MAIA_OP_SEM_WAIT		0x06u
#define MAIA_OP_FABRIC_WRITE		0x07u	/* 1.3, maia/hw/fabric.h */
#define MAIA_OP_FABRIC_READ		0x08u	/* 1.3 */
#define MAIA_OP_COLLECTIVE		0x09u	/* 1.3 */
/* 0x10 - 0x2f: tensor operations, maia/hw/tensor.h */

#define MAIA_CMDBUF_MAX_SIZE		(1u << 20)
#define MAIA_NUM_SEMAPHORES		64u	/* per address space (ASID) */

struct maia_cmd_nop {
	struct maia_cmd_header hdr;
};

/*
 * 2D strided copy: height rows of width bytes. height = 1 is a 1D copy and
 * ignores the strides. Overlapping source and destination are undefined.
 */
struct maia_cmd_dma_copy {
	struct maia_cmd_header hdr;
	__u64 src;
	__u64 dst;
	__u64 width;
	__u64 src_stride;
	__u64 dst_stride;
	__u32 height;
	__u32 reserved;
};

/* Fill size bytes at dst with the 32-bit pattern, repeated. */
struct maia_cmd_fill {
	struct maia_cmd_header hdr;
	__u64 dst;
	__u64 size;		/* multiple of 4 */
	__u32 pattern;
	__u32 reserved;
};

/* Write a 64-bit value at addr (8-byte aligned) once earlier commands are done. */
struct maia_cmd_fence_write {
	struct maia_cmd_header hdr;
	__u64 addr;
	__u64 value;
};

/* Write the device time in ns at addr (8-byte aligned). */
struct maia_cmd_timestamp {
	struct maia_cmd_header hdr;
	__u64 addr;
};

/*
 * Semaphore signal: sem[index] += value. Semaphores belong to the job's
 * address space (ASID): jobs of one context, on any queue, share them; no
 * other context sees them. SET_CONTEXT and a device reset zero them.
 */
struct maia_cmd_sem_signal {
	struct maia_cmd_header hdr;
	__u32 index;		/* < MAIA_NUM_SEMAPHORES */
	__u32 value;
};

/*
 * Semaphore wait: stall this queue until sem[index] >= value, then
 * subtract value. Gives up after timeout_us with MAIA_STATUS_SEM_TIMEOUT.
 */
struct maia_cmd_sem_wait {
	struct maia_cmd_header hdr;
	__u32 index;
	__u32 value;
	__u32 timeout_us;
	__u32 reserved;
};

/*
 * Remote write (revision 1.3): size bytes from local_addr (this job's ASID)
 * over fabric port `port` into the peer's window `key` at remote_offset.
 * The command ends when the target has answered that every byte landed
 * (and, with MAIA_FABRIC_WRITE_SEM, that it then did sem[sem_index] +=
 * sem_value in the window's address space), or failed with
 * MAIA_STATUS_FABRIC_*. The peer is whoever is cabled to `port`.
 */
#define MAIA_FABRIC_WRITE_SEM		(1u << 0)	/* hdr.flags */

struct maia_cmd_fabric_write {
	struct maia_cmd_header hdr;
	__u32 port;		/* < MAIA_REG_FABRIC_PORTS */
	__u32 key;		/* the target's window key */
	__u64 remote_offset;	/* bytes from the window's start */
	__u64 local_addr;	/* source, device VA */
	__u64 size;		/* bytes, may be 0 (then only the semaphore) */
	__u32 sem_index;	/* < MAIA_NUM_SEMAPHORES, with MAIA_FABRIC_WRITE_SEM */
	__u32 sem_value;
};

/* Remote read (1.3): size bytes of the peer's window `key` to local_addr. */
struct maia_cmd_fabric_read {
	struct maia_cmd_header hdr;
	__u32 port;
	__u32 key;
	__u64 remote_offset;
	__u64 local_addr;	/* destination, device VA */
	__u64 size;
};

/*
 * Collective (1.3), run by the devices of a ring together: every rank runs
 * the same command (same coll, redop, dtype, count, nranks, comm_id, seq,
 * chunk_bytes) with its own rank and ports. Rank r sends to rank r + 1
 * (mod nranks) over send_port and receives from rank r - 1 over recv_port;
 * with two ranks on one cable both are that cable's port. count is in
 * elements, as in NCCL:
 *   ALL_REDUCE      send count, recv count
 *   ALL_GATHER      send count, recv count * nranks (rank r's at r * count)
 *   REDUCE_SCATTER  send count * nranks, recv count (rank r's block)
 *   BROADCAST       count at root's send_addr -> every rank's recv_addr
 *   ALL_TO_ALL      send count * nranks (block j for rank j), recv count *
 *                   nranks (block j from rank j)
 * send_addr == recv_addr (in place) is allowed for ALL_REDUCE and
 * BROADCAST. The algorithm and the order of the reduction, which make
 * results reproducible, are in Documentation/hw/fabric.rst.
 */
#define MAIA_COLL_ALL_REDUCE		1u
#define MAIA_COLL_ALL_GATHER		2u
#define MAIA_COLL_REDUCE_SCATTER	3u
#define MAIA_COLL_BROADCAST		4u
#define MAIA_COLL_ALL_TO_ALL		5u

#define MAIA_REDOP_SUM			0u
#define MAIA_REDOP_MAX			1u
#define MAIA_REDOP_MIN			2u

#define MAIA_COLL_MAX_RANKS		256u

/*
 * struct maia_cmd_collective's algo. AUTO: gather-reduce for an ALL_REDUCE
 * of nranks >= 2 with count * nranks * 4 <= MAIA_COLL_GATHER_REDUCE_BYTES,
 * else the ring. RING: always the ring. GATHER_REDUCE: an ALL_REDUCE within
 * that size only (else BAD_CMD). See maia_coll_gather_reduce().
 */
#define MAIA_COLL_ALGO_AUTO		0u
#define MAIA_COLL_ALGO_RING		1u
#define MAIA_COLL_ALGO_GATHER_REDUCE	2u

#define MAIA_COLL_GATHER_REDUCE_BYTES	65536u

struct maia_cmd_collective {
	struct maia_cmd_header hdr;
	__u8 coll;		/* MAIA_COLL_* */
	__u8 redop;		/* MAIA_REDOP_*: ALL_REDUCE, REDUCE_SCATTER */
	__u8 dtype;		/* MAIA_DTYPE_FP32, or BF16 (accumulated in FP32) */
	__u8 send_port;		/* to rank + 1 */
	__u8 recv_port;		/* from rank - 1 */
	__u8 algo;		/* MAIA_COLL_ALGO_*: the same on every rank */
	__u16 root;		/* BROADCAST */
	__u16 rank;		/* < nranks */
	__u16 nranks;		/* 1..MAIA_COLL_MAX_RANKS */
	__u32 comm_id;		/* the communicator, the same on every rank */
	__u32 seq;		/* the collective's number in it, the same on every rank */
	__u32 chunk_bytes;	/* pipeline chunk; 0: device default */
	__u32 timeout_ms;	/* longest wait for a peer; 0: device default */
	__u32 reserved1;
	__u64 send_addr;	/* device VA in the job's ASID */
	__u64 recv_addr;
	__u64 count;		/* elements, see above */
	__u64 report_addr;	/* 0, or where the device writes a struct maia_coll_report */
};

/* Whether count elements of nranks (>= 1) ranks fit gather-reduce's inputs. */
static inline int maia_coll_gather_reduce_fits(__u64 count, unsigned int nranks)
{
	return count <= MAIA_COLL_GATHER_REDUCE_BYTES / 4 / nranks;
}

/*
 * Whether the device runs a (valid) command's ALL_REDUCE as gather-reduce
 * rather than the ring reduction. Gather-reduce gathers every rank's input
 * in n-1 hops (the ring takes 2(n-1)), then every rank folds in the ring's
 * order, so the result has the same bits either way. Only fields every rank
 * has in common decide.
 */
static inline int maia_coll_gather_reduce(const struct maia_cmd_collective *k)
{
	if (k->coll != MAIA_COLL_ALL_REDUCE || k->nranks < 2 || k->algo == MAIA_COLL_ALGO_RING)
		return 0;
	return k->algo == MAIA_COLL_ALGO_GATHER_REDUCE ||
	       maia_coll_gather_reduce_fits(k->count, k->nranks);
}

/*
 * What a collective did, written at report_addr (8-byte aligned, in the
 * job's ASID) when the command ends, whether it succeeded or not: so that a
 * failure can name where it stopped.
 */
struct maia_coll_report {
	__u32 status;		/* MAIA_STATUS_* of the command */
	__u32 step;		/* the ring step it was at */
	__u32 port;		/* the port it was waiting on (0xffffffff: none) */
	__u32 peer_rank;	/* the rank behind that port */
	__u64 bytes_sent;
	__u64 bytes_received;
	/*
	 * (1.10, only with MAIA_COLL_F_REACH in hdr.flags; before, the report
	 * ends here: MAIA_COLL_REPORT_SIZE_1_3) FABRIC_LINK because the ring is
	 * cut in two or more places: the ranks this one cannot reach, count of
	 * them from first on in ring order (first, first + 1, ... mod nranks).
	 * count 0: the failure was not that, or they are not known.
	 */
	__u32 unreachable_first;
	__u32 unreachable_count;
};

#define MAIA_COLL_REPORT_SIZE_1_3	32u
/* hdr.flags of MAIA_OP_COLLECTIVE (1.10): report_addr holds the whole report. */
#define MAIA_COLL_F_REACH		(1u << 0)

#endif /* MAIA_HW_CMD_H */
