// SPDX-License-Identifier: MIT
/*
 * The TVP disassembler: instruction words back to the assembly syntax of
 * tvp_asm.c, one instruction per line, each branch target as a label
 * "L<index>:" on a line of its own before its instruction.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "tvp_syntax.h"

struct text {
	char *buf;
	size_t len, cap;
	int oom;
};

static void put(struct text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct text *t, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (t->oom)
		return;
	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(t->buf + t->len, t->cap - t->len, fmt, ap);
		va_end(ap);
		if (n >= 0 && (size_t)n < t->cap - t->len) {
			t->len += n;
			return;
		}
		char *b = n < 0 ? NULL : realloc(t->buf, 2 * t->cap + n + 1);

		if (!b) {
			t->oom = 1;
			return;
		}
		t->buf = b;
		t->cap = 2 * t->cap + n + 1;
	}
}

/* VSPLATI's pattern: decimal if small, else hex, and the float it is. */
static void put_pattern(struct text *t, uint32_t imm)
{
	int32_t s = (int32_t)imm;
	float f;

	memcpy(&f, &imm, sizeof(f));
	if (s >= -65536 && s <= 65536)
		put(t, "%d", s);
	else
		put(t, "0x%08x", imm);
	put(t, "  # = %.9g", f);
}

static void put_insn(struct text *t, const struct maia_tvp_insn *in)
{
	const struct tvp_op *op = tvp_op_of(in->op);
	uint32_t imm = in->imm;
	int32_t simm = (int32_t)imm;

	put(t, "\t%s", op->mnem);
	switch (op->fmt) {
	case MAIA_TVP_FMT_NONE:
		break;
	case MAIA_TVP_FMT_S_I:
		if (in->op == MAIA_TVP_OP_LIH)
			put(t, " s%u, 0x%x", in->rd, imm);
		else
			put(t, " s%u, %d", in->rd, simm);
		break;
	case MAIA_TVP_FMT_S_S_I:
		put(t, " s%u, s%u, %d", in->rd, in->ra, simm);
		break;
	case MAIA_TVP_FMT_S_S_S:
		put(t, " s%u, s%u, s%u", in->rd, in->ra, in->rb);
		break;
	case MAIA_TVP_FMT_S_S_S_C:
		put(t, " s%u, s%u, s%u, %s", in->rd, in->ra, in->rb, tvp_cond_names[imm]);
		break;
	case MAIA_TVP_FMT_V_V_V:
		put(t, " v%u, v%u, v%u", in->rd, in->ra, in->rb);
		break;
	case MAIA_TVP_FMT_V_V:
		put(t, " v%u, v%u", in->rd, in->ra);
		break;
	case MAIA_TVP_FMT_V_V_V_V:
		put(t, " v%u, v%u, v%u, v%u", in->rd, in->ra, in->rb, imm);
		break;
	case MAIA_TVP_FMT_V_V_V_C:
		put(t, " v%u, v%u, v%u, %s", in->rd, in->ra, in->rb, tvp_cond_names[imm]);
		break;
	case MAIA_TVP_FMT_V_V_I:
		if (in->op == MAIA_TVP_OP_VCVT)
			put(t, " v%u, v%u, %s", in->rd, in->ra, tvp_cvt_names[imm]);
		else
			put(t, " v%u, v%u, %u", in->rd, in->ra, imm);
		break;
	case MAIA_TVP_FMT_V_S:
		put(t, " v%u, s%u", in->rd, in->ra);
		break;
	case MAIA_TVP_FMT_V_I:
		put(t, " v%u, ", in->rd);
		if (in->op == MAIA_TVP_OP_VSPLATI)
			put_pattern(t, imm);
		else
			put(t, "%d", simm);
		break;
	case MAIA_TVP_FMT_S_V_I:
		put(t, " s%u, v%u, %u", in->rd, in->ra, imm);
		break;
	case MAIA_TVP_FMT_MEM_V:
		put(t, " v%u, s%u, ", in->rd, in->ra);
		if (imm & MAIA_TVP_MEM_UNIT)
			put(t, "unit");
		else
			put(t, "v%u", in->rb);
		put(t, ", %s", tvp_dtype_name(MAIA_TVP_MEM_DTYPE(imm)));
		if (imm & MAIA_TVP_MEM_MASKED)
			put(t, ", v%u", MAIA_TVP_MEM_MASK_REG(imm));
		break;
	case MAIA_TVP_FMT_MEM_S:
		put(t, " s%u, s%u, %s", in->rd, in->ra, tvp_dtype_name(imm));
		break;
	case MAIA_TVP_FMT_BR_S:
		put(t, " s%u, L%u", in->ra, imm);
		break;
	case MAIA_TVP_FMT_BR_S_S:
		put(t, " s%u, s%u, L%u", in->ra, in->rb, imm);
		break;
	case MAIA_TVP_FMT_JUMP:
		put(t, " L%u", imm);
		break;
	case MAIA_TVP_FMT_SHAPE:
		put(t, " %u, %u", imm >> 16, imm & 0xffff);
		break;
	case MAIA_TVP_FMT_S_AXIS:
		put(t, " s%u, %u", in->rd, imm);
		break;
	case MAIA_TVP_FMT_SEM:
		put(t, " s%u, %u", in->ra, imm);
		break;
	case MAIA_TVP_FMT_V_V_V_K:
		put(t, " v%u, v%u, v%u, %u", in->rd, in->ra, in->rb, imm);
		break;
	}
	put(t, "\n");
}

static int is_branch(unsigned int fmt)
{
	return fmt == MAIA_TVP_FMT_BR_S || fmt == MAIA_TVP_FMT_BR_S_S || fmt == MAIA_TVP_FMT_JUMP;
}

MAIA_EXPORT int maia_tvp_disassemble(const struct maia_tvp_insn *insns, uint32_t count,
				     char **text)
{
	struct text t = { 0 };
	uint8_t *target;
	char why[160];
	uint32_t i;

	maia_error_clear();
	if (!insns || !text || !count)
		return maia_error(-EINVAL, "maia_tvp_disassemble: NULL argument or no instructions");
	for (i = 0; i < count; i++)
		if (tvp_check(&insns[i], count, why, sizeof(why)))
			return maia_error(-EINVAL, "maia_tvp_disassemble: word %u: %s", i, why);
	target = calloc(count, 1);
	t.cap = 64 + (size_t)count * 40;
	t.buf = malloc(t.cap);
	if (!target || !t.buf) {
		free(target);
		free(t.buf);
		return maia_error(-ENOMEM, "maia_tvp_disassemble: out of memory");
	}
	for (i = 0; i < count; i++)
		if (is_branch(tvp_op_of(insns[i].op)->fmt))
			target[insns[i].imm] = 1;
	t.buf[0] = '\0';
	for (i = 0; i < count; i++) {
		if (target[i])
			put(&t, "L%u:\n", i);
		put_insn(&t, &insns[i]);
	}
	free(target);
	if (t.oom) {
		free(t.buf);
		return maia_error(-ENOMEM, "maia_tvp_disassemble: out of memory");
	}
	*text = t.buf;
	return 0;
}
