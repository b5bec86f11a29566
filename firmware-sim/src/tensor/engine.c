// SPDX-License-Identifier: MIT
/*
 * Tensor engine: the clusters x tiles of the device, modeled on a fixed pool
 * of host threads. Commands run one at a time (the command processor feeds
 * them in order); each is split into tasks, a task being the work of one
 * tile on one block of the output. Per-command counters go to
 * struct maia_op_stats, per-tile busy time accumulates in tile_busy_ns
 * (host time: what the host spent per modeled tile, for the engine's tests;
 * the telemetry block's per-tile window is modeled time, fw_timeline.c).
 * This file creates the
 * engine and dispatches commands to the ops (gemm.c, eltwise.c, ...); what
 * the ops call back, running their tasks, scratch and activations, is in
 * run.c, a leaf, so that the ops and the dispatcher form no loop.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "maia/hw/queue.h"
#include "te.h"

/* The ABI: sizes are multiples of 8 and fixed (userspace and the driver build these). */
_Static_assert(sizeof(struct maia_tensor_desc) == 72, "tensor descriptor is 72 bytes");
_Static_assert(sizeof(struct maia_cmd_gemm) == 312, "GEMM command size");
_Static_assert(sizeof(struct maia_cmd_gemm_batched) == 336, "batched GEMM command size");
_Static_assert(sizeof(struct maia_cmd_eltwise) == 224, "eltwise command size");
_Static_assert(sizeof(struct maia_cmd_scale) == 160, "scale command size");
_Static_assert(sizeof(struct maia_cmd_activation) == 160, "activation command size");
_Static_assert(sizeof(struct maia_cmd_softmax) == 160, "softmax command size");
_Static_assert(sizeof(struct maia_cmd_norm) == 304, "norm command size");
_Static_assert(sizeof(struct maia_cmd_attention) == 304, "attention command size");
_Static_assert(sizeof(struct maia_cmd_convert) == 160, "convert command size");
_Static_assert(sizeof(struct maia_cmd_reduce) == 160, "reduce command size");
_Static_assert(sizeof(struct maia_cmd_transpose) == 160, "transpose command size");

/* Smallest tile SRAM share that still holds one useful GEMM block. */
#define MIN_TILE_SRAM		(256u * 1024u)

struct fw_tensor_engine *fw_tensor_create(const struct fw_tensor_config *cfg)
{
	struct fw_tensor_engine *te;
	unsigned int threads, i;
	long ncpu;

	if (!cfg || !cfg->clusters || !cfg->tiles_per_cluster ||
	    cfg->clusters > 1024 || cfg->tiles_per_cluster > 64 ||
	    (uint64_t)cfg->sram_kib * 1024 / cfg->tiles_per_cluster < MIN_TILE_SRAM) {
		errno = EINVAL;
		return NULL;
	}
	te = calloc(1, sizeof(*te));
	if (!te)
		return NULL;
	te->cfg = *cfg;
	te->host.now_ns = cfg->now_ns;
	te->host.thread_create = cfg->thread_create;
	te->host.opaque = cfg->host_opaque;
	te->tiles = cfg->clusters * cfg->tiles_per_cluster;
	te->tile_sram = (size_t)cfg->sram_kib * 1024 / cfg->tiles_per_cluster;
	te->gemm_kernel = fw_gemm_kernel_find(NULL);
#ifdef _SC_LEVEL2_CACHE_SIZE
	ncpu = sysconf(_SC_LEVEL2_CACHE_SIZE);	/* glibc: from CPUID; 0 or -1 if unknown */
	te->host_l2 = ncpu > 0 ? (size_t)ncpu : 0;
#endif
	threads = cfg->threads;
	if (!threads) {
		ncpu = sysconf(_SC_NPROCESSORS_ONLN);
		threads = ncpu > 0 ? (unsigned int)ncpu : 1;
	}
	if (threads > te->tiles)	/* more threads than tiles buys nothing */
		threads = te->tiles;
	if (threads > 256)
		threads = 256;
	pthread_mutex_init(&te->lock, NULL);
	te->tile_busy_ns = calloc(te->tiles, sizeof(*te->tile_busy_ns));
	te->pool = fw_pool_create(threads, &te->host);
	if (!te->tile_busy_ns || !te->pool)
		goto fail;
	te->nworkers = fw_pool_size(te->pool);
	te->workers = aligned_alloc(64, ((sizeof(*te->workers) * te->nworkers) + 63) & ~(size_t)63);
	if (!te->workers)
		goto fail;
	memset(te->workers, 0, sizeof(*te->workers) * te->nworkers);
	for (i = 0; i < te->nworkers; i++) {
		te->workers[i].io.stage_size = FW_IO_STAGE_SIZE;
		te->workers[i].io.stage = malloc(FW_IO_STAGE_SIZE);
		if (!te->workers[i].io.stage)
			goto fail;
	}
	return te;
fail:
	fw_tensor_destroy(te);
	errno = ENOMEM;
	return NULL;
}

void fw_tensor_destroy(struct fw_tensor_engine *te)
{
	unsigned int i;

	if (!te)
		return;
	fw_pool_destroy(te->pool);
	for (i = 0; te->workers && i < te->nworkers; i++) {
		free(te->workers[i].io.stage);
		free(te->workers[i].scratch);
	}
	free(te->workers);
	free(te->tile_busy_ns);
	pthread_mutex_destroy(&te->lock);
	free(te);
}

uint64_t fw_tensor_tile_busy_ns(struct fw_tensor_engine *te, unsigned int tile)
{
	return tile < te->tiles ? __atomic_load_n(&te->tile_busy_ns[tile], __ATOMIC_RELAXED) : 0;
}

int fw_tensor_handles(uint16_t opcode)
{
	return opcode >= MAIA_OP_GEMM && opcode <= MAIA_OP_COPY;
}

int fw_tensor_exec(struct fw_tensor_engine *te, const struct maia_cmd_header *cmd,
		     const struct maia_job_mem *mem, struct maia_op_stats *stats)
{
	int st;

	if (!fw_tensor_handles(cmd->opcode))
		return MAIA_STATUS_BAD_OPCODE;
	if (cmd->size < sizeof(*cmd) || cmd->size % 8)
		return MAIA_STATUS_BAD_CMD;
	pthread_mutex_lock(&te->lock);
	switch (cmd->opcode) {
	case MAIA_OP_GEMM:
		st = fw_op_gemm(te, cmd, mem, stats);
		break;
	case MAIA_OP_GEMM_BATCHED:
		st = fw_op_gemm_batched(te, cmd, mem, stats);
		break;
	case MAIA_OP_ADD:
	case MAIA_OP_MUL:
	case MAIA_OP_SCALE:
	case MAIA_OP_ACTIVATION:
		st = fw_op_eltwise(te, cmd, mem, stats);
		break;
	case MAIA_OP_SOFTMAX:
	case MAIA_OP_LAYERNORM:
	case MAIA_OP_RMSNORM:
		st = fw_op_rownorm(te, cmd, mem, stats);
		break;
	case MAIA_OP_ATTENTION:
		st = fw_op_attention(te, cmd, mem, stats);
		break;
	case MAIA_OP_QUANTIZE:
	case MAIA_OP_DEQUANTIZE:
	case MAIA_OP_TRANSPOSE:
	case MAIA_OP_COPY:
		st = fw_op_layout(te, cmd, mem, stats);
		break;
	case MAIA_OP_REDUCE:
		st = fw_op_reduce(te, cmd, mem, stats);
		break;
	default:
		st = MAIA_STATUS_BAD_OPCODE;
		break;
	}
	te->ops++;
	pthread_mutex_unlock(&te->lock);
	return st;
}
