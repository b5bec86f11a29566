// SPDX-License-Identifier: MIT
/*
 * GEMM against a double-precision reference: every input dtype, every output
 * dtype, transposes, strided batches with broadcast, alpha/beta/bias and
 * activations, pointer-array batches, each micro-kernel this CPU can run,
 * and the error statuses. The bound checked per element is
 *   |C - ref| <= (K + 4) * 2^-24 * S + u(C) * |ref| + tiny(C)
 * with S = |alpha| sum_k |a b| + |beta c| + |bias| (Documentation/tensor-engine.rst).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"
#include "tap.h"
#include "../../../firmware-sim/src/tensor/te.h"

static struct tmem mem;

struct gcase {
	unsigned int adt, bdt, cdt;
	uint32_t batch, m, n, k;
	unsigned int flags, act;
	float alpha, beta;
	bool a_bcast;		/* A batch stride 0 */
};

static double act_ref(double x, unsigned int act)
{
	switch (act) {
	case MAIA_ACT_RELU:
		return x > 0 ? x : 0;
	case MAIA_ACT_GELU:
		return 0.5 * x * (1 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
	case MAIA_ACT_SILU:
		return x / (1 + exp(-x));
	case MAIA_ACT_GELU_ERF:
		return 0.5 * x * (1 + erf(x / sqrt(2.0)));
	default:
		return x;
	}
}

static double tiny(unsigned int dt)
{
	switch (dt) {
	case MAIA_DTYPE_FP8_E4M3:
		return ldexp(1, -10);
	case MAIA_DTYPE_FP8_E5M2:
		return ldexp(1, -17);
	case MAIA_DTYPE_FP16:
		return ldexp(1, -25);
	default:
		return 1e-30;
	}
}

static float scale_of(unsigned int dt)
{
	return dt == MAIA_DTYPE_INT8 ? 1.0f / 64 : 1.0f;
}

static float rnd(unsigned int dt)
{
	return dt == MAIA_DTYPE_INT8 ? trand_uniform(-1.9f, 1.9f) : trand_uniform(-1.0f, 1.0f);
}

/* When set, run_case() copies C as read back (m x n per batch) here. */
static double *keep_c;

/* Returns the worst error / bound ratio, or a negative status. */
static double run_case(struct fw_tensor_engine *te, const struct gcase *g)
{
	uint64_t na = (uint64_t)g->m * g->k, nb = (uint64_t)g->k * g->n, nc = (uint64_t)g->m * g->n;
	uint64_t abatch = g->a_bcast ? 1 : g->batch;
	bool ta = g->flags & MAIA_GEMM_F_TRANS_A, tb = g->flags & MAIA_GEMM_F_TRANS_B;
	bool bias = g->flags & MAIA_GEMM_F_BIAS;
	float *fa = malloc(sizeof(float) * na * abatch), *fb = malloc(sizeof(float) * nb * g->batch);
	float *fc = malloc(sizeof(float) * nc * g->batch), fbias[4096];
	double *ra = malloc(sizeof(double) * na * abatch), *rb = malloc(sizeof(double) * nb * g->batch);
	double *rc = malloc(sizeof(double) * nc * g->batch), *out = malloc(sizeof(double) * nc * g->batch);
	double rbias[4096], worst = 0;
	uint64_t va, vb, vc, vbias, sa = 0, sb = 0;
	struct maia_cmd_gemm cmd;
	uint32_t ashape[3], bshape[3], cshape[3] = { g->batch, g->m, g->n };
	int st;

	tmem_reset(&mem);
	for (uint64_t i = 0; i < na * abatch; i++)
		fa[i] = rnd(g->adt);
	for (uint64_t i = 0; i < nb * g->batch; i++)
		fb[i] = rnd(g->bdt);
	for (uint64_t i = 0; i < nc * g->batch; i++)
		fc[i] = trand_uniform(-1, 1);
	for (uint32_t i = 0; i < g->n; i++)
		fbias[i] = trand_uniform(-1, 1);
	va = tmem_alloc(&mem, tbytes(g->adt, na * abatch));
	vb = tmem_alloc(&mem, tbytes(g->bdt, nb * g->batch));
	vc = tmem_alloc(&mem, tbytes(g->cdt, nc * g->batch));
	vbias = tmem_alloc(&mem, 4 * g->n);
	if (maia_dtype_is_block(g->adt))
		sa = tmem_alloc(&mem, na * abatch);
	if (maia_dtype_is_block(g->bdt))
		sb = tmem_alloc(&mem, nb * g->batch);
	tput(&mem, g->adt, va, sa, fa, na * abatch, scale_of(g->adt), ra);
	tput(&mem, g->bdt, vb, sb, fb, nb * g->batch, scale_of(g->bdt), rb);
	tput(&mem, g->cdt, vc, 0, fc, nc * g->batch, 1.0f, rc);
	tput(&mem, MAIA_DTYPE_FP32, vbias, 0, fbias, g->n, 1.0f, rbias);

	ashape[0] = (uint32_t)abatch;
	ashape[1] = ta ? g->k : g->m;
	ashape[2] = ta ? g->m : g->k;
	bshape[0] = g->batch;
	bshape[1] = tb ? g->n : g->k;
	bshape[2] = tb ? g->k : g->n;
	memset(&cmd, 0, sizeof(cmd));
	cmd.hdr.opcode = MAIA_OP_GEMM;
	cmd.hdr.size = sizeof(cmd);
	cmd.hdr.flags = (uint16_t)g->flags;
	cmd.a = tdesc(g->adt, va, 3, ashape);
	if (g->a_bcast) {
		cmd.a.shape[0] = g->batch;
		cmd.a.strides[0] = 0;
	}
	cmd.a.scale_addr = sa;
	if (g->adt == MAIA_DTYPE_INT8)
		cmd.a.scale = f2u(scale_of(g->adt));
	cmd.b = tdesc(g->bdt, vb, 3, bshape);
	cmd.b.scale_addr = sb;
	if (g->bdt == MAIA_DTYPE_INT8)
		cmd.b.scale = f2u(scale_of(g->bdt));
	cmd.c = tdesc(g->cdt, vc, 3, cshape);
	if (bias)
		cmd.bias = tdesc(MAIA_DTYPE_FP32, vbias, 1, &g->n);
	cmd.alpha = f2u(g->alpha);
	cmd.beta = f2u(g->beta);
	cmd.activation = g->act;
	st = trun(te, &mem, &cmd, NULL);
	if (st) {
		worst = -st;
		goto out;
	}
	tget(&mem, g->cdt, vc, 0, nc * g->batch, 1.0f, out);
	if (keep_c)
		memcpy(keep_c, out, sizeof(double) * nc * g->batch);
	for (uint32_t b = 0; b < g->batch; b++) {
		const double *A = ra + (g->a_bcast ? 0 : b * na), *B = rb + b * nb;

		for (uint32_t i = 0; i < g->m; i++)
			for (uint32_t j = 0; j < g->n; j++) {
				double s = 0, sabs = 0, ref, bound, pre;
				uint64_t ci = b * nc + (uint64_t)i * g->n + j;

				for (uint32_t k = 0; k < g->k; k++) {
					double x = ta ? A[(uint64_t)k * g->m + i] : A[(uint64_t)i * g->k + k];
					double y = tb ? B[(uint64_t)j * g->k + k] : B[(uint64_t)k * g->n + j];

					s += x * y;
					sabs += fabs(x * y);
				}
				pre = g->alpha * s + (g->beta != 0 ? g->beta * rc[ci] : 0) +
				      (bias ? rbias[j] : 0);
				sabs = fabs(g->alpha) * sabs + fabs(g->beta * rc[ci]) +
				       (bias ? fabs(rbias[j]) : 0);
				ref = act_ref(pre, g->act);
				bound = (g->k + 4) * ldexp(1, -24) * sabs * 1.25 +
					ref_unit_roundoff(g->cdt) * fabs(ref) + tiny(g->cdt) +
					(g->act ? 1e-6 * (fabs(pre) + 1e-3) : 0);
				if (fabs(out[ci] - ref) / bound > worst || isnan(out[ci]))
					worst = isnan(out[ci]) ? 1e9 : fabs(out[ci] - ref) / bound;
			}
	}
out:
	free(fa);
	free(fb);
	free(fc);
	free(ra);
	free(rb);
	free(rc);
	free(out);
	return worst;
}

static const char *dt_name(unsigned int dt)
{
	static const char *const n[] = {
		"fp32", "fp16", "bf16", "e4m3", "e5m2", "int8", "int32", "mxfp8e4m3",
		"mxfp8e5m2", "mxfp6e3m2", "mxfp6e2m3", "mxfp4", "mxint8", "mx9", "mx6", "mx4",
	};

	return dt < MAIA_DTYPE_COUNT ? n[dt] : "?";
}

static void check(struct fw_tensor_engine *te, const struct gcase *g, const char *what)
{
	double r = run_case(te, g);

	tap_ok(r >= 0 && r <= 1.0, "%s: %s x %s -> %s, %ux%ux%u batch %u flags %#x act %u (err/bound %.3g)",
	       what, dt_name(g->adt), dt_name(g->bdt), dt_name(g->cdt), g->m, g->n, g->k, g->batch,
	       g->flags, g->act, r);
}

static void test_input_types(struct fw_tensor_engine *te)
{
	static const unsigned int types[] = {
		MAIA_DTYPE_FP32, MAIA_DTYPE_BF16, MAIA_DTYPE_FP16, MAIA_DTYPE_FP8_E4M3,
		MAIA_DTYPE_FP8_E5M2, MAIA_DTYPE_INT8, MAIA_DTYPE_MXFP8_E4M3, MAIA_DTYPE_MXFP8_E5M2,
		MAIA_DTYPE_MXFP6_E3M2, MAIA_DTYPE_MXFP6_E2M3, MAIA_DTYPE_MXFP4_E2M1,
		MAIA_DTYPE_MXINT8, MAIA_DTYPE_MX9, MAIA_DTYPE_MX6, MAIA_DTYPE_MX4,
	};

	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		struct gcase g = { types[i], types[(i + 3) % 15], MAIA_DTYPE_FP32, 1, 37, 64, 96,
				   0, 0, 1.0f, 0.0f, false };

		check(te, &g, "input types");
	}
}

/*
 * Operands read and results written in place (tmem's mappings end every
 * 4 KiB, splitting rows and blocks) and through staging copies (no map):
 * both must be right.
 */
static void test_read_paths(struct fw_tensor_engine *te)
{
	static const unsigned int types[] = {
		MAIA_DTYPE_FP32, MAIA_DTYPE_BF16, MAIA_DTYPE_FP16, MAIA_DTYPE_FP8_E5M2,
		MAIA_DTYPE_INT8, MAIA_DTYPE_MXFP8_E4M3, MAIA_DTYPE_MXFP4_E2M1, MAIA_DTYPE_MX6,
	};
	int (*map)(void *, uint64_t, size_t, const void **, size_t *) = mem.mem.map;
	int (*map_write)(void *, uint64_t, size_t, void **, size_t *) = mem.mem.map_write;

	for (int staged = 0; staged < 2; staged++) {
		mem.mem.map = staged ? NULL : map;
		mem.mem.map_write = staged ? NULL : map_write;
		for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
			struct gcase g = { types[i], types[(i + 1) % 8], MAIA_DTYPE_FP32, 1, 64, 96,
					   2080, i % 2 ? MAIA_GEMM_F_TRANS_B : MAIA_GEMM_F_TRANS_A,
					   0, 1.0f, 0.0f, false };

			check(te, &g, staged ? "staged reads" : "in-place reads split at pages");
		}
	}
	mem.mem.map = map;
	mem.mem.map_write = map_write;
}

static void test_output_types(struct fw_tensor_engine *te)
{
	static const unsigned int types[] = {
		MAIA_DTYPE_FP32, MAIA_DTYPE_BF16, MAIA_DTYPE_FP16, MAIA_DTYPE_FP8_E4M3,
		MAIA_DTYPE_FP8_E5M2,
	};

	for (size_t i = 0; i < 5; i++) {
		struct gcase g = { MAIA_DTYPE_BF16, MAIA_DTYPE_BF16, types[i], 1, 19, 40, 33,
				   MAIA_GEMM_F_SAT, 0, 0.5f, 0.0f, false };

		check(te, &g, "output types");
	}
}

static void test_shapes_and_epilogue(struct fw_tensor_engine *te)
{
	static const uint32_t sz[][3] = {
		{ 1, 1, 1 }, { 1, 17, 5 }, { 6, 16, 256 }, { 7, 15, 257 }, { 61, 33, 300 },
		{ 200, 300, 129 }, { 5, 700, 64 },
	};

	for (size_t i = 0; i < sizeof(sz) / sizeof(sz[0]); i++) {
		for (unsigned int f = 0; f < 4; f++) {
			struct gcase g = { MAIA_DTYPE_FP32, MAIA_DTYPE_FP32, MAIA_DTYPE_FP32, 1,
					   sz[i][0], sz[i][1], sz[i][2], f, 0, 1.0f, 0.0f, false };

			check(te, &g, "shape/transpose");
		}
	}
	for (unsigned int act = 0; act < MAIA_ACT_COUNT; act++) {
		struct gcase g = { MAIA_DTYPE_BF16, MAIA_DTYPE_FP16, MAIA_DTYPE_FP32, 1, 31, 45, 70,
				   MAIA_GEMM_F_BIAS, act, -1.5f, 0.75f, false };

		check(te, &g, "alpha/beta/bias/activation");
	}
	{
		struct gcase g = { MAIA_DTYPE_BF16, MAIA_DTYPE_BF16, MAIA_DTYPE_FP32, 5, 33, 48, 64,
				   MAIA_GEMM_F_TRANS_B, 0, 1.0f, 1.0f, true };

		check(te, &g, "strided batch, A shared by stride 0");
	}
	{
		struct gcase g = { MAIA_DTYPE_MXFP4_E2M1, MAIA_DTYPE_MXFP8_E4M3, MAIA_DTYPE_BF16, 3,
				   64, 96, 128, MAIA_GEMM_F_TRANS_A | MAIA_GEMM_F_TRANS_B, 0, 1.0f,
				   0.0f, false };

		check(te, &g, "MX operands transposed, batched");
	}
}

/*
 * One worker, plain FP32 C in place over several column blocks: one task
 * packs each K slice of A once for all of them (gemm_blocking(), a_whole).
 * A short row tile, a cut last column block, a K tail; and the same bits
 * as two workers, whose tasks pack A per column block.
 */
static void test_a_whole(struct fw_tensor_engine *te1, const struct fw_gemm_kernel *kn)
{
	struct gcase g = { MAIA_DTYPE_FP32, MAIA_DTYPE_FP32, MAIA_DTYPE_FP32, 1, 45, 2100, 300,
			   0, 0, 1.0f, 0.0f, false };
	size_t nc = (size_t)g.m * g.n;
	double *c1 = malloc(2 * nc * sizeof(double)), *c2 = c1 + nc, r1, r2;
	struct fw_tensor_engine *te2 = tengine(2);
	char what[80];

	te2->gemm_kernel = kn;
	keep_c = c1;
	trand_seed(28);
	r1 = run_case(te1, &g);
	keep_c = c2;
	trand_seed(28);
	r2 = run_case(te2, &g);
	keep_c = NULL;
	snprintf(what, sizeof(what), "kernel %s, one worker, A packed once for all columns",
		 kn->name);
	tap_ok(r1 >= 0 && r1 <= 1.0, "%s: 45x2100x300 (err/bound %.3g)", what, r1);
	tap_ok(r2 >= 0 && !memcmp(c1, c2, nc * sizeof(double)),
	       "kernel %s: one worker's C bit-identical to two workers'", kn->name);
	free(c1);
	fw_tensor_destroy(te2);
}

static void test_kernels(void)
{
	size_t n;
	const struct fw_gemm_kernel *k = fw_gemm_kernel_list(&n);

	for (size_t i = 0; i < n; i++) {
		struct fw_tensor_engine *te;
		struct gcase g = { MAIA_DTYPE_FP32, MAIA_DTYPE_BF16, MAIA_DTYPE_FP32, 2, 97, 83, 515,
				   MAIA_GEMM_F_BIAS, MAIA_ACT_RELU, 1.0f, 0.5f, false };
		char what[64];

		if (!fw_gemm_kernel_usable(&k[i])) {
			tap_ok(1, "# SKIP kernel %s: not supported by this CPU", k[i].name);
			continue;
		}
		te = tengine(2);
		te->gemm_kernel = &k[i];
		snprintf(what, sizeof(what), "kernel %s", k[i].name);
		check(te, &g, what);
		fw_tensor_destroy(te);
		/* one thread, tall C: tasks with many A sub-blocks use B in panels */
		te = tengine(1);
		te->gemm_kernel = &k[i];
		{
			struct gcase tall = { MAIA_DTYPE_BF16, MAIA_DTYPE_FP32, MAIA_DTYPE_FP32, 1, 650,
					      50, 300, MAIA_GEMM_F_BIAS, 0, 1.0f, 0.5f, false };

			/* read by columns into the kernel's A panels; K 301: 16-k blocks and a tail */
			struct gcase cols = { MAIA_DTYPE_FP32, MAIA_DTYPE_FP32, MAIA_DTYPE_FP32, 1,
					      83, 70, 301, MAIA_GEMM_F_TRANS_A, 0, 1.0f, 0.0f,
					      false };

			snprintf(what, sizeof(what), "kernel %s, B in panels", k[i].name);
			check(te, &tall, what);
			snprintf(what, sizeof(what), "kernel %s, A column-major", k[i].name);
			check(te, &cols, what);
		}
		test_a_whole(te, &k[i]);
		/* operands exact in BF16, odd K, and MX: the BF16 pair kernels take these */
		{
			struct gcase pair = { MAIA_DTYPE_BF16, MAIA_DTYPE_BF16, MAIA_DTYPE_FP32, 1, 650,
					      50, 301, MAIA_GEMM_F_TRANS_B, 0, 1.0f, 0.5f, false };
			struct gcase mx = { MAIA_DTYPE_MXFP4_E2M1, MAIA_DTYPE_MXFP8_E4M3,
					    MAIA_DTYPE_FP32, 1, 70, 90, 320, MAIA_GEMM_F_TRANS_B, 0,
					    1.0f, 0.0f, false };

			snprintf(what, sizeof(what), "kernel %s, BF16 operands", k[i].name);
			check(te, &pair, what);
			snprintf(what, sizeof(what), "kernel %s, MX operands", k[i].name);
			check(te, &mx, what);
		}
		fw_tensor_destroy(te);
	}
}

/* The smallest tile SRAM the engine accepts forces the smallest blocks. */
static void test_small_sram(void)
{
	struct fw_tensor_config cfg = { .clusters = 2, .tiles_per_cluster = 4, .sram_kib = 1024,
					  .threads = 2 };
	struct fw_tensor_engine *small = fw_tensor_create(&cfg);
	struct gcase g = { MAIA_DTYPE_BF16, MAIA_DTYPE_MXFP8_E4M3, MAIA_DTYPE_FP32, 1, 333, 544, 320,
			   MAIA_GEMM_F_TRANS_A, 0, 1.0f, 0.0f, false };

	cfg.sram_kib = 512;
	tap_ok(fw_tensor_create(&cfg) == NULL, "tile SRAM below 256 KiB is refused");
	if (!tap_ok(small != NULL, "engine with 256 KiB tiles"))
		return;
	check(small, &g, "256 KiB tile SRAM");
	fw_tensor_destroy(small);
}

static void test_pointer_batch(struct fw_tensor_engine *te)
{
	struct maia_cmd_gemm_batched cmd;
	uint32_t m = 9, n = 20, k = 24, nbatch = 4, ash[2] = { 9, 24 }, bsh[2] = { 24, 20 };
	uint32_t csh[2] = { 9, 20 };
	uint64_t pa, pb, pc, va[4], vb[4], vc[4];
	double ra[4][9 * 24], rb[4][24 * 20], out[9 * 20], worst = 0;
	float f[24 * 20];
	int st;

	tmem_reset(&mem);
	pa = tmem_alloc(&mem, 8 * nbatch);
	pb = tmem_alloc(&mem, 8 * nbatch);
	pc = tmem_alloc(&mem, 8 * nbatch);
	for (uint32_t b = 0; b < nbatch; b++) {
		va[b] = tmem_alloc(&mem, 2 * m * k);
		vb[b] = tmem_alloc(&mem, 4 * k * n);
		vc[b] = tmem_alloc(&mem, 4 * m * n);
		for (uint32_t i = 0; i < m * k; i++)
			f[i] = trand_uniform(-1, 1);
		tput(&mem, MAIA_DTYPE_BF16, va[b], 0, f, m * k, 1, ra[b]);
		for (uint32_t i = 0; i < k * n; i++)
			f[i] = trand_uniform(-1, 1);
		tput(&mem, MAIA_DTYPE_FP32, vb[b], 0, f, k * n, 1, rb[b]);
		memcpy(tmem_ptr(&mem, pa + 8 * b), &va[b], 8);
		memcpy(tmem_ptr(&mem, pb + 8 * b), &vb[b], 8);
		memcpy(tmem_ptr(&mem, pc + 8 * b), &vc[b], 8);
	}
	memset(&cmd, 0, sizeof(cmd));
	cmd.hdr.opcode = MAIA_OP_GEMM_BATCHED;
	cmd.hdr.size = sizeof(cmd);
	cmd.a = tdesc(MAIA_DTYPE_BF16, 0, 2, ash);
	cmd.b = tdesc(MAIA_DTYPE_FP32, 0, 2, bsh);
	cmd.c = tdesc(MAIA_DTYPE_FP32, 0, 2, csh);
	cmd.a_ptrs = pa;
	cmd.b_ptrs = pb;
	cmd.c_ptrs = pc;
	cmd.batch_count = nbatch;
	st = trun(te, &mem, &cmd, NULL);
	for (uint32_t b = 0; b < nbatch && !st; b++) {
		tget(&mem, MAIA_DTYPE_FP32, vc[b], 0, m * n, 1, out);
		for (uint32_t i = 0; i < m; i++)
			for (uint32_t j = 0; j < n; j++) {
				double s = 0, sa = 0;

				for (uint32_t kk = 0; kk < k; kk++) {
					s += ra[b][i * k + kk] * rb[b][kk * n + j];
					sa += fabs(ra[b][i * k + kk] * rb[b][kk * n + j]);
				}
				if (fabs(out[i * n + j] - s) / ((k + 4) * ldexp(1, -24) * sa + 1e-30) > worst)
					worst = fabs(out[i * n + j] - s) / ((k + 4) * ldexp(1, -24) * sa + 1e-30);
			}
	}
	tap_ok(!st && worst <= 1, "pointer-array batched GEMM (status %d, err/bound %.3g)", st, worst);
	/* a pointer into unmapped memory faults, a wrapping one is a bad descriptor */
	va[2] = 0x1000;
	memcpy(tmem_ptr(&mem, pa + 16), &va[2], 8);
	st = trun(te, &mem, &cmd, NULL);
	tap_ok(st == MAIA_STATUS_MMU_FAULT, "batched GEMM with an unmapped A pointer: MMU fault (%d)", st);
	va[2] = UINT64_MAX - 16;
	memcpy(tmem_ptr(&mem, pa + 16), &va[2], 8);
	st = trun(te, &mem, &cmd, NULL);
	tap_ok(st == MAIA_STATUS_BAD_DESC, "batched GEMM with a wrapping A pointer: bad descriptor (%d)", st);
	cmd.a_ptrs = pa + 4;
	st = trun(te, &mem, &cmd, NULL);
	tap_ok(st == MAIA_STATUS_BAD_CMD, "misaligned pointer array: bad command (%d)", st);
}

static void test_errors(struct fw_tensor_engine *te)
{
	uint32_t s2[2] = { 8, 8 }, s3[2] = { 8, 9 };
	struct maia_cmd_gemm cmd, c2;
	uint64_t v = tmem_alloc(&mem, 4 * 64);
	int st;

	memset(&cmd, 0, sizeof(cmd));
	cmd.hdr.opcode = MAIA_OP_GEMM;
	cmd.hdr.size = sizeof(cmd);
	cmd.a = tdesc(MAIA_DTYPE_FP32, v, 2, s2);
	cmd.b = tdesc(MAIA_DTYPE_FP32, v, 2, s2);
	cmd.c = tdesc(MAIA_DTYPE_FP32, v, 2, s2);
	tap_ok(trun(te, &mem, &cmd, NULL) == MAIA_STATUS_OK, "8x8x8 in place is accepted");
	c2 = cmd;
	c2.b = tdesc(MAIA_DTYPE_FP32, v, 2, s3);
	tap_ok(trun(te, &mem, &c2, NULL) == MAIA_STATUS_BAD_DESC, "K mismatch: bad descriptor");
	c2 = cmd;
	c2.reserved = 1;
	tap_ok(trun(te, &mem, &c2, NULL) == MAIA_STATUS_BAD_CMD, "reserved field set: bad command");
	c2 = cmd;
	c2.hdr.flags = 0x100;
	tap_ok(trun(te, &mem, &c2, NULL) == MAIA_STATUS_BAD_CMD, "unknown flag: bad command");
	c2 = cmd;
	c2.hdr.size = sizeof(cmd) - 8;
	tap_ok(trun(te, &mem, &c2, NULL) == MAIA_STATUS_BAD_CMD, "short command: bad command");
	c2 = cmd;
	c2.c.dtype = MAIA_DTYPE_INT8;
	tap_ok(trun(te, &mem, &c2, NULL) == MAIA_STATUS_BAD_DESC, "INT8 output: bad descriptor");
	c2 = cmd;
	c2.c.strides[0] = 1;
	tap_ok(trun(te, &mem, &c2, NULL) == MAIA_STATUS_BAD_DESC, "self-overlapping C: bad descriptor");
	c2 = cmd;
	c2.activation = MAIA_ACT_COUNT;
	tap_ok(trun(te, &mem, &c2, NULL) == MAIA_STATUS_BAD_CMD, "unknown activation: bad command");
	c2 = cmd;
	c2.bias.rank = 1;
	tap_ok(trun(te, &mem, &c2, NULL) == MAIA_STATUS_BAD_CMD, "bias descriptor without the flag: bad command");
	c2 = cmd;
	c2.a.addr = 0x2000;
	st = trun(te, &mem, &c2, NULL);
	tap_ok(st == MAIA_STATUS_MMU_FAULT, "A outside the address space: MMU fault (%d)", st);
	c2 = cmd;
	c2.c.addr = TMEM_BASE + mem.size - 8;
	st = trun(te, &mem, &c2, NULL);
	tap_ok(st == MAIA_STATUS_MMU_FAULT, "C running off the end: MMU fault (%d)", st);
}

int main(void)
{
	struct fw_tensor_engine *te;
	struct maia_op_stats stats;

	tmem_init(&mem, 64ull << 20);
	trand_seed(1);
	te = tengine(0);
	if (!tap_ok(te != NULL, "engine created"))
		return tap_done();
	test_input_types(te);
	test_read_paths(te);
	test_output_types(te);
	test_shapes_and_epilogue(te);
	test_kernels();
	test_small_sram();
	test_pointer_batch(te);
	test_errors(te);
	{
		struct gcase g = { MAIA_DTYPE_FP32, MAIA_DTYPE_FP32, MAIA_DTYPE_FP32, 1, 64, 64, 64,
				   0, 0, 1, 0, false };
		uint32_t sh[2] = { 64, 64 };
		struct maia_cmd_gemm cmd;
		uint64_t v;

		run_case(te, &g);
		v = tmem_alloc(&mem, 3 * 4 * 64 * 64);
		memset(&cmd, 0, sizeof(cmd));
		cmd.hdr.opcode = MAIA_OP_GEMM;
		cmd.hdr.size = sizeof(cmd);
		cmd.a = tdesc(MAIA_DTYPE_FP32, v, 2, sh);
		cmd.b = tdesc(MAIA_DTYPE_FP32, v + 4 * 64 * 64, 2, sh);
		cmd.c = tdesc(MAIA_DTYPE_FP32, v + 8 * 64 * 64, 2, sh);
		memset(&stats, 0, sizeof(stats));
		trun(te, &mem, &cmd, &stats);
		tap_ok(stats.flops == 2ull * 64 * 64 * 64 && stats.bytes_read >= 2 * 4 * 64 * 64 &&
		       stats.bytes_written == 4 * 64 * 64 && stats.busy_ns > 0,
		       "stats: %llu flops, %llu bytes read, %llu written, %llu ns busy",
		       (unsigned long long)stats.flops, (unsigned long long)stats.bytes_read,
		       (unsigned long long)stats.bytes_written, (unsigned long long)stats.busy_ns);
	}
	fw_tensor_destroy(te);
	tmem_free(&mem);
	return tap_done();
}
