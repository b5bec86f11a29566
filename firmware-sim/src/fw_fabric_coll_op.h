/* SPDX-License-Identifier: MIT */
/*
 * MAIA_OP_COLLECTIVE as a fabric operation a job parks on
 * (fw_fabric_coll_op.c; the engine is fw_fabric_coll.h).
 */
#ifndef FWSIM_FABRIC_COLL_OP_H
#define FWSIM_FABRIC_COLL_OP_H

#include "fw_internal.h"

struct fw_fop;

/*
 * The operation, submitted to the fabric thread, for a checked command
 * (fw_coll_check()) of two or more ranks run by asid's job; NULL if out of
 * memory.
 */
/* model_start_ns: the modeled time the command starts on this rank. */
struct fw_fop *fw_coll_op_start(struct maia_sim *sim, unsigned int asid,
				const struct maia_cmd_collective *cmd, uint64_t model_start_ns);

/* A checked one-rank command, run at once on the worker: its status. */
uint32_t fw_coll_run_local(struct fw_as *as, const struct maia_cmd_collective *cmd);

#endif /* FWSIM_FABRIC_COLL_OP_H */
