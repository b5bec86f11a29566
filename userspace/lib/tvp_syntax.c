// SPDX-License-Identifier: MIT
/* The TVP assembly syntax's names, and messages for the words the device refuses. */
#include <stdio.h>
#include <string.h>

#include "maia/hw/cmd.h"
#include "maia/hw/dtype.h"
#include "maia/hw/tvp_rules.h"

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

int tvp_check(const struct maia_tvp_insn *in, uint32_t count, char *why, size_t size)
{
	static const char *const field_names[3] = { "rd", "ra", "rb" };
	const struct tvp_op *op = tvp_op_of(in->op);
	const uint8_t reg[3] = { in->rd, in->ra, in->rb };
	unsigned int field = 0, dtype = MAIA_TVP_MEM_DTYPE(in->imm);
	enum maia_tvp_fault fault = maia_tvp_insn_fault(in, count, &field);
	const char *mn = op ? op->mnem : "";
	uint32_t imm = in->imm;

	switch (fault) {
	case MAIA_TVP_FAULT_NONE:
		return 0;
	case MAIA_TVP_FAULT_OPCODE:
		FAIL("unknown opcode 0x%02x", in->op);
	case MAIA_TVP_FAULT_REG:
		FAIL("%s: register %u in field %s (there are %u)", mn, reg[field],
		     field_names[field], MAIA_TVP_NUM_VREGS);
	case MAIA_TVP_FAULT_UNUSED_REG:
		FAIL("%s: field %s is %u but %s does not use it", mn, field_names[field],
		     reg[field], mn);
	case MAIA_TVP_FAULT_UNUSED_IMM:
		FAIL("%s: imm is 0x%x but %s does not use it", mn, imm, mn);
	case MAIA_TVP_FAULT_COND:
		FAIL("%s: condition %u (there are %u)", mn, imm, MAIA_TVP_CMP_COUNT);
	case MAIA_TVP_FAULT_FLOAT_COND:
		FAIL("vfcmp: condition %s is for integer compares only", tvp_cond_names[imm]);
	case MAIA_TVP_FAULT_IMM_REG:
		FAIL("%s: register %u in imm (there are %u)", mn, imm, MAIA_TVP_NUM_VREGS);
	case MAIA_TVP_FAULT_CVT:
		FAIL("vcvt: conversion %u (there are %u)", imm, MAIA_TVP_CVT_COUNT);
	case MAIA_TVP_FAULT_AXIS:
		if (op->fmt == MAIA_TVP_FMT_S_AXIS)
			FAIL("%s: axis %u is not 0, 1 or 2", mn, imm);
		FAIL("%s: axis %u is not 0 or 1", mn, imm);
	case MAIA_TVP_FAULT_LANE:
		FAIL("%s: lane %u (a register has %u)", mn, imm, MAIA_TVP_VLEN);
	case MAIA_TVP_FAULT_MEM_FLAGS:
		FAIL("%s: imm 0x%x has flags outside MAIA_TVP_MEM_ALL", mn, imm);
	case MAIA_TVP_FAULT_DTYPE:
		FAIL("%s: dtype %u cannot be loaded or stored", mn,
		     op->fmt == MAIA_TVP_FMT_MEM_S ? imm : dtype);
	case MAIA_TVP_FAULT_UNIT_OFFSET:
		FAIL("%s: unit stride with offset register v%u (must be 0)", mn, in->rb);
	case MAIA_TVP_FAULT_AMO_DTYPE:
		FAIL("vamoadd: dtype %s (atomics add f32 or i32 words only)",
		     tvp_dtype_name(dtype));
	case MAIA_TVP_FAULT_MASK_REG:
		FAIL("%s: mask register %u (there are %u)", mn, MAIA_TVP_MEM_MASK_REG(imm),
		     MAIA_TVP_NUM_VREGS);
	case MAIA_TVP_FAULT_MASK_UNUSED:
		FAIL("%s: mask register v%u without MAIA_TVP_MEM_MASKED", mn,
		     MAIA_TVP_MEM_MASK_REG(imm));
	case MAIA_TVP_FAULT_TARGET:
		FAIL("branch target %u is not an instruction (the program has %u)", imm, count);
	case MAIA_TVP_FAULT_SHAPE:
		FAIL("shape %u x %u: rows and cols must be at least 1 and rows * cols "
		     "at most %u", imm >> 16, imm & 0xffff, MAIA_TVP_VLEN);
	case MAIA_TVP_FAULT_SEM:
		FAIL("%s: semaphore %u (there are %u)", mn, imm, MAIA_NUM_SEMAPHORES);
	case MAIA_TVP_FAULT_K:
		FAIL("%s: K %u is not in 1..%u", mn, imm, MAIA_TVP_VLEN);
	default:
		FAIL("%s: refused (fault %u)", mn, (unsigned int)fault);
	}
}
