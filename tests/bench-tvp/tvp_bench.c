// SPDX-License-Identifier: MIT
/*
 * The TVP executor's vector ops against a plain scalar C loop, on the host
 * (Documentation/benchmarks.rst, "Tile Vector Processor").
 *
 * For each op: a full 1024-lane register, run by each compiled variant of
 * the element-wise ops (generic, avx2, avx512 where the CPU has them) and
 * by the whole executor (a KERNEL whose program applies the op 256 times,
 * through fw_tvp_kernel(): decode, dispatch, the copy into vd), against a
 * scalar loop compiled without vectorisation that calls libm's binary32
 * function per lane (what an interpreter without vector code would do).
 * Prints the median ns per lane of 15 runs and the speed-up of each over
 * the scalar loop. Usage: tvp_bench [--quick]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../firmware-sim/src/tvp/tvp.h"
#include "maia/hw/dtype.h"

#define LANES	MAIA_TVP_VLEN
#define RUNS	15

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_d);
	return v[n / 2];
}

struct op {
	unsigned int op;
	const char *name;
};

static const struct op ops[] = {
	{ MAIA_TVP_OP_VFADD, "vfadd" }, { MAIA_TVP_OP_VFMUL, "vfmul" },
	{ MAIA_TVP_OP_VFMA, "vfma" }, { MAIA_TVP_OP_VFMAX, "vfmax" },
	{ MAIA_TVP_OP_VFDIV, "vfdiv" }, { MAIA_TVP_OP_VSQRT, "vsqrt" },
	{ MAIA_TVP_OP_VEXP, "vexp" }, { MAIA_TVP_OP_VLOG, "vlog" },
	{ MAIA_TVP_OP_VSIN, "vsin" }, { MAIA_TVP_OP_VTANH, "vtanh" },
	{ MAIA_TVP_OP_VERF, "verf" }, { MAIA_TVP_OP_VIMUL, "vimul" },
};

/* The scalar reference: one lane at a time, libm's float functions, no vector code. */
__attribute__((optimize("no-tree-vectorize"), noinline))
static void scalar_op(unsigned int op, unsigned int n, float *o, const float *a, const float *b,
		      const float *c)
{
	for (unsigned int i = 0; i < n; i++) {
		switch (op) {
		case MAIA_TVP_OP_VFADD: o[i] = a[i] + b[i]; break;
		case MAIA_TVP_OP_VFMUL: o[i] = a[i] * b[i]; break;
		case MAIA_TVP_OP_VFMA: o[i] = fmaf(a[i], b[i], c[i]); break;
		case MAIA_TVP_OP_VFMAX: o[i] = fmaxf(a[i], b[i]); break;
		case MAIA_TVP_OP_VFDIV: o[i] = a[i] / b[i]; break;
		case MAIA_TVP_OP_VSQRT: o[i] = sqrtf(a[i]); break;
		case MAIA_TVP_OP_VEXP: o[i] = expf(a[i]); break;
		case MAIA_TVP_OP_VLOG: o[i] = logf(a[i]); break;
		case MAIA_TVP_OP_VSIN: o[i] = sinf(a[i]); break;
		case MAIA_TVP_OP_VTANH: o[i] = tanhf(a[i]); break;
		case MAIA_TVP_OP_VERF: o[i] = erff(a[i]); break;
		default: o[i] = (float)((int32_t)a[i] * (int32_t)b[i]); break;
		}
	}
}

/* Flat memory for the executor run. */
static uint8_t *mem_buf;
#define MEM_BASE	0x100000ull
#define MEM_SIZE	(1u << 20)

static int mem_read(void *opaque, uint64_t va, void *buf, size_t len)
{
	(void)opaque;
	if (va < MEM_BASE || va + len > MEM_BASE + MEM_SIZE)
		return MAIA_STATUS_MMU_FAULT;
	memcpy(buf, mem_buf + (va - MEM_BASE), len);
	return MAIA_STATUS_OK;
}

static int mem_write(void *opaque, uint64_t va, const void *buf, size_t len)
{
	(void)opaque;
	if (va < MEM_BASE || va + len > MEM_BASE + MEM_SIZE)
		return MAIA_STATUS_MMU_FAULT;
	memcpy(mem_buf + (va - MEM_BASE), buf, len);
	return MAIA_STATUS_OK;
}

/* In place, as HBM is on the device. */
static int mem_map(void *opaque, uint64_t va, size_t len, const void **ptr, size_t *avail)
{
	(void)opaque;
	if (va < MEM_BASE || va >= MEM_BASE + MEM_SIZE)
		return MAIA_STATUS_MMU_FAULT;
	*ptr = mem_buf + (va - MEM_BASE);
	*avail = MEM_BASE + MEM_SIZE - va < len ? MEM_BASE + MEM_SIZE - va : len;
	return MAIA_STATUS_OK;
}

static int mem_map_write(void *opaque, uint64_t va, size_t len, void **ptr, size_t *avail)
{
	return mem_map(opaque, va, len, (const void **)ptr, avail);
}

#define REPS_IN_PROG	256u

/* ns per lane of the op through fw_tvp_kernel(): a program of 3 loads and the op 256 times. */
static double executor_ns(unsigned int op, int reps)
{
	static uint64_t sems[MAIA_NUM_SEMAPHORES];
	struct maia_job_mem mem = { .read = mem_read, .write = mem_write, .map = mem_map,
				    .map_write = mem_map_write };
	struct fw_tvp_env env = { .mem = &mem, .sems = sems };
	struct maia_cmd_kernel c = {
		.hdr = { .opcode = MAIA_OP_KERNEL, .size = sizeof(c) },
		.program = MEM_BASE, .num_args = 1, .grid = { 1, 1, 1 },
		.args = { MEM_BASE + 65536 },
	};
	struct maia_tvp_insn *w = (struct maia_tvp_insn *)(void *)mem_buf;
	struct fw_tvp_stats st;
	double t[RUNS];
	uint32_t n = 0;

	for (unsigned int r = 1; r <= 3; r++)
		w[n++] = (struct maia_tvp_insn){ .op = MAIA_TVP_OP_VLD, .rd = (uint8_t)r, .ra = 1,
						 .imm = MAIA_DTYPE_FP32 | MAIA_TVP_MEM_UNIT };
	for (unsigned int k = 0; k < REPS_IN_PROG; k++) {
		struct maia_tvp_insn in = { .op = (uint8_t)op, .rd = 4, .ra = 1, .rb = 2 };

		if (op == MAIA_TVP_OP_VSQRT || op == MAIA_TVP_OP_VEXP || op == MAIA_TVP_OP_VLOG ||
		    op == MAIA_TVP_OP_VSIN || op == MAIA_TVP_OP_VTANH || op == MAIA_TVP_OP_VERF)
			in.rb = 0;
		if (op == MAIA_TVP_OP_VFMA)
			in.imm = 3;
		w[n++] = in;
	}
	c.num_insns = n;
	for (int r = 0; r < RUNS; r++) {
		uint64_t t0 = now_ns();

		for (int i = 0; i < reps; i++)
			if (fw_tvp_kernel(&env, &c, &st) != MAIA_STATUS_OK)
				return NAN;
		t[r] = (double)(now_ns() - t0) / ((double)reps * REPS_IN_PROG * LANES);
	}
	return median(t, RUNS);
}

int main(int argc, char **argv)
{
	bool quick = argc > 1 && !strcmp(argv[1], "--quick");
	int reps = quick ? 20 : 200;
	size_t nimpl;
	const struct fw_tvp_vop_impl *im = fw_tvp_vop_impls(&nimpl);
	static float a[LANES], b[LANES], c[LANES], o[LANES];
	float *in;

	mem_buf = calloc(1, MEM_SIZE);
	if (!mem_buf)
		return 1;
	for (unsigned int i = 0; i < LANES; i++) {
		a[i] = 0.5f + (float)(i % 97) * 0.031f;	/* positive: log and sqrt stay finite */
		b[i] = 1.0f + (float)(i % 13) * 0.25f;
		c[i] = (float)(i % 7) - 3.0f;
	}
	in = (float *)(void *)(mem_buf + 65536);
	memcpy(in, a, sizeof(a));
	fw_tvp_vop_best();
	printf("# TVP vector ops, ns per lane (median of %d runs of %d x 1024 lanes); x = speed-up "
	       "over the scalar loop; executor variant in use: %s\n", RUNS, reps,
	       fw_tvp_vop_best_name());
	printf("%-7s %9s", "op", "scalar");
	for (size_t v = 0; v < nimpl; v++)
		if (im[v].usable())
			printf(" %9s %6s", im[v].name, "x");
	printf(" %9s %6s\n", "executor", "x");
	for (size_t k = 0; k < sizeof(ops) / sizeof(ops[0]); k++) {
		double t[RUNS], scalar;

		for (int r = 0; r < RUNS; r++) {
			uint64_t t0 = now_ns();

			for (int i = 0; i < reps; i++)
				scalar_op(ops[k].op, LANES, o, a, b, c);
			t[r] = (double)(now_ns() - t0) / ((double)reps * LANES);
		}
		scalar = median(t, RUNS);
		printf("%-7s %9.3f", ops[k].name, scalar);
		for (size_t v = 0; v < nimpl; v++) {
			double m;

			if (!im[v].usable())
				continue;
			for (int r = 0; r < RUNS; r++) {
				uint64_t t0 = now_ns();

				for (int i = 0; i < reps; i++)
					im[v].fn(ops[k].op, 0, LANES, (fw_tvp_u32 *)o,
						 (const fw_tvp_u32 *)a, (const fw_tvp_u32 *)b,
						 (const fw_tvp_u32 *)c);
				t[r] = (double)(now_ns() - t0) / ((double)reps * LANES);
			}
			m = median(t, RUNS);
			printf(" %9.3f %6.1f", m, scalar / m);
		}
		{
			double e = executor_ns(ops[k].op, quick ? 2 : 10);

			printf(" %9.3f %6.1f\n", e, scalar / e);
		}
	}
	free(mem_buf);
	return 0;
}
