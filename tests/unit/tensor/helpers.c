// SPDX-License-Identifier: MIT
/* Tensor test helpers; see helpers.h. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"
#include "../../../firmware-sim/src/tensor/te.h"

static int tmem_read(void *opaque, uint64_t va, void *buf, size_t len)
{
	struct tmem *m = opaque;

	if (va < m->base || va - m->base > m->size || len > m->size - (va - m->base))
		return MAIA_STATUS_MMU_FAULT;
	memcpy(buf, m->buf + (va - m->base), len);
	return MAIA_STATUS_OK;
}

static int tmem_write(void *opaque, uint64_t va, const void *buf, size_t len)
{
	struct tmem *m = opaque;

	if (va < m->base || va - m->base > m->size || len > m->size - (va - m->base))
		return MAIA_STATUS_MMU_FAULT;
	memcpy(m->buf + (va - m->base), buf, len);
	return MAIA_STATUS_OK;
}

/*
 * In-place reads stop at every 4 KiB of the buffer, as a mapping ends at a
 * page, so the engine's fallbacks for a split row or block get exercised.
 */
static int tmem_map(void *opaque, uint64_t va, size_t len, const void **ptr, size_t *avail)
{
	struct tmem *m = opaque;
	uint64_t off = va - m->base, page_left;

	if (va < m->base || off >= m->size)
		return MAIA_STATUS_MMU_FAULT;
	page_left = TMEM_MAP_PAGE - off % TMEM_MAP_PAGE;
	*ptr = m->buf + off;
	*avail = len < page_left ? len : page_left;
	if (*avail > m->size - off)
		*avail = m->size - off;
	return MAIA_STATUS_OK;
}

static int tmem_map_write(void *opaque, uint64_t va, size_t len, void **ptr, size_t *avail)
{
	return tmem_map(opaque, va, len, (const void **)ptr, avail);
}

void tmem_init(struct tmem *m, uint64_t size)
{
	m->buf = calloc(1, size);
	if (!m->buf)
		abort();
	m->base = TMEM_BASE;
	m->size = size;
	m->used = 0;
	m->mem.opaque = m;
	m->mem.read = tmem_read;
	m->mem.write = tmem_write;
	m->mem.map = tmem_map;
	m->mem.map_write = tmem_map_write;
}

void tmem_free(struct tmem *m)
{
	free(m->buf);
	m->buf = NULL;
}

void tmem_reset(struct tmem *m)
{
	m->used = 0;
}

uint64_t tmem_alloc(struct tmem *m, uint64_t bytes)
{
	uint64_t va = m->base + m->used;

	m->used += (bytes + 63) & ~63ull;
	if (m->used > m->size)
		abort();
	return va;
}

void *tmem_ptr(struct tmem *m, uint64_t va)
{
	return m->buf + (va - m->base);
}

struct maia_tensor_desc tdesc(unsigned int dtype, uint64_t va, unsigned int rank,
			      const uint32_t *shape)
{
	struct maia_tensor_desc d;
	uint64_t st = 1;

	memset(&d, 0, sizeof(d));
	d.dtype = (uint8_t)dtype;
	d.rank = (uint8_t)rank;
	d.addr = va;
	for (int i = (int)rank - 1; i >= 0; i--) {
		d.shape[i] = shape[i];
		d.strides[i] = st;
		st *= shape[i];
	}
	return d;
}

uint64_t tbytes(unsigned int dtype, uint64_t n)
{
	unsigned int bs = maia_dtype_block(dtype);

	return bs > 1 ? n / bs * maia_dtype_block_bytes(dtype) : n * maia_dtype_size(dtype);
}

double ref_minifloat(uint32_t code, int ebits, int mbits, int bias, int kind)
{
	uint32_t e = (code >> mbits) & ((1u << ebits) - 1), mm = code & ((1u << mbits) - 1);
	int neg = (code >> (ebits + mbits)) & 1;
	double v;

	if (kind == REF_IEEE && e == (1u << ebits) - 1)
		v = mm ? NAN : INFINITY;
	else if (kind == REF_FN && e == (1u << ebits) - 1 && mm == (1u << mbits) - 1)
		v = NAN;
	else if (e == 0)
		v = mm * pow(2.0, 1 - bias - mbits);
	else
		v = (1.0 + mm / pow(2.0, mbits)) * pow(2.0, (int)e - bias);
	return neg ? -v : v;
}

double ref_decode(unsigned int dtype, uint32_t code)
{
	union { uint32_t u; float f; } c;

	switch (dtype) {
	case MAIA_DTYPE_FP32:
		c.u = code;
		return c.f;
	case MAIA_DTYPE_BF16:
		return ref_minifloat(code, 8, 7, 127, REF_IEEE);
	case MAIA_DTYPE_FP16:
		return ref_minifloat(code, 5, 10, 15, REF_IEEE);
	case MAIA_DTYPE_FP8_E4M3:
		return ref_minifloat(code, 4, 3, 7, REF_FN);
	case MAIA_DTYPE_FP8_E5M2:
		return ref_minifloat(code, 5, 2, 15, REF_IEEE);
	case MAIA_DTYPE_INT8:
		return (int8_t)code;
	case MAIA_DTYPE_INT32:
		return (int32_t)code;
	default:
		return NAN;
	}
}

double ref_elem(unsigned int dt, uint32_t code)
{
	switch (dt) {
	case MAIA_DTYPE_MXFP8_E4M3:
		return ref_minifloat(code, 4, 3, 7, REF_FN);
	case MAIA_DTYPE_MXFP8_E5M2:
		return ref_minifloat(code, 5, 2, 15, REF_IEEE);
	case MAIA_DTYPE_MXFP6_E3M2:
		return ref_minifloat(code, 3, 2, 3, REF_FINITE);
	case MAIA_DTYPE_MXFP6_E2M3:
		return ref_minifloat(code, 2, 3, 1, REF_FINITE);
	case MAIA_DTYPE_MXFP4_E2M1:
		return ref_minifloat(code, 2, 1, 1, REF_FINITE);
	case MAIA_DTYPE_MXINT8:
		return (int8_t)code / 64.0;
	default:
		return NAN;
	}
}

double ref_unit_roundoff(unsigned int dtype)
{
	switch (dtype) {
	case MAIA_DTYPE_BF16:
		return ldexp(1.0, -8);
	case MAIA_DTYPE_FP16:
		return ldexp(1.0, -11);
	case MAIA_DTYPE_FP8_E4M3:
		return ldexp(1.0, -4);
	case MAIA_DTYPE_FP8_E5M2:
		return ldexp(1.0, -3);
	default:
		return ldexp(1.0, -24);
	}
}

static unsigned int get_field(const uint8_t *p, unsigned int pos, unsigned int w)
{
	unsigned int v = 0;

	for (unsigned int i = 0; i < w; i++)
		v |= (unsigned int)((p[(pos + i) / 8] >> ((pos + i) % 8)) & 1) << i;
	return v;
}

void tget(struct tmem *m, unsigned int dt, uint64_t va, uint64_t scale_va, uint64_t n,
	  float scale, double *out)
{
	const uint8_t *p = tmem_ptr(m, va);
	uint64_t i;

	if (dt >= MAIA_DTYPE_MXFP8_E4M3 && dt <= MAIA_DTYPE_MXINT8) {
		const uint8_t *s = tmem_ptr(m, scale_va);
		unsigned int w = dt <= MAIA_DTYPE_MXFP8_E5M2 || dt == MAIA_DTYPE_MXINT8 ? 8 :
				 dt == MAIA_DTYPE_MXFP4_E2M1 ? 4 : 6;

		for (i = 0; i < n; i++) {
			uint8_t sc = s[i / 32];
			const uint8_t *blk = p + i / 32 * (32 * w / 8);

			out[i] = sc == 0xff ? NAN :
				 ref_elem(dt, get_field(blk, (unsigned int)(i % 32) * w, w)) *
				 pow(2.0, (int)sc - 127);
		}
		return;
	}
	if (dt >= MAIA_DTYPE_MX9) {
		const uint8_t *s = tmem_ptr(m, scale_va);
		unsigned int mb = dt == MAIA_DTYPE_MX9 ? 7 : dt == MAIA_DTYPE_MX6 ? 4 : 2;
		unsigned int w = mb + 1, bb = 16 * w / 8 + 1;

		for (i = 0; i < n; i++) {
			const uint8_t *blk = p + i / 16 * bb;
			unsigned int v = get_field(blk, (unsigned int)(i % 16) * w, w);
			unsigned int u = (blk[16 * w / 8] >> ((i % 16) / 2)) & 1;
			double mag = (v & ((1u << mb) - 1)) *
				     pow(2.0, (int)s[i / 16] - 127 - (int)u - (int)(mb - 1));

			out[i] = s[i / 16] == 0xff ? NAN : (v >> mb) & 1 ? -mag : mag;
		}
		return;
	}
	for (i = 0; i < n; i++) {
		uint32_t code = 0;

		memcpy(&code, p + i * maia_dtype_size(dt), maia_dtype_size(dt));
		out[i] = ref_decode(dt, code);
		if (dt == MAIA_DTYPE_INT8 || dt == MAIA_DTYPE_FP8_E4M3 || dt == MAIA_DTYPE_FP8_E5M2)
			out[i] *= scale;
	}
}

void tput(struct tmem *m, unsigned int dt, uint64_t va, uint64_t scale_va,
	  const float *vals, uint64_t n, float scale, double *out)
{
	if (maia_dtype_is_block(dt))
		fw_mx_encode(dt, vals, n / maia_dtype_block(dt), tmem_ptr(m, va),
			       tmem_ptr(m, scale_va));
	else
		fw_encode(dt, vals, n, scale, true, tmem_ptr(m, va));
	if (out)
		tget(m, dt, va, scale_va, n, scale, out);
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

void trand_seed(uint64_t s)
{
	rng_state = s * 2 + 1;
}

float trand_uniform(float lo, float hi)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return lo + (hi - lo) * (float)((rng_state >> 40) * (1.0 / 16777216.0));
}

int trun(struct fw_tensor_engine *te, struct tmem *m, const void *cmd,
	 struct maia_op_stats *stats)
{
	struct maia_op_stats local;

	memset(&local, 0, sizeof(local));
	return fw_tensor_exec(te, cmd, &m->mem, stats ? stats : &local);
}

struct fw_tensor_engine *tengine(unsigned int threads)
{
	struct fw_tensor_config cfg = {
		.clusters = 16, .tiles_per_cluster = 4, .sram_kib = 8192, .threads = threads,
	};

	return fw_tensor_create(&cfg);
}
