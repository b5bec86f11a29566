// SPDX-License-Identifier: MIT
/*
 * libmaia's TVP assembler and disassembler, on the host. Words are built
 * here from the field layout maia/hw/tvp.h documents, not by libmaia's
 * encoder: every opcode of MAIA_TVP_OPS with every operand kind of its
 * format round-trips (disassemble, assemble back, same words); hand-written
 * lines assemble to hand-written words (so a field swapped the same way in
 * both directions is caught); every error the assembler reports names its
 * line; every word the device refuses is refused by the disassembler with
 * its index; and libmaia refuses, with a message of its own for each fault,
 * exactly the words the device's rule (maia/hw/tvp_rules.h) refuses.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "libmaia.h"
#include "maia/hw/cmd.h"
#include "maia/hw/dtype.h"
#include "maia/hw/tvp_rules.h"
#include "tap.h"
#include "../../../firmware-sim/src/tvp/tvp.h"
#include "../../../userspace/lib/tvp_syntax.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

static const struct {
	const char *mnem;
	unsigned int op, fmt;
} table[] = {
#define ENTRY(name, code, mn, format, cls) { mn, code, format },
	MAIA_TVP_OPS(ENTRY)
#undef ENTRY
};

static uint32_t f32_bits(float f)
{
	uint32_t u;

	memcpy(&u, &f, sizeof(u));
	return u;
}

/* ---- round trip of generated words ----------------------------------- */

#define MAX_WORDS 8192
static struct maia_tvp_insn words[MAX_WORDS];
static unsigned int nwords;
static unsigned int first_of[256], count_of[256];

static void add(unsigned int op, unsigned int rd, unsigned int ra, unsigned int rb, uint32_t imm)
{
	words[nwords++] = (struct maia_tvp_insn){ (uint8_t)op, (uint8_t)rd, (uint8_t)ra,
						  (uint8_t)rb, imm };
}

/* Register triples tried with every format: both ends of the file and distinct values. */
static const uint8_t regs[][3] = { { 0, 0, 0 }, { 31, 31, 31 }, { 1, 2, 3 }, { 31, 0, 17 } };

static const uint32_t ints[] = { 0, 1, (uint32_t)-1, 0x7fffffff, 0x80000000, 65536,
				 (uint32_t)-65536, 65537, (uint32_t)-65537, 123456 };

static const unsigned int dtypes[] = { MAIA_DTYPE_FP32, MAIA_DTYPE_FP16, MAIA_DTYPE_BF16,
				       MAIA_DTYPE_FP8_E4M3, MAIA_DTYPE_FP8_E5M2,
				       MAIA_DTYPE_INT32, MAIA_DTYPE_INT8 };

/* Every operand kind of op's format, with each register triple. */
static void gen(unsigned int op, unsigned int fmt)
{
	for (size_t r = 0; r < N(regs); r++) {
		unsigned int d = regs[r][0], a = regs[r][1], b = regs[r][2];

		switch (fmt) {
		case MAIA_TVP_FMT_NONE:
			if (!r)
				add(op, 0, 0, 0, 0);
			break;
		case MAIA_TVP_FMT_S_I:
		case MAIA_TVP_FMT_S_S_I:
			for (size_t i = 0; i < N(ints); i++)
				add(op, d, fmt == MAIA_TVP_FMT_S_I ? 0 : a, 0, ints[i]);
			if (op == MAIA_TVP_OP_LIH)
				add(op, d, 0, 0, 0xdeadbeef);
			break;
		case MAIA_TVP_FMT_S_S_S:
		case MAIA_TVP_FMT_V_V_V:
			add(op, d, a, b, 0);
			break;
		case MAIA_TVP_FMT_S_S_S_C:
		case MAIA_TVP_FMT_V_V_V_C:
			for (uint32_t c = 0; c < MAIA_TVP_CMP_COUNT; c++)
				if (op != MAIA_TVP_OP_VFCMP || c <= MAIA_TVP_CMP_GE)
					add(op, d, a, b, c);
			break;
		case MAIA_TVP_FMT_V_V:
		case MAIA_TVP_FMT_V_S:
			add(op, d, a, 0, 0);
			break;
		case MAIA_TVP_FMT_V_V_V_V:
			add(op, d, a, b, 0);
			add(op, d, a, b, 31);
			add(op, d, a, b, 9);
			break;
		case MAIA_TVP_FMT_V_V_I:
			if (op == MAIA_TVP_OP_VCVT) {
				for (uint32_t c = 0; c < MAIA_TVP_CVT_COUNT; c++)
					add(op, d, a, 0, c);
			} else {
				add(op, d, a, 0, 0);
				add(op, d, a, 0, 1);
			}
			break;
		case MAIA_TVP_FMT_V_I:
			for (size_t i = 0; i < N(ints); i++)
				add(op, d, 0, 0, ints[i]);
			add(op, d, 0, 0, f32_bits(1.0f));
			add(op, d, 0, 0, f32_bits(-INFINITY));
			add(op, d, 0, 0, 0x7fc00000);
			add(op, d, 0, 0, 0xffc00001);	/* a NaN with a payload */
			break;
		case MAIA_TVP_FMT_S_V_I:
			add(op, d, a, 0, 0);
			add(op, d, a, 0, MAIA_TVP_VLEN - 1);
			break;
		case MAIA_TVP_FMT_MEM_V:
			for (size_t t = 0; t < N(dtypes); t++) {
				if (op == MAIA_TVP_OP_VAMOADD && dtypes[t] != MAIA_DTYPE_FP32 &&
				    dtypes[t] != MAIA_DTYPE_INT32)
					continue;	/* atomics add f32 and i32 only */
				add(op, d, a, b, dtypes[t]);
				add(op, d, a, 0, dtypes[t] | MAIA_TVP_MEM_UNIT);
				add(op, d, a, b, dtypes[t] | MAIA_TVP_MEM_MASKED | b << 8);
				add(op, d, a, 0, dtypes[t] | MAIA_TVP_MEM_MASKED |
				    MAIA_TVP_MEM_UNIT | 31u << 8);
			}
			break;
		case MAIA_TVP_FMT_MEM_S:
			for (size_t t = 0; t < N(dtypes); t++)
				add(op, d, a, 0, dtypes[t]);
			break;
		case MAIA_TVP_FMT_BR_S:
		case MAIA_TVP_FMT_BR_S_S:
		case MAIA_TVP_FMT_JUMP: {
			/* Targets fixed up once the program's length is known. */
			unsigned int ra = fmt == MAIA_TVP_FMT_JUMP ? 0 : a;
			unsigned int rb = fmt == MAIA_TVP_FMT_BR_S_S ? b : 0;

			add(op, 0, ra, rb, 0);
			add(op, 0, ra, rb, 1);	/* -> the last word */
			add(op, 0, ra, rb, 2);	/* -> this word */
			break;
		}
		case MAIA_TVP_FMT_SHAPE:
			if (!r) {
				add(op, 0, 0, 0, 1u << 16 | 1);
				add(op, 0, 0, 0, 1u << 16 | 1024);
				add(op, 0, 0, 0, 1024u << 16 | 1);
				add(op, 0, 0, 0, 32u << 16 | 32);
				add(op, 0, 0, 0, 3u << 16 | 341);
			}
			break;
		case MAIA_TVP_FMT_S_AXIS:
			for (uint32_t x = 0; x <= 2; x++)
				add(op, d, 0, 0, x);
			break;
		case MAIA_TVP_FMT_SEM:
			add(op, 0, a, 0, 0);
			add(op, 0, a, 0, MAIA_NUM_SEMAPHORES - 1);
			break;
		case MAIA_TVP_FMT_V_V_V_K:
			add(op, d, a, b, 1);
			add(op, d, a, b, MAIA_TVP_VLEN);
			add(op, d, a, b, 16);
			break;
		}
	}
}

static void fix_targets(void)
{
	for (unsigned int i = 0; i < nwords; i++) {
		unsigned int op = words[i].op;

		if (op != MAIA_TVP_OP_JMP && op != MAIA_TVP_OP_BEQZ && op != MAIA_TVP_OP_BNEZ &&
		    op != MAIA_TVP_OP_BLT && op != MAIA_TVP_OP_BGE)
			continue;
		words[i].imm = words[i].imm == 0 ? 0 : words[i].imm == 1 ? nwords - 1 : i;
	}
}

static void test_round_trip(void)
{
	struct maia_tvp_insn *back = NULL;
	uint32_t count = 0;
	char *text = NULL;
	int err = 0;

	for (size_t i = 0; i < N(table); i++) {
		first_of[table[i].op] = nwords;
		gen(table[i].op, table[i].fmt);
		count_of[table[i].op] = nwords - first_of[table[i].op];
	}
	fix_targets();
	for (unsigned int i = 0; i < nwords; i++)
		if (!fw_tvp_insn_valid(&words[i], nwords)) {
			err = (int)i + 1;
			break;
		}
	if (!tap_ok(!err, "the device's validator accepts all %u generated words", nwords))
		printf("# word %d: %02x %u %u %u %08x\n", err - 1, words[err - 1].op,
		       words[err - 1].rd, words[err - 1].ra, words[err - 1].rb, words[err - 1].imm);
	err = maia_tvp_disassemble(words, nwords, &text);
	tap_ok(!err, "disassemble %u words of all %zu opcodes (%s)", nwords, N(table),
	       err ? maia_last_error() : "ok");
	if (err)
		return;
	err = maia_tvp_assemble(text, &back, &count);
	tap_ok(!err && count == nwords, "assemble the disassembly back: %u words (%s)", count,
	       err ? maia_last_error() : "ok");
	if (err || count != nwords) {
		free(text);
		free(back);
		return;
	}
	for (size_t i = 0; i < N(table); i++) {
		unsigned int op = table[i].op, first = first_of[op], n = count_of[op], bad = n;

		for (unsigned int k = 0; k < n; k++)
			if (memcmp(&words[first + k], &back[first + k], sizeof(*words))) {
				bad = k;
				break;
			}
		if (!tap_ok(n && bad == n, "%s: %u words round-trip", table[i].mnem, n) && n)
			printf("# word %u: %02x %u %u %u %08x came back as %02x %u %u %u %08x\n",
			       first + bad, words[first + bad].op, words[first + bad].rd,
			       words[first + bad].ra, words[first + bad].rb,
			       words[first + bad].imm, back[first + bad].op,
			       back[first + bad].rd, back[first + bad].ra, back[first + bad].rb,
			       back[first + bad].imm);
	}
	free(text);
	free(back);
}

/* ---- hand-written lines and their words ------------------------------ */

struct line_case {
	const char *src;
	struct maia_tvp_insn want;
};

#define W(o, d, a, b, i) { MAIA_TVP_OP_##o, d, a, b, (uint32_t)(i) }
static const struct line_case lines[] = {
	{ "nop", W(NOP, 0, 0, 0, 0) },
	{ "halt", W(HALT, 0, 0, 0, 0) },
	{ "li s5, -7", W(LI, 5, 0, 0, -7) },
	{ "lih s5, 0xdeadbeef", W(LIH, 5, 0, 0, 0xdeadbeef) },
	{ "addi s1, s2, 0x10", W(ADDI, 1, 2, 0, 16) },
	{ "muli s1, s2, -0x10", W(MULI, 1, 2, 0, -16) },
	{ "sub s3, s4, s5", W(SUB, 3, 4, 5, 0) },
	{ "scmp s1, s2, s3, uge", W(SCMP, 1, 2, 3, MAIA_TVP_CMP_UGE) },
	{ "pid s1, 2", W(PID, 1, 0, 0, 2) },
	{ "nprog s31, 0", W(NPROG, 31, 0, 0, 0) },
	{ "shape 4, 8", W(SHAPE, 0, 0, 0, 4u << 16 | 8) },
	{ "semsig s3, 5", W(SEMSIG, 0, 3, 0, 5) },
	{ "semwait s4, 63", W(SEMWAIT, 0, 4, 0, 63) },
	{ "vld v1, s2, v3, f32", W(VLD, 1, 2, 3, MAIA_DTYPE_FP32) },
	{ "vld v1, s2, unit, bf16", W(VLD, 1, 2, 0, MAIA_DTYPE_BF16 | MAIA_TVP_MEM_UNIT) },
	{ "vst v5, s2, v3, f32, v7",
	  W(VST, 5, 2, 3, MAIA_DTYPE_FP32 | MAIA_TVP_MEM_MASKED | 7u << 8) },
	{ "vst v5, s2, unit, i8, v31",
	  W(VST, 5, 2, 0, MAIA_DTYPE_INT8 | MAIA_TVP_MEM_MASKED | MAIA_TVP_MEM_UNIT | 31u << 8) },
	{ "vld v0, s0, unit, fp8e5m2", W(VLD, 0, 0, 0, MAIA_DTYPE_FP8_E5M2 | MAIA_TVP_MEM_UNIT) },
	{ "sld s1, s2, i32", W(SLD, 1, 2, 0, MAIA_DTYPE_INT32) },
	{ "sst s9, s2, f16", W(SST, 9, 2, 0, MAIA_DTYPE_FP16) },
	{ "amoadd s4, s1, s3", W(AMOADD, 4, 1, 3, 0) },
	{ "amoxchg s0, s1, s0", W(AMOXCHG, 0, 1, 0, 0) },
	{ "amocas s2, s31, s3", W(AMOCAS, 2, 31, 3, 0) },
	{ "vamoadd v1, s2, v3, i32, v4",
	  W(VAMOADD, 1, 2, 3, MAIA_DTYPE_INT32 | MAIA_TVP_MEM_MASKED | 4u << 8) },
	{ "vamoadd v1, s2, unit, f32", W(VAMOADD, 1, 2, 0, MAIA_DTYPE_FP32 | MAIA_TVP_MEM_UNIT) },
	{ "vmov v1, v2", W(VMOV, 1, 2, 0, 0) },
	{ "vsplat v1, s2", W(VSPLAT, 1, 2, 0, 0) },
	{ "vsplati v1, 1.0", W(VSPLATI, 1, 0, 0, 0x3f800000) },
	{ "vsplati v1, -2.5e-3", W(VSPLATI, 1, 0, 0, 0xbb23d70a) },
	{ "vsplati v1, 1e-45", W(VSPLATI, 1, 0, 0, 1) },
	{ "vsplati v1, 3.4028235e38", W(VSPLATI, 1, 0, 0, 0x7f7fffff) },
	{ "vsplati v1, inf", W(VSPLATI, 1, 0, 0, 0x7f800000) },
	{ "vsplati v1, -inf", W(VSPLATI, 1, 0, 0, 0xff800000) },
	{ "vsplati v1, nan", W(VSPLATI, 1, 0, 0, 0x7fc00000) },
	{ "vsplati v1, -1", W(VSPLATI, 1, 0, 0, 0xffffffff) },
	{ "vsplati v1, 0xffffffff", W(VSPLATI, 1, 0, 0, 0xffffffff) },
	{ "viota v2, -3", W(VIOTA, 2, 0, 0, -3) },
	{ "vext s1, v2, 1023", W(VEXT, 1, 2, 0, 1023) },
	{ "vsel v1, v2, v3, v4", W(VSEL, 1, 2, 3, 4) },
	{ "vfma v1, v2, v3, v4", W(VFMA, 1, 2, 3, 4) },
	{ "vcvt v1, v2, u2f", W(VCVT, 1, 2, 0, MAIA_TVP_CVT_U2F) },
	{ "vcvt v1, v2, fp8e4m3", W(VCVT, 1, 2, 0, MAIA_TVP_CVT_FP8_E4M3) },
	{ "vfcmp v1, v2, v3, ge", W(VFCMP, 1, 2, 3, MAIA_TVP_CMP_GE) },
	{ "vicmp v1, v2, v3, ult", W(VICMP, 1, 2, 3, MAIA_TVP_CMP_ULT) },
	{ "vredsum v1, v2, 1", W(VREDSUM, 1, 2, 0, 1) },
	{ "vredmax v1, v2, 0", W(VREDMAX, 1, 2, 0, 0) },
	{ "vdot v1, v2, v3, 1024", W(VDOT, 1, 2, 3, 1024) },
	{ "vexp v30, v31", W(VEXP, 30, 31, 0, 0) },
	{ "  vfadd   v1 ,v2,   v3   # spaces", W(VFADD, 1, 2, 3, 0) },
};

static void test_lines(void)
{
	for (size_t i = 0; i < N(lines); i++) {
		struct maia_tvp_insn *in = NULL;
		uint32_t count = 0;
		int err = maia_tvp_assemble(lines[i].src, &in, &count);
		int same = !err && count == 1 && !memcmp(in, &lines[i].want, sizeof(*in));

		if (!tap_ok(same, "'%s' assembles to the word the header describes",
			    lines[i].src)) {
			if (err)
				printf("# %s\n", maia_last_error());
			else
				printf("# got %02x %u %u %u %08x\n", in[0].op, in[0].rd, in[0].ra,
				       in[0].rb, in[0].imm);
		}
		free(in);
	}
}

/* Labels, comments, numeric targets: a whole program. */
static void test_program(void)
{
	static const char src[] =
		"# a comment line\n"
		"\n"
		"; another\n"
		"start:\tpid s1, 0   ; trailing comment\n"
		"loop:\n"
		"two: more:  addi s1, s1, -1\n"
		"\tbnez s1, loop\n"
		"\tbeqz s1, end\n"
		"\tblt s1, s2, 0\n"
		"\tjmp two\n"
		"end: halt";
	static const struct maia_tvp_insn want[] = {
		W(PID, 1, 0, 0, 0), W(ADDI, 1, 1, 0, -1), W(BNEZ, 0, 1, 0, 1),
		W(BEQZ, 0, 1, 0, 6), W(BLT, 0, 1, 2, 0), W(JMP, 0, 0, 0, 1),
		W(HALT, 0, 0, 0, 0),
	};
	static const char want_text[] =
		"L0:\n\tpid s1, 0\nL1:\n\taddi s1, s1, -1\n\tbnez s1, L1\n\tbeqz s1, L6\n"
		"\tblt s1, s2, L0\n\tjmp L1\nL6:\n\thalt\n";
	struct maia_tvp_insn *in = NULL;
	uint32_t count = 0;
	char *text = NULL;
	int err;

	err = maia_tvp_assemble(src, &in, &count);
	tap_ok(!err && count == N(want) && !memcmp(in, want, sizeof(want)),
	       "labels (alone, before an instruction, several, forward), comments, blank "
	       "lines, a numeric target (%s)", err ? maia_last_error() : "ok");
	err = err ?: maia_tvp_disassemble(in, count, &text);
	tap_ok(!err && !strcmp(text, want_text), "its disassembly labels the targets L<index>");
	if (text && strcmp(text, want_text))
		printf("# got:\n%s", text);
	free(text);
	free(in);
}

/* The disassembler's VSPLATI: decimal in [-65536, 65536], else hex; the float after. */
static void test_vsplati_text(void)
{
	static const struct {
		uint32_t imm;
		const char *text;
	} cases[] = {
		{ 65536, "\tvsplati v1, 65536  # = 9.18354962e-41\n" },
		{ (uint32_t)-65536, "\tvsplati v1, -65536  # = -nan\n" },
		{ 65537, "\tvsplati v1, 0x00010001  # = 9.18368975e-41\n" },
		{ 0x3f800000, "\tvsplati v1, 0x3f800000  # = 1\n" },
		{ 0xc0200000, "\tvsplati v1, 0xc0200000  # = -2.5\n" },
		{ 0, "\tvsplati v1, 0  # = 0\n" },
	};

	for (size_t i = 0; i < N(cases); i++) {
		struct maia_tvp_insn in = W(VSPLATI, 1, 0, 0, cases[i].imm);
		char *text = NULL;
		int err = maia_tvp_disassemble(&in, 1, &text);

		if (!tap_ok(!err && !strcmp(text, cases[i].text), "vsplati 0x%08x prints as %.*s",
			    cases[i].imm, (int)strlen(cases[i].text) - 2, cases[i].text + 1))
			printf("# got %s", err ? maia_last_error() : text);
		free(text);
	}
}

/* ---- assembler errors ------------------------------------------------ */

struct err_case {
	const char *line;	/* placed on line 3 */
	const char *msg;	/* expected in the message */
};

static const struct err_case errors[] = {
	{ "vfoo v1, v2", "unknown mnemonic 'vfoo'" },
	{ "VFADD v1, v2, v3", "unknown mnemonic 'VFADD'" },
	{ "vfadd v1, v2", "vfadd takes 3 operands (vd, va, vb), got 2" },
	{ "halt s1", "halt takes 0 operands" },
	{ "vld v1, s2, v3", "vld takes 4 operands" },
	{ "vld v1, s2, v3, f32, v4, v5", "vld takes 4 operands" },
	{ "vfadd v1, , v3", "missing operand 2" },
	{ "vfadd v1, v2,", "missing operand 3" },
	{ "vfadd v1, v2, v32", "expected a vector register v0..v31, got 'v32'" },
	{ "vfadd v1, v2, s3", "expected a vector register v0..v31, got 's3'" },
	{ "add s1, s2, v3", "expected a scalar register s0..s31, got 'v3'" },
	{ "amocas s1, v2, s3", "expected a scalar register s0..s31, got 'v2'" },
	{ "amoadd s1, s2", "amoadd takes 3 operands" },
	{ "vamoadd v1, s2, v3, bf16", "vamoadd: dtype bf16 (atomics add f32 or i32 words only)" },
	{ "add s1, s2, s01", "got 's01'" },
	{ "add s1, s2, x", "got 'x'" },
	{ "li s1, 0x80000000", "imm: 0x80000000 is out of range -2147483648..2147483647" },
	{ "li s1, -2147483649", "out of range" },
	{ "li s1, 99999999999999999999999", "imm: 99999999999999999999999 is out of range" },
	{ "lih s1, 0x100000000", "out of range" },
	{ "addi s1, s2, 12z", "imm: '12z' is not an integer" },
	{ "addi s1, s2, 1.5", "imm: '1.5' is not an integer" },
	{ "scmp s1, s2, s3, lq", "unknown condition 'lq' (one of: eq ne lt le gt ge ult ule ugt uge)" },
	{ "vfcmp v1, v2, v3, ult", "vfcmp: condition ult is for integer compares only" },
	{ "vcvt v1, v2, f2x", "unknown conversion 'f2x' (one of: f2i i2f bf16 fp16 fp8e4m3 fp8e5m2 u2f)" },
	{ "vld v1, s2, unit, f64", "unknown dtype 'f64'" },
	{ "sld s1, s2, mxfp4", "unknown dtype 'mxfp4'" },
	{ "vld v1, s2, unit, f32, s7", "expected a vector register" },
	{ "shape 0, 4", "rows: 0 is out of range 1..1024" },
	{ "shape 4, 1025", "cols: 1025 is out of range 1..1024" },
	{ "shape 33, 32", "shape 33 x 32: rows and cols must be at least 1 and rows * cols at most 1024" },
	{ "pid s1, 3", "pid: axis 3 is not 0, 1 or 2" },
	{ "nprog s1, -1", "out of range" },
	{ "vredsum v1, v2, 2", "vredsum: axis 2 is not 0 or 1" },
	{ "vredmin v1, v2, 0x100000000", "out of range" },
	{ "vdot v1, v2, v3, 0", "vdot: K 0 is not in 1..1024" },
	{ "vdot v1, v2, v3, 1025", "vdot: K 1025 is not in 1..1024" },
	{ "semsig s1, 64", "semsig: semaphore 64 (there are 64)" },
	{ "semwait s1, 99", "semwait: semaphore 99" },
	{ "vext s1, v2, 1024", "vext: lane 1024 (a register has 1024)" },
	{ "vsplati v1, 1.0.0", "'1.0.0' is not a float literal" },
	{ "vsplati v1, 1e99", "1e99 is out of the range of binary32" },
	{ "vsplati v1, infinity", "is not an integer" },
	{ "vsplati v1, 0x100000000", "out of range" },
	{ "viota v1, 1.0", "imm: '1.0' is not an integer" },
	{ "jmp nowhere", "undefined label 'nowhere'" },
	{ "jmp 4", "branch target 4 is not an instruction (the program has 4)" },
	{ "bnez s1, -1", "out of range" },
	{ "blt s1, s2, past", "branch target 4 is not an instruction (the program has 4)" },
	{ "one: halt", "label 'one' is defined twice" },
	{ "1abc: halt", "bad label '1abc'" },
	{ "a-b: halt", "bad label 'a-b'" },
};

static void test_errors(void)
{
	for (size_t i = 0; i < N(errors); i++) {
		char src[256];
		struct maia_tvp_insn *in = (void *)1;
		uint32_t count = 7;
		char want[200];
		int err;

		/* Four instructions; "past" labels the end of the program. */
		snprintf(src, sizeof(src), "one: nop\n# two\n%s\nnop\nnop\npast:\n",
			 errors[i].line);
		if (!strncmp(errors[i].line, "halt s1", 7) || strchr(errors[i].line, ':'))
			snprintf(src, sizeof(src), "one: nop\n# two\n%s\nnop\nnop\n", errors[i].line);
		snprintf(want, sizeof(want), "line 3: ");
		err = maia_tvp_assemble(src, &in, &count);
		if (!tap_ok(err == -EINVAL && !strncmp(maia_last_error(), want, strlen(want)) &&
			    strstr(maia_last_error(), errors[i].msg) && in == (void *)1 &&
			    count == 7, "'%s': line 3: ...%s", errors[i].line, errors[i].msg))
			printf("# got %d: %s\n", err, maia_last_error());
	}
}

/* Errors that are not about one line's operands. */
static void test_program_errors(void)
{
	struct maia_tvp_insn *in = NULL;
	uint32_t count = 0;
	size_t n = (MAIA_TVP_MAX_INSNS + 1) * 4;
	char *big = malloc(n + 1);
	int err;

	err = maia_tvp_assemble("# nothing\n\n", &in, &count);
	tap_ok(err == -EINVAL && !strcmp(maia_last_error(), "line 2: the program has no instructions"),
	       "an empty program: %s", maia_last_error());
	err = maia_tvp_assemble("only: # a label\n", &in, &count);
	tap_ok(err == -EINVAL && strstr(maia_last_error(), "no instructions"),
	       "a label alone is no program: %s", maia_last_error());
	err = maia_tvp_assemble("halt\njmp end\nend:\n", &in, &count);
	tap_ok(err == -EINVAL && strstr(maia_last_error(), "line 2: branch target 2 is not an "
					"instruction (the program has 2)"),
	       "a branch to a label after the last instruction: %s", maia_last_error());
	for (size_t i = 0; i < MAIA_TVP_MAX_INSNS + 1; i++)
		memcpy(big + 4 * i, "nop\n", 4);
	big[n] = '\0';
	err = maia_tvp_assemble(big, &in, &count);
	tap_ok(err == -EINVAL && !strcmp(maia_last_error(), "line 65537: more than 65536 instructions"),
	       "65537 instructions: %s", maia_last_error());
	big[n - 4] = '\0';
	err = maia_tvp_assemble(big, &in, &count);
	tap_ok(!err && count == MAIA_TVP_MAX_INSNS, "65536 instructions assemble");
	if (!err)
		free(in);
	free(big);
	err = maia_tvp_assemble(NULL, &in, &count);
	tap_ok(err == -EINVAL, "NULL source: %s", maia_last_error());
}

/* ---- disassembler refusals ------------------------------------------- */

static const struct {
	struct maia_tvp_insn w;
	const char *msg;
} bad_words[] = {
	{ { 0x0c, 0, 0, 0, 0 }, "unknown opcode 0x0c" },
	{ { 0xff, 0, 0, 0, 0 }, "unknown opcode 0xff" },
	{ W(VAMOADD, 1, 2, 3, MAIA_DTYPE_FP16), "vamoadd: dtype f16 (atomics add f32 or i32" },
	{ W(VFADD, 32, 0, 0, 0), "register 32 in field rd" },
	{ W(ADD, 1, 2, 40, 0), "register 40 in field rb" },
	{ W(HALT, 1, 0, 0, 0), "field rd is 1 but halt does not use it" },
	{ W(VMOV, 1, 2, 3, 0), "field rb is 3 but vmov does not use it" },
	{ W(JMP, 0, 1, 0, 0), "field ra is 1 but jmp does not use it" },
	{ W(BEQZ, 1, 1, 0, 0), "field rd is 1 but beqz does not use it" },
	{ W(VFADD, 1, 2, 3, 1), "imm is 0x1 but vfadd does not use it" },
	{ W(SCMP, 1, 2, 3, MAIA_TVP_CMP_COUNT), "scmp: condition 10" },
	{ W(VFCMP, 1, 2, 3, MAIA_TVP_CMP_UGT), "vfcmp: condition ugt is for integer compares only" },
	{ W(VCVT, 1, 2, 0, MAIA_TVP_CVT_COUNT), "vcvt: conversion 7" },
	{ W(VREDSUM, 1, 2, 0, 2), "vredsum: axis 2 is not 0 or 1" },
	{ W(VSEL, 1, 2, 3, 32), "vsel: register 32 in imm" },
	{ W(VLD, 1, 2, 3, MAIA_DTYPE_MXFP8_E4M3), "vld: dtype 7 cannot be loaded or stored" },
	{ W(VLD, 1, 2, 3, 1u << 18), "vld: imm 0x40000 has flags outside MAIA_TVP_MEM_ALL" },
	{ W(VST, 1, 2, 3, MAIA_TVP_MEM_UNIT), "vst: unit stride with offset register v3" },
	{ W(VST, 1, 2, 3, MAIA_TVP_MEM_MASKED | 32u << 8), "vst: mask register 32" },
	{ W(VST, 1, 2, 3, 5u << 8), "vst: mask register v5 without MAIA_TVP_MEM_MASKED" },
	{ W(SST, 1, 2, 0, 16), "sst: dtype 16 cannot be loaded or stored" },
	{ W(SHAPE, 0, 0, 0, 0), "shape 0 x 0" },
	{ W(SHAPE, 0, 0, 0, 2u << 16 | 513), "shape 2 x 513" },
	{ W(PID, 1, 0, 0, 3), "pid: axis 3 is not 0, 1 or 2" },
	{ W(SEMSIG, 0, 1, 0, 64), "semsig: semaphore 64" },
	{ W(VEXT, 1, 2, 0, 1024), "vext: lane 1024" },
	{ W(VDOT, 1, 2, 3, 0), "vdot: K 0 is not in 1..1024" },
	{ W(VDOT, 1, 2, 3, 1025), "vdot: K 1025" },
	{ W(JMP, 0, 0, 0, 3), "branch target 3 is not an instruction (the program has 3)" },
	{ W(BGE, 0, 1, 2, 0xffffffff), "branch target 4294967295" },
};

static void test_bad_words(void)
{
	for (size_t i = 0; i < N(bad_words); i++) {
		struct maia_tvp_insn prog[3] = { W(NOP, 0, 0, 0, 0), bad_words[i].w,
						 W(HALT, 0, 0, 0, 0) };
		char *text = (void *)1;
		int err = maia_tvp_disassemble(prog, 3, &text);

		tap_ok(!fw_tvp_insn_valid(&prog[1], 3), "the device refuses it too");
		if (!tap_ok(err == -EINVAL && strstr(maia_last_error(), "word 1: ") &&
			    strstr(maia_last_error(), bad_words[i].msg) && text == (void *)1,
			    "disassembler refuses %02x %u %u %u %08x: word 1: ...%s",
			    bad_words[i].w.op, bad_words[i].w.rd, bad_words[i].w.ra,
			    bad_words[i].w.rb, bad_words[i].w.imm, bad_words[i].msg))
			printf("# got %d: %s\n", err, maia_last_error());
	}
}

/*
 * Random words, fields biased toward the edges of their ranges: libmaia
 * refuses exactly the words the device's rule (maia_tvp_insn_fault) refuses,
 * every fault occurs, and each fault has its own message (the rule itself is
 * checked against hand-written words above).
 */
static void test_fault_messages(void)
{
	static const uint32_t imms[] = { 0, 1, 2, 3, 6, 7, 9, 10, 31, 32, 63, 64, 1023, 1024, 1025,
					 0x100, 0x1f00, 0x10000, 0x20000, 0x30000, 0x3ffff,
					 0x40000, 1u << 16 | 1, 2u << 16 | 512, 2u << 16 | 513,
					 0xffffffff };
	char first[MAIA_TVP_FAULT_COUNT][160] = { { 0 } };
	uint64_t x = 0x9e3779b97f4a7c15ull;
	unsigned int agree = 0, valid = 0, kinds = 0, distinct = 0, n = 400000;
	char why[160];

	for (unsigned int i = 0; i < n; i++) {
		struct maia_tvp_insn in;
		enum maia_tvp_fault f;
		int lib;

		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		in.op = (x & 7) ? table[(x >> 3) % N(table)].op : (uint8_t)(x >> 3);
		in.rd = (x >> 12) & 1 ? 0 : (uint8_t)((x >> 13) % 34);
		in.ra = (x >> 20) & 1 ? 0 : (uint8_t)((x >> 21) % 34);
		in.rb = (x >> 28) & 1 ? 0 : (uint8_t)((x >> 29) % 34);
		in.imm = (x >> 36) & 3 ? imms[(x >> 38) % N(imms)] : (uint32_t)(x >> 32);
		if ((x >> 44) % 3 == 0)	/* a memory op's dtype, mask register and flags */
			in.imm = (uint32_t)((x >> 46) % 17) | (uint32_t)((x >> 51) % 33) << 8 |
				 (uint32_t)((x >> 57) & 3) << 16;
		why[0] = 0;
		lib = tvp_check(&in, 16, why, sizeof(why));
		f = maia_tvp_insn_fault(&in, 16, NULL);
		agree += (lib == 0) == (f == MAIA_TVP_FAULT_NONE);
		valid += f == MAIA_TVP_FAULT_NONE;
		if (f != MAIA_TVP_FAULT_NONE && f < MAIA_TVP_FAULT_COUNT && !first[f][0])
			snprintf(first[f], sizeof(first[f]), "%s", why[0] ? why : "?");
	}
	for (unsigned int f = 1; f < MAIA_TVP_FAULT_COUNT; f++) {
		unsigned int same = 0;

		kinds += first[f][0] != 0;
		for (unsigned int g = 1; g < f; g++)
			same += first[g][0] && !strcmp(first[f], first[g]);
		distinct += first[f][0] && !same && strcmp(first[f], "?");
		if (!first[f][0])
			printf("# fault %u never met\n", f);
	}
	tap_ok(agree == n && valid > n / 50 && valid < n - n / 50,
	       "libmaia refuses exactly the words the device's rule refuses: %u of %u random "
	       "words (%u valid)", agree, n, valid);
	tap_ok(kinds == MAIA_TVP_FAULT_COUNT - 1 && distinct == kinds,
	       "all %u faults met, each with its own message (%u met, %u distinct)",
	       MAIA_TVP_FAULT_COUNT - 1, kinds, distinct);
}

/*
 * Mutated sources: the disassembly of the generated words with one to
 * three bytes replaced, inserted or removed at random. Each must either assemble into
 * words the device accepts or fail with "line N: " for a line it has; none
 * may crash (the ASan build, make SAN=1, checks the memory).
 */
static void test_mutations(void)
{
	static const char alphabet[] = "sv0123456789,: \n#;.-xeLabcdfiklmnoprtuw_\t";
	uint64_t x = 0x2545f4914f6cdd1dull;
	unsigned int ok = 0, refused = 0, bad = 0, n = 2000;
	char *text = NULL;
	size_t len;

	if (maia_tvp_disassemble(words, nwords, &text)) {
		tap_ok(0, "mutations: no text to mutate (%s)", maia_last_error());
		return;
	}
	len = strlen(text);
	for (unsigned int i = 0; i < n; i++) {
		char *src = malloc(len + 9);
		size_t l = len, nlines = 1;
		struct maia_tvp_insn *in = NULL;
		uint32_t count = 0;
		unsigned int line = 0;
		int err;

		memcpy(src, text, len + 1);
		for (int m = 0; m < 1 + (int)(i % 3); m++) {
			size_t at;

			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			at = (x >> 8) % l;
			if ((x & 3) == 0 && l > 1) {		/* remove */
				memmove(src + at, src + at + 1, l - at);
				l--;
			} else if ((x & 3) == 1) {		/* insert */
				memmove(src + at + 1, src + at, l - at + 1);
				src[at] = alphabet[(x >> 40) % (sizeof(alphabet) - 1)];
				l++;
			} else {				/* replace */
				src[at] = alphabet[(x >> 40) % (sizeof(alphabet) - 1)];
			}
		}
		for (size_t c = 0; c < l; c++)
			nlines += src[c] == '\n';
		err = maia_tvp_assemble(src, &in, &count);
		if (!err) {
			int valid = count > 0;

			for (uint32_t w = 0; w < count; w++)
				valid &= fw_tvp_insn_valid(&in[w], count);
			ok += valid;
			bad += !valid;
		} else if (sscanf(maia_last_error(), "line %u: ", &line) == 1 && line >= 1 &&
			   line <= nlines && err == -EINVAL) {
			refused++;
		} else {
			if (!bad++)
				printf("# %d: %s\n", err, maia_last_error());
		}
		free(in);
		free(src);
	}
	free(text);
	tap_ok(!bad && ok + refused == n && ok && refused,
	       "%u mutated programs: %u assemble into words the device accepts, %u refused "
	       "with their line", n, ok, refused);
}

int main(void)
{
	test_round_trip();
	test_lines();
	test_program();
	test_vsplati_text();
	test_errors();
	test_program_errors();
	test_bad_words();
	test_fault_messages();
	test_mutations();
	return tap_done();
}
