// SPDX-License-Identifier: MIT
/*
 * libFuzzer target for the tensor engine's command and descriptor decoding:
 * any bytes, as any tensor opcode, against a small device memory, must give
 * a defined MAIA_STATUS_* and never crash, hang or touch memory it should
 * not (build with ASan/UBSan; see Makefile).
 *
 * Input: byte 0 picks the opcode (and, with its next bit, whether operands
 * are read and results written in place through map()/map_write() or staged), bytes 1-2 are the header flags, then the
 * command body (zero-padded to the opcode's size), then initial contents of
 * the 64 KiB device memory at MEM_BASE.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "maia/engine.h"
#include "maia/hw/queue.h"
#include "maia/hw/tensor.h"

#define MEM_BASE	0x10000ull
#define MEM_SIZE	(64u * 1024u)
/* Elements per descriptor the target lets through, so that no input is a long job. */
#define MAX_ELEMS	(1u << 14)

static uint8_t device_mem[MEM_SIZE];

static int mem_read(void *opaque, uint64_t va, void *buf, size_t len)
{
	(void)opaque;
	if (va < MEM_BASE || va - MEM_BASE > MEM_SIZE || len > MEM_SIZE - (va - MEM_BASE))
		return MAIA_STATUS_MMU_FAULT;
	memcpy(buf, device_mem + (va - MEM_BASE), len);
	return MAIA_STATUS_OK;
}

static int mem_write(void *opaque, uint64_t va, const void *buf, size_t len)
{
	(void)opaque;
	if (va < MEM_BASE || va - MEM_BASE > MEM_SIZE || len > MEM_SIZE - (va - MEM_BASE))
		return MAIA_STATUS_MMU_FAULT;
	memcpy(device_mem + (va - MEM_BASE), buf, len);
	return MAIA_STATUS_OK;
}

/*
 * In-place reads: each mapping is a fresh heap copy of at most the rest of
 * its 4 KiB page, so an engine reading past what map() granted is a heap
 * overflow ASan reports. A mapping stays valid until the command ends (as
 * struct maia_job_mem says; the engine holds C's while it maps operands):
 * all are freed after fw_tensor_exec() returns, by maps_free().
 */
static pthread_mutex_t maps_lock = PTHREAD_MUTEX_INITIALIZER;
static uint8_t **maps;		/* under maps_lock: this command's copies */
static size_t nmaps, maps_cap;	/* under maps_lock */

static void maps_free(void)
{
	pthread_mutex_lock(&maps_lock);
	for (size_t i = 0; i < nmaps; i++)
		free(maps[i]);
	nmaps = 0;
	pthread_mutex_unlock(&maps_lock);
}

static int mem_map(void *opaque, uint64_t va, size_t len, const void **ptr, size_t *avail)
{
	uint64_t off = va - MEM_BASE, n;
	uint8_t *copy;

	(void)opaque;
	if (va < MEM_BASE || off >= MEM_SIZE)
		return MAIA_STATUS_MMU_FAULT;
	n = 4096 - off % 4096;
	if (n > len)
		n = len;
	if (n > MEM_SIZE - off)
		n = MEM_SIZE - off;
	copy = malloc(n ? n : 1);
	if (!copy)
		abort();
	memcpy(copy, device_mem + off, n);
	pthread_mutex_lock(&maps_lock);
	if (nmaps == maps_cap) {
		maps_cap = maps_cap ? 2 * maps_cap : 64;
		maps = realloc(maps, maps_cap * sizeof(*maps));
		if (!maps)
			abort();
	}
	maps[nmaps++] = copy;
	pthread_mutex_unlock(&maps_lock);
	*ptr = copy;
	*avail = n;
	return MAIA_STATUS_OK;
}

/* Writes in place land in the same kind of copy (and are dropped): overruns show. */
static int mem_map_write(void *opaque, uint64_t va, size_t len, void **ptr, size_t *avail)
{
	return mem_map(opaque, va, len, (const void **)ptr, avail);
}

static const struct {
	uint16_t opcode;
	uint16_t size;
	uint8_t ndesc;
} ops[] = {
	{ MAIA_OP_GEMM, sizeof(struct maia_cmd_gemm), 4 },
	{ MAIA_OP_GEMM_BATCHED, sizeof(struct maia_cmd_gemm_batched), 4 },
	{ MAIA_OP_ADD, sizeof(struct maia_cmd_eltwise), 3 },
	{ MAIA_OP_MUL, sizeof(struct maia_cmd_eltwise), 3 },
	{ MAIA_OP_SCALE, sizeof(struct maia_cmd_scale), 2 },
	{ MAIA_OP_ACTIVATION, sizeof(struct maia_cmd_activation), 2 },
	{ MAIA_OP_SOFTMAX, sizeof(struct maia_cmd_softmax), 2 },
	{ MAIA_OP_LAYERNORM, sizeof(struct maia_cmd_norm), 4 },
	{ MAIA_OP_RMSNORM, sizeof(struct maia_cmd_norm), 4 },
	{ MAIA_OP_ATTENTION, sizeof(struct maia_cmd_attention), 4 },
	{ MAIA_OP_QUANTIZE, sizeof(struct maia_cmd_convert), 2 },
	{ MAIA_OP_DEQUANTIZE, sizeof(struct maia_cmd_convert), 2 },
	{ MAIA_OP_REDUCE, sizeof(struct maia_cmd_reduce), 2 },
	{ MAIA_OP_TRANSPOSE, sizeof(struct maia_cmd_transpose), 2 },
	{ MAIA_OP_COPY, sizeof(struct maia_cmd_convert), 2 },
	{ 0x2e, 64, 0 },	/* a reserved tensor opcode */
};

/* Bound the work of one input; the device itself has no such limit. */
static int too_big(const struct maia_tensor_desc *d)
{
	uint64_t n = 1;

	for (unsigned int i = 0; i < 4 && i < d->rank; i++) {
		n *= d->shape[i] ? d->shape[i] : 1;
		if (n > MAX_ELEMS)
			return 1;
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct fw_tensor_engine *te;
	static const struct maia_job_mem staged = { NULL, mem_read, mem_write, NULL, NULL };
	static const struct maia_job_mem mapped = { NULL, mem_read, mem_write, mem_map,
						      mem_map_write };
	const struct maia_job_mem *mem;
	union {
		uint64_t raw[64];
		struct maia_cmd_header hdr;
		struct maia_cmd_gemm_batched gb;
	} cmd;
	struct maia_tensor_desc d;
	struct maia_op_stats stats = { 0 };
	size_t k, body, n;
	int st;

	if (!te) {
		struct fw_tensor_config cfg = { .clusters = 4, .tiles_per_cluster = 4, .sram_kib = 2048, .threads = 2 };

		te = fw_tensor_create(&cfg);
		if (!te)
			abort();
	}
	if (size < 3)
		return 0;
	k = data[0] % (sizeof(ops) / sizeof(ops[0]));
	/* the next bit of byte 0: operands read in place or through staging copies */
	mem = data[0] / (sizeof(ops) / sizeof(ops[0])) % 2 ? &mapped : &staged;
	memset(&cmd, 0, sizeof(cmd));
	cmd.hdr.opcode = ops[k].opcode;
	cmd.hdr.size = ops[k].size;
	cmd.hdr.flags = (uint16_t)(data[1] | data[2] << 8);
	data += 3;
	size -= 3;
	body = ops[k].size - sizeof(cmd.hdr);
	n = size < body ? size : body;
	memcpy((uint8_t *)&cmd + sizeof(cmd.hdr), data, n);
	data += n;
	size -= n;
	memset(device_mem, 0, sizeof(device_mem));
	memcpy(device_mem, data, size < MEM_SIZE ? size : MEM_SIZE);

	for (unsigned int j = 0; j < ops[k].ndesc; j++) {
		memcpy(&d, (uint8_t *)&cmd + sizeof(cmd.hdr) + j * sizeof(d), sizeof(d));
		if (too_big(&d))
			return 0;
	}
	if (ops[k].opcode == MAIA_OP_GEMM_BATCHED && cmd.gb.batch_count > 8)
		return 0;

	st = fw_tensor_exec(te, &cmd.hdr, mem, &stats);
	maps_free();
	switch (st) {
	case MAIA_STATUS_OK:
	case MAIA_STATUS_BAD_OPCODE:
	case MAIA_STATUS_BAD_CMD:
	case MAIA_STATUS_MMU_FAULT:
	case MAIA_STATUS_BAD_DESC:
		return 0;
	default:
		abort();	/* a status the engine must never return */
	}
}
