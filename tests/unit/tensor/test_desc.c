// SPDX-License-Identifier: MIT
/*
 * Malformed tensor descriptors and commands: each kind of mistake gets
 * MAIA_STATUS_BAD_DESC (or BAD_CMD for command fields), never a crash; and
 * a deterministic storm of random commands for every tensor opcode returns
 * only defined statuses.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"
#include "tap.h"
#include "../../../firmware-sim/src/tensor/te.h"

static struct tmem mem;
static struct fw_tensor_engine *te;

/* COPY x -> out with the given descriptors. */
static int copy(const struct maia_tensor_desc *x, const struct maia_tensor_desc *out)
{
	struct maia_cmd_convert c;

	memset(&c, 0, sizeof(c));
	c.hdr.opcode = MAIA_OP_COPY;
	c.hdr.size = sizeof(c);
	c.x = *x;
	c.out = *out;
	return trun(te, &mem, &c, NULL);
}

static struct maia_tensor_desc good(unsigned int dt, uint64_t va)
{
	uint32_t sh[2] = { 4, 64 };

	return tdesc(dt, va, 2, sh);
}

#define EXPECT(desc_expr, want, what) do {					\
	struct maia_tensor_desc d_in = good(MAIA_DTYPE_FP32, in), d_out = good(MAIA_DTYPE_FP32, out); \
	struct maia_tensor_desc *d = &d_in;					\
	int st_;								\
	(void)d;								\
	desc_expr;								\
	st_ = copy(&d_in, &d_out);						\
	tap_ok(st_ == (want), "%s: status %d", what, st_);			\
} while (0)

static void test_fields(void)
{
	uint64_t in = tmem_alloc(&mem, 4096), out = tmem_alloc(&mem, 4096);
	uint64_t sc = tmem_alloc(&mem, 64);

	EXPECT((void)0, MAIA_STATUS_OK, "well-formed copy");
	EXPECT(d->dtype = MAIA_DTYPE_COUNT, MAIA_STATUS_BAD_DESC, "dtype 16");
	EXPECT(d->dtype = 255, MAIA_STATUS_BAD_DESC, "dtype 255");
	EXPECT(d->rank = 0, MAIA_STATUS_BAD_DESC, "rank 0");
	EXPECT(d->rank = 5, MAIA_STATUS_BAD_DESC, "rank 5");
	EXPECT(d->flags = 1, MAIA_STATUS_BAD_DESC, "descriptor flags set");
	EXPECT(d->shape[1] = 0, MAIA_STATUS_BAD_DESC, "zero dimension");
	EXPECT((d->shape[0] = 1, d->shape[1] = MAIA_TENSOR_MAX_DIM + 1, d_out = d_in),
	       MAIA_STATUS_BAD_DESC, "dimension above 2^24");
	EXPECT((d->rank = 4, d->shape[0] = d->shape[1] = d->shape[2] = d->shape[3] = 1u << 24,
		d->strides[3] = 1, d->strides[2] = 0, d->strides[1] = 0, d->strides[0] = 0),
	       MAIA_STATUS_BAD_DESC, "element count overflowing 2^64");
	EXPECT(d->strides[0] = 1ull << 62, MAIA_STATUS_BAD_DESC, "stride * (dim - 1) overflowing");
	EXPECT(d->addr = UINT64_MAX - 100, MAIA_STATUS_BAD_DESC, "extent wrapping past 2^64");
	EXPECT(d->shape[3] = 1, MAIA_STATUS_BAD_DESC, "shape entry beyond rank");
	EXPECT(d->strides[2] = 1, MAIA_STATUS_BAD_DESC, "stride entry beyond rank");
	EXPECT(d->scale_addr = sc, MAIA_STATUS_BAD_DESC, "scale_addr on a plain dtype");
	EXPECT(d->scale = f2u(2.0f), MAIA_STATUS_BAD_DESC, "scale on FP32");
	EXPECT((d->dtype = MAIA_DTYPE_INT8, d->scale = f2u(-1.0f)), MAIA_STATUS_BAD_DESC, "negative INT8 scale");
	EXPECT((d->dtype = MAIA_DTYPE_INT8, d->scale = f2u(NAN)), MAIA_STATUS_BAD_DESC, "NaN INT8 scale");
	EXPECT((d->dtype = MAIA_DTYPE_FP8_E4M3, d->scale = f2u(INFINITY)), MAIA_STATUS_BAD_DESC, "Inf FP8 scale");
	EXPECT((d->dtype = MAIA_DTYPE_INT8, d->scale = f2u(1e-40f)), MAIA_STATUS_BAD_DESC, "subnormal INT8 scale");
	EXPECT((d->dtype = MAIA_DTYPE_INT8, d->scale = f2u(0.5f)), MAIA_STATUS_OK, "INT8 with scale 0.5");
	EXPECT((d->dtype = MAIA_DTYPE_MXFP8_E4M3, d->scale_addr = sc), MAIA_STATUS_OK, "MXFP8 with scales");
	EXPECT((d->dtype = MAIA_DTYPE_MXFP4_E2M1, d->scale_addr = sc, d->shape[1] = 48, d->strides[0] = 48,
		d_out.shape[1] = 48, d_out.strides[0] = 48),
	       MAIA_STATUS_BAD_DESC, "MX row not a multiple of 32");
	EXPECT((d->dtype = MAIA_DTYPE_MXFP4_E2M1, d->scale_addr = sc, d->strides[1] = 2, d->strides[0] = 128),
	       MAIA_STATUS_BAD_DESC, "MX inner stride 2");
	EXPECT((d->dtype = MAIA_DTYPE_MXFP4_E2M1, d->scale_addr = sc, d->strides[0] = 80),
	       MAIA_STATUS_BAD_DESC, "MX row stride not a multiple of 32");
	EXPECT((d->dtype = MAIA_DTYPE_MX4, d->scale_addr = UINT64_MAX - 2),
	       MAIA_STATUS_BAD_DESC, "MX scales wrapping past 2^64");
	EXPECT((d->dtype = MAIA_DTYPE_MX9, d->scale_addr = sc, d->shape[1] = 48, d->strides[0] = 48,
		d_out.shape[1] = 48, d_out.strides[0] = 48),
	       MAIA_STATUS_OK, "MX9 with 16-element blocks, rows of 48");
	EXPECT((d = &d_out, d->strides[1] = 0), MAIA_STATUS_BAD_DESC, "output with stride 0");
	EXPECT((d = &d_out, d->strides[0] = 32), MAIA_STATUS_BAD_DESC, "output rows overlapping");
	EXPECT((d = &d_out, d->strides[0] = 1, d->strides[1] = 4), MAIA_STATUS_OK, "column-major output");
	EXPECT((d = &d_out, d->strides[0] = 1, d->strides[1] = 3), MAIA_STATUS_BAD_DESC,
	       "column-major output, columns overlapping");
	EXPECT((d = &d_out, d->shape[0] = 5), MAIA_STATUS_BAD_DESC, "shape mismatch between x and out");
	EXPECT(d->addr = 0x1000, MAIA_STATUS_MMU_FAULT, "unmapped input: MMU fault");
	EXPECT((d = &d_out, d->addr = TMEM_BASE + mem.size - 64), MAIA_STATUS_MMU_FAULT,
	       "output running off the mapping: MMU fault");
}

static void test_headers(void)
{
	struct maia_cmd_convert c;
	uint64_t in = tmem_alloc(&mem, 4096), out = tmem_alloc(&mem, 4096);

	memset(&c, 0, sizeof(c));
	c.hdr.opcode = MAIA_OP_COPY;
	c.hdr.size = sizeof(c);
	c.x = good(MAIA_DTYPE_FP32, in);
	c.out = good(MAIA_DTYPE_BF16, out);
	tap_ok(trun(te, &mem, &c, NULL) == MAIA_STATUS_OK, "copy fp32 -> bf16");
	c.hdr.size = sizeof(c) + 8;
	tap_ok(trun(te, &mem, &c, NULL) == MAIA_STATUS_BAD_CMD, "size larger than the command: bad command");
	c.hdr.size = 12;
	tap_ok(trun(te, &mem, &c, NULL) == MAIA_STATUS_BAD_CMD, "size not a multiple of 8: bad command");
	c.hdr.size = sizeof(c);
	c.scale_out = 64;
	tap_ok(trun(te, &mem, &c, NULL) == MAIA_STATUS_BAD_CMD, "scale_out without the dynamic flag: bad command");
	c.scale_out = 0;
	c.hdr.opcode = 0x2f;
	tap_ok(trun(te, &mem, &c, NULL) == MAIA_STATUS_BAD_OPCODE, "reserved tensor opcode 0x2f: bad opcode");
	tap_ok(!fw_tensor_handles(0x01) && !fw_tensor_handles(0x30) && fw_tensor_handles(MAIA_OP_GEMM),
	       "handles() claims exactly the implemented tensor opcodes");
}

/* Random bytes in every command of every tensor opcode. */
static void test_storm(void)
{
	static const uint16_t ops[] = {
		MAIA_OP_GEMM, MAIA_OP_GEMM_BATCHED, MAIA_OP_ADD, MAIA_OP_MUL, MAIA_OP_SCALE,
		MAIA_OP_ACTIVATION, MAIA_OP_SOFTMAX, MAIA_OP_LAYERNORM, MAIA_OP_RMSNORM,
		MAIA_OP_ATTENTION, MAIA_OP_QUANTIZE, MAIA_OP_DEQUANTIZE, MAIA_OP_REDUCE,
		MAIA_OP_TRANSPOSE, MAIA_OP_COPY,
	};
	static const uint32_t sizes[] = {
		sizeof(struct maia_cmd_gemm), sizeof(struct maia_cmd_gemm_batched),
		sizeof(struct maia_cmd_eltwise), sizeof(struct maia_cmd_eltwise),
		sizeof(struct maia_cmd_scale), sizeof(struct maia_cmd_activation),
		sizeof(struct maia_cmd_softmax), sizeof(struct maia_cmd_norm),
		sizeof(struct maia_cmd_norm), sizeof(struct maia_cmd_attention),
		sizeof(struct maia_cmd_convert), sizeof(struct maia_cmd_convert),
		sizeof(struct maia_cmd_reduce), sizeof(struct maia_cmd_transpose),
		sizeof(struct maia_cmd_convert),
	};
	static const unsigned int ndesc[] = { 4, 4, 3, 3, 2, 2, 2, 4, 4, 4, 2, 2, 2, 2, 2 };
	uint64_t counts[10] = { 0 }, bad = 0;

	trand_seed(99);
	for (int iter = 0; iter < 30000; iter++) {
		union {
			uint64_t raw[64];
			struct maia_cmd_header h;
			struct maia_cmd_reduce reduce;
			struct maia_cmd_transpose transpose;
			struct maia_cmd_activation act;
			struct maia_cmd_gemm_batched gb;
		} u;
		uint64_t *buf = u.raw;
		struct maia_cmd_header *h = &u.h;
		size_t k = (size_t)iter % (sizeof(ops) / sizeof(ops[0]));
		struct maia_tensor_desc *d = (void *)(h + 1);
		int st;

		for (size_t i = 0; i < 64; i++)
			buf[i] = ((uint64_t)(trand_uniform(0, 1) * 4294967296.0) << 32) ^
				 (uint64_t)(trand_uniform(0, 1) * 4294967296.0);
		h->opcode = ops[k];
		h->size = sizes[k];
		h->flags &= (uint16_t)(iter & 7);
		/* keep half of the descriptors plausible so that deeper checks run */
		for (int j = 0; j < 4 && iter % 2; j++) {
			d[j].rank = (uint8_t)(1 + d[j].rank % 4);
			d[j].dtype %= MAIA_DTYPE_COUNT;
			d[j].flags = 0;
			d[j].scale = 0;
			d[j].scale_addr = maia_dtype_is_block(d[j].dtype) ? TMEM_BASE : 0;
			d[j].addr = TMEM_BASE + (d[j].addr % 4096);
			for (int q = 0; q < 4; q++) {
				d[j].shape[q] = q < d[j].rank ? 1 + d[j].shape[q] % 64 : 0;
				d[j].strides[q] = q < d[j].rank ? d[j].strides[q] % 128 : 0;
			}
		}
		if (iter % 2) {	/* command fields after the descriptors: zero, or small */
			uint8_t *tail = (uint8_t *)(d + ndesc[k]);

			memset(tail, 0, sizes[k] - 8 - ndesc[k] * sizeof(*d));
			if (ops[k] == MAIA_OP_REDUCE)
				u.reduce.axes = 1 + iter % 15;
			if (ops[k] == MAIA_OP_TRANSPOSE)
				memcpy(u.transpose.perm, "\1\0\2\3", 4);
			if (ops[k] == MAIA_OP_ACTIVATION)
				u.act.activation = 1 + iter % 4;
			if (ops[k] == MAIA_OP_GEMM_BATCHED) {
				struct maia_cmd_gemm_batched *g = &u.gb;

				g->batch_count = 1 + iter % 3;
				g->a_ptrs = g->b_ptrs = g->c_ptrs = TMEM_BASE;
				g->a.addr = g->b.addr = g->c.addr = 0;
			}
			if (iter % 4 == 1)	/* some with unmapped addresses */
				d[iter % ndesc[k]].addr = 0x1000;
		}
		st = trun(te, &mem, buf, NULL);
		if (st < 0 || st > (int)MAIA_STATUS_SEM_TIMEOUT || st == MAIA_STATUS_BAD_CONTEXT ||
		    st == MAIA_STATUS_ABORTED || st == MAIA_STATUS_SEM_TIMEOUT)
			bad++;
		else
			counts[st]++;
	}
	tap_ok(!bad, "30000 random commands: only defined statuses (ok %llu, bad cmd %llu, bad desc %llu, fault %llu)",
	       (unsigned long long)counts[MAIA_STATUS_OK], (unsigned long long)counts[MAIA_STATUS_BAD_CMD],
	       (unsigned long long)counts[MAIA_STATUS_BAD_DESC], (unsigned long long)counts[MAIA_STATUS_MMU_FAULT]);
}

int main(void)
{
	tmem_init(&mem, 1 << 20);
	te = tengine(2);
	test_fields();
	test_headers();
	test_storm();
	fw_tensor_destroy(te);
	tmem_free(&mem);
	return tap_done();
}
