// SPDX-License-Identifier: MIT
/*
 * The KERNEL command around the instructions: each validation rule gives
 * MAIA_STATUS_KERNEL_INVALID with nothing run; bad command fields give
 * BAD_CMD; the program fetch faults like any access; the watchdog is an
 * exact instruction count (SEMWAIT spins included); semaphores between
 * instances; an MMU fault on an unmasked lane (its address recorded) but
 * not on a masked one, stores before it kept; a stop request ends a long
 * kernel; the grid spread over worker threads gives the sequential
 * results; and a seeded random-program fuzzer: the device never crashes
 * or hangs, broken programs are refused, valid ones end OK, WATCHDOG or
 * MMU_FAULT (TVP_FUZZ_PROGRAMS sets how many, 3000 by default, TVP_FUZZ_SEED
 * the seed; make fuzz runs many more).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../../firmware-sim/src/fw_model.h"
#include "tap.h"
#include "tvp_util.h"

static struct tvp_mem M;
static struct tvp_prog P;

#define E(op, rd, ra, rb, imm) tvp_emit(&P, MAIA_TVP_OP_##op, rd, ra, rb, imm)
#define UNIT32 tvp_memimm(MAIA_DTYPE_FP32, true, -1)
#define OUT	TVP_DATA

/* A one-word change that breaks a valid program, and what it breaks. */
struct breakage {
	const char *what;
	struct maia_tvp_insn w;
};

static void test_validation(void)
{
	const struct breakage cases[] = {
		{ "unknown opcode", { .op = 0x0c } },
		{ "unknown opcode 0xff", { .op = 0xff } },
		{ "register 32 in rd", { .op = MAIA_TVP_OP_ADD, .rd = 32 } },
		{ "register 200 in rb", { .op = MAIA_TVP_OP_VFADD, .rb = 200 } },
		{ "rb set where the format has none", { .op = MAIA_TVP_OP_VMOV, .rd = 1, .ra = 2, .rb = 3 } },
		{ "imm set where the format has none", { .op = MAIA_TVP_OP_ADD, .imm = 1 } },
		{ "rd set on nop", { .op = MAIA_TVP_OP_NOP, .rd = 1 } },
		{ "scmp condition 10", { .op = MAIA_TVP_OP_SCMP, .imm = MAIA_TVP_CMP_COUNT } },
		{ "vfcmp unsigned condition", { .op = MAIA_TVP_OP_VFCMP, .imm = MAIA_TVP_CMP_ULT } },
		{ "vicmp condition 10", { .op = MAIA_TVP_OP_VICMP, .imm = 10 } },
		{ "vcvt kind 7", { .op = MAIA_TVP_OP_VCVT, .imm = MAIA_TVP_CVT_COUNT } },
		{ "vld dtype MXFP8", { .op = MAIA_TVP_OP_VLD, .imm = MAIA_DTYPE_MXFP8_E4M3 } },
		{ "vamoadd dtype f16", { .op = MAIA_TVP_OP_VAMOADD, .imm = MAIA_DTYPE_FP16 } },
		{ "sld dtype 16", { .op = MAIA_TVP_OP_SLD, .imm = 16 } },
		{ "vst flags outside MEM_ALL", { .op = MAIA_TVP_OP_VST, .imm = 1u << 18 } },
		{ "vld unit with rb", { .op = MAIA_TVP_OP_VLD, .rb = 1, .imm = MAIA_TVP_MEM_UNIT } },
		{ "vld mask register 32", { .op = MAIA_TVP_OP_VLD,
					    .imm = MAIA_TVP_MEM_MASKED | 32u << 8 } },
		{ "vld mask register without MASKED", { .op = MAIA_TVP_OP_VLD, .imm = 3u << 8 } },
		{ "shape 0 x 4", { .op = MAIA_TVP_OP_SHAPE, .imm = 4 } },
		{ "shape 4 x 0", { .op = MAIA_TVP_OP_SHAPE, .imm = 4u << 16 } },
		{ "shape 33 x 32", { .op = MAIA_TVP_OP_SHAPE, .imm = 33u << 16 | 32 } },
		{ "pid axis 3", { .op = MAIA_TVP_OP_PID, .imm = 3 } },
		{ "nprog axis 3", { .op = MAIA_TVP_OP_NPROG, .imm = 3 } },
		{ "vredsum axis 2", { .op = MAIA_TVP_OP_VREDSUM, .imm = 2 } },
		{ "vdot K 0", { .op = MAIA_TVP_OP_VDOT, .imm = 0 } },
		{ "vdot K 1025", { .op = MAIA_TVP_OP_VDOT, .imm = 1025 } },
		{ "semsig index 64", { .op = MAIA_TVP_OP_SEMSIG, .imm = 64 } },
		{ "vext lane 1024", { .op = MAIA_TVP_OP_VEXT, .imm = 1024 } },
		{ "vsel c register 32", { .op = MAIA_TVP_OP_VSEL, .imm = 32 } },
		{ "jmp past the end", { .op = MAIA_TVP_OP_JMP, .imm = 4 } },
		{ "beqz past the end", { .op = MAIA_TVP_OP_BEQZ, .imm = 1000 } },
		{ "blt past the end", { .op = MAIA_TVP_OP_BLT, .imm = 4 } },
	};
	const uint64_t args[1] = { OUT };
	struct tvp_run_opts o = { .args = args, .nargs = 1 };
	uint32_t *out = tvp_ptr(&M, OUT);

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct fw_tvp_stats st;
		int rc;

		/* a store first, the broken word last: validation must come before anything */
		P.n = 0;
		E(LI, 2, 0, 0, 77);
		E(SST, 2, 1, 0, MAIA_DTYPE_INT32);
		E(HALT, 0, 0, 0, 0);
		P.w[P.n++] = cases[i].w;
		out[0] = 0;
		rc = tvp_run(&M, &P, &o, &st);
		tap_ok(rc == MAIA_STATUS_KERNEL_INVALID && out[0] == 0 && !st.validated &&
		       !st.instances, "%s: KERNEL_INVALID, nothing ran", cases[i].what);
	}
	/* the last valid target and the assembler's edge values pass */
	P.n = 0;
	E(JMP, 0, 0, 0, 1);
	E(VDOT, 1, 2, 3, 1024);
	E(VEXT, 1, 2, 0, 1023);
	E(SHAPE, 0, 0, 0, 1u << 16 | 1024);
	E(SEMSIG, 0, 0, 0, 63);
	tap_ok(tvp_run(&M, &P, &o, NULL) == MAIA_STATUS_OK, "edge values of every field pass");
}

static void test_bad_cmd(void)
{
	struct maia_cmd_kernel ok = {
		.hdr = { .opcode = MAIA_OP_KERNEL, .size = sizeof(ok) }, .program = TVP_PROG,
		.num_insns = 1, .grid = { 1, 1, 1 },
	};
	static const char *const what[] = {
		"size 8 short", "flags set", "no instructions", "65537 instructions", "17 args",
		"grid x 0", "grid z 0", "grid y 2^20 + 1", "grid product 2^21",
		"program not 8-byte aligned",
	};
	uint64_t sems[MAIA_NUM_SEMAPHORES] = { 0 };
	struct fw_tvp_env env = { .mem = &M.jm, .sems = sems };
	struct fw_tvp_stats st;

	memset(tvp_ptr(&M, TVP_PROG), 0, 8);	/* nop */
	tap_ok(fw_tvp_kernel(&env, &ok, &st) == MAIA_STATUS_OK, "the base command runs");
	for (size_t i = 0; i < sizeof(what) / sizeof(what[0]); i++) {
		struct maia_cmd_kernel c = ok;

		switch (i) {
		case 0: c.hdr.size -= 8; break;
		case 1: c.hdr.flags = 1; break;
		case 2: c.num_insns = 0; break;
		case 3: c.num_insns = MAIA_TVP_MAX_INSNS + 1; break;
		case 4: c.num_args = MAIA_TVP_MAX_ARGS + 1; break;
		case 5: c.grid[0] = 0; break;
		case 6: c.grid[2] = 0; break;
		case 7: c.grid[1] = MAIA_TVP_MAX_GRID + 1; break;
		case 8: c.grid[0] = 2048; c.grid[1] = 1024; break;
		default: c.program += 4; break;
		}
		tap_ok(fw_tvp_kernel(&env, &c, &st) == MAIA_STATUS_BAD_CMD, "%s: BAD_CMD", what[i]);
	}
	ok.grid[0] = 1024;
	ok.grid[1] = 1024;
	tap_ok(fw_tvp_kernel(&env, &ok, &st) == MAIA_STATUS_OK && st.instances == 1u << 20,
	       "a grid of exactly 2^20 instances runs them all");
	ok.grid[1] = 1;
	ok.program = TVP_BASE - 8;
	M.faults = 0;
	tap_ok(fw_tvp_kernel(&env, &ok, &st) == MAIA_STATUS_MMU_FAULT && M.faults == 1 &&
	       M.fault_va == TVP_BASE - 8, "a program outside the mappings: MMU_FAULT at its address");
}

static void test_watchdog(void)
{
	struct tvp_run_opts o = { 0 };
	struct fw_tvp_stats st;
	uint64_t sems[MAIA_NUM_SEMAPHORES] = { 0 };
	int rc;

	/* 10 straight instructions: budget 10 is enough, 9 is not */
	P.n = 0;
	for (int i = 0; i < 10; i++)
		E(ADDI, 1, 1, 0, 1);
	o.budget = 10;
	tap_ok(tvp_run(&M, &P, &o, &st) == MAIA_STATUS_OK && st.insns[MAIA_TVP_CLASS_SCALAR] == 10,
	       "10 instructions run under a budget of 10");
	o.budget = 9;
	rc = tvp_run(&M, &P, &o, &st);
	tap_ok(rc == MAIA_STATUS_KERNEL_WATCHDOG && st.insns[MAIA_TVP_CLASS_SCALAR] == 9,
	       "... and a budget of 9 ends it with KERNEL_WATCHDOG after 9");
	/* an endless loop, default budget: 2^24 instructions, then the watchdog */
	P.n = 0;
	E(JMP, 0, 0, 0, 0);
	o.budget = 0;
	rc = tvp_run(&M, &P, &o, &st);
	tap_ok(rc == MAIA_STATUS_KERNEL_WATCHDOG &&
	       st.insns[MAIA_TVP_CLASS_BRANCH] == MAIA_TVP_DEFAULT_BUDGET,
	       "an endless loop stops after the default budget (%llu branches)",
	       (unsigned long long)st.insns[MAIA_TVP_CLASS_BRANCH]);
	/* SEMWAIT on a semaphore nobody signals: counted spins, then the watchdog */
	P.n = 0;
	E(LI, 1, 0, 0, 1);
	E(SEMWAIT, 0, 1, 0, 5);
	o.budget = 5000;
	o.sems = sems;
	rc = tvp_run(&M, &P, &o, &st);
	tap_ok(rc == MAIA_STATUS_KERNEL_WATCHDOG && st.insns[MAIA_TVP_CLASS_SYNC] == 4999,
	       "semwait on an empty semaphore: 4999 tries, then KERNEL_WATCHDOG");
	/* signal 3, take 2, take 1: 0 left */
	P.n = 0;
	E(LI, 1, 0, 0, 3);
	E(SEMSIG, 0, 1, 0, 7);
	E(LI, 1, 0, 0, 2);
	E(SEMWAIT, 0, 1, 0, 7);
	E(LI, 1, 0, 0, 1);
	E(SEMWAIT, 0, 1, 0, 7);
	rc = tvp_run(&M, &P, &o, &st);
	tap_ok(rc == MAIA_STATUS_OK && sems[7] == 0 && st.sems_signaled == 1u << 7,
	       "semsig 3, semwait 2, semwait 1 leave 0");
	/* a signal saturates rather than wraps */
	sems[8] = UINT64_MAX - 1;
	P.n = 0;
	E(LI, 1, 0, 0, 5);
	E(SEMSIG, 0, 1, 0, 8);
	tap_ok(tvp_run(&M, &P, &o, &st) == MAIA_STATUS_OK && sems[8] == UINT64_MAX,
	       "semsig saturates at 2^64 - 1");
}

/* Instance i waits for a signal, counts, signals the next: the semaphore as a lock. */
static void test_sem_chain(struct fw_tensor_engine *te, const char *how)
{
	uint64_t sems[MAIA_NUM_SEMAPHORES] = { 0 };
	const uint64_t args[1] = { OUT };
	struct tvp_run_opts o = { .grid = { 200 }, .args = args, .nargs = 1, .sems = sems, .te = te };
	uint32_t *out = tvp_ptr(&M, OUT);
	bool ok = true;
	int rc;

	P.n = 0;
	E(PID, 2, 0, 0, 0);
	E(LI, 3, 0, 0, 1);
	E(BEQZ, 0, 2, 0, 4);		/* instance 0 does not wait */
	E(SEMWAIT, 0, 3, 0, 0);
	E(SLD, 4, 1, 0, MAIA_DTYPE_INT32);	/* 4: the running count */
	E(ADDI, 4, 4, 0, 1);
	E(SST, 4, 1, 0, MAIA_DTYPE_INT32);
	E(LI, 5, 0, 0, 4);
	E(MUL, 6, 2, 5, 0);
	E(ADD, 6, 6, 1, 0);
	E(ADDI, 6, 6, 0, 4);
	E(SST, 4, 6, 0, MAIA_DTYPE_INT32);	/* out[1 + pid] = count seen */
	E(SEMSIG, 0, 3, 0, 0);
	memset(out, 0, 4 * 202);
	rc = tvp_run(&M, &P, &o, NULL);
	/*
	 * The semaphore works as a lock around the count: every instance saw a
	 * different count. Alone, the caller runs them in index order; on
	 * several workers any waiter may take a signal, in any order.
	 */
	{
		bool seen[201] = { false };

		for (uint32_t i = 0; i < 200; i++) {
			ok &= out[1 + i] >= 1 && out[1 + i] <= 200 && !seen[out[1 + i] % 201];
			seen[out[1 + i] % 201] = true;
			if (!te)
				ok &= out[1 + i] == i + 1;
		}
	}
	tap_ok(rc == MAIA_STATUS_OK && out[0] == 200 && ok,
	       "%s: 200 instances serialised by a semaphore count to 200, each seeing its own "
	       "count%s", how, te ? "" : ", in index order");
}

/*
 * On several workers an instance waiting for another depends on the host
 * scheduling the other in time (the budget bounds the wait), so the
 * parallel test only signals: 300 instances adding 1 each, atomically.
 */
static void test_sem_adds(struct fw_tensor_engine *te)
{
	uint64_t sems[MAIA_NUM_SEMAPHORES] = { 0 };
	struct tvp_run_opts o = { .grid = { 300 }, .sems = sems, .te = te };

	P.n = 0;
	E(LI, 1, 0, 0, 1);
	E(SEMSIG, 0, 1, 0, 9);
	tap_ok(tvp_run(&M, &P, &o, NULL) == MAIA_STATUS_OK && sems[9] == 300,
	       "2 workers: 300 instances' semsig 1 add up to 300");
}

static void test_faults(void)
{
	const uint64_t args[3] = { OUT, TVP_BASE + M.size - 8, 0 };
	struct tvp_run_opts o = { .args = args, .nargs = 3 };
	uint32_t *out = tvp_ptr(&M, OUT);
	int rc;

	/* lanes 0, 1 in range, lane 2 past the end: masked off, then not */
	P.n = 0;
	E(SHAPE, 0, 0, 0, 1u << 16 | 3);
	E(VIOTA, 1, 0, 0, 0);		/* offsets 0 1 2 */
	E(VSPLATI, 2, 0, 0, 1);
	E(VSPLATI, 3, 0, 0, 0);
	E(LI, 4, 0, 0, 2);
	E(SHAPE, 0, 0, 0, 1u << 16 | 2);
	E(VMOV, 3, 2, 0, 0);		/* mask 1 1 0 */
	E(SHAPE, 0, 0, 0, 1u << 16 | 3);
	E(VLD, 5, 2, 1, tvp_memimm(MAIA_DTYPE_FP32, false, 3));
	E(VST, 2, 1, 0, tvp_memimm(MAIA_DTYPE_FP32, true, -1));	/* out[0..2] = 1 */
	E(VST, 2, 2, 1, tvp_memimm(MAIA_DTYPE_FP32, false, 3));
	E(HALT, 0, 0, 0, 0);
	M.faults = 0;
	rc = tvp_run(&M, &P, &o, NULL);
	tap_ok(rc == MAIA_STATUS_OK && M.faults == 0,
	       "a masked-off lane outside the mappings is neither loaded nor stored");
	/* unmasked: the load faults at lane 2's address; the store before it stays */
	P.w[8].imm = tvp_memimm(MAIA_DTYPE_FP32, false, -1);
	P.w[8].op = MAIA_TVP_OP_VLD;
	/* move the VLD after the first store: swap words 8 and 9 */
	{
		struct maia_tvp_insn t = P.w[8];

		P.w[8] = P.w[9];
		P.w[9] = t;
	}
	memset(out, 0, 12);
	M.faults = 0;
	rc = tvp_run(&M, &P, &o, NULL);
	tap_ok(rc == MAIA_STATUS_MMU_FAULT && M.faults == 1 && M.fault_va == TVP_BASE + M.size &&
	       out[0] == 1 && out[2] == 1, "an unmasked lane outside: MMU_FAULT at that lane's "
	       "address (0x%llx), the store before it kept", (unsigned long long)M.fault_va);
	/* a scalar store to an address that wraps */
	P.n = 0;
	E(LI, 1, 0, 0, -1);
	E(SST, 1, 1, 0, MAIA_DTYPE_INT8);
	M.faults = 0;
	tap_ok(tvp_run(&M, &P, &o, NULL) == MAIA_STATUS_MMU_FAULT && M.fault_va == UINT64_MAX,
	       "sst to 2^64 - 1: MMU_FAULT");
}

static int stop_after;

static bool stop_cb(void *opaque)
{
	(void)opaque;
	return --stop_after <= 0;
}

static void test_stop(void)
{
	struct tvp_run_opts o = { .stop = stop_cb, .grid = { 8 } };
	struct fw_tvp_stats st;
	int rc;

	P.n = 0;
	E(JMP, 0, 0, 0, 0);
	stop_after = 3;
	rc = tvp_run(&M, &P, &o, &st);
	tap_ok(rc == FW_TVP_STOPPED && st.insns[MAIA_TVP_CLASS_BRANCH] < 16384,
	       "a stop request ends an endless kernel within a few thousand instructions (%llu)",
	       (unsigned long long)st.insns[MAIA_TVP_CLASS_BRANCH]);
}

/* The same 1000-instance kernel on 2 worker threads and on the caller alone. */
static void test_parallel(struct fw_tensor_engine *te)
{
	const uint64_t args[2] = { OUT, OUT + 1000 * 4096 };
	struct tvp_run_opts o = { .grid = { 10, 100 }, .args = args, .nargs = 2 };
	struct fw_tvp_stats s1, s2;
	uint8_t *a = tvp_ptr(&M, OUT);
	static uint8_t first[1000 * 4096];
	int r1, r2;

	/* out[pid] = exp(iota * 0.001 + pid) reduced per row of 32 x 32 */
	P.n = 0;
	E(PID, 3, 0, 0, 0);
	E(PID, 4, 0, 0, 1);
	E(LI, 5, 0, 0, 10);
	E(MUL, 4, 4, 5, 0);
	E(ADD, 3, 3, 4, 0);		/* linear pid */
	E(VIOTA, 1, 0, 0, 0);
	E(VSPLAT, 2, 3, 0, 0);
	E(VIADD, 1, 1, 2, 0);
	E(VCVT, 1, 1, 0, MAIA_TVP_CVT_I2F);
	E(VSPLATI, 6, 0, 0, tvp_u(0.001f));
	E(VFMUL, 1, 1, 6, 0);
	E(VEXP, 1, 1, 0, 0);
	E(SHAPE, 0, 0, 0, 32u << 16 | 32);
	E(VREDSUM, 7, 1, 0, 1);
	E(LI, 8, 0, 0, 4096);
	E(MUL, 8, 8, 3, 0);
	E(ADD, 8, 8, 1, 0);
	E(SHAPE, 0, 0, 0, 1u << 16 | 1024);
	E(VST, 1, 8, 0, UNIT32);
	memset(a, 0, 1000 * 4096);
	r1 = tvp_run(&M, &P, &o, &s1);
	memcpy(first, a, sizeof(first));
	memset(a, 0, 1000 * 4096);
	o.te = te;
	r2 = tvp_run(&M, &P, &o, &s2);
	tap_ok(r1 == MAIA_STATUS_OK && r2 == MAIA_STATUS_OK && !memcmp(first, a, sizeof(first)) &&
	       !memcmp(s1.insns, s2.insns, sizeof(s1.insns)) && s1.instances == 1000 &&
	       s2.instances == 1000 && s1.flops == s2.flops,
	       "1000 instances on the engine's workers: same memory and counters as sequential");
}

/* ---- fuzzer ---- */

static uint8_t ops_valid[256], ops_fmt[256];

static void fuzz_init(void)
{
#define MARK(name, code, mnem, f, c) ops_valid[code] = 1; ops_fmt[code] = f;
	MAIA_TVP_OPS(MARK)
#undef MARK
}

/* A random word that the rules accept, in a program of n words. */
static struct maia_tvp_insn random_valid(uint64_t *s, uint32_t n)
{
	static const uint8_t dts[] = { 0, 1, 2, 3, 4, 5, 6 };
	struct maia_tvp_insn w = { 0 };
	uint32_t r = tvp_rand(s), rows, cols;
	unsigned int op;

	do
		op = tvp_rand(s) & 0xff;
	while (!ops_valid[op]);
	w.op = (uint8_t)op;
	/* scalar registers 1..4 hold addresses: mostly leave them alone */
#define REG() ((uint8_t)(5 + tvp_rand(s) % 27))
	switch (ops_fmt[op]) {
	case MAIA_TVP_FMT_NONE:
		if (op == MAIA_TVP_OP_HALT && r % 4)
			w.op = MAIA_TVP_OP_NOP;
		break;
	case MAIA_TVP_FMT_S_I:
		w.rd = REG();
		w.imm = r % 3 ? r % 64 : r;
		break;
	case MAIA_TVP_FMT_S_S_I:
		w.rd = REG();
		w.ra = (uint8_t)(tvp_rand(s) % 32);
		w.imm = r % 3 ? (uint32_t)((int32_t)(r % 256) - 128) : r;
		break;
	case MAIA_TVP_FMT_S_S_S:
		w.rd = REG();
		w.ra = (uint8_t)(tvp_rand(s) % 32);
		w.rb = (uint8_t)(tvp_rand(s) % 32);
		break;
	case MAIA_TVP_FMT_S_S_S_C:
		w.rd = REG();
		w.ra = (uint8_t)(tvp_rand(s) % 32);
		w.rb = (uint8_t)(tvp_rand(s) % 32);
		w.imm = r % MAIA_TVP_CMP_COUNT;
		break;
	case MAIA_TVP_FMT_V_V_V:
	case MAIA_TVP_FMT_V_V_V_C:
	case MAIA_TVP_FMT_V_V_V_V:
	case MAIA_TVP_FMT_V_V_V_K:
		w.rd = (uint8_t)(tvp_rand(s) % 32);
		w.ra = (uint8_t)(tvp_rand(s) % 32);
		w.rb = (uint8_t)(tvp_rand(s) % 32);
		w.imm = ops_fmt[op] == MAIA_TVP_FMT_V_V_V_C ?
			r % (op == MAIA_TVP_OP_VFCMP ? MAIA_TVP_CMP_ULT : MAIA_TVP_CMP_COUNT) :
			ops_fmt[op] == MAIA_TVP_FMT_V_V_V_V ? r % 32 :
			ops_fmt[op] == MAIA_TVP_FMT_V_V_V_K ? 1 + r % (r & 1 ? 8 : 1024) : 0;
		break;
	case MAIA_TVP_FMT_V_V:
		w.rd = (uint8_t)(tvp_rand(s) % 32);
		w.ra = (uint8_t)(tvp_rand(s) % 32);
		break;
	case MAIA_TVP_FMT_V_V_I:
		w.rd = (uint8_t)(tvp_rand(s) % 32);
		w.ra = (uint8_t)(tvp_rand(s) % 32);
		w.imm = op == MAIA_TVP_OP_VCVT ? r % MAIA_TVP_CVT_COUNT : r % 2;
		break;
	case MAIA_TVP_FMT_V_S:
		w.rd = (uint8_t)(tvp_rand(s) % 32);
		w.ra = (uint8_t)(tvp_rand(s) % 32);
		break;
	case MAIA_TVP_FMT_V_I:
		w.rd = (uint8_t)(tvp_rand(s) % 32);
		w.imm = r;
		break;
	case MAIA_TVP_FMT_S_V_I:
		w.rd = REG();
		w.ra = (uint8_t)(tvp_rand(s) % 32);
		w.imm = r % MAIA_TVP_VLEN;
		break;
	case MAIA_TVP_FMT_MEM_V:
		w.rd = (uint8_t)(tvp_rand(s) % 32);
		w.ra = (uint8_t)(1 + tvp_rand(s) % 4);	/* an address, mostly */
		w.imm = dts[r % 7];
		if (op == MAIA_TVP_OP_VAMOADD)	/* atomics add f32 and i32 only */
			w.imm = r & 1 ? MAIA_DTYPE_FP32 : MAIA_DTYPE_INT32;
		if (r & 0x100) {
			w.imm |= MAIA_TVP_MEM_UNIT;
		} else {
			w.rb = (uint8_t)(tvp_rand(s) % 32);
		}
		if (r & 0x200)
			w.imm |= MAIA_TVP_MEM_MASKED | (tvp_rand(s) % 32) << 8;
		break;
	case MAIA_TVP_FMT_MEM_S:
		w.rd = op == MAIA_TVP_OP_SST ? (uint8_t)(tvp_rand(s) % 32) : REG();
		w.ra = (uint8_t)(1 + tvp_rand(s) % 4);
		w.imm = dts[r % 7];
		break;
	case MAIA_TVP_FMT_BR_S:
		w.ra = (uint8_t)(tvp_rand(s) % 32);
		w.imm = r % n;
		break;
	case MAIA_TVP_FMT_BR_S_S:
		w.ra = (uint8_t)(tvp_rand(s) % 32);
		w.rb = (uint8_t)(tvp_rand(s) % 32);
		w.imm = r % n;
		break;
	case MAIA_TVP_FMT_JUMP:
		w.imm = r % n;
		break;
	case MAIA_TVP_FMT_SHAPE:
		rows = 1 + r % 64;
		cols = 1 + (r >> 8) % (MAIA_TVP_VLEN / rows);
		w.imm = rows << 16 | cols;
		break;
	case MAIA_TVP_FMT_S_AXIS:
		w.rd = REG();
		w.imm = r % 3;
		break;
	case MAIA_TVP_FMT_SEM:
		w.ra = (uint8_t)(tvp_rand(s) % 32);
		w.imm = r % MAIA_NUM_SEMAPHORES;
		break;
	default:
		break;
	}
#undef REG
	return w;
}

/* Breaks w in one of the ways the validator must catch. */
static void break_word(struct maia_tvp_insn *w, uint64_t *s, uint32_t n)
{
	switch (tvp_rand(s) % 4) {
	case 0:
		do
			w->op = (uint8_t)tvp_rand(s);
		while (ops_valid[w->op]);
		break;
	case 1:
		w->rd = (uint8_t)(32 + tvp_rand(s) % 224);
		break;
	case 2:
		*w = (struct maia_tvp_insn){ .op = MAIA_TVP_OP_JMP, .imm = n + tvp_rand(s) % 100 };
		break;
	default:
		*w = (struct maia_tvp_insn){ .op = MAIA_TVP_OP_NOP, .imm = 1 + tvp_rand(s) % 100 };
		break;
	}
}

static void test_fuzz(struct fw_tensor_engine *te)
{
	const char *env = getenv("TVP_FUZZ_PROGRAMS"), *seed = getenv("TVP_FUZZ_SEED");
	unsigned int programs = env ? (unsigned int)strtoul(env, NULL, 0) : 3000;
	unsigned int counts[4] = { 0 }, wrong = 0, invalid_seen = 0;
	uint64_t sems[MAIA_NUM_SEMAPHORES];
	uint64_t s = seed ? strtoull(seed, NULL, 0) | 1 : 0x9e3779b97f4a7c15ull;
	const uint64_t args[4] = { OUT, OUT + 65536, OUT + 262144 - 64, TVP_BASE + M.size - 4096 };

	fuzz_init();
	for (unsigned int i = 0; i < programs; i++) {
		uint32_t n = 1 + tvp_rand(&s) % 64;
		bool broken = tvp_rand(&s) % 4 == 0;
		struct tvp_run_opts o = {
			.grid = { 1 + tvp_rand(&s) % 3, 1 + tvp_rand(&s) % 2, 1 },
			.args = args, .nargs = 4, .budget = 1 + tvp_rand(&s) % 1000, .sems = sems,
			.te = i % 2 ? te : NULL,
		};
		struct fw_tvp_stats st;
		int rc;

		memset(sems, 0, sizeof(sems));
		P.n = n;
		for (uint32_t k = 0; k < n; k++)
			P.w[k] = random_valid(&s, n);
		if (broken)
			break_word(&P.w[tvp_rand(&s) % n], &s, n);
		rc = tvp_run(&M, &P, &o, &st);
		if (broken) {
			invalid_seen++;
			wrong += rc != MAIA_STATUS_KERNEL_INVALID;
		} else {
			wrong += rc != MAIA_STATUS_OK && rc != MAIA_STATUS_KERNEL_WATCHDOG &&
				 rc != MAIA_STATUS_MMU_FAULT;
			counts[rc == MAIA_STATUS_OK ? 0 : rc == MAIA_STATUS_KERNEL_WATCHDOG ? 1 : 2]++;
		}
	}
	tap_ok(!wrong, "%u random programs (seed 0x%llx): %u broken ones refused, valid ones ended OK %u, "
	       "WATCHDOG %u, MMU_FAULT %u times; %u other outcomes", programs,
	       (unsigned long long)(seed ? strtoull(seed, NULL, 0) | 1 : 0x9e3779b97f4a7c15ull),
	       invalid_seen,
	       counts[0], counts[1], counts[2], wrong);
}

/*
 * The kernel cost of Documentation/hw/time-model.rst on Maia 200, written
 * out by hand: 1000 instances of 3 scalar, 4 VALU and 2 VSFU units are 3 +
 * 4 + 2 x 4 = 15 cycles each; 128 tiles: 8 waves of 15 cycles at 1500 MHz
 * = 80 ns. 7 MB at 7 TB/s = 1000 ns. Plus the fixed 1000 ns.
 */
static void test_model(void)
{
	const struct fw_chip *chip = fw_chip_by_id(MAIA_MODEL_MAIA200);
	struct fw_kernel_work w = { .instances = 1000, .bytes = 7000000, .flops = 123 };
	struct fw_cost c;

	w.units[MAIA_TVP_CLASS_SCALAR] = 3000;
	w.units[MAIA_TVP_CLASS_VALU] = 4000;
	w.units[MAIA_TVP_CLASS_VSFU] = 2000;
	fw_model_kernel(chip, &w, &c);
	tap_ok(c.compute_ns == 80 && c.hbm_ns == 1000 && fw_cost_ns(&c, 1.0) == 2000 &&
	       c.tiles == 128 && c.flops == 123 && c.cls == FW_PM_VECTOR,
	       "maia200: 1000 instances of 15 cycles: 80 ns compute, 1000 ns HBM, 2000 ns in all");
	w.bytes = 0;
	w.instances = 100;
	fw_model_kernel(chip, &w, &c);
	/* 150 cycles each, one wave: 100 ns */
	tap_ok(c.compute_ns == 100 && fw_cost_ns(&c, 1.0) == 1100 && c.tiles == 100,
	       "100 instances of 150 cycles in one wave: 1100 ns");
	tap_ok(fw_cost_ns(&c, 0.5) == 1200, "at half the clock the compute takes twice as long");
}

int main(void)
{
	struct fw_tensor_config cfg = { .clusters = 2, .tiles_per_cluster = 4, .sram_kib = 8192,
					.threads = 2 };
	struct fw_tensor_engine *te;

	tvp_mem_init(&M, 8u << 20);
	te = fw_tensor_create(&cfg);
	tap_ok(te != NULL, "a tensor engine with 2 worker threads");
	test_model();
	test_validation();
	test_bad_cmd();
	test_watchdog();
	test_sem_chain(NULL, "sequential");
	test_sem_adds(te);
	test_faults();
	test_stop();
	test_parallel(te);
	test_fuzz(te);
	fw_tensor_destroy(te);
	tvp_mem_fini(&M);
	return tap_done();
}
