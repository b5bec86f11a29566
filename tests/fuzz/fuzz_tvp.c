// SPDX-License-Identifier: MIT
/*
 * libFuzzer target for the Tile Vector Processor (firmware-sim/src/tvp/):
 * any bytes as a KERNEL command and its program against a small device
 * memory must end with a defined status and never crash, hang or touch
 * memory outside what the job's mappings give: a program that fails the
 * validator (checked here word by word) must give KERNEL_INVALID, any
 * other OK, KERNEL_WATCHDOG or MMU_FAULT (build with ASan/UBSan; see
 * Makefile).
 *
 * Input: byte 0 bit 0 picks in-place access (map()/map_write()) or
 * read()/write() only; byte 1 the number of args (mod 17); bytes 2-4 the
 * grid (1..4 each); bytes 5-6 the budget of the whole grid (at most 65535
 * instructions, shared out among its instances, so that no input is a long
 * job); then the program words (up to 256), which also start the
 * 64 KiB device memory the args point into.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../firmware-sim/src/tvp/tvp.h"

#define MEM_BASE	0x10000ull
#define MEM_SIZE	(64u * 1024u)
#define HDR		8u
#define MAX_WORDS	256u

static uint8_t *device_mem;	/* heap, exactly MEM_SIZE: ASan sees an overrun */

static bool inside(uint64_t va, size_t len)
{
	return va >= MEM_BASE && va - MEM_BASE <= MEM_SIZE && len <= MEM_SIZE - (va - MEM_BASE);
}

static int mem_read(void *opaque, uint64_t va, void *buf, size_t len)
{
	(void)opaque;
	if (!inside(va, len))
		return MAIA_STATUS_MMU_FAULT;
	memcpy(buf, device_mem + (va - MEM_BASE), len);
	return MAIA_STATUS_OK;
}

static int mem_write(void *opaque, uint64_t va, const void *buf, size_t len)
{
	(void)opaque;
	if (!inside(va, len))
		return MAIA_STATUS_MMU_FAULT;
	memcpy(device_mem + (va - MEM_BASE), buf, len);
	return MAIA_STATUS_OK;
}

static int mem_map(void *opaque, uint64_t va, size_t len, const void **ptr, size_t *avail)
{
	(void)opaque;
	if (!inside(va, 1))
		return MAIA_STATUS_MMU_FAULT;
	*ptr = device_mem + (va - MEM_BASE);
	*avail = MEM_SIZE - (va - MEM_BASE) < len ? MEM_SIZE - (va - MEM_BASE) : len;
	return MAIA_STATUS_OK;
}

static int mem_map_write(void *opaque, uint64_t va, size_t len, void **ptr, size_t *avail)
{
	return mem_map(opaque, va, len, (const void **)ptr, avail);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint64_t sems[MAIA_NUM_SEMAPHORES];
	struct maia_job_mem mem = { .read = mem_read, .write = mem_write };
	struct fw_tvp_env env = { .mem = &mem, .sems = sems };
	struct maia_cmd_kernel c = { .hdr = { .opcode = MAIA_OP_KERNEL, .size = sizeof(c) } };
	struct fw_tvp_stats st;
	uint32_t n, bad;
	bool valid;
	int rc;

	if (size < HDR + sizeof(struct maia_tvp_insn))
		return 0;
	if (!device_mem)
		device_mem = malloc(MEM_SIZE);
	memset(device_mem, 0, MEM_SIZE);
	memset(sems, 0, sizeof(sems));
	if (data[0] & 1) {
		mem.map = mem_map;
		mem.map_write = mem_map_write;
	}
	c.num_args = data[1] % (MAIA_TVP_MAX_ARGS + 1);
	for (int i = 0; i < 3; i++)
		c.grid[i] = 1 + data[2 + i] % 4;
	/* the budget is per instance: bytes 5-6 bound the instructions of the whole grid */
	c.budget = ((uint32_t)data[5] | (uint32_t)data[6] << 8) /
		   (c.grid[0] * c.grid[1] * c.grid[2]);
	if (!c.budget)
		c.budget = 1;
	n = (uint32_t)((size - HDR) / sizeof(struct maia_tvp_insn));
	if (n > MAX_WORDS)
		n = MAX_WORDS;
	memcpy(device_mem, data + HDR, size - HDR < MEM_SIZE ? size - HDR : MEM_SIZE);
	c.program = MEM_BASE;
	c.num_insns = n;
	/* args: addresses spread over the memory, one past it, and raw input bits */
	for (unsigned int i = 0; i < MAIA_TVP_MAX_ARGS; i++)
		c.args[i] = i < 8 ? MEM_BASE + i * (MEM_SIZE / 8) : MEM_BASE + MEM_SIZE - 4 * i;
	valid = fw_tvp_validate((const struct maia_tvp_insn *)(const void *)device_mem, n, &bad) ==
		MAIA_STATUS_OK;
	rc = fw_tvp_kernel(&env, &c, &st);
	if (!valid && rc != MAIA_STATUS_KERNEL_INVALID)
		abort();
	if (valid && rc != MAIA_STATUS_OK && rc != MAIA_STATUS_KERNEL_WATCHDOG &&
	    rc != MAIA_STATUS_MMU_FAULT)
		abort();
	return 0;
}
