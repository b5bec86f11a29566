// SPDX-License-Identifier: MIT
/*
 * TVP programs in device memory (struct maia_kernel) and the KERNEL command
 * that runs one over a grid (maia/hw/tvp.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "tvp_syntax.h"

struct maia_kernel {
	struct maia_bo *bo;		/* the instruction words, in HBM */
	uint32_t count;
};

MAIA_EXPORT int maia_kernel_create(struct maia_device *dev, const struct maia_tvp_insn *insns,
				   uint32_t count, struct maia_kernel **out)
{
	struct maia_kernel *k;
	char why[160];
	void *cpu;
	int err;

	maia_error_clear();
	if (!dev || !insns || !out)
		return maia_error(-EINVAL, "maia_kernel_create: NULL argument");
	if (!count || count > MAIA_TVP_MAX_INSNS)
		return maia_error(-EINVAL, "maia_kernel_create: %u instructions, not in 1..%u",
				  count, MAIA_TVP_MAX_INSNS);
	/* Refused here with the reason rather than later as KERNEL_INVALID. */
	for (uint32_t i = 0; i < count; i++)
		if (tvp_check(&insns[i], count, why, sizeof(why)))
			return maia_error(-EINVAL, "maia_kernel_create: word %u: %s", i, why);
	k = calloc(1, sizeof(*k));
	if (!k)
		return maia_error(-ENOMEM, "maia_kernel_create: out of memory");
	err = maia_bo_create(dev, (uint64_t)count * sizeof(*insns), MAIA_BO_HBM, &k->bo);
	if (!err)
		err = maia_bo_map(k->bo, &cpu);
	if (err) {
		maia_bo_destroy(k->bo);
		free(k);
		return err;
	}
	memcpy(cpu, insns, (size_t)count * sizeof(*insns));
	k->count = count;
	*out = k;
	return 0;
}

MAIA_EXPORT void maia_kernel_destroy(struct maia_kernel *k)
{
	if (!k)
		return;
	maia_bo_destroy(k->bo);
	free(k);
}

MAIA_EXPORT uint64_t maia_kernel_va(const struct maia_kernel *k)
{
	return k ? maia_bo_va(k->bo) : 0;
}

MAIA_EXPORT uint32_t maia_kernel_count(const struct maia_kernel *k)
{
	return k ? k->count : 0;
}

MAIA_EXPORT int maia_cmd_kernel(struct maia_cmdbuf *cb, const struct maia_kernel *k,
				const uint32_t grid[3], const uint64_t *args, uint32_t nargs,
				uint32_t budget)
{
	struct maia_cmd_kernel c = {
		.hdr = { .opcode = MAIA_OP_KERNEL, .size = sizeof(c) },
	};
	uint64_t instances = 1;

	maia_error_clear();
	if (!cb || !k || !grid || (nargs && !args))
		return maia_error(-EINVAL, "maia_cmd_kernel: NULL argument");
	if (nargs > MAIA_TVP_MAX_ARGS)
		return maia_error(-EINVAL, "maia_cmd_kernel: %u args, at most %u", nargs,
				  MAIA_TVP_MAX_ARGS);
	for (int i = 0; i < 3; i++) {
		if (!grid[i] || grid[i] > MAIA_TVP_MAX_GRID)
			return maia_error(-EINVAL, "maia_cmd_kernel: grid[%d] is %u, not in 1..%u",
					  i, grid[i], MAIA_TVP_MAX_GRID);
		instances *= grid[i];
	}
	if (instances > MAIA_TVP_MAX_GRID)
		return maia_error(-EINVAL, "maia_cmd_kernel: grid %u x %u x %u is more than %u "
				  "instances", grid[0], grid[1], grid[2], MAIA_TVP_MAX_GRID);
	c.program = maia_kernel_va(k);
	c.num_insns = k->count;
	c.num_args = nargs;
	memcpy(c.grid, grid, sizeof(c.grid));
	c.budget = budget;
	if (nargs)
		memcpy(c.args, args, nargs * sizeof(*args));
	return maia_cmd_raw(cb, &c);
}
