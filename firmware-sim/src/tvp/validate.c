// SPDX-License-Identifier: MIT
/*
 * Program validation (Documentation/hw/tvp.rst, "Validation"): every word
 * of a KERNEL program is checked before any instance runs, so the executor
 * never meets an unknown opcode, a register past v31/s31, an imm it cannot
 * use or a branch out of the program. The rule is maia/hw/tvp_rules.h's,
 * which libmaia's assembler applies too.
 */
#include "maia/hw/tvp_rules.h"
#include "tvp.h"

/* The class of each opcode, for the telemetry counters and the time model. */
struct op_info {
	uint8_t cls;
};

static const struct op_info ops[256] = {
#define OP_INFO(name, code, mnem, f, c) [code] = { c },
	MAIA_TVP_OPS(OP_INFO)
#undef OP_INFO
};

unsigned int fw_tvp_class(uint8_t op)
{
	return ops[op].cls;
}

bool fw_tvp_insn_valid(const struct maia_tvp_insn *in, uint32_t n)
{
	return maia_tvp_insn_fault(in, n, NULL) == MAIA_TVP_FAULT_NONE;
}

int fw_tvp_validate(const struct maia_tvp_insn *insns, uint32_t n, uint32_t *bad)
{
	for (uint32_t i = 0; i < n; i++) {
		if (!fw_tvp_insn_valid(&insns[i], n)) {
			*bad = i;
			return MAIA_STATUS_KERNEL_INVALID;
		}
	}
	*bad = n;
	return MAIA_STATUS_OK;
}
