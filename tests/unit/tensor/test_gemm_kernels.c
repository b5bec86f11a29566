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
 * A kernel's fn_rows (the first rows of a tile only) and fn_rows2 (those
 * rows of two tiles at once) are held to the same exactness for every row
 * count, the tiles' other rows untouched; fn_pf (the same, fetching
 * lines into L2 as it goes) bit-identical to them.
 * Then each FP32 kernel through the engine (MAIA_OP_GEMM): a plain FP32
 * result is written in place when C maps as one aligned range, else through
 * the tile's SRAM C block; both must be exact on integers, edges of the
 * blocks and K slices included, and leave everything outside C alone; a C
 * that overlaps A must not be written in place (A would change under the
 * later K slices), nor one over an MX operand's scales, while one between
 * its elements and its scales may be.
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

static float bf16_round(float x)
{
	return fw_bf16_to_f32(fw_f32_to_bf16(x));
}

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

/*
 * Run k on the operands (C as it is in o->c), through k's own packers; with
 * rows (1..mr-1) its fn_rows for that many rows of the tile.
 */
static void run_kernel_rows(const struct fw_gemm_kernel *k, const struct operands *o,
			    int accumulate, unsigned int rows)
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
		if (rows)
			k->fn_rows(o->kc, a2, b2, 2 * k->nr, o->c, o->ldc, accumulate, rows);
		else
			k->fn(o->kc, a2, b2, 2 * k->nr, o->c, o->ldc, accumulate);
	} else if (rows) {
		k->fn_rows(o->kc, a, o->b, o->ldb, o->c, o->ldc, accumulate, rows);
	} else {
		k->fn(o->kc, a, o->b, o->ldb, o->c, o->ldc, accumulate);
	}
	free(a);
	free(a2);
	free(b2);
}

static void run_kernel(const struct fw_gemm_kernel *k, const struct operands *o, int accumulate)
{
	run_kernel_rows(k, o, accumulate, 0);
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

/*
 * fn_rows, where a kernel has one (the tile at a block's last rows): for
 * every row count below mr, exact on integers in those rows, the tile's
 * other rows and everything around it untouched.
 */
static void test_rows(const struct fw_gemm_kernel *k)
{
	static const size_t kcs[] = { 5, 37, 256 };

	for (size_t t = 0; k->fn_rows && t < sizeof(kcs) / sizeof(kcs[0]); t++) {
		for (unsigned int rows = 1; rows < k->mr; rows++) {
			struct operands o;
			long bad = 0;

			operands_init(&o, k, kcs[t]);
			for (size_t i = 0; i < o.mr * o.kc; i++)
				o.rows[i] = (float)((int)(trand_uniform(0, 17)) - 8);
			for (size_t i = 0; i < o.kc * o.ldb; i++)
				o.b[i] = (float)((int)(trand_uniform(0, 17)) - 8);
			c_init(&o);
			run_kernel_rows(k, &o, 1, rows);
			for (size_t i = 0; i < o.mr; i++)
				for (size_t j = 0; j < o.nr; j++) {
					long want = (long)((int)((i * 3 + j) % 7) - 3);

					for (size_t kk = 0; i < rows && kk < o.kc; kk++)
						want += (long)o.rows[i * o.kc + kk] *
							(long)o.b[kk * o.ldb + j];
					bad += o.c[i * o.ldc + j] != (float)want;
				}
			tap_ok(!bad && guard_intact(&o),
			       "kernel %s: %u of %u rows, integers, k = %zu: exact (%ld wrong), "
			       "those rows only", k->name, rows, k->mr, o.kc, bad);
			operands_free(&o);
		}
	}
}

/*
 * fn_rows on random values (BF16-exact for the pair kernels): each of its
 * rows bit-identical to the same row of the full tile, for every row
 * count ("the same instructions for their rows"), not only within the
 * bound.
 */
static void test_rows_same(const struct fw_gemm_kernel *k)
{
	static const size_t kcs[] = { 7, 256, 301 };

	for (size_t t = 0; k->fn_rows && t < sizeof(kcs) / sizeof(kcs[0]); t++) {
		struct operands o, q;
		long bad = 0;

		operands_init(&o, k, kcs[t]);
		operands_init(&q, k, kcs[t]);
		for (size_t i = 0; i < o.mr * o.kc; i++) {
			float x = trand_uniform(-1, 1);

			o.rows[i] = q.rows[i] = k->kpair ? bf16_round(x) : x;
		}
		for (size_t i = 0; i < o.kc * o.ldb; i++) {
			float x = trand_uniform(-1, 1);

			o.b[i] = q.b[i] = k->kpair ? bf16_round(x) : x;
		}
		c_init(&o);
		run_kernel(k, &o, 1);
		for (unsigned int rows = 1; rows < k->mr; rows++) {
			c_init(&q);
			run_kernel_rows(k, &q, 1, rows);
			for (size_t i = 0; i < rows; i++)
				bad += memcmp(q.c + i * q.ldc, o.c + i * o.ldc,
					      sizeof(float) * o.nr) != 0;
			bad += !guard_intact(&q);
			for (size_t i = rows; i < o.mr; i++)	/* the other rows: as c_init left them */
				for (size_t j = 0; j < o.nr; j++)
					bad += q.c[i * q.ldc + j] != (float)((int)((i * 3 + j) % 7) - 3);
		}
		tap_ok(!bad, "kernel %s: fn_rows 1..%u of random values, k = %zu: each row "
		       "bit-identical to the full tile's (%ld differ)", k->name, k->mr - 1, o.kc, bad);
		operands_free(&o);
		operands_free(&q);
	}
}

/*
 * fn_rows2, where a kernel has one (few rows, two column tiles at once):
 * for every row count below mr and B as rows (the second tile nr columns
 * on) and as panels (kc * nr floats on), exact on integers in those rows
 * of both tiles, everything else of C untouched.
 */
static void test_rows2(const struct fw_gemm_kernel *k)
{
	static const size_t kcs[] = { 5, 37, 256 };
	const unsigned int nr = k->nr, w = 2 * k->nr;

	for (size_t t = 0; k->fn_rows2 && t < sizeof(kcs) / sizeof(kcs[0]); t++) {
		for (unsigned int rows = 1; rows < k->mr; rows++) {
			for (int panels = 0; panels < 2; panels++) {
				size_t kc = kcs[t], ldb = panels ? nr : w + 16, ldc = w + GUARD;
				size_t bnext = panels ? kc * nr : nr;
				float *ra = zalloc(sizeof(float) * k->mr * kc);
				float *a = zalloc(sizeof(float) * k->mr * kc + 64);
				float *bf = zalloc(sizeof(float) * kc * w);
				float *b = zalloc(sizeof(float) * kc * (w + 16));
				float *c = zalloc(sizeof(float) * (k->mr + GUARD) * ldc);
				long bad = 0;

				for (size_t i = 0; i < k->mr * kc; i++)
					ra[i] = (float)((int)(trand_uniform(0, 17)) - 8);
				for (size_t i = 0; i < kc * w; i++)
					bf[i] = (float)((int)(trand_uniform(0, 17)) - 8);
				for (size_t kk = 0; kk < kc; kk++)
					for (unsigned int j = 0; j < w; j++)
						b[j / nr * bnext + kk * ldb + j % nr] = bf[kk * w + j];
				for (size_t i = 0; i < (k->mr + GUARD) * ldc; i++)
					c[i] = (float)((int)(i % 7) - 3);
				k->pack_a(ra, kc, kc, k->mr, a);
				k->fn_rows2(kc, a, b, ldb, bnext, c, ldc, 1, rows, NULL);
				for (size_t i = 0; i < k->mr + GUARD; i++)
					for (size_t j = 0; j < ldc; j++) {
						long want = (long)((int)((i * ldc + j) % 7) - 3);

						for (size_t kk = 0; i < rows && j < w && kk < kc; kk++)
							want += (long)ra[i * kc + kk] *
								(long)bf[kk * w + j];
						bad += c[i * ldc + j] != (float)want;
					}
				tap_ok(!bad, "kernel %s: %u of %u rows of two tiles, B as %s, "
				       "integers, k = %zu: exact (%ld wrong), those rows only",
				       k->name, rows, k->mr, panels ? "panels" : "rows", kc, bad);
				free(ra);
				free(a);
				free(bf);
				free(b);
				free(c);
			}
		}
	}
}

/*
 * Whether pf moved on by the lines it no longer holds (n0 at the call, at
 * least min(n0, want) of them: one per k), each of them in the stream
 * that starts at line 0 of base.
 */
static bool pf_moved(const struct fw_gemm_pf *pf, const char *base, size_t n0, size_t want)
{
	size_t used = n0 - pf->n, at = (size_t)(pf->p - base) / pf->rs * pf->lines + pf->line;

	return pf->n <= n0 && used >= (n0 < want ? n0 : want) && at == used &&
	       pf->line < pf->lines && (size_t)(pf->p - base) % pf->rs == 0;
}

/*
 * fn_pf and fn_rows2 with lines to fetch (struct fw_gemm_pf): on random
 * values, C bit-identical to the same call without (fn or fn_rows for
 * fn_pf, fn_rows2 with NULL), for every row count and none, fewer and
 * more lines than k; the stream left at its first line not fetched.
 */
static void test_pf(const struct fw_gemm_kernel *k)
{
	static const size_t kcs[] = { 5, 37, 256 };
	enum { LINES = 3, RS = 256 };

	for (size_t t = 0; k->fn_pf && t < sizeof(kcs) / sizeof(kcs[0]); t++) {
		size_t kc = kcs[t], nr = k->nr, w = 2 * nr, ldb = w + 16, ldc = w + GUARD;
		size_t counts[] = { 0, kc / 2 + 1, 2 * kc + 5 }, csz = (k->mr + GUARD) * ldc;
		char *mem = zalloc((2 * kc + 5) / LINES * RS + 2 * RS);
		float *ra = zalloc(sizeof(float) * k->mr * kc);
		float *a = zalloc(sizeof(float) * k->mr * kc + 64);
		float *b = zalloc(sizeof(float) * kc * ldb);
		float *c = zalloc(sizeof(float) * csz), *want = zalloc(sizeof(float) * csz);
		long bad = 0, lost = 0;

		for (size_t i = 0; i < k->mr * kc; i++)
			ra[i] = trand_uniform(-1, 1);
		for (size_t i = 0; i < kc * ldb; i++)
			b[i] = trand_uniform(-1, 1);
		k->pack_a(ra, kc, kc, k->mr, a);
		for (unsigned int rows = 1; rows <= k->mr; rows++) {
			for (int two = 0; two < 2; two++) {
				if (two && (!k->fn_rows2 || rows == k->mr))
					continue;
				for (size_t q = 0; q < csz; q++)
					want[q] = (float)((int)(q % 7) - 3);
				if (two)
					k->fn_rows2(kc, a, b, ldb, nr, want, ldc, 1, rows, NULL);
				else if (rows < k->mr)
					k->fn_rows(kc, a, b, ldb, want, ldc, 1, rows);
				else
					k->fn(kc, a, b, ldb, want, ldc, 1);
				for (size_t n = 0; n < 3; n++) {
					struct fw_gemm_pf pf = { .p = mem, .rs = RS, .n = counts[n],
								 .lines = LINES };

					for (size_t q = 0; q < csz; q++)
						c[q] = (float)((int)(q % 7) - 3);
					if (two)
						k->fn_rows2(kc, a, b, ldb, nr, c, ldc, 1, rows, &pf);
					else
						k->fn_pf(kc, a, b, ldb, c, ldc, 1, rows, &pf);
					bad += memcmp(c, want, sizeof(float) * csz) != 0;
					lost += !pf_moved(&pf, mem, counts[n], kc);
				}
			}
		}
		tap_ok(!bad && !lost, "kernel %s: fn_pf%s with 0, %zu and %zu lines to fetch, "
		       "k = %zu: C bit-identical to the calls without (%ld differ), the stream "
		       "left at its next line (%ld not)", k->name, k->fn_rows2 ? " and fn_rows2" : "",
		       counts[1], counts[2], kc, bad, lost);
		free(mem);
		free(ra);
		free(a);
		free(b);
		free(c);
		free(want);
	}
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

/* A mapping of the whole buffer (tmem's stops at every 4 KiB: no in-place C). */
static int whole_map(void *opaque, uint64_t va, size_t len, const void **ptr, size_t *avail)
{
	struct tmem *m = opaque;

	if (va < m->base || va - m->base >= m->size)
		return MAIA_STATUS_MMU_FAULT;
	*ptr = m->buf + (va - m->base);
	*avail = len < m->size - (va - m->base) ? len : m->size - (va - m->base);
	return MAIA_STATUS_OK;
}

static int whole_map_write(void *opaque, uint64_t va, size_t len, void **ptr, size_t *avail)
{
	return whole_map(opaque, va, len, (const void **)ptr, avail);
}

#define SENTINEL	12345.0f

/*
 * C[b] = A[b] B[b] through the engine with kernel k on small integers:
 * A batch x m x k (row stride lda), B batch x k x n, C batch x m x n with
 * row stride ldc at c_va (A's memory when c_in_a: C is then columns
 * c_in_a.. of A's rows, ldc = lda). Every float of the memory that is not
 * part of C must keep its value. Returns the number of wrong floats.
 */
static long engine_case(const struct fw_gemm_kernel *k, unsigned int threads, bool whole,
			unsigned int sram_kib,
			uint32_t batch, uint32_t m, uint32_t n, uint32_t kd, uint32_t lda,
			uint32_t ldc, uint32_t c_in_a)
{
	uint64_t na = (uint64_t)batch * m * lda, nb = (uint64_t)batch * kd * n;
	uint64_t nc = c_in_a ? 0 : (uint64_t)batch * m * ldc, size = 4 * (na + nb + nc) + 8192;
	struct fw_tensor_config cfg = { .clusters = 2, .tiles_per_cluster = 4,
					  .sram_kib = sram_kib, .threads = threads };
	struct fw_tensor_engine *te = sram_kib ? fw_tensor_create(&cfg) : tengine(threads);
	struct maia_cmd_gemm cmd;
	struct tmem mem;
	uint64_t va, vb, vc;
	float *a, *b, *c, *a0;
	long bad = 0;

	tmem_init(&mem, size);
	free(mem.buf);	/* 4 KiB aligned, as device memory is: in place needs 64 bytes */
	mem.buf = zalloc(size);
	if (whole) {
		mem.mem.map = whole_map;
		mem.mem.map_write = whole_map_write;
	}
	va = tmem_alloc(&mem, 4 * na);
	vb = tmem_alloc(&mem, 4 * nb);
	vc = c_in_a ? va + 4 * c_in_a : tmem_alloc(&mem, 4 * nc);
	a = tmem_ptr(&mem, va);
	b = tmem_ptr(&mem, vb);
	c = tmem_ptr(&mem, vc);
	for (uint64_t i = 0; i < size / 4; i++)
		((float *)mem.buf)[i] = SENTINEL;
	for (uint64_t i = 0; i < na; i++)
		a[i] = (float)((int)trand_uniform(0, 9) - 4);
	for (uint64_t i = 0; i < nb; i++)
		b[i] = (float)((int)trand_uniform(0, 9) - 4);
	a0 = zalloc(4 * na);
	memcpy(a0, a, 4 * na);

	memset(&cmd, 0, sizeof(cmd));
	cmd.hdr.opcode = MAIA_OP_GEMM;
	cmd.hdr.size = sizeof(cmd);
	cmd.a = tdesc(MAIA_DTYPE_FP32, va, 3, (uint32_t[]){ batch, m, kd });
	cmd.a.strides[1] = lda;
	cmd.a.strides[0] = (uint64_t)m * lda;
	cmd.b = tdesc(MAIA_DTYPE_FP32, vb, 3, (uint32_t[]){ batch, kd, n });
	cmd.c = tdesc(MAIA_DTYPE_FP32, vc, 3, (uint32_t[]){ batch, m, n });
	cmd.c.strides[1] = ldc;
	cmd.c.strides[0] = (uint64_t)m * ldc;
	if (te)
		te->gemm_kernel = k;
	if (!te || trun(te, &mem, &cmd, NULL) != MAIA_STATUS_OK)
		bad = -1;
	for (uint32_t bi = 0; bi < batch && bad >= 0; bi++)
		for (uint32_t i = 0; i < m; i++)
			for (uint32_t j = 0; j < n; j++) {
				const float *ar = a0 + ((uint64_t)bi * m + i) * lda;
				long want = 0;

				for (uint32_t kk = 0; kk < kd; kk++)
					want += (long)ar[kk] * (long)b[((uint64_t)bi * kd + kk) * n + j];
				bad += c[((uint64_t)bi * m + i) * ldc + j] != (float)want;
			}
	/* outside C: A and B as they were, the rest still the sentinel */
	for (uint64_t i = 0; i < size / 4 && bad >= 0; i++) {
		uint64_t e = (i * 4 + mem.base - vc) / 4, r = e / ldc;
		bool in_c = i * 4 + mem.base >= vc && r < (uint64_t)batch * m && e % ldc < n;
		float *f = (float *)mem.buf + i;

		if (in_c)
			continue;
		if (f >= a && f < a + na)
			bad += *f != a0[f - a];
		else if (f < b || f >= b + nb)
			bad += *f != SENTINEL;
	}
	free(a0);
	tmem_free(&mem);
	fw_tensor_destroy(te);
	return bad;
}

/*
 * An MXFP8 A (m x 608: three K slices) and B through the engine with
 * kernel k (forced, as MAIA_TE_ISA does: the engine would give MX operands
 * to the fastest BF16 kernel), on small integers (exact in MXFP8), its A
 * decoded straight into the kernel's panels, C an FP32 m x 64 placed
 * between A's elements and A's scales or, with on_scales, over A's scales.
 * An operand's elements and scales are separate ranges: C between them
 * may be written in place, C over the scales must not be (the later K
 * slices read them). Returns the number of wrong floats in C plus the
 * bytes outside C that changed.
 */
static long engine_mx_case(const struct fw_gemm_kernel *k, uint32_t m, bool on_scales)
{
	const uint32_t n = 64, kd = 608;
	const unsigned int dt = MAIA_DTYPE_MXFP8_E4M3;
	uint64_t na = (uint64_t)m * kd, nb = (uint64_t)kd * n, nc = (uint64_t)m * n;
	uint64_t size = na + nb + 4 * nc + na / 32 + nb / 32 + 8192, va, vc, sa, vb, sb;
	struct fw_tensor_engine *te = tengine(1);
	float *fa = zalloc(4 * na), *fb = zalloc(4 * nb);
	double *ra = zalloc(8 * na), *rb = zalloc(8 * nb);
	uint8_t *before = zalloc(size);
	char *prev = getenv("MAIA_TE_ISA");
	struct maia_cmd_gemm cmd;
	struct tmem mem;
	long bad = 0;

	tmem_init(&mem, size);
	free(mem.buf);
	mem.buf = zalloc(size);
	mem.mem.map = whole_map;
	mem.mem.map_write = whole_map_write;
	va = tmem_alloc(&mem, na);
	vc = tmem_alloc(&mem, 4 * nc);
	sa = on_scales ? vc + 4 * 8 : tmem_alloc(&mem, na / 32);
	vb = tmem_alloc(&mem, nb);
	sb = tmem_alloc(&mem, nb / 32);
	for (uint64_t i = 0; i < na; i++)
		fa[i] = (float)((int)trand_uniform(0, 9) - 4);
	for (uint64_t i = 0; i < nb; i++)
		fb[i] = (float)((int)trand_uniform(0, 9) - 4);
	tput(&mem, dt, va, sa, fa, na, 1.0f, ra);
	tput(&mem, dt, vb, sb, fb, nb, 1.0f, rb);
	memcpy(before, mem.buf, size);

	memset(&cmd, 0, sizeof(cmd));
	cmd.hdr.opcode = MAIA_OP_GEMM;
	cmd.hdr.size = sizeof(cmd);
	cmd.a = tdesc(dt, va, 2, (uint32_t[]){ m, kd });
	cmd.a.scale_addr = sa;
	cmd.b = tdesc(dt, vb, 2, (uint32_t[]){ kd, n });
	cmd.b.scale_addr = sb;
	cmd.c = tdesc(MAIA_DTYPE_FP32, vc, 2, (uint32_t[]){ m, n });
	if (te)
		te->gemm_kernel = k;
	/* k itself, not the fastest BF16 kernel the engine would trade it for */
	if (prev)
		prev = strdup(prev);
	setenv("MAIA_TE_ISA", k->name, 1);
	if (!te || trun(te, &mem, &cmd, NULL) != MAIA_STATUS_OK)
		bad = -1;
	if (prev)
		setenv("MAIA_TE_ISA", prev, 1);
	else
		unsetenv("MAIA_TE_ISA");
	free(prev);
	for (uint32_t i = 0; i < m && bad >= 0; i++)
		for (uint32_t j = 0; j < n; j++) {
			double want = 0;
			float got;

			for (uint32_t kk = 0; kk < kd; kk++)
				want += ra[(uint64_t)i * kd + kk] * rb[(uint64_t)kk * n + j];
			memcpy(&got, mem.buf + (vc - mem.base) + 4 * ((uint64_t)i * n + j), 4);
			bad += got != want;
		}
	for (uint64_t i = 0; i < size && bad >= 0; i++)
		if (i + mem.base < vc || i + mem.base >= vc + 4 * nc)
			bad += mem.buf[i] != before[i];
	free(fa);
	free(fb);
	free(ra);
	free(rb);
	free(before);
	tmem_free(&mem);
	fw_tensor_destroy(te);
	return bad;
}

static void test_engine(const struct fw_gemm_kernel *k)
{
	long bad;

	if (k->kpair) {	/* the engine gives BF16 pair kernels BF16-exact operands only */
		bad = engine_mx_case(k, 40, false);
		tap_ok(!bad, "kernel %s, engine: MXFP8 40x64x608, C between A's elements and "
		       "scales: exact (%ld wrong)", k->name, bad);
		bad = engine_mx_case(k, 40, true);
		tap_ok(!bad, "kernel %s, engine: MXFP8 40x64x608, C over A's scales is not "
		       "written in place: exact (%ld wrong)", k->name, bad);
		return;
	}
	/*
	 * With C mapped whole, the engine writes it in place where that pays
	 * (one K slice, or more rows than the SRAM C block holds); in 4 KiB
	 * pieces, it never can.
	 */
	for (int whole = 1; whole >= 0; whole--) {
		const char *how = whole ? "C mapped whole" : "C mapped in 4 KiB pages";

		/*
		 * Rows and columns past the tiles, three K slices, two batches,
		 * a gap after each C row; on 256 KiB tiles the rows are more
		 * than the C block holds, in place or in pieces.
		 */
		bad = engine_case(k, 2, whole, 1024, 2, 300, 208, 600, 600, 224, 0);
		tap_ok(!bad, "kernel %s, engine, %s: 2x300x208x600, C rows 224 apart, 256 KiB "
		       "tiles: exact (%ld wrong)", k->name, how, bad);
		bad = engine_case(k, 2, whole, 0, 2, 157, 208, 600, 600, 224, 0);
		tap_ok(!bad, "kernel %s, engine, %s: 2x157x208x600, C rows 224 apart: exact "
		       "(%ld wrong)", k->name, how, bad);
		bad = engine_case(k, 1, whole, 0, 1, 40, 64, 37, 37, 64, 0);
		tap_ok(!bad, "kernel %s, engine, %s: 40x64x37, one thread: exact (%ld wrong)",
		       k->name, how, bad);
		/*
		 * Few rows, wide: B's slices row-major and fetched ahead, C's
		 * column blocks as wide as the host's L2 allows, a short last
		 * row tile (fn_rows) and a cut last column tile.
		 */
		bad = engine_case(k, 1, whole, 0, 1, 32, 1100, 600, 600, 1104, 0);
		tap_ok(!bad, "kernel %s, engine, %s: 32x1100x600, one thread: exact (%ld wrong)",
		       k->name, how, bad);
		/* B in panels and a last row tile of 3 rows (two column tiles at once) */
		bad = engine_case(k, 1, whole, 0, 1, 195, 100, 300, 300, 112, 0);
		tap_ok(!bad, "kernel %s, engine, %s: 195x100x300, one thread: exact (%ld wrong)",
		       k->name, how, bad);
		/* 256 KiB tiles: a task's rows are more than the SRAM C block holds */
		bad = engine_case(k, 1, whole, 1024, 1, 300, 256, 300, 300, 256, 0);
		tap_ok(!bad, "kernel %s, engine, %s: 300x256x300, 256 KiB tile SRAM: exact "
		       "(%ld wrong)", k->name, how, bad);
	}
	/*
	 * C is columns 304..367 of A's rows, and has more rows than 256 KiB
	 * tiles' C block: in place but for the overlap, A's later K slices
	 * must be read as they were.
	 */
	bad = engine_case(k, 1, true, 1024, 1, 300, 64, 608, 608, 608, 304);
	tap_ok(!bad, "kernel %s, engine: C overlapping A is not written in place: exact "
	       "(%ld wrong)", k->name, bad);
	bad = engine_mx_case(k, 40, false);
	tap_ok(!bad, "kernel %s, engine: MXFP8 40x64x608, C between A's elements and scales: "
	       "exact (%ld wrong)", k->name, bad);
	bad = engine_mx_case(k, 40, true);
	tap_ok(!bad, "kernel %s, engine: MXFP8 40x64x608, C over A's scales is not written in "
	       "place: exact (%ld wrong)", k->name, bad);
	/* more than two A sub-blocks: B's MX rows decoded straight into its panels */
	bad = engine_mx_case(k, 230, false);
	tap_ok(!bad, "kernel %s, engine: MXFP8 230x64x608, B in panels: exact (%ld wrong)",
	       k->name, bad);
}

/*
 * fw_gemm_pair_row() (B rows straight into a BF16 kernel's pair panels)
 * against the layout written out here: BF16 and FP32 rows, an odd last k
 * (no second row), row lengths around the 16-column steps, columns past
 * the row zero, nothing else of the panels written; the SIMD and the
 * portable versions alike.
 */
static void test_pair_row(void)
{
	static const size_t ns[] = { 1, 15, 16, 17, 31, 32, 33, 100, 512 };
	const unsigned int nr = FW_GEMM_BF16_NR;
	const size_t pstride = 3 * 2 * nr + 2 * nr;	/* 3 k pairs and a gap per panel */

	for (size_t t = 0; t < sizeof(ns) / sizeof(ns[0]); t++) {
		for (int mode = 0; mode < 4; mode++) {
			bool f32 = mode & 1, lone = mode & 2;
			size_t n = ns[t], np = (n + nr - 1) / nr * nr, len = np / nr * pstride;
			float *r32 = zalloc(sizeof(float) * 2 * n);
			uint16_t *r16 = zalloc(sizeof(uint16_t) * 2 * n);
			uint16_t *d = zalloc(sizeof(uint16_t) * len);
			uint16_t *e = zalloc(sizeof(uint16_t) * len);
			long bad = 0;

			for (size_t i = 0; i < 2 * n; i++) {
				r32[i] = bf16_round(trand_uniform(-4, 4));
				r16[i] = fw_f32_to_bf16(r32[i]);
			}
			for (int v = 0; v < 2; v++) {
				const void *r0 = f32 ? (const void *)r32 : (const void *)r16;
				const void *r1 = lone ? NULL : f32 ? (const void *)(r32 + n) :
								      (const void *)(r16 + n);

				for (size_t i = 0; i < len; i++)
					d[i] = e[i] = 0xaaaa;
				/* the pair of k = 2 (the second of three) of each panel */
				if (v)
					fw_gemm_pair_row_portable(r0, r1, f32, n, np, nr, pstride,
								  d + 2 * nr);
				else
					fw_gemm_pair_row(r0, r1, f32, n, np, nr, pstride, d + 2 * nr);
				for (size_t j = 0; j < np; j++) {
					uint16_t *x = e + j / nr * pstride + 2 * nr + j % nr * 2;

					x[0] = j < n ? r16[j] : 0;
					x[1] = j < n && !lone ? r16[n + j] : 0;
				}
				bad += memcmp(d, e, sizeof(uint16_t) * len) != 0;
			}
			tap_ok(!bad, "pair row: %zu %s columns%s into 32-column pair panels, SIMD "
			       "and portable: as laid out, nothing else written", n,
			       f32 ? "FP32" : "BF16", lone ? ", no second row" : "");
			free(r32);
			free(r16);
			free(d);
			free(e);
		}
	}
}

/*
 * fw_gemm_mx_pair_row() (MX rows decoded straight into pair panels) against
 * fw_gemm_mx_pair_row_portable() (each element decoded to FP32 by the
 * scalar reference and truncated), bit for bit: every code of the format
 * in each block of both rows (FP4: each code in both halves of a byte),
 * every block under each of the 256 scales (0: 2^-127, 254: 2^127, 255:
 * NaN) across the rounds, row 1 under other scales than row 0's or absent
 * (an odd last k); MX9/6/4: each code under both microexponents (the
 * second 256 rounds flip every microexponent byte); the zero columns past
 * n and nothing else of the panels written. Formats without a SIMD
 * version must say so (false).
 */
static void test_mx_pair_row(void)
{
	static const unsigned int dts[] = { MAIA_DTYPE_MXFP8_E4M3, MAIA_DTYPE_MXFP8_E5M2,
					    MAIA_DTYPE_MXFP4_E2M1, MAIA_DTYPE_MXFP6_E3M2,
					    MAIA_DTYPE_MXFP6_E2M3, MAIA_DTYPE_MXINT8,
					    MAIA_DTYPE_MX9, MAIA_DTYPE_MX6, MAIA_DTYPE_MX4 };
	static const char *const names[] = { "MXFP8 E4M3", "MXFP8 E5M2", "MXFP4", "MXFP6 E3M2",
					     "MXFP6 E2M3", "MXINT8", "MX9", "MX6", "MX4" };
	const unsigned int nr = FW_GEMM_BF16_NR;
	const size_t n = 256, np = n + nr, pstride = 3 * 2 * nr + 2 * nr;
	const size_t len = np / nr * pstride;

	for (size_t t = 0; t < sizeof(dts) / sizeof(dts[0]); t++) {
		unsigned int dt = dts[t], bb = maia_dtype_block_bytes(dt);
		size_t bs = maia_dtype_block(dt), nblk = n / bs;
		bool msmx = bs == MAIA_MSMX_BLOCK;
		uint8_t *e = zalloc(2 * nblk * bb), s[2][256 / MAIA_MSMX_BLOCK];
		uint16_t *d = zalloc(sizeof(uint16_t) * len), *x = zalloc(sizeof(uint16_t) * len);
		long bad = 0, simd = 0, off = 0;

		for (unsigned int round = 0; round < 512; round++) {
			bool lone = round % 16 == 5, finite = round >= 256;

			/*
			 * FP8 and INT8: code c at column c of row 0, 37 c + 11 of row 1;
			 * FP6 the same modulo 64 (each code in 4 columns of a row);
			 * FP4: byte i of a block i | (15 - i) << 4 (row 1: 5 more).
			 * The second 256 rounds with FP8's NaN and Inf codes made the
			 * largest finite ones: the blocks around them then take the
			 * SIMD path under every scale too.
			 * MX9/6/4: code (c * (1 or 37) + 11 r) mod 2^w at column c (each
			 * code in 1, 8 or 32 columns of a row), microexponent byte
			 * 0x5a + 29 b, flipped in the second 256 rounds.
			 */
			for (size_t r = 0; r < 2 && msmx; r++) {
				unsigned int w = (bb - 1) / 2;	/* 8, 5, 3 */
				uint8_t *blk = e + r * nblk * bb;

				memset(blk, 0, nblk * bb);
				for (size_t i = 0; i < n; i++) {
					unsigned int v = (unsigned int)(i * (r ? 37 : 1) + r * 11) %
							 (1u << w), pos = (unsigned int)(i % bs) * w;
					uint8_t *p = blk + i / bs * bb + pos / 8;

					p[0] |= (uint8_t)(v << (pos % 8));
					p[1] |= (uint8_t)(v << (pos % 8) >> 8);
				}
				for (size_t b = 0; b < nblk; b++)
					blk[b * bb + bb - 1] = (uint8_t)((0x5a + 29 * b) ^
									 (finite ? 0xff : 0));
			}
			for (size_t r = 0; r < 2 && bb == 24; r++)	/* FP6: 4 codes in 3 bytes */
				for (size_t i = 0; i < nblk * 32; i += 4) {
					uint32_t w = 0;

					for (size_t j = 0; j < 4; j++)
						w |= (uint32_t)((i + j) * (r ? 37 : 1) + r * 11) % 64
						     << (6 * j);
					for (size_t j = 0; j < 3; j++)
						e[r * nblk * bb + i / 4 * 3 + j] = (uint8_t)(w >> (8 * j));
				}
			for (size_t r = 0; r < 2 && bb != 24 && !msmx; r++)
				for (size_t i = 0; i < nblk * bb; i++) {
					uint8_t v = (uint8_t)(bb == 16 ? (i % 16 + r * 5) % 16 |
									 (15 - i % 16) << 4 :
								   i * (r ? 37 : 1) + r * 11);
					unsigned int top = dt == MAIA_DTYPE_MXFP8_E4M3 ? 0x7e : 0x7b;

					if (finite && bb == 32 && (dt == MAIA_DTYPE_MXFP8_E4M3 ||
								   dt == MAIA_DTYPE_MXFP8_E5M2) &&
					    (v & 0x7f) > top)
						v = (uint8_t)((v & 0x80) | top);
					e[r * nblk * bb + i] = v;
				}
			for (size_t b = 0; b < nblk; b++) {
				s[0][b] = (uint8_t)(round + 32 * b);
				s[1][b] = (uint8_t)(round * 7 + 13 * b + 100);
			}
			/*
			 * a word no element can decode to: a normal BF16 of 8
			 * significant bits (INT8 has 7; 0xaaaa is -85 2^-48)
			 */
			for (size_t i = 0; i < len; i++)
				d[i] = x[i] = 0xaaab;
			if (!fw_gemm_mx_pair_row(dt, e, s[0], lone ? NULL : e + nblk * bb, s[1], n,
						 np, nr, pstride, d + 2 * nr))
				continue;
			fw_gemm_mx_pair_row_portable(dt, e, s[0], lone ? NULL : e + nblk * bb, s[1],
						     n, np, nr, pstride, x + 2 * nr);
			for (size_t i = 0; i < len; i++) {
				bad += d[i] != x[i];
				/* the reference writes exactly the pair words */
				off += (x[i] == 0xaaab) != (i % pstride < 2 * nr ||
							     i % pstride >= 4 * nr);
			}
			simd++;
		}
		tap_ok(!bad && !off && (simd == 512 || simd == 0),
		       "mx pair row %s: %s (%ld rounds: every code x 256 scales, two rows or "
		       "one; %ld words differ from the scalar decode truncated)", names[t],
		       simd ? "SIMD bit for bit as the reference" : "no SIMD version (false)",
		       simd, bad);
		free(e);
		free(d);
		free(x);
	}
}

/*
 * C = A B through the engine with the BF16 pair kernel k forced (as
 * MAIA_TE_ISA does), A m x kd of dtype adt and B kd x n (n x kd with
 * trans_b) of dtype dt, random values; C (FP32, m x n) into out. C mapped whole or in 4 KiB
 * pages (tmem's: some B rows then straddle a page and are decoded instead).
 * Returns the status and the worst error / bound against a double
 * reference of the stored values.
 */
static int engine_pair_case(const struct fw_gemm_kernel *k, unsigned int adt, unsigned int dt,
			    uint32_t m, uint32_t n, uint32_t kd, bool trans_b, bool whole,
			    unsigned int threads, float *out, double *worst)
{
	uint64_t na = (uint64_t)m * kd, nb = (uint64_t)kd * n, nc = (uint64_t)m * n;
	struct fw_tensor_engine *te = tengine(threads);
	float *fa = zalloc(4 * na), *fb = zalloc(4 * nb);
	double *ra = zalloc(8 * na), *rb = zalloc(8 * nb);
	char *prev = getenv("MAIA_TE_ISA");
	uint64_t va, vb, vc, sa = 0, sb = 0;
	struct maia_cmd_gemm cmd;
	struct tmem mem;
	int st;

	tmem_init(&mem, tbytes(adt, na) + tbytes(dt, nb) + 4 * nc + na + nb + 8192);
	if (whole) {
		mem.mem.map = whole_map;
		mem.mem.map_write = whole_map_write;
	}
	va = tmem_alloc(&mem, tbytes(adt, na));
	vb = tmem_alloc(&mem, tbytes(dt, nb));
	vc = tmem_alloc(&mem, 4 * nc);
	if (maia_dtype_is_block(adt))
		sa = tmem_alloc(&mem, na / maia_dtype_block(adt) + 1);
	if (maia_dtype_is_block(dt))
		sb = tmem_alloc(&mem, nb / maia_dtype_block(dt) + 1);
	for (uint64_t i = 0; i < na; i++)
		fa[i] = trand_uniform(-1, 1);
	for (uint64_t i = 0; i < nb; i++)
		fb[i] = trand_uniform(-1, 1);
	tput(&mem, adt, va, sa, fa, na, 1.0f, ra);
	tput(&mem, dt, vb, sb, fb, nb, 1.0f, rb);
	memset(&cmd, 0, sizeof(cmd));
	cmd.hdr.opcode = MAIA_OP_GEMM;
	cmd.hdr.size = sizeof(cmd);
	cmd.hdr.flags = trans_b ? MAIA_GEMM_F_TRANS_B : 0;
	cmd.a = tdesc(adt, va, 2, (uint32_t[]){ m, kd });
	cmd.a.scale_addr = sa;
	cmd.b = tdesc(dt, vb, 2, trans_b ? (uint32_t[]){ n, kd } : (uint32_t[]){ kd, n });
	cmd.b.scale_addr = sb;
	cmd.c = tdesc(MAIA_DTYPE_FP32, vc, 2, (uint32_t[]){ m, n });
	if (prev)
		prev = strdup(prev);
	setenv("MAIA_TE_ISA", k->name, 1);
	te->gemm_kernel = k;
	st = trun(te, &mem, &cmd, NULL);
	if (prev)
		setenv("MAIA_TE_ISA", prev, 1);
	else
		unsetenv("MAIA_TE_ISA");
	free(prev);
	memcpy(out, tmem_ptr(&mem, vc), 4 * nc);
	*worst = 0;
	for (uint32_t i = 0; i < m && !st; i++)
		for (uint32_t j = 0; j < n; j++) {
			double ref = 0, sabs = 0, bound, err;

			for (uint32_t kk = 0; kk < kd; kk++) {
				double p = ra[(uint64_t)i * kd + kk] *
					   rb[trans_b ? (uint64_t)j * kd + kk : (uint64_t)kk * n + j];

				ref += p;
				sabs += fabs(p);
			}
			bound = 1.25 * (kd + 4) * ldexp(1, -24) * sabs + kd * ldexp(1, -126);
			err = fabs(out[(uint64_t)i * n + j] - ref) / bound;
			if (isnan(err) || err > *worst)
				*worst = isnan(err) ? 1e9 : err;
		}
	free(fa);
	free(fb);
	free(ra);
	free(rb);
	tmem_free(&mem);
	fw_tensor_destroy(te);
	return st;
}

/*
 * A BF16 pair kernel through the engine on BF16 and MX operands: B read
 * by rows goes straight into pair panels (BF16 interleaved from memory,
 * MX decoded two rows at a time), a column-major B through FP32 panels;
 * short row tiles (fn_rows) at the blocks' last rows, a cut last column
 * tile, an odd K (an MX B under a BF16 A: MX A rows are whole blocks, so
 * K a multiple of 32, or 16 for MX9/6/4; its last k pair then has one
 * row); MX9/6/4 B rows of 16-column blocks, n a multiple of 16 but not 32. Within the
 * bound, and bit-identical to portable-bf16 (the VDPBF16PS sequence in C,
 * full tiles only) on the same operands.
 */
static void test_engine_pairs(const struct fw_gemm_kernel *k)
{
	static const struct {
		unsigned int adt, dt;	/* adt 0: A of dt too */
		uint32_t m, n, kd;
		bool trans_b, whole;
		unsigned int threads;
	} cs[] = {
		{ 0, MAIA_DTYPE_BF16, 32, 1100, 600, false, true, 1 },
		{ 0, MAIA_DTYPE_BF16, 32, 1100, 600, false, false, 1 },
		{ 0, MAIA_DTYPE_BF16, 195, 100, 301, false, true, 2 },
		{ 0, MAIA_DTYPE_BF16, 61, 70, 130, true, true, 1 },
		{ 0, MAIA_DTYPE_MXFP8_E4M3, 40, 64, 608, false, true, 1 },
		{ 0, MAIA_DTYPE_MXFP4_E2M1, 33, 96, 256, false, false, 2 },
		{ 0, MAIA_DTYPE_MXINT8, 17, 160, 96, false, true, 1 },
		{ 0, MAIA_DTYPE_MXFP6_E3M2, 45, 96, 320, false, true, 1 },
		{ 0, MAIA_DTYPE_MXFP6_E2M3, 30, 224, 96, false, false, 2 },
		{ 0, MAIA_DTYPE_MXFP6_E3M2, 20, 64, 128, true, true, 1 },
		{ 0, MAIA_DTYPE_MXINT8, 29, 96, 352, false, false, 2 },
		{ 0, MAIA_DTYPE_MXINT8, 17, 32, 64, true, true, 1 },
		{ MAIA_DTYPE_BF16, MAIA_DTYPE_MXFP6_E2M3, 33, 64, 257, false, true, 1 },
		{ MAIA_DTYPE_BF16, MAIA_DTYPE_MXFP6_E3M2, 16, 96, 45, false, false, 1 },
		{ MAIA_DTYPE_BF16, MAIA_DTYPE_MXINT8, 19, 128, 301, false, true, 2 },
		{ 0, MAIA_DTYPE_MX9, 23, 80, 208, false, true, 1 },
		{ 0, MAIA_DTYPE_MX6, 31, 48, 144, false, false, 2 },
		{ 0, MAIA_DTYPE_MX4, 17, 96, 64, true, true, 1 },
		{ 0, MAIA_DTYPE_MX4, 45, 112, 400, false, true, 2 },
		{ MAIA_DTYPE_BF16, MAIA_DTYPE_MX9, 19, 64, 123, false, true, 1 },
		{ MAIA_DTYPE_BF16, MAIA_DTYPE_MX6, 15, 176, 77, false, false, 2 },
	};
	const struct fw_gemm_kernel *p = portable_of(k);

	if (!k->kpair)
		return;
	for (size_t t = 0; t < sizeof(cs) / sizeof(cs[0]); t++) {
		uint64_t nc = (uint64_t)cs[t].m * cs[t].n;
		unsigned int adt = cs[t].adt ? cs[t].adt : cs[t].dt;
		float *c = zalloc(4 * nc), *cp = zalloc(4 * nc);
		double worst, worst_p;
		int st, st_p;

		trand_seed(2800 + t);
		st = engine_pair_case(k, adt, cs[t].dt, cs[t].m, cs[t].n, cs[t].kd, cs[t].trans_b,
				      cs[t].whole, cs[t].threads, c, &worst);
		trand_seed(2800 + t);
		st_p = engine_pair_case(p, adt, cs[t].dt, cs[t].m, cs[t].n, cs[t].kd,
					cs[t].trans_b, cs[t].whole, cs[t].threads, cp, &worst_p);
		tap_ok(!st && !st_p && worst <= 1.0 && !memcmp(c, cp, 4 * nc),
		       "kernel %s, engine: dtype %u (A %u) %ux%ux%u%s, %s, %u thread(s): "
		       "err/bound %.3g, bit-identical to %s: %s", k->name, cs[t].dt, adt,
		       cs[t].m, cs[t].n,
		       cs[t].kd, cs[t].trans_b ? " B transposed" : "",
		       cs[t].whole ? "mapped whole" : "mapped in 4 KiB pages", cs[t].threads,
		       worst, p->name, memcmp(c, cp, 4 * nc) ? "no" : "yes");
		free(c);
		free(cp);
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
		test_rows(&k[i]);
		test_rows_same(&k[i]);
		test_rows2(&k[i]);
		test_pf(&k[i]);
		test_bound(&k[i]);
		test_engine(&k[i]);
		test_engine_pairs(&k[i]);
	}
	test_pair_row();
	test_mx_pair_row();
	return tap_done();
}
