// SPDX-License-Identifier: MIT
/*
 * The non-GEMM tensor operations against double-precision references:
 * elementwise (with broadcasting), scale, activations, softmax (plain,
 * causal, log), layer norm, RMS norm, attention (causal, grouped heads by
 * stride 0, KV-cache shapes), copy/transpose with conversion, quantize
 * (static, dynamic, MX) and dequantize, and reductions over any axes.
 * Bounds are those in Documentation/tensor-engine.rst.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"
#include "tap.h"
#include "../../../firmware-sim/src/tensor/te.h"

static struct tmem mem;
static struct fw_tensor_engine *te;

#define EPS32	(1.0 / 16777216.0)	/* 2^-24 */

static uint64_t put_rand(unsigned int dt, uint64_t n, float lo, float hi, double *vals,
			 uint64_t *scale_va)
{
	float *f = malloc(sizeof(float) * n);
	uint64_t va = tmem_alloc(&mem, tbytes(dt, n)), sva = 0;

	for (uint64_t i = 0; i < n; i++)
		f[i] = trand_uniform(lo, hi);
	if (maia_dtype_is_block(dt))
		sva = tmem_alloc(&mem, n);
	tput(&mem, dt, va, sva, f, n, 1.0f, vals);
	if (scale_va)
		*scale_va = sva;
	free(f);
	return va;
}

static double max_rel_err(const double *got, const double *ref, uint64_t n, double floor_abs)
{
	double worst = 0;

	for (uint64_t i = 0; i < n; i++) {
		double e = fabs(got[i] - ref[i]) / (fabs(ref[i]) + floor_abs);

		if (isnan(got[i]) != isnan(ref[i]))
			return INFINITY;
		if (e > worst)
			worst = e;
	}
	return worst;
}

static void test_eltwise(void)
{
	uint32_t shx[3] = { 3, 5, 40 }, shy[3] = { 1, 5, 1 }, sho[3] = { 3, 5, 40 };
	double x[600], y[5], ref[600], out[600];
	struct maia_cmd_eltwise c;
	uint64_t vx, vy, vo;
	int st;

	for (int op = 0; op < 2; op++) {
		tmem_reset(&mem);
		vx = put_rand(MAIA_DTYPE_BF16, 600, -2, 2, x, NULL);
		vy = put_rand(MAIA_DTYPE_FP32, 5, -2, 2, y, NULL);
		vo = tmem_alloc(&mem, 4 * 600);
		memset(&c, 0, sizeof(c));
		c.hdr.opcode = op ? MAIA_OP_MUL : MAIA_OP_ADD;
		c.hdr.size = sizeof(c);
		c.x = tdesc(MAIA_DTYPE_BF16, vx, 3, shx);
		c.y = tdesc(MAIA_DTYPE_FP32, vy, 3, shy);	/* broadcast over dims 0 and 2 */
		c.out = tdesc(MAIA_DTYPE_FP32, vo, 3, sho);
		st = trun(te, &mem, &c, NULL);
		for (int i = 0; i < 600; i++) {
			double b = y[(i / 40) % 5];

			ref[i] = op ? x[i] * b : x[i] + b;
		}
		tget(&mem, MAIA_DTYPE_FP32, vo, 0, 600, 1, out);
		tap_ok(!st && max_rel_err(out, ref, 600, 1e-6) <= 2 * EPS32,
		       "%s with broadcasting (size-1 dims), bf16 + fp32 -> fp32 (status %d)",
		       op ? "mul" : "add", st);
	}
	/* in place, fp16, and stride-0 broadcast of a scalar */
	tmem_reset(&mem);
	vx = put_rand(MAIA_DTYPE_FP16, 600, -2, 2, x, NULL);
	vy = put_rand(MAIA_DTYPE_FP16, 1, -2, 2, y, NULL);
	memset(&c, 0, sizeof(c));
	c.hdr.opcode = MAIA_OP_ADD;
	c.hdr.size = sizeof(c);
	c.x = tdesc(MAIA_DTYPE_FP16, vx, 3, shx);
	c.y = tdesc(MAIA_DTYPE_FP16, vy, 3, shx);
	c.y.strides[0] = c.y.strides[1] = c.y.strides[2] = 0;
	c.out = c.x;
	st = trun(te, &mem, &c, NULL);
	tget(&mem, MAIA_DTYPE_FP16, vx, 0, 600, 1, out);
	for (int i = 0; i < 600; i++)
		ref[i] = x[i] + y[0];
	tap_ok(!st && max_rel_err(out, ref, 600, 1e-3) <= ldexp(1, -11) * 1.01,
	       "add in place, fp16, stride-0 scalar (status %d)", st);
	c.out.strides[2] = 0;
	tap_ok(trun(te, &mem, &c, NULL) == MAIA_STATUS_BAD_DESC, "stride-0 output: bad descriptor");
	c.out = c.x;
	c.y.shape[2] = 7;
	tap_ok(trun(te, &mem, &c, NULL) == MAIA_STATUS_BAD_DESC, "shape mismatch: bad descriptor");
}

static double act_ref(double v, unsigned int a)
{
	switch (a) {
	case MAIA_ACT_RELU:
		return v > 0 ? v : 0;
	case MAIA_ACT_GELU:
		return 0.5 * v * (1 + tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)));
	case MAIA_ACT_SILU:
		return v / (1 + exp(-v));
	default:
		return 0.5 * v * (1 + erf(v / sqrt(2.0)));
	}
}

static void test_scale_act(void)
{
	uint32_t sh[2] = { 17, 33 };
	double x[561], out[561], ref[561];
	uint64_t vx, vo;
	int st;

	tmem_reset(&mem);
	vx = put_rand(MAIA_DTYPE_FP32, 561, -6, 6, x, NULL);
	vo = tmem_alloc(&mem, 4 * 561);
	{
		struct maia_cmd_scale c = { .hdr = { MAIA_OP_SCALE, 0, sizeof(c) } };

		c.x = tdesc(MAIA_DTYPE_FP32, vx, 2, sh);
		c.out = tdesc(MAIA_DTYPE_FP32, vo, 2, sh);
		c.alpha = f2u(-0.375f);
		c.beta = f2u(2.5f);
		st = trun(te, &mem, &c, NULL);
		tget(&mem, MAIA_DTYPE_FP32, vo, 0, 561, 1, out);
		for (int i = 0; i < 561; i++)
			ref[i] = -0.375 * x[i] + 2.5;
		tap_ok(!st && max_rel_err(out, ref, 561, 1) <= 4 * EPS32, "scale: alpha x + beta");
		c.alpha = f2u(NAN);
		tap_ok(trun(te, &mem, &c, NULL) == MAIA_STATUS_BAD_CMD, "scale with NaN alpha: bad command");
	}
	for (unsigned int a = MAIA_ACT_RELU; a < MAIA_ACT_COUNT; a++) {
		struct maia_cmd_activation c = { .hdr = { MAIA_OP_ACTIVATION, 0, sizeof(c) } };

		c.x = tdesc(MAIA_DTYPE_FP32, vx, 2, sh);
		c.out = tdesc(MAIA_DTYPE_FP32, vo, 2, sh);
		c.activation = a;
		st = trun(te, &mem, &c, NULL);
		tget(&mem, MAIA_DTYPE_FP32, vo, 0, 561, 1, out);
		for (int i = 0; i < 561; i++)
			ref[i] = act_ref(x[i], a);
		tap_ok(!st && max_rel_err(out, ref, 561, 1e-3) <= 1e-5,
		       "activation %u within 1e-5 relative (err %.2g)", a, max_rel_err(out, ref, 561, 1e-3));
	}
}

static void test_softmax(void)
{
	uint32_t sh[3] = { 2, 9, 130 };
	double x[2340], out[2340], ref[2340];
	uint64_t vx, vo;
	int st;

	for (unsigned int flags = 0; flags < 4; flags++) {
		struct maia_cmd_softmax c = { .hdr = { MAIA_OP_SOFTMAX, (uint16_t)flags, sizeof(c) } };
		int32_t off = flags & MAIA_SOFTMAX_F_CAUSAL ? 3 : 0;

		tmem_reset(&mem);
		vx = put_rand(MAIA_DTYPE_BF16, 2340, -8, 8, x, NULL);
		vo = tmem_alloc(&mem, 4 * 2340);
		c.x = tdesc(MAIA_DTYPE_BF16, vx, 3, sh);
		c.out = tdesc(MAIA_DTYPE_FP32, vo, 3, sh);
		c.scale = f2u(0.7f);
		c.causal_offset = off;
		st = trun(te, &mem, &c, NULL);
		tget(&mem, MAIA_DTYPE_FP32, vo, 0, 2340, 1, out);
		for (int r = 0; r < 18; r++) {
			int valid = flags & MAIA_SOFTMAX_F_CAUSAL ? (r % 9) + off + 1 : 130;
			double mx = -INFINITY, s = 0;

			for (int j = 0; j < valid; j++)
				mx = fmax(mx, 0.7 * x[r * 130 + j]);
			for (int j = 0; j < valid; j++)
				s += exp(0.7 * x[r * 130 + j] - mx);
			for (int j = 0; j < 130; j++) {
				double v = 0.7 * x[r * 130 + j];

				if (flags & MAIA_SOFTMAX_F_LOG)
					ref[r * 130 + j] = j < valid ? v - mx - log(s) : -INFINITY;
				else
					ref[r * 130 + j] = j < valid ? exp(v - mx) / s : 0;
			}
		}
		{
			double worst = 0, smax = 0, bound;

			for (int i = 0; i < 2340; i++)
				smax = fmax(smax, fabs(0.7 * x[i]));
			/* scale * x is rounded to FP32 before exp: 2 |sx|max + 4 ulps */
			bound = (2 * smax + 4) * EPS32;
			for (int i = 0; i < 2340; i++) {
				double e = isinf(ref[i]) ? (out[i] == ref[i] ? 0 : INFINITY) :
					   fabs(out[i] - ref[i]) / (fabs(ref[i]) + 1e-30);

				if (flags & MAIA_SOFTMAX_F_LOG && !isinf(ref[i]))
					e = fabs(out[i] - ref[i]) / (fabs(ref[i]) + 1);
				if (e > worst)
					worst = e;
			}
			tap_ok(!st && worst <= bound, "softmax flags %#x (causal offset %d): rel err %.2g (bound %.2g)",
			       flags, off, worst, bound);
		}
	}
}

static void test_norms(void)
{
	uint32_t sh[2] = { 7, 300 }, d = 300;
	double x[2100], g[300], b[300], out[2100], ref[2100];
	uint64_t vx, vg, vb, vo;
	int st;

	for (int which = 0; which < 3; which++) {
		struct maia_cmd_norm c;
		bool ln = which != 1, affine = which != 2;

		tmem_reset(&mem);
		vx = put_rand(MAIA_DTYPE_FP32, 2100, -3, 5, x, NULL);
		vg = put_rand(MAIA_DTYPE_BF16, 300, 0.5f, 1.5f, g, NULL);
		vb = put_rand(MAIA_DTYPE_FP32, 300, -1, 1, b, NULL);
		vo = tmem_alloc(&mem, 2 * 2100);
		memset(&c, 0, sizeof(c));
		c.hdr.opcode = ln ? MAIA_OP_LAYERNORM : MAIA_OP_RMSNORM;
		c.hdr.size = sizeof(c);
		c.hdr.flags = affine ? 0 : MAIA_NORM_F_NO_AFFINE;
		c.x = tdesc(MAIA_DTYPE_FP32, vx, 2, sh);
		if (affine) {
			c.gamma = tdesc(MAIA_DTYPE_BF16, vg, 1, &d);
			if (ln)
				c.beta = tdesc(MAIA_DTYPE_FP32, vb, 1, &d);
		}
		c.out = tdesc(MAIA_DTYPE_BF16, vo, 2, sh);
		c.eps = f2u(1e-5f);
		st = trun(te, &mem, &c, NULL);
		tget(&mem, MAIA_DTYPE_BF16, vo, 0, 2100, 1, out);
		for (int r = 0; r < 7; r++) {
			double mean = 0, var = 0;

			for (int j = 0; j < 300; j++)
				mean += x[r * 300 + j];
			mean = ln ? mean / 300 : 0;
			for (int j = 0; j < 300; j++)
				var += (x[r * 300 + j] - mean) * (x[r * 300 + j] - mean);
			var /= 300;
			for (int j = 0; j < 300; j++) {
				double v = (x[r * 300 + j] - mean) / sqrt(var + (double)1e-5f);

				ref[r * 300 + j] = affine ? v * g[j] + (ln ? b[j] : 0) : v;
			}
		}
		/* bf16 output: half an ulp of the result, plus FP32 noise near zero */
		tap_ok(!st && max_rel_err(out, ref, 2100, 1e-4) <= ldexp(1, -8) * 1.01,
		       "%s%s to bf16: rel err %.3g", ln ? "layernorm" : "rmsnorm",
		       affine ? "" : " without affine", max_rel_err(out, ref, 2100, 1e-4));
	}
	{
		struct maia_cmd_norm c;

		memset(&c, 0, sizeof(c));
		c.hdr.opcode = MAIA_OP_RMSNORM;
		c.hdr.size = sizeof(c);
		c.x = tdesc(MAIA_DTYPE_FP32, vx, 2, sh);
		c.out = tdesc(MAIA_DTYPE_FP32, vo, 2, sh);
		c.gamma = tdesc(MAIA_DTYPE_FP32, vg, 1, &d);
		c.beta = tdesc(MAIA_DTYPE_FP32, vb, 1, &d);
		tap_ok(trun(te, &mem, &c, NULL) == MAIA_STATUS_BAD_CMD, "rmsnorm with a beta: bad command");
		c.beta = (struct maia_tensor_desc){ 0 };
		c.gamma.shape[0] = 299;
		tap_ok(trun(te, &mem, &c, NULL) == MAIA_STATUS_BAD_DESC, "gamma of the wrong length: bad descriptor");
		c.gamma.shape[0] = 300;
		c.eps = f2u(-1.0f);
		tap_ok(trun(te, &mem, &c, NULL) == MAIA_STATUS_BAD_CMD, "negative eps: bad command");
	}
}

static void test_attention(void)
{
	/* B=2, H=3, Lq=37, Lk=70, D=32, Dv=24; K/V shared across heads (stride 0) */
	const uint32_t B = 2, H = 3, LQ = 37, LK = 70, D = 32, DV = 24;
	uint32_t qs[4] = { B, H, LQ, D }, ks[4] = { B, 1, LK, D }, vs[4] = { B, 1, LK, DV };
	uint32_t os[4] = { B, H, LQ, DV };
	double *q = malloc(sizeof(double) * B * H * LQ * D), *k = malloc(sizeof(double) * B * LK * D);
	double *v = malloc(sizeof(double) * B * LK * DV), *out = malloc(sizeof(double) * B * H * LQ * DV);
	double *ref = malloc(sizeof(double) * B * H * LQ * DV);

	for (int causal = 0; causal < 2; causal++) {
		struct maia_cmd_attention c;
		uint64_t vq, vk, vv, vo;
		double worst = 0;
		int st;

		tmem_reset(&mem);
		vq = put_rand(MAIA_DTYPE_BF16, B * H * LQ * D, -1, 1, q, NULL);
		vk = put_rand(MAIA_DTYPE_BF16, B * LK * D, -1, 1, k, NULL);
		vv = put_rand(MAIA_DTYPE_FP32, B * LK * DV, -1, 1, v, NULL);
		vo = tmem_alloc(&mem, 4 * B * H * LQ * DV);
		memset(&c, 0, sizeof(c));
		c.hdr.opcode = MAIA_OP_ATTENTION;
		c.hdr.size = sizeof(c);
		c.hdr.flags = causal ? MAIA_ATTN_F_CAUSAL : 0;
		c.q = tdesc(MAIA_DTYPE_BF16, vq, 4, qs);
		c.k = tdesc(MAIA_DTYPE_BF16, vk, 4, ks);
		c.k.shape[1] = H;
		c.k.strides[1] = 0;
		c.v = tdesc(MAIA_DTYPE_FP32, vv, 4, vs);
		c.v.shape[1] = H;
		c.v.strides[1] = 0;
		c.out = tdesc(MAIA_DTYPE_FP32, vo, 4, os);
		st = trun(te, &mem, &c, NULL);
		tget(&mem, MAIA_DTYPE_FP32, vo, 0, B * H * LQ * DV, 1, out);
		for (uint32_t b = 0; b < B; b++)
			for (uint32_t h = 0; h < H; h++)
				for (uint32_t i = 0; i < LQ; i++) {
					double s[70], mx = -INFINITY, sum = 0;
					uint32_t lim = causal ? i + (LK - LQ) + 1 : LK;

					for (uint32_t j = 0; j < lim; j++) {
						s[j] = 0;
						for (uint32_t c2 = 0; c2 < D; c2++)
							s[j] += q[((b * H + h) * LQ + i) * D + c2] * k[(b * LK + j) * D + c2];
						s[j] /= sqrt((double)D);
						mx = fmax(mx, s[j]);
					}
					for (uint32_t j = 0; j < lim; j++)
						sum += s[j] = exp(s[j] - mx);
					for (uint32_t c2 = 0; c2 < DV; c2++) {
						double o = 0;

						for (uint32_t j = 0; j < lim; j++)
							o += s[j] / sum * v[(b * LK + j) * DV + c2];
						ref[((b * H + h) * LQ + i) * DV + c2] = o;
					}
				}
		/* FP32 throughout: a few ulps of the value range (|out| <= 1) */
		for (uint64_t i = 0; i < (uint64_t)B * H * LQ * DV; i++)
			worst = fmax(worst, fabs(out[i] - ref[i]));
		tap_ok(!st && worst <= 64 * EPS32, "attention%s, heads sharing K/V by stride 0: max abs err %.2g",
		       causal ? " (causal, Lk > Lq)" : "", worst);
	}
	free(q);
	free(k);
	free(v);
	free(out);
	free(ref);
}

static void test_layout(void)
{
	uint32_t sx[3] = { 4, 6, 64 }, so[3] = { 64, 4, 6 };	/* out = x.permute(2, 0, 1) */
	double x[1536], out[1536];
	struct maia_cmd_transpose t;
	uint64_t vx, vo, sx_va;
	unsigned int bad = 0;
	int st;

	/* transpose with conversion: mxfp8 -> bf16, x's contiguous dim becomes outermost */
	tmem_reset(&mem);
	vx = put_rand(MAIA_DTYPE_MXFP8_E4M3, 1536, -3, 3, x, &sx_va);
	vo = tmem_alloc(&mem, 2 * 1536);
	memset(&t, 0, sizeof(t));
	t.hdr.opcode = MAIA_OP_TRANSPOSE;
	t.hdr.size = sizeof(t);
	t.x = tdesc(MAIA_DTYPE_MXFP8_E4M3, vx, 3, sx);
	t.x.scale_addr = sx_va;
	t.out = tdesc(MAIA_DTYPE_BF16, vo, 3, so);
	t.perm[0] = 2;
	t.perm[1] = 0;
	t.perm[2] = 1;
	st = trun(te, &mem, &t, NULL);
	tget(&mem, MAIA_DTYPE_BF16, vo, 0, 1536, 1, out);
	for (uint32_t a = 0; a < 4; a++)
		for (uint32_t b = 0; b < 6; b++)
			for (uint32_t c = 0; c < 64; c++) {
				double want = x[(a * 6 + b) * 64 + c], got = out[(c * 4 + a) * 6 + b];

				if (fabs(got - want) > fabs(want) * ldexp(1, -9))
					bad++;
			}
	tap_ok(!st && !bad, "transpose (2,0,1) mxfp8 -> bf16 (status %d, %u wrong)", st, bad);
	t.perm[2] = 2;
	tap_ok(trun(te, &mem, &t, NULL) == MAIA_STATUS_BAD_CMD, "perm with a repeated axis: bad command");
	t.perm[2] = 1;
	t.perm[3] = 1;
	tap_ok(trun(te, &mem, &t, NULL) == MAIA_STATUS_BAD_CMD, "perm entry beyond rank nonzero: bad command");

	/* big 2D transpose, both directions, fp32 exact */
	{
		uint32_t a[2] = { 300, 517 }, b[2] = { 517, 300 };
		double *xx = malloc(sizeof(double) * 300 * 517), *oo = malloc(sizeof(double) * 300 * 517);

		tmem_reset(&mem);
		vx = put_rand(MAIA_DTYPE_FP32, 300 * 517, -1, 1, xx, NULL);
		vo = tmem_alloc(&mem, 4 * 300 * 517);
		memset(&t, 0, sizeof(t));
		t.hdr.opcode = MAIA_OP_TRANSPOSE;
		t.hdr.size = sizeof(t);
		t.x = tdesc(MAIA_DTYPE_FP32, vx, 2, a);
		t.out = tdesc(MAIA_DTYPE_FP32, vo, 2, b);
		t.perm[0] = 1;
		st = trun(te, &mem, &t, NULL);
		tget(&mem, MAIA_DTYPE_FP32, vo, 0, 300 * 517, 1, oo);
		bad = 0;
		for (uint32_t i = 0; i < 300; i++)
			for (uint32_t j = 0; j < 517; j++)
				bad += oo[j * 300 + i] != xx[i * 517 + j];
		tap_ok(!st && !bad, "transpose 300x517 fp32 exact (%u wrong)", bad);
		free(xx);
		free(oo);
	}

	/*
	 * INT32 past 2^24 through COPY (x a transposed view, so the grouped
	 * path) and TRANSPOSE: every bit kept (as floats the low bits go).
	 */
	{
		uint32_t a[2] = { 37, 70 }, b[2] = { 70, 37 };
		int32_t src[37 * 70], got[37 * 70];
		struct maia_cmd_convert c;
		unsigned int bad_copy = 0, bad_tr = 0;
		int st_copy, st_tr;

		tmem_reset(&mem);
		for (uint32_t i = 0; i < 37 * 70; i++)	/* odd values, many past 2^24 */
			src[i] = (int32_t)(i * 1000003u + 1073741825u) * (i & 1 ? -1 : 1);
		vx = tmem_alloc(&mem, sizeof(src));
		vo = tmem_alloc(&mem, sizeof(src));
		memcpy(tmem_ptr(&mem, vx), src, sizeof(src));
		memset(&c, 0, sizeof(c));
		c.hdr.opcode = MAIA_OP_COPY;
		c.hdr.size = sizeof(c);
		c.x = tdesc(MAIA_DTYPE_INT32, vx, 2, b);	/* x^T as a view: strides 1, 70 */
		c.x.strides[0] = 1;
		c.x.strides[1] = 70;
		c.out = tdesc(MAIA_DTYPE_INT32, vo, 2, b);
		st_copy = trun(te, &mem, &c, NULL);
		memcpy(got, tmem_ptr(&mem, vo), sizeof(got));
		for (uint32_t i = 0; i < 37; i++)
			for (uint32_t j = 0; j < 70; j++)
				bad_copy += got[j * 37 + i] != src[i * 70 + j];
		memset(tmem_ptr(&mem, vo), 0, sizeof(got));
		memset(&t, 0, sizeof(t));
		t.hdr.opcode = MAIA_OP_TRANSPOSE;
		t.hdr.size = sizeof(t);
		t.x = tdesc(MAIA_DTYPE_INT32, vx, 2, a);
		t.out = tdesc(MAIA_DTYPE_INT32, vo, 2, b);
		t.perm[0] = 1;
		st_tr = trun(te, &mem, &t, NULL);
		memcpy(got, tmem_ptr(&mem, vo), sizeof(got));
		for (uint32_t i = 0; i < 37; i++)
			for (uint32_t j = 0; j < 70; j++)
				bad_tr += got[j * 37 + i] != src[i * 70 + j];
		tap_ok(!st_copy && !bad_copy && !st_tr && !bad_tr,
		       "int32 past 2^24: strided copy (status %d, %u wrong), transpose (status %d, "
		       "%u wrong)", st_copy, bad_copy, st_tr, bad_tr);
	}

	/* quantize: dynamic int8 and fp8, MX; dequantize back */
	{
		static const unsigned int qt[] = {
			MAIA_DTYPE_INT8, MAIA_DTYPE_FP8_E4M3, MAIA_DTYPE_FP8_E5M2,
			MAIA_DTYPE_MXFP4_E2M1, MAIA_DTYPE_MXFP6_E2M3, MAIA_DTYPE_MXINT8, MAIA_DTYPE_MX6,
		};
		uint32_t sh[2] = { 12, 64 };
		double xs[768], q[768], back[768];

		for (size_t i = 0; i < sizeof(qt) / sizeof(qt[0]); i++) {
			struct maia_cmd_convert c;
			bool blockq = maia_dtype_is_block(qt[i]);
			uint64_t vq, vs = 0, vsc = 0, vb;
			float scale = 1.0f;
			double amax = 0, worst = 0;

			tmem_reset(&mem);
			vx = put_rand(MAIA_DTYPE_FP32, 768, -5, 3, xs, NULL);
			vq = tmem_alloc(&mem, 768);
			vs = tmem_alloc(&mem, 64);
			vsc = tmem_alloc(&mem, 64);
			vb = tmem_alloc(&mem, 4 * 768);
			memset(&c, 0, sizeof(c));
			c.hdr.opcode = MAIA_OP_QUANTIZE;
			c.hdr.size = sizeof(c);
			c.hdr.flags = blockq ? 0 : MAIA_QUANT_F_DYNAMIC | MAIA_QUANT_F_SAT;
			c.x = tdesc(MAIA_DTYPE_FP32, vx, 2, sh);
			c.out = tdesc(qt[i], vq, 2, sh);
			if (blockq)
				c.out.scale_addr = vs;
			else
				c.scale_out = vsc;
			st = trun(te, &mem, &c, NULL);
			for (int j = 0; j < 768; j++)
				amax = fmax(amax, fabs(xs[j]));
			if (!blockq) {
				memcpy(&scale, tmem_ptr(&mem, vsc), 4);
				if (fabs(scale - amax / fw_dtype_max(qt[i])) > 1e-6 * scale)
					st = -1;
			}
			tget(&mem, qt[i], vq, vs, 768, scale, q);
			/* dequantize with the engine and compare to the reference decode */
			c.hdr.opcode = MAIA_OP_DEQUANTIZE;
			c.hdr.flags = 0;
			c.scale_out = 0;
			c.x = c.out;
			c.x.scale = blockq ? 0 : f2u(scale);
			c.out = tdesc(MAIA_DTYPE_FP32, vb, 2, sh);
			if (!st)
				st = trun(te, &mem, &c, NULL);
			tget(&mem, MAIA_DTYPE_FP32, vb, 0, 768, 1, back);
			for (int j = 0; j < 768; j++) {
				if (back[j] != (double)(float)q[j])	/* scale applied in FP32 */
					worst = INFINITY;
				/* quantization error: relative to the tensor (or block) max */
				worst = fmax(worst, fabs(q[j] - xs[j]) / amax);
			}
			/* half an ulp at the top of the range, over the range's max */
			tap_ok(!st && worst <= (qt[i] == MAIA_DTYPE_INT8 ? 0.5 / 127 :
					      qt[i] == MAIA_DTYPE_FP8_E4M3 ? 16.0 / 448 :
					      qt[i] == MAIA_DTYPE_FP8_E5M2 ? 4096.0 / 57344 :
					      qt[i] == MAIA_DTYPE_MXFP4_E2M1 ? 0.25 :
					      qt[i] == MAIA_DTYPE_MXINT8 ? 1.0 / 128 : 0.0625) * 1.001,
			       "quantize fp32 -> %u (%s) and dequantize: status %d, max err/amax %.3g",
			       qt[i], blockq ? "block scales" : "dynamic scale", st, worst);
		}
	}
}

static void test_reduce(void)
{
	uint32_t sh[3] = { 5, 7, 300 };
	double x[10500], out[2100];
	uint64_t vx, vo;

	tmem_reset(&mem);
	vx = put_rand(MAIA_DTYPE_BF16, 10500, -2, 2, x, NULL);
	vo = tmem_alloc(&mem, 4 * 2100);
	for (unsigned int axes = 1; axes < 8; axes++) {
		for (unsigned int op = 0; op < MAIA_REDUCE_COUNT; op++) {
			struct maia_cmd_reduce c = { .hdr = { MAIA_OP_REDUCE, 0, sizeof(c) } };
			uint32_t os[3];
			uint64_t n = 1;
			unsigned int bad = 0;
			int st;

			for (int d = 0; d < 3; d++) {
				os[d] = axes & (1u << d) ? 1 : sh[d];
				n *= os[d];
			}
			c.x = tdesc(MAIA_DTYPE_BF16, vx, 3, sh);
			c.out = tdesc(MAIA_DTYPE_FP32, vo, 3, os);
			c.op = op;
			c.axes = axes;
			st = trun(te, &mem, &c, NULL);
			tget(&mem, MAIA_DTYPE_FP32, vo, 0, n, 1, out);
			for (uint64_t o = 0; o < n; o++) {
				uint32_t oi[3] = { (uint32_t)(o / os[2] / os[1]), (uint32_t)(o / os[2] % os[1]),
						   (uint32_t)(o % os[2]) };
				double acc = op == MAIA_REDUCE_MAX ? -INFINITY : op == MAIA_REDUCE_MIN ? INFINITY : 0;
				double cnt = 0, mag = 0;

				for (uint32_t a = 0; a < sh[0]; a++)
					for (uint32_t b = 0; b < sh[1]; b++)
						for (uint32_t e = 0; e < sh[2]; e++) {
							double v;

							if ((!(axes & 1) && a != oi[0]) || (!(axes & 2) && b != oi[1]) ||
							    (!(axes & 4) && e != oi[2]))
								continue;
							v = x[(a * 7 + b) * 300 + e];
							cnt++;
							mag += op == MAIA_REDUCE_SUMSQ ? v * v : fabs(v);
							acc = op == MAIA_REDUCE_MAX ? fmax(acc, v) :
							      op == MAIA_REDUCE_MIN ? fmin(acc, v) :
							      op == MAIA_REDUCE_SUMSQ ? acc + v * v : acc + v;
						}
				if (op == MAIA_REDUCE_MEAN) {
					acc /= cnt;
					mag /= cnt;
				}

				if (fabs(out[o] - acc) > EPS32 * (fabs(acc) + mag * 1e-6) * 1.01 + 1e-30)
					bad++;
			}
			tap_ok(!st && !bad, "reduce op %u over axes %#x: %u of %llu wrong", op, axes, bad,
			       (unsigned long long)n);
		}
	}
}

int main(void)
{
	tmem_init(&mem, 16ull << 20);
	trand_seed(3);
	te = tengine(0);
	test_eltwise();
	test_scale_act();
	test_softmax();
	test_norms();
	test_attention();
	test_layout();
	test_reduce();
	fw_tensor_destroy(te);
	tmem_free(&mem);
	return tap_done();
}
