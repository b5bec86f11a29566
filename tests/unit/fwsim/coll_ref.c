// SPDX-License-Identifier: MIT
/* CPU reference for collectives: see coll_ref.h. */
#include <math.h>
#include <string.h>

#include "coll_ref.h"
#include "maia/hw/dtype.h"

float ref_bf16_to_f32(uint16_t h)
{
	uint32_t u = (uint32_t)h << 16;
	float f;

	memcpy(&f, &u, 4);
	return f;
}

/*
 * By comparing the dropped half with one half of the last kept bit. A NaN
 * stays a quiet NaN: its sign and top payload bits, the quiet bit set.
 */
uint16_t ref_f32_to_bf16(float f)
{
	uint32_t u, lo;
	uint16_t hi;

	memcpy(&u, &f, 4);
	hi = (uint16_t)(u >> 16);
	if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu))
		return hi | 0x0040;
	lo = u & 0xffff;
	if (lo > 0x8000 || (lo == 0x8000 && (hi & 1)))
		hi++;
	return hi;
}

float ref_ld(const uint8_t *p, uint64_t i, unsigned int dtype)
{
	float f;
	uint16_t h;

	if (dtype == MAIA_DTYPE_FP32) {
		memcpy(&f, p + 4 * i, 4);
		return f;
	}
	memcpy(&h, p + 2 * i, 2);
	return ref_bf16_to_f32(h);
}

/*
 * fabric.rst: MAX is x > acc ? x : acc and MIN x < acc ? x : acc, except
 * that a NaN operand wins, the left one (acc) if both are; so on ties,
 * +0 against -0 included, acc stays.
 */
float ref_op(unsigned int op, float acc, float x)
{
	if (op == MAIA_REDOP_SUM)
		return acc + x;
	if (isnan(acc))
		return acc;
	if (isnan(x))
		return x;
	if (op == MAIA_REDOP_MAX)
		return x > acc ? x : acc;
	return x < acc ? x : acc;
}

void ref_reduce(uint8_t **in, uint64_t i, unsigned int first, const struct maia_cmd_collective *k,
		uint8_t *out)
{
	unsigned int n = k->nranks;
	float acc = ref_ld(in[first % n], i, k->dtype);

	for (unsigned int j = 1; j < n; j++)
		acc = ref_op(k->redop, acc, ref_ld(in[(first + j) % n], i, k->dtype));
	if (k->dtype == MAIA_DTYPE_FP32) {
		memcpy(out, &acc, 4);
	} else {
		uint16_t h = ref_f32_to_bf16(acc);

		memcpy(out, &h, 2);
	}
}

void ref_expected(uint8_t **in, unsigned int r, const struct maia_cmd_collective *k, uint8_t *exp)
{
	unsigned int n = k->nranks, es = maia_dtype_size(k->dtype);
	uint64_t count = k->count, blk = count * es;

	switch (k->coll) {
	case MAIA_COLL_ALL_REDUCE:
		if (n == 1) {
			memcpy(exp, in[0], blk);
			break;
		}
		for (uint64_t i = 0; i < count; i++) {
			/* Element i's block b: the first count % n blocks hold one more. */
			uint64_t base = count / n, rem = count % n, b;

			b = i < rem * (base + 1) ? i / (base + 1) : rem + (i - rem * (base + 1)) / base;
			ref_reduce(in, i, (unsigned int)b + 1, k, exp + i * es);
		}
		break;
	case MAIA_COLL_REDUCE_SCATTER:
		if (n == 1) {
			memcpy(exp, in[0], blk);
			break;
		}
		for (uint64_t i = 0; i < count; i++)
			ref_reduce(in, r * count + i, r + 1, k, exp + i * es);
		break;
	case MAIA_COLL_ALL_GATHER:
		for (unsigned int b = 0; b < n; b++)
			memcpy(exp + b * blk, in[b], blk);
		break;
	case MAIA_COLL_BROADCAST:
		memcpy(exp, in[k->root], blk);
		break;
	default:	/* ALL_TO_ALL: block j from rank j */
		for (unsigned int j = 0; j < n; j++)
			memcpy(exp + j * blk, in[j] + r * blk, blk);
		break;
	}
}

void ref_buf_sizes(const struct maia_cmd_collective *k, size_t *send, size_t *recv)
{
	size_t blk = k->count * maia_dtype_size(k->dtype);
	unsigned int n = k->nranks;

	*send = *recv = blk;
	if (k->coll == MAIA_COLL_REDUCE_SCATTER || k->coll == MAIA_COLL_ALL_TO_ALL)
		*send *= n;
	if (k->coll == MAIA_COLL_ALL_GATHER || k->coll == MAIA_COLL_ALL_TO_ALL)
		*recv *= n;
}

static uint64_t mix(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

void ref_fill(uint8_t *p, uint64_t elems, unsigned int dtype, uint64_t *rng)
{
	for (uint64_t i = 0; i < elems; i++) {
		int e = (int)(mix(rng) % 40) - 20;
		float f = ldexpf((float)(mix(rng) >> 40) / (float)(1u << 24), e);

		if (mix(rng) & 1)
			f = -f;
		if (dtype == MAIA_DTYPE_FP32) {
			memcpy(p + 4 * i, &f, 4);
		} else {
			uint16_t h = ref_f32_to_bf16(f);

			memcpy(p + 2 * i, &h, 2);
		}
	}
}

/*
 * ref_fill, then about half the elements replaced by values that decide
 * MAX/MIN's rules: quiet NaNs of random sign and payload, +0 and -0,
 * infinities, a few denormals and a few ordinary values, the last three
 * from small sets so that ranks tie often.
 */
void ref_fill_special(uint8_t *p, uint64_t elems, unsigned int dtype, uint64_t *rng)
{
	static const uint32_t denorm[] = { 0x00000001, 0x00010000, 0x807f0000, 0x00400000 };
	static const float plain[] = { 1.0f, -1.0f, 0.5f, 3.0f };

	ref_fill(p, elems, dtype, rng);
	for (uint64_t i = 0; i < elems; i++) {
		uint64_t r = mix(rng), pick = r % 32, bits = r >> 8;
		uint32_t u;

		if (pick < 2)		/* NaN: exponent all ones, quiet bit, random payload */
			u = (uint32_t)(bits & 0x803fffffu) | 0x7fc00000u;
		else if (pick < 10)	/* +0, -0 */
			u = pick < 6 ? 0 : 0x80000000u;
		else if (pick < 12)	/* +inf, -inf */
			u = pick == 10 ? 0x7f800000u : 0xff800000u;
		else if (pick < 16)	/* denormals (BF16: the first is +0) */
			u = denorm[bits % 4];
		else if (pick < 24)
			memcpy(&u, &plain[bits % 4], 4);
		else
			continue;
		if (dtype == MAIA_DTYPE_FP32) {
			memcpy(p + 4 * i, &u, 4);
		} else {
			uint16_t h = (uint16_t)(u >> 16);	/* BF16 exactly */

			memcpy(p + 2 * i, &h, 2);
		}
	}
}
