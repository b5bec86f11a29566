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

#endif /* MAIA_HW_CMD_H */
