// SPDX-License-Identifier: MIT
/* The TVP assembly syntax's names and the device's instruction validation. */
#include <stdio.h>
#include <string.h>

#include "maia/hw/cmd.h"
#include "maia/hw/dtype.h"

#include "tvp_syntax.h"

static const struct tvp_op ops[256] = {
#define TVP_OP(name, code, mn, format, cls) [code] = { .mnem = mn, .fmt = format },
	MAIA_TVP_OPS(TVP_OP)
#undef TVP_OP
};

const struct tvp_op *tvp_op_of(unsigned int opcode)
{
	return opcode < 256 && ops[opcode].mnem ? &ops[opcode] : NULL;
}

static int name_is(const char *name, const char *s, size_t len)
{
	return strlen(name) == len && !memcmp(name, s, len);
}

int tvp_op_by_name(const char *name, size_t len)
{
	for (unsigned int i = 0; i < 256; i++)
		if (ops[i].mnem && name_is(ops[i].mnem, name, len))
			return (int)i;
	return -1;
}

const char *const tvp_cond_names[MAIA_TVP_CMP_COUNT] = {
	[MAIA_TVP_CMP_EQ] = "eq", [MAIA_TVP_CMP_NE] = "ne", [MAIA_TVP_CMP_LT] = "lt",
	[MAIA_TVP_CMP_LE] = "le", [MAIA_TVP_CMP_GT] = "gt", [MAIA_TVP_CMP_GE] = "ge",
	[MAIA_TVP_CMP_ULT] = "ult", [MAIA_TVP_CMP_ULE] = "ule", [MAIA_TVP_CMP_UGT] = "ugt",
	[MAIA_TVP_CMP_UGE] = "uge",
};

const char *const tvp_cvt_names[MAIA_TVP_CVT_COUNT] = {
	[MAIA_TVP_CVT_F2I] = "f2i", [MAIA_TVP_CVT_I2F] = "i2f", [MAIA_TVP_CVT_BF16] = "bf16",
	[MAIA_TVP_CVT_FP16] = "fp16", [MAIA_TVP_CVT_FP8_E4M3] = "fp8e4m3",
	[MAIA_TVP_CVT_FP8_E5M2] = "fp8e5m2", [MAIA_TVP_CVT_U2F] = "u2f",
};

/* The dtypes VLD, VST, SLD and SST take. */
static const char *const dtype_names[MAIA_DTYPE_COUNT] = {
	[MAIA_DTYPE_FP32] = "f32", [MAIA_DTYPE_FP16] = "f16", [MAIA_DTYPE_BF16] = "bf16",
	[MAIA_DTYPE_FP8_E4M3] = "fp8e4m3", [MAIA_DTYPE_FP8_E5M2] = "fp8e5m2",
	[MAIA_DTYPE_INT32] = "i32", [MAIA_DTYPE_INT8] = "i8",
};

const char *tvp_dtype_name(unsigned int dtype)
{
	return dtype < MAIA_DTYPE_COUNT ? dtype_names[dtype] : NULL;
}

int tvp_dtype_by_name(const char *name, size_t len)
{
	for (unsigned int i = 0; i < MAIA_DTYPE_COUNT; i++)
		if (dtype_names[i] && name_is(dtype_names[i], name, len))
			return (int)i;
	return -1;
}

#define FAIL(...) do { snprintf(why, size, __VA_ARGS__); return -1; } while (0)

/* Register fields: which of rd, ra, rb a format uses. */
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

/* Whether a format uses imm at all. */
static int uses_imm(unsigned int fmt)
{
	return fmt != MAIA_TVP_FMT_NONE && fmt != MAIA_TVP_FMT_S_S_S &&
	       fmt != MAIA_TVP_FMT_V_V_V && fmt != MAIA_TVP_FMT_V_V && fmt != MAIA_TVP_FMT_V_S;
}

static int check_target(uint32_t target, uint32_t count, char *why, size_t size)
{
	if (target >= count)
		FAIL("branch target %u is not an instruction (the program has %u)", target, count);
	return 0;
}

int tvp_check(const struct maia_tvp_insn *in, uint32_t count, char *why, size_t size)
{
	const struct tvp_op *op = tvp_op_of(in->op);
	const uint8_t reg[3] = { in->rd, in->ra, in->rb };
	const char *const field[3] = { "rd", "ra", "rb" };
	uint32_t imm = in->imm;
	unsigned int used, i;

	if (!op)
		FAIL("unknown opcode 0x%02x", in->op);
	used = regs_of(op->fmt);
	for (i = 0; i < 3; i++) {
		if (!(used & (1u << i)) && reg[i])
			FAIL("%s: field %s is %u but %s does not use it", op->mnem, field[i],
			     reg[i], op->mnem);
		if (reg[i] >= MAIA_TVP_NUM_VREGS)
			FAIL("%s: register %u in field %s (there are %u)", op->mnem, reg[i],
			     field[i], MAIA_TVP_NUM_VREGS);
	}
	if (!uses_imm(op->fmt) && imm)
		FAIL("%s: imm is 0x%x but %s does not use it", op->mnem, imm, op->mnem);

	switch (op->fmt) {
	case MAIA_TVP_FMT_S_S_S_C:
	case MAIA_TVP_FMT_V_V_V_C:
		if (imm >= MAIA_TVP_CMP_COUNT)
			FAIL("%s: condition %u (there are %u)", op->mnem, imm, MAIA_TVP_CMP_COUNT);
		if (in->op == MAIA_TVP_OP_VFCMP && imm >= MAIA_TVP_CMP_ULT)
			FAIL("vfcmp: condition %s is for integer compares only",
			     tvp_cond_names[imm]);
		return 0;
	case MAIA_TVP_FMT_V_V_V_V:
		if (imm >= MAIA_TVP_NUM_VREGS)
			FAIL("%s: register %u in imm (there are %u)", op->mnem, imm,
			     MAIA_TVP_NUM_VREGS);
		return 0;
	case MAIA_TVP_FMT_V_V_I:
		if (in->op == MAIA_TVP_OP_VCVT) {
			if (imm >= MAIA_TVP_CVT_COUNT)
				FAIL("vcvt: conversion %u (there are %u)", imm, MAIA_TVP_CVT_COUNT);
		} else if (imm > 1) {
			FAIL("%s: axis %u is not 0 or 1", op->mnem, imm);
		}
		return 0;
	case MAIA_TVP_FMT_S_V_I:
		if (imm >= MAIA_TVP_VLEN)
			FAIL("%s: lane %u (a register has %u)", op->mnem, imm, MAIA_TVP_VLEN);
		return 0;
	case MAIA_TVP_FMT_MEM_V:
		if (imm & ~MAIA_TVP_MEM_ALL)
			FAIL("%s: imm 0x%x has flags outside MAIA_TVP_MEM_ALL", op->mnem, imm);
		if (!tvp_dtype_name(MAIA_TVP_MEM_DTYPE(imm)))
			FAIL("%s: dtype %u cannot be loaded or stored", op->mnem,
			     MAIA_TVP_MEM_DTYPE(imm));
		if ((imm & MAIA_TVP_MEM_UNIT) && in->rb)
			FAIL("%s: unit stride with offset register v%u (must be 0)", op->mnem,
			     in->rb);
		if (in->op == MAIA_TVP_OP_VAMOADD && MAIA_TVP_MEM_DTYPE(imm) != MAIA_DTYPE_FP32 &&
		    MAIA_TVP_MEM_DTYPE(imm) != MAIA_DTYPE_INT32)
			FAIL("vamoadd: dtype %s (atomics add f32 or i32 words only)",
			     tvp_dtype_name(MAIA_TVP_MEM_DTYPE(imm)));
		if (MAIA_TVP_MEM_MASK_REG(imm) >= MAIA_TVP_NUM_VREGS)
			FAIL("%s: mask register %u (there are %u)", op->mnem,
			     MAIA_TVP_MEM_MASK_REG(imm), MAIA_TVP_NUM_VREGS);
		if (!(imm & MAIA_TVP_MEM_MASKED) && MAIA_TVP_MEM_MASK_REG(imm))
			FAIL("%s: mask register v%u without MAIA_TVP_MEM_MASKED", op->mnem,
			     MAIA_TVP_MEM_MASK_REG(imm));
		return 0;
	case MAIA_TVP_FMT_MEM_S:
		if (!tvp_dtype_name(imm))
			FAIL("%s: dtype %u cannot be loaded or stored", op->mnem, imm);
		return 0;
	case MAIA_TVP_FMT_BR_S:
	case MAIA_TVP_FMT_BR_S_S:
	case MAIA_TVP_FMT_JUMP:
		return check_target(imm, count, why, size);
	case MAIA_TVP_FMT_SHAPE: {
		uint32_t rows = imm >> 16, cols = imm & 0xffff;

		if (!rows || !cols || rows * cols > MAIA_TVP_VLEN)
			FAIL("shape %u x %u: rows and cols must be at least 1 and rows * cols "
			     "at most %u", rows, cols, MAIA_TVP_VLEN);
		return 0;
	}
	case MAIA_TVP_FMT_S_AXIS:
		if (imm > 2)
			FAIL("%s: axis %u is not 0, 1 or 2", op->mnem, imm);
		return 0;
	case MAIA_TVP_FMT_SEM:
		if (imm >= MAIA_NUM_SEMAPHORES)
			FAIL("%s: semaphore %u (there are %u)", op->mnem, imm,
			     MAIA_NUM_SEMAPHORES);
		return 0;
	case MAIA_TVP_FMT_V_V_V_K:
		if (imm < 1 || imm > MAIA_TVP_VLEN)
			FAIL("%s: K %u is not in 1..%u", op->mnem, imm, MAIA_TVP_VLEN);
		return 0;
	default:
		return 0;
	}
}
