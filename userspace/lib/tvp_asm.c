// SPDX-License-Identifier: MIT
/*
 * The TVP assembler: source text (Documentation/tvp-asm.rst) to instruction
 * words (maia/hw/tvp.h). Two passes over the lines: the first finds the
 * labels' instruction indexes, the second encodes, so a branch may name a
 * label further down. Every word is checked as the device checks it
 * (tvp_check) before it is accepted.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "tvp_syntax.h"

#define MAX_OPERANDS 6

struct label {
	const char *name;		/* into the source, len bytes */
	size_t len;
	uint32_t index;			/* the instruction it precedes */
};

struct assembler {
	unsigned int line;		/* 1-based, of the line being read */
	struct label *labels;
	size_t nlabels, cap_labels;
	struct maia_tvp_insn *insns;
	uint32_t count, cap_insns;
	uint32_t final_count;		/* pass 1's count, for branch targets */
};

/* Record "line N: message" and return -EINVAL. */
static int asm_error(const struct assembler *as, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static int asm_error(const struct assembler *as, const char *fmt, ...)
{
	char msg[200];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return maia_error(-EINVAL, "line %u: %s", as->line, msg);
}

static int is_label_start(char c)
{
	return isalpha((unsigned char)c) || c == '_' || c == '.';
}

static int is_label_char(char c)
{
	return isalnum((unsigned char)c) || c == '_' || c == '.';
}

static const char *skip_space(const char *p, const char *end)
{
	while (p < end && isspace((unsigned char)*p))
		p++;
	return p;
}

/* The line [p, end) without its comment and trailing blanks: its new end. */
static const char *strip_comment(const char *p, const char *end)
{
	const char *c;

	for (c = p; c < end; c++)
		if (*c == '#' || *c == ';')
			break;
	while (c > p && isspace((unsigned char)c[-1]))
		c--;
	return c;
}

static struct label *find_label(struct assembler *as, const char *name, size_t len)
{
	for (size_t i = 0; i < as->nlabels; i++)
		if (as->labels[i].len == len && !memcmp(as->labels[i].name, name, len))
			return &as->labels[i];
	return NULL;
}

/*
 * Consume the labels at the start of [*pp, end): each "name:" (blanks
 * allowed before the colon). With define set (pass 1), record them at
 * instruction index. Returns 0 or -EINVAL.
 */
static int take_labels(struct assembler *as, const char **pp, const char *end, int define,
		       uint32_t index)
{
	const char *p = skip_space(*pp, end);

	for (;;) {
		const char *q = p, *colon;

		while (q < end && !isspace((unsigned char)*q) && *q != ':' && *q != ',')
			q++;
		colon = skip_space(q, end);
		if (q == p || colon >= end || *colon != ':')
			break;
		if (!is_label_start(*p))
			return asm_error(as, "bad label '%.*s' (a label is [A-Za-z_.][A-Za-z0-9_.]*)",
					 (int)(q - p), p);
		for (const char *c = p; c < q; c++)
			if (!is_label_char(*c))
				return asm_error(as, "bad label '%.*s' (a label is "
						 "[A-Za-z_.][A-Za-z0-9_.]*)", (int)(q - p), p);
		if (define) {
			struct label *l = find_label(as, p, q - p);

			if (l)
				return asm_error(as, "label '%.*s' is defined twice", (int)(q - p), p);
			if (as->nlabels == as->cap_labels) {
				size_t cap = as->cap_labels ? 2 * as->cap_labels : 16;
				struct label *n = realloc(as->labels, cap * sizeof(*n));

				if (!n)
					return maia_error(-ENOMEM, "maia_tvp_assemble: out of memory");
				as->labels = n;
				as->cap_labels = cap;
			}
			as->labels[as->nlabels++] = (struct label){ p, q - p, index };
		}
		p = skip_space(colon + 1, end);
	}
	*pp = p;
	return 0;
}

/* An operand: [p, p + len), blanks trimmed. */
struct operand {
	const char *p;
	int len;
};

/* Parse an integer (decimal or 0x hex, optional '-') in [lo, hi]. */
static int parse_int(struct assembler *as, const struct operand *o, const char *what,
		     int64_t lo, int64_t hi, int64_t *out)
{
	const char *p = o->p, *end = o->p + o->len;
	unsigned long long v = 0;
	int neg = 0, base = 10, digits = 0, big = 0;

	if (p < end && *p == '-') {
		neg = 1;
		p++;
	}
	if (end - p > 2 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
		base = 16;
		p += 2;
	}
	for (; p < end; p++, digits++) {
		int d;

		if (isdigit((unsigned char)*p))
			d = *p - '0';
		else if (base == 16 && isxdigit((unsigned char)*p))
			d = tolower((unsigned char)*p) - 'a' + 10;
		else
			break;
		big |= v > (1ull << 40);	/* out of any field's range; reported below */
		if (!big)
			v = v * base + d;
	}
	if (!digits || p != end)
		return asm_error(as, "%s: '%.*s' is not an integer", what, o->len, o->p);
	if (!big) {
		*out = neg ? -(int64_t)v : (int64_t)v;
		if (*out >= lo && *out <= hi)
			return 0;
	}
	return asm_error(as, "%s: %.*s is out of range %" PRId64 "..%" PRId64, what, o->len,
			 o->p, lo, hi);
}

/* A register of kind 's' or 'v': 0 .. 31. */
static int parse_reg(struct assembler *as, const struct operand *o, char kind, uint8_t *out)
{
	const char *what = kind == 's' ? "a scalar register s0..s31" : "a vector register v0..v31";
	unsigned int n = 0;
	int i;

	if (o->len < 2 || o->len > 3 || o->p[0] != kind)
		return asm_error(as, "expected %s, got '%.*s'", what, o->len, o->p);
	for (i = 1; i < o->len; i++) {
		if (!isdigit((unsigned char)o->p[i]))
			return asm_error(as, "expected %s, got '%.*s'", what, o->len, o->p);
		n = n * 10 + (o->p[i] - '0');
	}
	if (n >= MAIA_TVP_NUM_VREGS || (o->len == 3 && o->p[1] == '0'))
		return asm_error(as, "expected %s, got '%.*s'", what, o->len, o->p);
	*out = (uint8_t)n;
	return 0;
}

/* A name from names[0 .. n) (NULL entries skipped). */
static int parse_name(struct assembler *as, const struct operand *o, const char *what,
		      const char *const *names, unsigned int n, uint32_t *out)
{
	char list[160];
	size_t used = 0;

	for (unsigned int i = 0; i < n; i++)
		if (names[i] && strlen(names[i]) == (size_t)o->len &&
		    !memcmp(names[i], o->p, o->len)) {
			*out = i;
			return 0;
		}
	list[0] = '\0';
	for (unsigned int i = 0; i < n && used < sizeof(list); i++)
		if (names[i])
			used += snprintf(list + used, sizeof(list) - used, "%s%s",
					 used ? " " : "", names[i]);
	return asm_error(as, "unknown %s '%.*s' (one of: %s)", what, o->len, o->p, list);
}

static int parse_dtype(struct assembler *as, const struct operand *o, uint32_t *out)
{
	int d = tvp_dtype_by_name(o->p, o->len);

	if (d < 0)
		return asm_error(as, "unknown dtype '%.*s' (one of: f32 f16 bf16 fp8e4m3 fp8e5m2 "
				 "i32 i8)", o->len, o->p);
	*out = (uint32_t)d;
	return 0;
}

/* A branch target: a label or an instruction index. */
static int parse_target(struct assembler *as, const struct operand *o, uint32_t *out)
{
	struct label *l;
	int64_t v;
	int err;

	if (o->len && (isdigit((unsigned char)o->p[0]) || o->p[0] == '-')) {
		err = parse_int(as, o, "branch target", 0, UINT32_MAX, &v);
		if (err)
			return err;
		*out = (uint32_t)v;
		return 0;
	}
	l = find_label(as, o->p, o->len);
	if (!l)
		return asm_error(as, "undefined label '%.*s'", o->len, o->p);
	*out = l->index;
	return 0;
}

/* VSPLATI's 32-bit pattern: an integer, or a float literal as its binary32 bits. */
static int parse_pattern(struct assembler *as, const struct operand *o, int floats,
			 uint32_t *out)
{
	const char *p = o->p;
	int sign = o->len && p[0] == '-';
	int hex = o->len > sign + 1 && p[sign] == '0' && (p[sign + 1] == 'x' || p[sign + 1] == 'X');
	char buf[64], *end;
	int64_t v;
	float f;
	int err;

	if (floats && !hex && o->len < (int)sizeof(buf) &&
	    (memchr(p, '.', o->len) || memchr(p, 'e', o->len) || memchr(p, 'E', o->len) ||
	     (o->len == 3 && !memcmp(p, "inf", 3)) || (o->len == 4 && !memcmp(p, "-inf", 4)) ||
	     (o->len == 3 && !memcmp(p, "nan", 3)))) {
		memcpy(buf, p, o->len);
		buf[o->len] = '\0';
		if (!strcmp(buf, "nan")) {
			f = NAN;
		} else {
			errno = 0;
			f = strtof(buf, &end);
			/* strtof also takes "infinity", "nan(...)": the syntax does not. */
			if (*end || end == buf || isnan(f) ||
			    (isinf(f) && errno != ERANGE && strcmp(buf, "inf") && strcmp(buf, "-inf")))
				return asm_error(as, "'%s' is not a float literal", buf);
			if (isinf(f) && errno == ERANGE)
				return asm_error(as, "%s is out of the range of binary32", buf);
		}
		memcpy(out, &f, sizeof(*out));
		return 0;
	}
	err = parse_int(as, o, "imm", INT32_MIN, UINT32_MAX, &v);
	if (!err)
		*out = (uint32_t)v;
	return err;
}

/* The syntax of each format, for "expects" messages. */
static const char *const fmt_syntax[MAIA_TVP_FMT_COUNT] = {
	[MAIA_TVP_FMT_NONE] = "no operands",
	[MAIA_TVP_FMT_S_I] = "sd, imm",
	[MAIA_TVP_FMT_S_S_I] = "sd, sa, imm",
	[MAIA_TVP_FMT_S_S_S] = "sd, sa, sb",
	[MAIA_TVP_FMT_S_S_S_C] = "sd, sa, sb, cond",
	[MAIA_TVP_FMT_V_V_V] = "vd, va, vb",
	[MAIA_TVP_FMT_V_V] = "vd, va",
	[MAIA_TVP_FMT_V_V_V_V] = "vd, va, vb, vc",
	[MAIA_TVP_FMT_V_V_V_C] = "vd, va, vb, cond",
	[MAIA_TVP_FMT_V_V_I] = "vd, va, imm",
	[MAIA_TVP_FMT_V_S] = "vd, sa",
	[MAIA_TVP_FMT_V_I] = "vd, imm",
	[MAIA_TVP_FMT_S_V_I] = "sd, va, lane",
	[MAIA_TVP_FMT_MEM_V] = "vd, sa, vb|unit, dtype[, vmask]",
	[MAIA_TVP_FMT_MEM_S] = "sd, sa, dtype",
	[MAIA_TVP_FMT_BR_S] = "sa, target",
	[MAIA_TVP_FMT_BR_S_S] = "sa, sb, target",
	[MAIA_TVP_FMT_JUMP] = "target",
	[MAIA_TVP_FMT_SHAPE] = "rows, cols",
	[MAIA_TVP_FMT_S_AXIS] = "sd, axis",
	[MAIA_TVP_FMT_SEM] = "sa, index",
	[MAIA_TVP_FMT_V_V_V_K] = "vd, va, vb, K",
};

static const unsigned char fmt_operands[MAIA_TVP_FMT_COUNT] = {
	[MAIA_TVP_FMT_NONE] = 0, [MAIA_TVP_FMT_S_I] = 2, [MAIA_TVP_FMT_S_S_I] = 3,
	[MAIA_TVP_FMT_S_S_S] = 3, [MAIA_TVP_FMT_S_S_S_C] = 4, [MAIA_TVP_FMT_V_V_V] = 3,
	[MAIA_TVP_FMT_V_V] = 2, [MAIA_TVP_FMT_V_V_V_V] = 4, [MAIA_TVP_FMT_V_V_V_C] = 4,
	[MAIA_TVP_FMT_V_V_I] = 3, [MAIA_TVP_FMT_V_S] = 2, [MAIA_TVP_FMT_V_I] = 2,
	[MAIA_TVP_FMT_S_V_I] = 3, [MAIA_TVP_FMT_MEM_V] = 4, [MAIA_TVP_FMT_MEM_S] = 3,
	[MAIA_TVP_FMT_BR_S] = 2, [MAIA_TVP_FMT_BR_S_S] = 3, [MAIA_TVP_FMT_JUMP] = 1,
	[MAIA_TVP_FMT_SHAPE] = 2, [MAIA_TVP_FMT_S_AXIS] = 2, [MAIA_TVP_FMT_SEM] = 2,
	[MAIA_TVP_FMT_V_V_V_K] = 4,
};

/* Encode the operands o[0 .. n) of opcode code into in. */
static int encode(struct assembler *as, unsigned int code, const struct operand *o, int n,
		  struct maia_tvp_insn *in)
{
	const struct tvp_op *op = tvp_op_of(code);
	unsigned int fmt = op->fmt;
	int want = fmt_operands[fmt], err = 0;
	uint32_t u = 0;
	int64_t v = 0;

	if (n != want && !(fmt == MAIA_TVP_FMT_MEM_V && n == 5))
		return asm_error(as, "%s takes %d operand%s (%s), got %d", op->mnem, want,
				 want == 1 ? "" : "s", fmt_syntax[fmt], n);
	in->op = (uint8_t)code;
	switch (fmt) {
	case MAIA_TVP_FMT_NONE:
		break;
	case MAIA_TVP_FMT_S_I:
		err = parse_reg(as, &o[0], 's', &in->rd) ?:
		      parse_int(as, &o[1], "imm", INT32_MIN,
				code == MAIA_TVP_OP_LIH ? UINT32_MAX : INT32_MAX, &v);
		in->imm = (uint32_t)v;
		break;
	case MAIA_TVP_FMT_S_S_I:
		err = parse_reg(as, &o[0], 's', &in->rd) ?: parse_reg(as, &o[1], 's', &in->ra) ?:
		      parse_int(as, &o[2], "imm", INT32_MIN, INT32_MAX, &v);
		in->imm = (uint32_t)v;
		break;
	case MAIA_TVP_FMT_S_S_S:
	case MAIA_TVP_FMT_S_S_S_C:
		err = parse_reg(as, &o[0], 's', &in->rd) ?: parse_reg(as, &o[1], 's', &in->ra) ?:
		      parse_reg(as, &o[2], 's', &in->rb);
		if (!err && fmt == MAIA_TVP_FMT_S_S_S_C)
			err = parse_name(as, &o[3], "condition", tvp_cond_names,
					 MAIA_TVP_CMP_COUNT, &in->imm);
		break;
	case MAIA_TVP_FMT_V_V_V:
	case MAIA_TVP_FMT_V_V_V_V:
	case MAIA_TVP_FMT_V_V_V_C:
	case MAIA_TVP_FMT_V_V_V_K:
		err = parse_reg(as, &o[0], 'v', &in->rd) ?: parse_reg(as, &o[1], 'v', &in->ra) ?:
		      parse_reg(as, &o[2], 'v', &in->rb);
		if (err || fmt == MAIA_TVP_FMT_V_V_V)
			break;
		if (fmt == MAIA_TVP_FMT_V_V_V_V) {
			uint8_t c;

			err = parse_reg(as, &o[3], 'v', &c);
			in->imm = c;
		} else if (fmt == MAIA_TVP_FMT_V_V_V_C) {
			err = parse_name(as, &o[3], "condition", tvp_cond_names,
					 MAIA_TVP_CMP_COUNT, &in->imm);
		} else {
			err = parse_int(as, &o[3], "K", 0, UINT32_MAX, &v);
			in->imm = (uint32_t)v;
		}
		break;
	case MAIA_TVP_FMT_V_V:
		err = parse_reg(as, &o[0], 'v', &in->rd) ?: parse_reg(as, &o[1], 'v', &in->ra);
		break;
	case MAIA_TVP_FMT_V_V_I:
		err = parse_reg(as, &o[0], 'v', &in->rd) ?: parse_reg(as, &o[1], 'v', &in->ra);
		if (err)
			break;
		if (code == MAIA_TVP_OP_VCVT) {
			err = parse_name(as, &o[2], "conversion", tvp_cvt_names,
					 MAIA_TVP_CVT_COUNT, &in->imm);
		} else {
			err = parse_int(as, &o[2], "axis", 0, UINT32_MAX, &v);
			in->imm = (uint32_t)v;
		}
		break;
	case MAIA_TVP_FMT_V_S:
		err = parse_reg(as, &o[0], 'v', &in->rd) ?: parse_reg(as, &o[1], 's', &in->ra);
		break;
	case MAIA_TVP_FMT_V_I:
		err = parse_reg(as, &o[0], 'v', &in->rd) ?:
		      parse_pattern(as, &o[1], code == MAIA_TVP_OP_VSPLATI, &in->imm);
		break;
	case MAIA_TVP_FMT_S_V_I:
		err = parse_reg(as, &o[0], 's', &in->rd) ?: parse_reg(as, &o[1], 'v', &in->ra) ?:
		      parse_int(as, &o[2], "lane", 0, UINT32_MAX, &v);
		in->imm = (uint32_t)v;
		break;
	case MAIA_TVP_FMT_MEM_V:
		err = parse_reg(as, &o[0], 'v', &in->rd) ?: parse_reg(as, &o[1], 's', &in->ra);
		if (err)
			break;
		if (o[2].len == 4 && !memcmp(o[2].p, "unit", 4))
			in->imm = MAIA_TVP_MEM_UNIT;
		else
			err = parse_reg(as, &o[2], 'v', &in->rb);
		err = err ?: parse_dtype(as, &o[3], &u);
		if (err)
			break;
		in->imm |= u;
		if (n == 5) {
			uint8_t m;

			err = parse_reg(as, &o[4], 'v', &m);
			in->imm |= MAIA_TVP_MEM_MASKED | (uint32_t)m << 8;
		}
		break;
	case MAIA_TVP_FMT_MEM_S:
		err = parse_reg(as, &o[0], 's', &in->rd) ?: parse_reg(as, &o[1], 's', &in->ra) ?:
		      parse_dtype(as, &o[2], &in->imm);
		break;
	case MAIA_TVP_FMT_BR_S:
		err = parse_reg(as, &o[0], 's', &in->ra) ?: parse_target(as, &o[1], &in->imm);
		break;
	case MAIA_TVP_FMT_BR_S_S:
		err = parse_reg(as, &o[0], 's', &in->ra) ?: parse_reg(as, &o[1], 's', &in->rb) ?:
		      parse_target(as, &o[2], &in->imm);
		break;
	case MAIA_TVP_FMT_JUMP:
		err = parse_target(as, &o[0], &in->imm);
		break;
	case MAIA_TVP_FMT_SHAPE: {
		int64_t rows, cols;

		err = parse_int(as, &o[0], "rows", 1, MAIA_TVP_VLEN, &rows) ?:
		      parse_int(as, &o[1], "cols", 1, MAIA_TVP_VLEN, &cols);
		in->imm = (uint32_t)(rows << 16 | cols);
		break;
	}
	case MAIA_TVP_FMT_S_AXIS:
		err = parse_reg(as, &o[0], 's', &in->rd) ?:
		      parse_int(as, &o[1], "axis", 0, UINT32_MAX, &v);
		in->imm = (uint32_t)v;
		break;
	case MAIA_TVP_FMT_SEM:
		err = parse_reg(as, &o[0], 's', &in->ra) ?:
		      parse_int(as, &o[1], "semaphore", 0, UINT32_MAX, &v);
		in->imm = (uint32_t)v;
		break;
	}
	return err;
}

/* Pass 2 on one line [p, end) (labels already taken): encode its instruction. */
static int assemble_line(struct assembler *as, const char *p, const char *end)
{
	struct operand o[MAX_OPERANDS];
	struct maia_tvp_insn in = { 0 };
	const char *q = p;
	char why[160];
	int code, n = 0, err;

	while (q < end && !isspace((unsigned char)*q))
		q++;
	code = tvp_op_by_name(p, q - p);
	if (code < 0)
		return asm_error(as, "unknown mnemonic '%.*s'", (int)(q - p), p);
	q = skip_space(q, end);
	while (q < end) {
		const char *c = memchr(q, ',', end - q), *e = c ? c : end;

		if (n == MAX_OPERANDS)
			return asm_error(as, "too many operands");
		while (e > q && isspace((unsigned char)e[-1]))
			e--;
		if (e == q)
			return asm_error(as, "missing operand %d", n + 1);
		o[n++] = (struct operand){ q, (int)(e - q) };
		if (!c)
			break;
		q = skip_space(c + 1, end);
		if (q == end)
			return asm_error(as, "missing operand %d", n + 1);
	}
	err = encode(as, (unsigned int)code, o, n, &in);
	if (err)
		return err;
	if (tvp_check(&in, as->final_count, why, sizeof(why)))
		return asm_error(as, "%s", why);
	as->insns[as->count++] = in;
	return 0;
}

/* One pass over the source; pass 1 counts and defines labels, pass 2 encodes. */
static int run_pass(struct assembler *as, const char *source, int pass)
{
	const char *p = source;
	int err;

	as->line = 0;
	as->count = 0;
	while (*p) {
		const char *nl = strchr(p, '\n'), *end = nl ? nl : p + strlen(p);
		const char *lend = strip_comment(p, end), *q = p;

		as->line++;
		err = take_labels(as, &q, lend, pass == 1, as->count);
		if (err)
			return err;
		if (q < lend) {
			if (pass == 1) {
				if (as->count == MAIA_TVP_MAX_INSNS)
					return asm_error(as, "more than %u instructions",
							 MAIA_TVP_MAX_INSNS);
				as->count++;
			} else {
				err = assemble_line(as, q, lend);
				if (err)
					return err;
			}
		}
		p = nl ? nl + 1 : end;
	}
	return 0;
}

MAIA_EXPORT int maia_tvp_assemble(const char *source, struct maia_tvp_insn **insns,
				  uint32_t *count)
{
	struct assembler as = { 0 };
	int err;

	maia_error_clear();
	if (!source || !insns || !count)
		return maia_error(-EINVAL, "maia_tvp_assemble: NULL argument");
	err = run_pass(&as, source, 1);
	if (!err && !as.count)
		err = asm_error(&as, "the program has no instructions");
	if (!err) {
		as.final_count = as.count;
		as.insns = calloc(as.count, sizeof(*as.insns));
		err = as.insns ? run_pass(&as, source, 2) :
				 maia_error(-ENOMEM, "maia_tvp_assemble: out of memory");
	}
	free(as.labels);
	if (err) {
		free(as.insns);
		return err;
	}
	*insns = as.insns;
	*count = as.count;
	return 0;
}
