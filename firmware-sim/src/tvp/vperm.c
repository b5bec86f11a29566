// SPDX-License-Identifier: MIT
/*
 * The shape-aware ops (VPERM and MATRIX classes): reductions along a row
 * or a column, broadcasts, transpose and VDOT, on the current shape
 * rows x cols (row-major lanes). Results go to a temporary first, so vd
 * may be a source. Sums run in index order, VDOT accumulates in k order
 * with a rounding after every product and every sum (no FMA), so results
 * do not depend on the host.
 */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("tree-vectorize", "vect-cost-model=dynamic", "fp-contract=off", "no-trapping-math")
#elif defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

#include <string.h>

#include "tvp.h"

/* maximumNumber / minimumNumber on bits: a NaN loses, -0 < +0. */
static uint32_t fmax_bits(uint32_t a, uint32_t b)
{
	float x, y;

	memcpy(&x, &a, 4);
	memcpy(&y, &b, 4);
	if (x != x)
		return b;
	if (y != y)
		return a;
	if (x == y)
		return a & b;
	return x > y ? a : b;
}

static uint32_t fmin_bits(uint32_t a, uint32_t b)
{
	float x, y;

	memcpy(&x, &a, 4);
	memcpy(&y, &b, 4);
	if (x != x)
		return b;
	if (y != y)
		return a;
	if (x == y)
		return a | b;
	return x < y ? a : b;
}

static uint32_t combine(unsigned int op, uint32_t acc, uint32_t v)
{
	float x, y;

	if (op == MAIA_TVP_OP_VREDMAX)
		return fmax_bits(acc, v);
	if (op == MAIA_TVP_OP_VREDMIN)
		return fmin_bits(acc, v);
	memcpy(&x, &acc, 4);
	memcpy(&y, &v, 4);
	x = x + y;
	memcpy(&acc, &x, 4);
	return acc;
}

/* vd[M x N] += va[M x K] vb[K x N]; operand lanes past VLEN read as 0. */
static void vdot(uint32_t m, uint32_t nn, uint32_t k, fw_tvp_f32 *restrict o,
		 const fw_tvp_f32 *a, const fw_tvp_f32 *b, const fw_tvp_f32 *d)
{
	for (uint32_t i = 0; i < m * nn; i++)
		o[i] = d[i];
	for (uint32_t i = 0; i < m; i++) {
		fw_tvp_f32 *restrict orow = o + (size_t)i * nn;

		for (uint32_t kk = 0; kk < k; kk++) {
			uint64_t ai = (uint64_t)i * k + kk, bi = (uint64_t)kk * nn;
			float av = ai < MAIA_TVP_VLEN ? a[ai] : 0.0f;

			if (bi + nn <= MAIA_TVP_VLEN) {
				const fw_tvp_f32 *restrict brow = b + bi;

				for (uint32_t j = 0; j < nn; j++)
					orow[j] = orow[j] + av * brow[j];
			} else {
				for (uint32_t j = 0; j < nn; j++)
					orow[j] = orow[j] + av * (bi + j < MAIA_TVP_VLEN ?
								  b[bi + j] : 0.0f);
			}
		}
	}
}

void fw_tvp_perm(unsigned int op, unsigned int imm, uint32_t rows, uint32_t cols,
		 fw_tvp_u32 *o, const fw_tvp_u32 *a, unsigned int *nout)
{
	uint32_t vl = rows * cols;

	switch (op) {
	case MAIA_TVP_OP_VREDSUM:
	case MAIA_TVP_OP_VREDMAX:
	case MAIA_TVP_OP_VREDMIN:
		if (imm == 1) {		/* along a row: one result per row */
			for (uint32_t r = 0; r < rows; r++) {
				uint32_t acc = a[r * cols];

				for (uint32_t c = 1; c < cols; c++)
					acc = combine(op, acc, a[r * cols + c]);
				o[r] = acc;
			}
			*nout = rows;
		} else {		/* down a column: one per column */
			for (uint32_t c = 0; c < cols; c++) {
				uint32_t acc = a[c];

				for (uint32_t r = 1; r < rows; r++)
					acc = combine(op, acc, a[r * cols + c]);
				o[c] = acc;
			}
			*nout = cols;
		}
		break;
	case MAIA_TVP_OP_VBCAST:
		for (uint32_t i = 0; i < vl; i++)
			o[i] = a[0];
		*nout = vl;
		break;
	case MAIA_TVP_OP_VBROW:
		for (uint32_t r = 0; r < rows; r++)
			memcpy(o + r * cols, a, cols * sizeof(*o));
		*nout = vl;
		break;
	case MAIA_TVP_OP_VBCOL:
		for (uint32_t r = 0; r < rows; r++)
			for (uint32_t c = 0; c < cols; c++)
				o[r * cols + c] = a[r];
		*nout = vl;
		break;
	case MAIA_TVP_OP_VTRANS:
		for (uint32_t r = 0; r < rows; r++)
			for (uint32_t c = 0; c < cols; c++)
				o[c * rows + r] = a[r * cols + c];
		*nout = vl;
		break;
	default:
		*nout = 0;
		break;
	}
}

void fw_tvp_vdot(uint32_t rows, uint32_t cols, uint32_t k, fw_tvp_u32 *o, const fw_tvp_u32 *a,
		 const fw_tvp_u32 *b, const fw_tvp_u32 *d)
{
	vdot(rows, cols, k, (fw_tvp_f32 *)o, (const fw_tvp_f32 *)a, (const fw_tvp_f32 *)b,
	     (const fw_tvp_f32 *)d);
}
