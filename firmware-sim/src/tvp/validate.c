// SPDX-License-Identifier: MIT
/*
 * Program validation (Documentation/hw/tvp.rst, "Validation"): every word
 * of a KERNEL program is checked before any instance runs, so the executor
 * never meets an unknown opcode, a register past v31/s31, an imm it cannot
 * use or a branch out of the program. The operand formats come from the
 * one table, MAIA_TVP_OPS.
 */
#include "maia/hw/dtype.h"
#include "tvp.h"

struct op_info {
	uint8_t valid, fmt, cls;
};

static const struct op_info ops[256] = {
#define OP_INFO(name, code, mnem, f, c) [code] = { 1, f, c },
	MAIA_TVP_OPS(OP_INFO)
#undef OP_INFO
};

/* Register fields a format uses. */
#define RD 1u
#define RA 2u
#define RB 4u

static unsigned int regs_of(unsigned int fmt)
{
	switch (fmt) {
	case MAIA_TVP_FMT_NONE:
	case MAIA_TVP_FMT_JUMP:
	case MAIA_TVP_FMT_SHAPE:
		return 0;
	case MAIA_TVP_FMT_S_I:
	case MAIA_TVP_FMT_V_I:
	case MAIA_TVP_FMT_S_AXIS:
		return RD;
	case MAIA_TVP_FMT_BR_S:
	case MAIA_TVP_FMT_SEM:
		return RA;
	case MAIA_TVP_FMT_BR_S_S:
		return RA | RB;
	case MAIA_TVP_FMT_S_S_I:
	case MAIA_TVP_FMT_V_V:
	case MAIA_TVP_FMT_V_V_I:
	case MAIA_TVP_FMT_V_S:
	case MAIA_TVP_FMT_S_V_I:
	case MAIA_TVP_FMT_MEM_S:
		return RD | RA;
	default:
		return RD | RA | RB;
	}
}

static bool uses_imm(unsigned int fmt)
{
	return fmt != MAIA_TVP_FMT_NONE && fmt != MAIA_TVP_FMT_S_S_S &&
	       fmt != MAIA_TVP_FMT_V_V_V && fmt != MAIA_TVP_FMT_V_V && fmt != MAIA_TVP_FMT_V_S;
}

unsigned int fw_tvp_class(uint8_t op)
{
	return ops[op].cls;
}

bool fw_tvp_mem_dtype(unsigned int dtype)
{
	switch (dtype) {
	case MAIA_DTYPE_FP32:
	case MAIA_DTYPE_FP16:
	case MAIA_DTYPE_BF16:
	case MAIA_DTYPE_FP8_E4M3:
	case MAIA_DTYPE_FP8_E5M2:
	case MAIA_DTYPE_INT32:
	case MAIA_DTYPE_INT8:
		return true;
	default:
		return false;
	}
}

static bool imm_valid(const struct maia_tvp_insn *in, unsigned int fmt, uint32_t n)
{
	uint32_t imm = in->imm, rows, cols;

	switch (fmt) {
	case MAIA_TVP_FMT_S_S_S_C:
		return imm < MAIA_TVP_CMP_COUNT;
	case MAIA_TVP_FMT_V_V_V_C:
		if (in->op == MAIA_TVP_OP_VFCMP)
			return imm < MAIA_TVP_CMP_ULT;	/* floats: no unsigned compares */
		return imm < MAIA_TVP_CMP_COUNT;
	case MAIA_TVP_FMT_V_V_V_V:
		return imm < MAIA_TVP_NUM_VREGS;
	case MAIA_TVP_FMT_V_V_I:
		if (in->op == MAIA_TVP_OP_VCVT)
			return imm < MAIA_TVP_CVT_COUNT;
		return imm <= 1;			/* reduction axis */
	case MAIA_TVP_FMT_S_V_I:
		return imm < MAIA_TVP_VLEN;
	case MAIA_TVP_FMT_MEM_V:
		if ((imm & ~MAIA_TVP_MEM_ALL) || !fw_tvp_mem_dtype(MAIA_TVP_MEM_DTYPE(imm)) ||
		    MAIA_TVP_MEM_MASK_REG(imm) >= MAIA_TVP_NUM_VREGS)
			return false;
		if ((imm & MAIA_TVP_MEM_UNIT) && in->rb)
			return false;
		/* atomics add binary32 or int32 words only */
		if (in->op == MAIA_TVP_OP_VAMOADD && MAIA_TVP_MEM_DTYPE(imm) != MAIA_DTYPE_FP32 &&
		    MAIA_TVP_MEM_DTYPE(imm) != MAIA_DTYPE_INT32)
			return false;
		/* the mask register field is unused without MASKED: zero then */
		return (imm & MAIA_TVP_MEM_MASKED) || !MAIA_TVP_MEM_MASK_REG(imm);
	case MAIA_TVP_FMT_MEM_S:
		return fw_tvp_mem_dtype(imm);
	case MAIA_TVP_FMT_BR_S:
	case MAIA_TVP_FMT_BR_S_S:
	case MAIA_TVP_FMT_JUMP:
		return imm < n;
	case MAIA_TVP_FMT_SHAPE:
		rows = imm >> 16;
		cols = imm & 0xffffu;
		return rows && cols && rows * cols <= MAIA_TVP_VLEN;
	case MAIA_TVP_FMT_S_AXIS:
		return imm <= 2;
	case MAIA_TVP_FMT_SEM:
		return imm < MAIA_NUM_SEMAPHORES;
	case MAIA_TVP_FMT_V_V_V_K:
		return imm >= 1 && imm <= MAIA_TVP_VLEN;
	default:
		return true;	/* S_I, S_S_I, V_I: any 32 bits */
	}
}

bool fw_tvp_insn_valid(const struct maia_tvp_insn *in, uint32_t n)
{
	const struct op_info *oi = &ops[in->op];
	const uint8_t reg[3] = { in->rd, in->ra, in->rb };
	unsigned int used;

	if (!oi->valid)
		return false;
	used = regs_of(oi->fmt);
	for (unsigned int i = 0; i < 3; i++) {
		if (reg[i] >= MAIA_TVP_NUM_VREGS)
			return false;
		if (!(used & (1u << i)) && reg[i])
			return false;
	}
	if (!uses_imm(oi->fmt))
		return !in->imm;
	return imm_valid(in, oi->fmt, n);
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
