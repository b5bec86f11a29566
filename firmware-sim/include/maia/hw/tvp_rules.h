/* SPDX-License-Identifier: MIT */
/*
 * Maia hardware ABI: which TVP instruction words the device accepts
 * (Documentation/hw/tvp.rst, "Validation"). The device's validator and
 * libmaia's assembler, disassembler and kernel loader all call
 * maia_tvp_insn_fault(), so the rule exists once; libmaia turns a fault
 * into a message. Userspace and firmware only: the kernel never decodes a
 * program.
 */
#ifndef MAIA_HW_TVP_RULES_H
#define MAIA_HW_TVP_RULES_H

#include "maia/hw/dtype.h"
#include "maia/hw/tvp.h"

/* Why a word is refused; MAIA_TVP_FAULT_NONE: accepted. */
enum maia_tvp_fault {
	MAIA_TVP_FAULT_NONE = 0,
	MAIA_TVP_FAULT_OPCODE,		/* no instruction has this opcode */
	MAIA_TVP_FAULT_REG,		/* a register field >= MAIA_TVP_NUM_VREGS */
	MAIA_TVP_FAULT_UNUSED_REG,	/* a register field the format does not use is not 0 */
	MAIA_TVP_FAULT_UNUSED_IMM,	/* imm is not 0 where the format has none */
	MAIA_TVP_FAULT_COND,		/* condition >= MAIA_TVP_CMP_COUNT */
	MAIA_TVP_FAULT_FLOAT_COND,	/* VFCMP with an unsigned (integer) condition */
	MAIA_TVP_FAULT_IMM_REG,		/* the fourth register (imm) >= MAIA_TVP_NUM_VREGS */
	MAIA_TVP_FAULT_CVT,		/* conversion >= MAIA_TVP_CVT_COUNT */
	MAIA_TVP_FAULT_AXIS,		/* reduction axis not 0 or 1; PID/NPROG axis not 0-2 */
	MAIA_TVP_FAULT_LANE,		/* lane index >= MAIA_TVP_VLEN */
	MAIA_TVP_FAULT_MEM_FLAGS,	/* memory imm bits outside MAIA_TVP_MEM_ALL */
	MAIA_TVP_FAULT_DTYPE,		/* a dtype that loads and stores do not take */
	MAIA_TVP_FAULT_UNIT_OFFSET,	/* MAIA_TVP_MEM_UNIT with an offset register */
	MAIA_TVP_FAULT_AMO_DTYPE,	/* VAMOADD of other than FP32 or INT32 */
	MAIA_TVP_FAULT_MASK_REG,	/* mask register >= MAIA_TVP_NUM_VREGS */
	MAIA_TVP_FAULT_MASK_UNUSED,	/* a mask register without MAIA_TVP_MEM_MASKED */
	MAIA_TVP_FAULT_TARGET,		/* branch target not an instruction of the program */
	MAIA_TVP_FAULT_SHAPE,		/* rows or cols 0, or rows * cols > MAIA_TVP_VLEN */
	MAIA_TVP_FAULT_SEM,		/* semaphore >= MAIA_NUM_SEMAPHORES */
	MAIA_TVP_FAULT_K,		/* VDOT's K not in 1 .. MAIA_TVP_VLEN */
	MAIA_TVP_FAULT_COUNT
};

/* The operand format (MAIA_TVP_FMT_*) of an opcode, or -1 if none has it. */
static inline int maia_tvp_op_format(unsigned int op)
{
	switch (op) {
#define MAIA_TVP_RULES_FMT(name, code, mnem, fmt, cls) case code: return (int)(fmt);
	MAIA_TVP_OPS(MAIA_TVP_RULES_FMT)
#undef MAIA_TVP_RULES_FMT
	default:
		return -1;
	}
}

/* Register fields a format uses: bit 0 rd, bit 1 ra, bit 2 rb. */
static inline unsigned int maia_tvp_format_regs(unsigned int fmt)
{
	switch (fmt) {
	case MAIA_TVP_FMT_NONE:
	case MAIA_TVP_FMT_JUMP:
	case MAIA_TVP_FMT_SHAPE:
		return 0;
	case MAIA_TVP_FMT_S_I:
	case MAIA_TVP_FMT_V_I:
	case MAIA_TVP_FMT_S_AXIS:
		return 1;
	case MAIA_TVP_FMT_BR_S:
	case MAIA_TVP_FMT_SEM:
		return 2;
	case MAIA_TVP_FMT_BR_S_S:
		return 2 | 4;
	case MAIA_TVP_FMT_S_S_I:
	case MAIA_TVP_FMT_V_V:
	case MAIA_TVP_FMT_V_V_I:
	case MAIA_TVP_FMT_V_S:
	case MAIA_TVP_FMT_S_V_I:
	case MAIA_TVP_FMT_MEM_S:
		return 1 | 2;
	default:
		return 1 | 2 | 4;
	}
}

/* Whether a format has an imm operand at all. */
static inline int maia_tvp_format_has_imm(unsigned int fmt)
{
	return fmt != MAIA_TVP_FMT_NONE && fmt != MAIA_TVP_FMT_S_S_S &&
	       fmt != MAIA_TVP_FMT_V_V_V && fmt != MAIA_TVP_FMT_V_V && fmt != MAIA_TVP_FMT_V_S;
}

/* Whether VLD/VST/SLD/SST (and the atomics) take a dtype. */
static inline int maia_tvp_mem_dtype_ok(unsigned int dtype)
{
	switch (dtype) {
	case MAIA_DTYPE_FP32:
	case MAIA_DTYPE_FP16:
	case MAIA_DTYPE_BF16:
	case MAIA_DTYPE_FP8_E4M3:
	case MAIA_DTYPE_FP8_E5M2:
	case MAIA_DTYPE_INT32:
	case MAIA_DTYPE_INT8:
		return 1;
	default:
		return 0;
	}
}

/* The fault of a memory instruction's imm (format MAIA_TVP_FMT_MEM_V). */
static inline enum maia_tvp_fault maia_tvp_mem_fault(const struct maia_tvp_insn *in)
{
	__u32 imm = in->imm, dtype = MAIA_TVP_MEM_DTYPE(imm);

	if (imm & ~MAIA_TVP_MEM_ALL)
		return MAIA_TVP_FAULT_MEM_FLAGS;
	if (!maia_tvp_mem_dtype_ok(dtype))
		return MAIA_TVP_FAULT_DTYPE;
	if ((imm & MAIA_TVP_MEM_UNIT) && in->rb)
		return MAIA_TVP_FAULT_UNIT_OFFSET;
	/* atomics add binary32 or int32 words only */
	if (in->op == MAIA_TVP_OP_VAMOADD && dtype != MAIA_DTYPE_FP32 &&
	    dtype != MAIA_DTYPE_INT32)
		return MAIA_TVP_FAULT_AMO_DTYPE;
	if (MAIA_TVP_MEM_MASK_REG(imm) >= MAIA_TVP_NUM_VREGS)
		return MAIA_TVP_FAULT_MASK_REG;
	/* the mask register field is unused without MASKED: zero then */
	if (!(imm & MAIA_TVP_MEM_MASKED) && MAIA_TVP_MEM_MASK_REG(imm))
		return MAIA_TVP_FAULT_MASK_UNUSED;
	return MAIA_TVP_FAULT_NONE;
}

/* The fault of the imm of an instruction of format fmt in a program of n words. */
static inline enum maia_tvp_fault maia_tvp_imm_fault(const struct maia_tvp_insn *in,
						     unsigned int fmt, __u32 n)
{
	__u32 imm = in->imm, rows = imm >> 16, cols = imm & 0xffffu;

	switch (fmt) {
	case MAIA_TVP_FMT_S_S_S_C:
	case MAIA_TVP_FMT_V_V_V_C:
		if (imm >= MAIA_TVP_CMP_COUNT)
			return MAIA_TVP_FAULT_COND;
		if (in->op == MAIA_TVP_OP_VFCMP && imm >= MAIA_TVP_CMP_ULT)
			return MAIA_TVP_FAULT_FLOAT_COND;
		return MAIA_TVP_FAULT_NONE;
	case MAIA_TVP_FMT_V_V_V_V:
		return imm < MAIA_TVP_NUM_VREGS ? MAIA_TVP_FAULT_NONE : MAIA_TVP_FAULT_IMM_REG;
	case MAIA_TVP_FMT_V_V_I:
		if (in->op == MAIA_TVP_OP_VCVT)
			return imm < MAIA_TVP_CVT_COUNT ? MAIA_TVP_FAULT_NONE : MAIA_TVP_FAULT_CVT;
		return imm <= 1 ? MAIA_TVP_FAULT_NONE : MAIA_TVP_FAULT_AXIS;
	case MAIA_TVP_FMT_S_V_I:
		return imm < MAIA_TVP_VLEN ? MAIA_TVP_FAULT_NONE : MAIA_TVP_FAULT_LANE;
	case MAIA_TVP_FMT_MEM_V:
		return maia_tvp_mem_fault(in);
	case MAIA_TVP_FMT_MEM_S:
		return maia_tvp_mem_dtype_ok(imm) ? MAIA_TVP_FAULT_NONE : MAIA_TVP_FAULT_DTYPE;
	case MAIA_TVP_FMT_BR_S:
	case MAIA_TVP_FMT_BR_S_S:
	case MAIA_TVP_FMT_JUMP:
		return imm < n ? MAIA_TVP_FAULT_NONE : MAIA_TVP_FAULT_TARGET;
	case MAIA_TVP_FMT_SHAPE:
		return rows && cols && rows * cols <= MAIA_TVP_VLEN ? MAIA_TVP_FAULT_NONE :
								     MAIA_TVP_FAULT_SHAPE;
	case MAIA_TVP_FMT_S_AXIS:
		return imm <= 2 ? MAIA_TVP_FAULT_NONE : MAIA_TVP_FAULT_AXIS;
	case MAIA_TVP_FMT_SEM:
		return imm < MAIA_NUM_SEMAPHORES ? MAIA_TVP_FAULT_NONE : MAIA_TVP_FAULT_SEM;
	case MAIA_TVP_FMT_V_V_V_K:
		return imm >= 1 && imm <= MAIA_TVP_VLEN ? MAIA_TVP_FAULT_NONE : MAIA_TVP_FAULT_K;
	default:
		return MAIA_TVP_FAULT_NONE;	/* S_I, S_S_I, V_I: any 32 bits */
	}
}

/*
 * Whether the device accepts word in of a program of n words. For the
 * register faults, *field (if not NULL) is the field: 0 rd, 1 ra, 2 rb.
 */
static inline enum maia_tvp_fault maia_tvp_insn_fault(const struct maia_tvp_insn *in, __u32 n,
						      unsigned int *field)
{
	const __u8 reg[3] = { in->rd, in->ra, in->rb };
	int fmt = maia_tvp_op_format(in->op);
	unsigned int used, i;

	if (fmt < 0)
		return MAIA_TVP_FAULT_OPCODE;
	used = maia_tvp_format_regs((unsigned int)fmt);
	for (i = 0; i < 3; i++) {
		if (field)
			*field = i;
		if (reg[i] >= MAIA_TVP_NUM_VREGS)
			return MAIA_TVP_FAULT_REG;
		if (!(used & (1u << i)) && reg[i])
			return MAIA_TVP_FAULT_UNUSED_REG;
	}
	if (!maia_tvp_format_has_imm((unsigned int)fmt))
		return in->imm ? MAIA_TVP_FAULT_UNUSED_IMM : MAIA_TVP_FAULT_NONE;
	return maia_tvp_imm_fault(in, (unsigned int)fmt, n);
}

#endif /* MAIA_HW_TVP_RULES_H */
