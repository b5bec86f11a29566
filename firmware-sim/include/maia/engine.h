/* SPDX-License-Identifier: MIT */
/*
 * firmware-sim internal interface between the command processor and the
 * engines that run commands (tensor engine, DMA engine).
 *
 * The command processor owns the job's address space. Engines copy operands
 * in and results out through struct maia_job_mem, which walks the job's page
 * tables and reports faults. The engine returns a MAIA_STATUS_* code.
 */
#ifndef MAIA_ENGINE_H
#define MAIA_ENGINE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "maia/hw/cmd.h"

struct maia_job_mem {
	void *opaque;
	/*
	 * Return MAIA_STATUS_OK, MAIA_STATUS_MMU_FAULT, MAIA_STATUS_DMA_ERROR, or
	 * MAIA_STATUS_ABORTED once a device reset is pending.
	 */
	int (*read)(void *opaque, uint64_t va, void *buf, size_t len);
	int (*write)(void *opaque, uint64_t va, const void *buf, size_t len);
	/*
	 * Optional (may be NULL): read access in place. On MAIA_STATUS_OK, *ptr
	 * points at the bytes at va, readable for *avail bytes (1..len: a
	 * mapping may end at a page boundary), or is NULL when that memory is
	 * not directly addressable (host memory behind DMA) and read() must be
	 * used. Lets an engine decode operands straight from device memory into
	 * its working buffers, saving the staging copy; the bytes count as read
	 * all the same. Any other status means "not mapped": the engine then
	 * calls read(), which reports the error. map() must not record a fault
	 * itself (an engine may map ahead of what it reads, to prefetch). A
	 * mapping stays valid until the command's fw_tensor_exec() returns.
	 */
	int (*map)(void *opaque, uint64_t va, size_t len, const void **ptr, size_t *avail);
	/* Optional: the same for writing results in place (the write permission is checked). */
	int (*map_write)(void *opaque, uint64_t va, size_t len, void **ptr, size_t *avail);
};

/* Work counters one command adds to, for telemetry. */
struct maia_op_stats {
	uint64_t flops;
	uint64_t bytes_read;
	uint64_t bytes_written;
	uint64_t busy_ns;		/* host time, summed over tiles (not modeled time) */
	/*
	 * The matrix multiply the command did, for the device time model
	 * (batch 0: none): batch x (m x k) * (k x n) with these operand types.
	 * Attention reports itself as one multiply with the same flops.
	 */
	struct maia_op_mm {
		uint64_t batch, m, n, k;
		unsigned int dtype_a, dtype_b, dtype_c;
		int reads_c, bias;
	} mm;
};

struct fw_tensor_engine;

struct fw_tensor_config {
	unsigned int clusters;
	unsigned int tiles_per_cluster;
	unsigned int sram_kib;		/* per cluster */
	unsigned int threads;		/* host threads; 0 = one per host CPU */
	/*
	 * Optional host hooks, as in struct maia_sim_ops (maia/sim.h), with
	 * host_opaque as their first argument. NULL: CLOCK_MONOTONIC and
	 * pthread_create(). maia_sim_create() passes its host's on.
	 */
	uint64_t (*now_ns)(void *opaque);
	int (*thread_create)(void *opaque, pthread_t *thread, const char *name,
			     void *(*fn)(void *), void *arg);
	void *host_opaque;
};

struct fw_tensor_engine *fw_tensor_create(const struct fw_tensor_config *cfg);
void fw_tensor_destroy(struct fw_tensor_engine *te);

/*
 * Host nanoseconds tile (cluster * tiles_per_cluster + index) has been busy
 * since creation; 0 past the last. The device's telemetry reports modeled
 * time instead (fw_timeline.c); this is the engine's own measure.
 */
uint64_t fw_tensor_tile_busy_ns(struct fw_tensor_engine *te, unsigned int tile);

/* True if opcode is a tensor operation this engine runs. */
int fw_tensor_handles(uint16_t opcode);

/*
 * Run one tensor command (cmd->size bytes, already copied from the command
 * buffer and size-checked against the buffer). Returns MAIA_STATUS_*.
 */
int fw_tensor_exec(struct fw_tensor_engine *te, const struct maia_cmd_header *cmd,
		     const struct maia_job_mem *mem, struct maia_op_stats *stats);

#endif /* MAIA_ENGINE_H */
