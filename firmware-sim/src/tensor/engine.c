// SPDX-License-Identifier: MIT
/* Tensor engine entry points (early version: validates and rejects). */
#include <errno.h>
#include <stdlib.h>

#include "maia/engine.h"
#include "maia/hw/queue.h"
#include "maia/hw/tensor.h"

struct maia_tensor_engine {
	struct maia_tensor_config cfg;
};

struct maia_tensor_engine *maia_tensor_create(const struct maia_tensor_config *cfg)
{
	struct maia_tensor_engine *te;

	if (!cfg || !cfg->clusters || !cfg->tiles_per_cluster) {
		errno = EINVAL;
		return NULL;
	}
	te = calloc(1, sizeof(*te));
	if (!te)
		return NULL;
	te->cfg = *cfg;
	return te;
}

void maia_tensor_destroy(struct maia_tensor_engine *te)
{
	free(te);
}

int maia_tensor_handles(uint16_t opcode)
{
	return opcode >= MAIA_OP_GEMM && opcode <= MAIA_OP_COPY;
}

int maia_tensor_exec(struct maia_tensor_engine *te, const struct maia_cmd_header *cmd,
		     const struct maia_job_mem *mem, struct maia_op_stats *stats)
{
	(void)te;
	(void)mem;
	(void)stats;
	if (!maia_tensor_handles(cmd->opcode))
		return MAIA_STATUS_BAD_OPCODE;
	return MAIA_STATUS_BAD_CMD;
}
