// SPDX-License-Identifier: MIT
/*
 * Every GEMM micro-kernel this CPU can run, called directly with its own
 * packers (not only the one the engine picks):
 * - small integers, whose products and sums are exact in FP32 in any order:
 *   the C tile must equal a plain integer loop bit for bit, with and without
 *   accumulation, for k counts that leave partial packer groups and a lone
 *   last k of a BF16 pair; nothing outside the tile may change;
 * - random values (BF16-exact for the BF16 pair kernels, whose operands
 *   always are): within the documented bound of a double reference,
 *     |C - ref| <= 1.25 (K + 4) 2^-24 sum_k |a b| + K 2^-126
 *   (Documentation/tensor-engine.rst), and within twice that of the
 *   portable kernel of the same operand format.
 * Kernels the CPU lacks are reported as skipped.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"
#include "tap.h"
#include "../../../firmware-sim/src/tensor/te.h"

#define MAXK	513
#define GUARD	16	/* extra C columns, and rows, that must stay untouched */

struct operands {
	unsigned int mr, nr;
	size_t kc, ldb, ldc;
	float *rows;	/* mr x kc, row-major */
	float *b;	/* kc x ldb, row-major */
	float *c;	/* (mr + GUARD) x ldc */
};

static void *zalloc(size_t bytes)
{
	void *p = aligned_alloc(64, (bytes + 63) / 64 * 64);

	if (!p) {
		perror("test_gemm_kernels");
		exit(1);
	}
	memset(p, 0, (bytes + 63) / 64 * 64);
	return p;
}

/* Run k on the operands (C as it is in o->c), through k's own packers. */
static void run_kernel(const struct fw_gemm_kernel *k, const struct operands *o, int accumulate)
{
	size_t kq = k->kpair ? (o->kc + k->kpair - 1) / k->kpair * k->kpair : o->kc;
	float *a = zalloc(sizeof(float) * k->mr * o->kc + 64);
	uint16_t *a2 = zalloc(sizeof(uint16_t) * k->mr * kq);
	uint16_t *b2 = zalloc(sizeof(uint16_t) * k->nr * kq);

	if (k->a_rows) {
		k->pack_a(o->rows, o->kc, o->kc, k->mr, (float *)a2);
	} else {
		k->pack_a(o->rows, o->kc, o->kc, k->mr, a);
		if (k->kpair)
			k->to_pairs(a, k->mr, o->kc, k->mr, a2);
	}
	if (k->kpair) {
		k->to_pairs(o->b, o->ldb, o->kc, k->nr, b2);
		k->fn(o->kc, a2, b2, 2 * k->nr, o->c, o->ldc, accumulate);
	} else {
		k->fn(o->kc, a, o->b, o->ldb, o->c, o->ldc, accumulate);
	}
	free(a);
	free(a2);
	free(b2);
}

static void operands_init(struct operands *o, const struct fw_gemm_kernel *k, size_t kc)
{
	o->mr = k->mr;
	o->nr = k->nr;
	o->kc = kc;
	o->ldb = k->nr + 16;
	o->ldc = k->nr + GUARD;
	o->rows = zalloc(sizeof(float) * k->mr * kc);
	o->b = zalloc(sizeof(float) * kc * o->ldb);
	o->c = zalloc(sizeof(float) * (k->mr + GUARD) * o->ldc);
}

static void operands_free(struct operands *o)
{
	free(o->rows);
	free(o->b);
	free(o->c);
}

/* C's start values: small integers, the guard area a value no result has. */
static void c_init(const struct operands *o)
{
	for (size_t i = 0; i < o->mr + GUARD; i++)
		for (size_t j = 0; j < o->ldc; j++)
			o->c[i * o->ldc + j] = i < o->mr && j < o->nr ? (float)((int)((i * 3 + j) % 7) - 3)
								   : 12345.0f;
}

static bool guard_intact(const struct operands *o)
{
	for (size_t i = 0; i < o->mr + GUARD; i++)
		for (size_t j = 0; j < o->ldc; j++)
			if ((i >= o->mr || j >= o->nr) && o->c[i * o->ldc + j] != 12345.0f)
				return false;
	return true;
}

static void test_exact(const struct fw_gemm_kernel *k)
{
	static const size_t kcs[] = { 1, 2, 3, 8, 17, 255, 256, MAXK };

	for (size_t t = 0; t < sizeof(kcs) / sizeof(kcs[0]); t++) {
		for (int acc = 0; acc < 2; acc++) {
			struct operands o;
			long bad = 0;

			operands_init(&o, k, kcs[t]);
			for (size_t i = 0; i < o.mr * o.kc; i++)
				o.rows[i] = (float)((int)(trand_uniform(0, 17)) - 8);
			for (size_t i = 0; i < o.kc * o.ldb; i++)
				o.b[i] = (float)((int)(trand_uniform(0, 17)) - 8);
			c_init(&o);
			run_kernel(k, &o, acc);
			for (size_t i = 0; i < o.mr; i++)
				for (size_t j = 0; j < o.nr; j++) {
					long want = acc ? (long)((int)((i * 3 + j) % 7) - 3) : 0;

					for (size_t kk = 0; kk < o.kc; kk++)
						want += (long)o.rows[i * o.kc + kk] *
							(long)o.b[kk * o.ldb + j];
					bad += o.c[i * o.ldc + j] != (float)want;
				}
			tap_ok(!bad && guard_intact(&o),
			       "kernel %s: integers, k = %zu, %s: exact (%ld wrong), tile only",
			       k->name, o.kc, acc ? "accumulating" : "overwriting", bad);
			operands_free(&o);
		}
	}
}

static float bf16_round(float x)
{
	return fw_bf16_to_f32(fw_f32_to_bf16(x));
}

/* The portable kernel that takes the same operand format as k. */
static const struct fw_gemm_kernel *portable_of(const struct fw_gemm_kernel *k)
{
	return fw_gemm_kernel_find(k->kpair ? "portable-bf16" : "portable");
}

/*
 * Random values against a double reference and against the portable
 * kernel: with a tile of the same shape (mr x nr) when the portable kernel
 * has it, else over the rows and columns both have.
 */
static void test_bound(const struct fw_gemm_kernel *k)
{
	static const size_t kcs[] = { 7, 256, MAXK };
	const struct fw_gemm_kernel *p = portable_of(k);

	for (size_t t = 0; t < sizeof(kcs) / sizeof(kcs[0]); t++) {
		struct operands o, q;
		double worst = 0, worst_p = 0;
		unsigned int rows, cols;

		operands_init(&o, k, kcs[t]);
		operands_init(&q, p, kcs[t]);
		for (size_t i = 0; i < o.mr * o.kc; i++) {
			float x = trand_uniform(-1, 1);

			o.rows[i] = k->kpair ? bf16_round(x) : x;
		}
		for (size_t i = 0; i < o.kc * o.ldb; i++) {
			float x = trand_uniform(-1, 1);

			o.b[i] = k->kpair ? bf16_round(x) : x;
		}
		/* the portable kernel gets the same values in its own tile shape */
		rows = o.mr < q.mr ? o.mr : q.mr;
		cols = o.nr < q.nr ? o.nr : q.nr;
		for (size_t i = 0; i < rows; i++)
			memcpy(q.rows + i * q.kc, o.rows + i * o.kc, sizeof(float) * o.kc);
		for (size_t kk = 0; kk < o.kc; kk++)
			memcpy(q.b + kk * q.ldb, o.b + kk * o.ldb, sizeof(float) * cols);
		c_init(&o);
		c_init(&q);
		run_kernel(k, &o, 1);
		run_kernel(p, &q, 1);
		for (size_t i = 0; i < o.mr; i++)
			for (size_t j = 0; j < o.nr; j++) {
				double ref = (double)((int)((i * 3 + j) % 7) - 3), sabs = fabs(ref), bound, err;

				for (size_t kk = 0; kk < o.kc; kk++) {
					double prod = (double)o.rows[i * o.kc + kk] * o.b[kk * o.ldb + j];

					ref += prod;
					sabs += fabs(prod);
				}
				bound = 1.25 * (double)(o.kc + 4) * ldexp(1, -24) * sabs +
					(double)o.kc * ldexp(1, -126);
				err = fabs(o.c[i * o.ldc + j] - ref) / bound;
				if (isnan(err) || err > worst)
					worst = isnan(err) ? 1e9 : err;
				if (i >= rows || j >= cols)
					continue;
				err = fabs(o.c[i * o.ldc + j] - q.c[i * q.ldc + j]) / (2 * bound);
				if (isnan(err) || err > worst_p)
					worst_p = isnan(err) ? 1e9 : err;
			}
		tap_ok(worst <= 1.0 && worst_p <= 1.0 && guard_intact(&o),
		       "kernel %s: random %s values, k = %zu: err/bound %.3g, vs %s %.3g",
		       k->name, k->kpair ? "BF16" : "FP32", o.kc, worst, p->name, worst_p);
		operands_free(&o);
		operands_free(&q);
	}
}

int main(void)
{
	size_t n;
	const struct fw_gemm_kernel *k = fw_gemm_kernel_list(&n);

	trand_seed(28);
	for (size_t i = 0; i < n; i++) {
		if (!fw_gemm_kernel_usable(&k[i])) {
			tap_ok(1, "# SKIP kernel %s: not supported by this CPU", k[i].name);
			continue;
		}
		test_exact(&k[i]);
		test_bound(&k[i]);
	}
	return tap_done();
}
