// SPDX-License-Identifier: MIT
/*
 * Tensor descriptors and the tensor-operation command builders.
 *
 * Every builder checks what the device would reject (descriptor rules of
 * Documentation/tensor-engine.rst, shape agreement, output dtypes, flags)
 * and fails with -EINVAL and a message for maia_last_error(), so a bad
 * call is reported where it was made rather than as MAIA_STATUS_BAD_DESC
 * from a job later. The device still checks everything again.
 */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "maia/hw/tensor.h"

#include "internal.h"

static uint32_t f32_bits(float f)
{
	uint32_t u;

	memcpy(&u, &f, sizeof(u));
	return u;
}

/* INT8 and FP8 carry a per-tensor scale. */
static bool dtype_has_scale(unsigned int dt)
{
	return maia_dtype_has_scale(dt);
}

static bool dtype_is_quantized(unsigned int dt)
{
	return dtype_has_scale(dt) || maia_dtype_is_block(dt);
}

MAIA_EXPORT int maia_dtype_bytes(unsigned int dtype, uint64_t elems, uint64_t *data_bytes,
				 uint64_t *scale_bytes)
{
	unsigned int block;

	maia_error_clear();
	if (dtype >= MAIA_DTYPE_COUNT || !data_bytes)
		return maia_error(-EINVAL, "maia_dtype_bytes: bad dtype %u or NULL output", dtype);
	block = maia_dtype_block(dtype);
	if (elems % block)
		return maia_error(-EINVAL, "maia_dtype_bytes: %llu elements is not a multiple of "
				  "the %s block of %u", (unsigned long long)elems,
				  maia_dtype_name(dtype), block);
	*data_bytes = elems / block * maia_dtype_block_bytes(dtype);
	if (scale_bytes)
		*scale_bytes = block > 1 ? elems / block : 0;
	return 0;
}

MAIA_EXPORT int maia_tensor_init(struct maia_tensor_desc *desc, uint64_t va, unsigned int dtype,
				 unsigned int rank, const uint32_t *shape)
{
	uint64_t stride = 1;
	int d;

	maia_error_clear();
	if (!desc || !shape)
		return maia_error(-EINVAL, "maia_tensor_init: NULL descriptor or shape");
	if (!rank || rank > MAIA_TENSOR_MAX_RANK)
		return maia_error(-EINVAL, "maia_tensor_init: rank %u is not 1..%u", rank,
				  MAIA_TENSOR_MAX_RANK);
	if (dtype >= MAIA_DTYPE_COUNT)
		return maia_error(-EINVAL, "maia_tensor_init: unknown dtype %u", dtype);
	memset(desc, 0, sizeof(*desc));
	desc->addr = va;
	desc->dtype = (uint8_t)dtype;
	desc->rank = (uint8_t)rank;
	for (d = (int)rank - 1; d >= 0; d--) {
		if (!shape[d] || shape[d] > MAIA_TENSOR_MAX_DIM)
			return maia_error(-EINVAL, "maia_tensor_init: dimension %d is %u, not 1..%u",
					  d, shape[d], MAIA_TENSOR_MAX_DIM);
		desc->shape[d] = shape[d];
		desc->strides[d] = stride;
		stride *= shape[d];
	}
	if (stride > MAIA_TENSOR_MAX_ELEMS)
		return maia_error(-EINVAL, "maia_tensor_init: %llu elements, more than 2^32",
				  (unsigned long long)stride);
	if (shape[rank - 1] % maia_dtype_block(dtype))
		return maia_error(-EINVAL, "maia_tensor_init: innermost dimension %u is not a "
				  "multiple of the %s block of %u", shape[rank - 1],
				  maia_dtype_name(dtype), maia_dtype_block(dtype));
	return 0;
}

MAIA_EXPORT int maia_tensor_set_scale_addr(struct maia_tensor_desc *desc, uint64_t scale_va)
{
	maia_error_clear();
	if (!desc || !maia_dtype_is_block(desc->dtype) || !scale_va)
		return maia_error(-EINVAL, "maia_tensor_set_scale_addr: only block (MX) formats "
				  "have block scales, and the address must be nonzero");
	desc->scale_addr = scale_va;
	return 0;
}

MAIA_EXPORT int maia_tensor_set_scale(struct maia_tensor_desc *desc, float scale)
{
	maia_error_clear();
	if (!desc || !dtype_has_scale(desc->dtype))
		return maia_error(-EINVAL, "maia_tensor_set_scale: only INT8 and FP8 have a "
				  "per-tensor scale");
	if (!isnormal(scale) || scale < 0)
		return maia_error(-EINVAL, "maia_tensor_set_scale: scale %g is not finite, "
				  "normal and positive", (double)scale);
	desc->scale = f32_bits(scale);
	return 0;
}

MAIA_EXPORT uint64_t maia_tensor_elems(const struct maia_tensor_desc *desc)
{
	uint64_t n = 1;
	unsigned int d;

	if (!desc || !desc->rank || desc->rank > MAIA_TENSOR_MAX_RANK)
		return 0;
	for (d = 0; d < desc->rank; d++)
		n *= desc->shape[d];
	return n;
}

/* ---- argument checks --------------------------------------------------- */

/*
 * The descriptor rules of tensor-engine.rst that need no memory access: the
 * device's own (maia_tensor_desc_check() in maia/hw/tensor.h, shared with
 * firmware-sim), then libmaia's: a block format needs its scale address.
 */
static int desc_check(const char *fn, const char *name, const struct maia_tensor_desc *t,
		      bool output)
{
	unsigned int d, block;
	float scale;
	int reason;

	if (!t)
		return maia_error(-EINVAL, "%s: %s is NULL", fn, name);
	reason = maia_tensor_desc_check(t, output, &d);
	block = maia_dtype_block(t->dtype);
	memcpy(&scale, &t->scale, sizeof(scale));
	switch (reason) {
	case MAIA_DESC_OK:
		break;
	case MAIA_DESC_BAD_DTYPE:
		return maia_error(-EINVAL, "%s: %s has unknown dtype %u", fn, name, t->dtype);
	case MAIA_DESC_BAD_RANK:
		return maia_error(-EINVAL, "%s: %s has rank %u, not 1..%u", fn, name, t->rank,
				  MAIA_TENSOR_MAX_RANK);
	case MAIA_DESC_BAD_FLAGS:
		return maia_error(-EINVAL, "%s: %s has nonzero flags", fn, name);
	case MAIA_DESC_UNUSED_DIM:
		return maia_error(-EINVAL, "%s: %s has shape or stride set at index %u "
				  ">= rank %u", fn, name, d, t->rank);
	case MAIA_DESC_BAD_DIM:
		return maia_error(-EINVAL, "%s: %s dimension %u is %u, not 1..%u", fn, name,
				  d, t->shape[d], MAIA_TENSOR_MAX_DIM);
	case MAIA_DESC_OUTPUT_STRIDE0:
		return maia_error(-EINVAL, "%s: output %s has stride 0 in dimension %u "
				  "(it would overlap itself)", fn, name, d);
	case MAIA_DESC_TOO_MANY_ELEMS:
		return maia_error(-EINVAL, "%s: %s has more than 2^32 elements", fn, name);
	case MAIA_DESC_BLOCK_INNER:
		return maia_error(-EINVAL, "%s: %s (%s) needs innermost stride 1 and a size "
				  "that is a multiple of %u", fn, name,
				  maia_dtype_name(t->dtype), block);
	case MAIA_DESC_BLOCK_STRIDE:
		return maia_error(-EINVAL, "%s: %s (%s) stride %u is not a multiple "
				  "of the block %u", fn, name,
				  maia_dtype_name(t->dtype), d, block);
	case MAIA_DESC_SCALE_ADDR:
		return maia_error(-EINVAL, "%s: %s (%s) has a scale address but no block scales",
				  fn, name, maia_dtype_name(t->dtype));
	case MAIA_DESC_SCALE_UNUSED:
		return maia_error(-EINVAL, "%s: %s (%s) has a per-tensor scale", fn, name,
				  maia_dtype_name(t->dtype));
	case MAIA_DESC_BAD_SCALE:
		return maia_error(-EINVAL, "%s: %s scale %g is not finite, normal and positive",
				  fn, name, (double)scale);
	default:
		return maia_error(-EINVAL, "%s: %s: %s", fn, name, maia_desc_reason_str(reason));
	}
	if (block > 1 && !t->scale_addr)
		return maia_error(-EINVAL, "%s: %s (%s) has no block-scale address "
				  "(maia_tensor_set_scale_addr)", fn, name,
				  maia_dtype_name(t->dtype));
	return 0;
}

static int same_shape(const char *fn, const char *na, const struct maia_tensor_desc *a,
		      const char *nb, const struct maia_tensor_desc *b)
{
	unsigned int d;

	if (a->rank != b->rank)
		return maia_error(-EINVAL, "%s: %s has rank %u but %s has rank %u", fn, na,
				  a->rank, nb, b->rank);
	for (d = 0; d < a->rank; d++)
		if (a->shape[d] != b->shape[d])
			return maia_error(-EINVAL, "%s: %s dimension %u is %u but %s's is %u", fn,
					  na, d, a->shape[d], nb, b->shape[d]);
	return 0;
}

/* x broadcasts to out: same rank, each dimension equal or 1. */
static int broadcasts_to(const char *fn, const char *nx, const struct maia_tensor_desc *x,
			 const struct maia_tensor_desc *out)
{
	unsigned int d;

	if (x->rank != out->rank)
		return maia_error(-EINVAL, "%s: %s has rank %u but out has rank %u", fn, nx,
				  x->rank, out->rank);
	for (d = 0; d < x->rank; d++)
		if (x->shape[d] != out->shape[d] && x->shape[d] != 1)
			return maia_error(-EINVAL, "%s: %s dimension %u is %u, neither 1 nor out's "
					  "%u", fn, nx, d, x->shape[d], out->shape[d]);
	return 0;
}

static int check_float(const char *fn, const char *name, float v)
{
	if (!isfinite(v))
		return maia_error(-EINVAL, "%s: %s is not finite", fn, name);
	return 0;
}

static int check_cb(const char *fn, struct maia_cmdbuf *cb)
{
	maia_error_clear();
	if (!cb)
		return maia_error(-EINVAL, "%s: NULL command buffer", fn);
	return 0;
}

/* Checks in order; the first error wins. */
#define TRY(expr)			\
	do {				\
		int err_ = (expr);	\
		if (err_)		\
			return err_;	\
	} while (0)

static int append(const char *fn, struct maia_cmdbuf *cb, void *cmd, uint16_t op,
		  uint16_t flags, uint32_t size)
{
	struct maia_cmd_header *hdr = cmd;
	int err;

	hdr->opcode = op;
	hdr->flags = flags;
	hdr->size = size;
	err = maia_cmd_raw(cb, cmd);
	if (err == -ENOSPC)
		return maia_error(err, "%s: command buffer full (%u of %u bytes used)", fn,
				  cb->used, cb->capacity);
	return err;
}

/* ---- GEMM ---------------------------------------------------------------- */

static bool gemm_c_dtype_ok(unsigned int dt)
{
	return dt == MAIA_DTYPE_FP32 || dt == MAIA_DTYPE_BF16 || dt == MAIA_DTYPE_FP16 ||
	       dt == MAIA_DTYPE_FP8_E4M3 || dt == MAIA_DTYPE_FP8_E5M2;
}

/* Shapes of op(A) (M x K), op(B) (K x N), C (M x N), batch and bias. */
static int gemm_check(const char *fn, const struct maia_gemm_args *g, bool batched)
{
	const struct maia_tensor_desc *a = g->a, *b = g->b, *c = g->c;
	unsigned int r, ra, rb;
	uint32_t m, n, ka, kb;

	if (!g->a || !g->b || !g->c)
		return maia_error(-EINVAL, "%s: A, B and C are required", fn);
	TRY(desc_check(fn, "A", a, false));
	TRY(desc_check(fn, "B", b, false));
	TRY(desc_check(fn, "C", c, true));
	if (g->flags & ~(MAIA_GEMM_F_TRANS_A | MAIA_GEMM_F_TRANS_B | MAIA_GEMM_F_SAT))
		return maia_error(-EINVAL, "%s: unknown flags 0x%x (bias goes in args->bias)",
				  fn, g->flags);
	if (g->activation >= MAIA_ACT_COUNT)
		return maia_error(-EINVAL, "%s: unknown activation %u", fn, g->activation);
	TRY(check_float(fn, "alpha", g->alpha));
	TRY(check_float(fn, "beta", g->beta));
	if (!gemm_c_dtype_ok(c->dtype))
		return maia_error(-EINVAL, "%s: C is %s; it must be fp32, bf16, fp16 or fp8", fn,
				  maia_dtype_name(c->dtype));
	r = c->rank;
	if (batched ? r != 2 : (r != 2 && r != 3))
		return maia_error(-EINVAL, "%s: C has rank %u, must be %s", fn, r,
				  batched ? "2" : "2 or 3 (batch first)");
	if (a->rank != r || b->rank != r)
		return maia_error(-EINVAL, "%s: A, B and C must have the same rank (%u, %u, %u)",
				  fn, a->rank, b->rank, r);
	if (r == 3 && ((a->shape[0] != c->shape[0] && a->shape[0] != 1) ||
		       (b->shape[0] != c->shape[0] && b->shape[0] != 1)))
		return maia_error(-EINVAL, "%s: batch sizes differ: A %u, B %u, C %u", fn,
				  a->shape[0], b->shape[0], c->shape[0]);
	if (batched && (a->addr || b->addr || c->addr))
		return maia_error(-EINVAL, "%s: descriptor addr must be 0 (addresses come from "
				  "the pointer arrays)", fn);
	if (batched && (maia_dtype_is_block(a->dtype) || maia_dtype_is_block(b->dtype)))
		return maia_error(-EINVAL, "%s: block formats are not supported", fn);
	ra = r - 2;
	rb = r - 1;
	m = c->shape[ra];
	n = c->shape[rb];
	ka = g->flags & MAIA_GEMM_F_TRANS_A ? a->shape[ra] : a->shape[rb];
	kb = g->flags & MAIA_GEMM_F_TRANS_B ? b->shape[rb] : b->shape[ra];
	if ((g->flags & MAIA_GEMM_F_TRANS_A ? a->shape[rb] : a->shape[ra]) != m)
		return maia_error(-EINVAL, "%s: op(A) has %u rows but C has %u", fn,
				  g->flags & MAIA_GEMM_F_TRANS_A ? a->shape[rb] : a->shape[ra], m);
	if ((g->flags & MAIA_GEMM_F_TRANS_B ? b->shape[ra] : b->shape[rb]) != n)
		return maia_error(-EINVAL, "%s: op(B) has %u columns but C has %u", fn,
				  g->flags & MAIA_GEMM_F_TRANS_B ? b->shape[ra] : b->shape[rb], n);
	if (ka != kb)
		return maia_error(-EINVAL, "%s: inner dimensions differ: op(A) is %ux%u, op(B) "
				  "is %ux%u", fn, m, ka, kb, n);
	if (g->bias) {
		TRY(desc_check(fn, "bias", g->bias, false));
		if (g->bias->rank != 1 || g->bias->shape[0] != n)
			return maia_error(-EINVAL, "%s: bias must be rank 1 with N = %u elements",
					  fn, n);
	}
	return 0;
}

static void gemm_fill(const struct maia_gemm_args *g, struct maia_tensor_desc *a,
		      struct maia_tensor_desc *b, struct maia_tensor_desc *c,
		      struct maia_tensor_desc *bias, uint32_t *alpha, uint32_t *beta,
		      uint32_t *act)
{
	*a = *g->a;
	*b = *g->b;
	*c = *g->c;
	if (g->bias)
		*bias = *g->bias;
	*alpha = f32_bits(g->alpha);
	*beta = f32_bits(g->beta);
	*act = g->activation;
}

MAIA_EXPORT int maia_cmd_gemm_ex(struct maia_cmdbuf *cb, const struct maia_gemm_args *args)
{
	static const char fn[] = "maia_cmd_gemm";
	struct maia_cmd_gemm cmd;

	TRY(check_cb(fn, cb));
	if (!args)
		return maia_error(-EINVAL, "%s: NULL args", fn);
	TRY(gemm_check(fn, args, false));
	memset(&cmd, 0, sizeof(cmd));
	gemm_fill(args, &cmd.a, &cmd.b, &cmd.c, &cmd.bias, &cmd.alpha, &cmd.beta,
		  &cmd.activation);
	return append(fn, cb, &cmd, MAIA_OP_GEMM,
		      (uint16_t)(args->flags | (args->bias ? MAIA_GEMM_F_BIAS : 0)), sizeof(cmd));
}

MAIA_EXPORT int maia_cmd_gemm(struct maia_cmdbuf *cb, const struct maia_tensor_desc *a,
			      const struct maia_tensor_desc *b, const struct maia_tensor_desc *c,
			      float alpha, float beta, uint32_t flags)
{
	struct maia_gemm_args g = {
		.a = a, .b = b, .c = c, .alpha = alpha, .beta = beta, .flags = flags,
	};

	return maia_cmd_gemm_ex(cb, &g);
}

MAIA_EXPORT int maia_cmd_gemm_batched(struct maia_cmdbuf *cb, const struct maia_gemm_args *args,
				      uint64_t a_ptrs, uint64_t b_ptrs, uint64_t c_ptrs,
				      uint32_t batch_count)
{
	static const char fn[] = "maia_cmd_gemm_batched";
	struct maia_cmd_gemm_batched cmd;

	TRY(check_cb(fn, cb));
	if (!args)
		return maia_error(-EINVAL, "%s: NULL args", fn);
	TRY(gemm_check(fn, args, true));
	if (!batch_count || batch_count > 65536)
		return maia_error(-EINVAL, "%s: batch_count %u is not 1..65536", fn, batch_count);
	if (!a_ptrs || !b_ptrs || !c_ptrs || (a_ptrs | b_ptrs | c_ptrs) % 8)
		return maia_error(-EINVAL, "%s: pointer arrays must be nonzero and 8-byte "
				  "aligned", fn);
	memset(&cmd, 0, sizeof(cmd));
	gemm_fill(args, &cmd.a, &cmd.b, &cmd.c, &cmd.bias, &cmd.alpha, &cmd.beta,
		  &cmd.activation);
	cmd.a_ptrs = a_ptrs;
	cmd.b_ptrs = b_ptrs;
	cmd.c_ptrs = c_ptrs;
	cmd.batch_count = batch_count;
	return append(fn, cb, &cmd, MAIA_OP_GEMM_BATCHED,
		      (uint16_t)(args->flags | (args->bias ? MAIA_GEMM_F_BIAS : 0)), sizeof(cmd));
}

/* ---- elementwise ----------------------------------------------------------- */

static int eltwise(const char *fn, uint16_t op, struct maia_cmdbuf *cb,
		   const struct maia_tensor_desc *x, const struct maia_tensor_desc *y,
		   const struct maia_tensor_desc *out, uint32_t flags)
{
	struct maia_cmd_eltwise cmd;

	TRY(check_cb(fn, cb));
	TRY(desc_check(fn, "x", x, false));
	TRY(desc_check(fn, "y", y, false));
	TRY(desc_check(fn, "out", out, true));
	TRY(broadcasts_to(fn, "x", x, out));
	TRY(broadcasts_to(fn, "y", y, out));
	if (maia_dtype_is_block(out->dtype))
		return maia_error(-EINVAL, "%s: out cannot be a block format (use "
				  "maia_cmd_quantize)", fn);
	if (flags & ~MAIA_ELTWISE_F_SAT)
		return maia_error(-EINVAL, "%s: unknown flags 0x%x", fn, flags);
	memset(&cmd, 0, sizeof(cmd));
	cmd.x = *x;
	cmd.y = *y;
	cmd.out = *out;
	return append(fn, cb, &cmd, op, (uint16_t)flags, sizeof(cmd));
}

MAIA_EXPORT int maia_cmd_add(struct maia_cmdbuf *cb, const struct maia_tensor_desc *x,
			     const struct maia_tensor_desc *y, const struct maia_tensor_desc *out,
			     uint32_t flags)
{
	return eltwise("maia_cmd_add", MAIA_OP_ADD, cb, x, y, out, flags);
}

MAIA_EXPORT int maia_cmd_mul(struct maia_cmdbuf *cb, const struct maia_tensor_desc *x,
			     const struct maia_tensor_desc *y, const struct maia_tensor_desc *out,
			     uint32_t flags)
{
	return eltwise("maia_cmd_mul", MAIA_OP_MUL, cb, x, y, out, flags);
}

/* Unary ops: x and out the same shape, out not a block format. */
static int unary_check(const char *fn, struct maia_cmdbuf *cb, const struct maia_tensor_desc *x,
		       const struct maia_tensor_desc *out)
{
	TRY(check_cb(fn, cb));
	TRY(desc_check(fn, "x", x, false));
	TRY(desc_check(fn, "out", out, true));
	TRY(same_shape(fn, "x", x, "out", out));
	return 0;
}

MAIA_EXPORT int maia_cmd_scale(struct maia_cmdbuf *cb, const struct maia_tensor_desc *x,
			       const struct maia_tensor_desc *out, float alpha, float beta)
{
	static const char fn[] = "maia_cmd_scale";
	struct maia_cmd_scale cmd;

	TRY(unary_check(fn, cb, x, out));
	TRY(check_float(fn, "alpha", alpha));
	TRY(check_float(fn, "beta", beta));
	memset(&cmd, 0, sizeof(cmd));
	cmd.x = *x;
	cmd.out = *out;
	cmd.alpha = f32_bits(alpha);
	cmd.beta = f32_bits(beta);
	return append(fn, cb, &cmd, MAIA_OP_SCALE, 0, sizeof(cmd));
}

MAIA_EXPORT int maia_cmd_activation(struct maia_cmdbuf *cb, const struct maia_tensor_desc *x,
				    const struct maia_tensor_desc *out, uint32_t activation)
{
	static const char fn[] = "maia_cmd_activation";
	struct maia_cmd_activation cmd;

	TRY(unary_check(fn, cb, x, out));
	if (activation == MAIA_ACT_NONE || activation >= MAIA_ACT_COUNT)
		return maia_error(-EINVAL, "%s: activation %u is not RELU, GELU, SILU or "
				  "GELU_ERF", fn, activation);
	memset(&cmd, 0, sizeof(cmd));
	cmd.x = *x;
	cmd.out = *out;
	cmd.activation = activation;
	return append(fn, cb, &cmd, MAIA_OP_ACTIVATION, 0, sizeof(cmd));
}

MAIA_EXPORT int maia_cmd_softmax(struct maia_cmdbuf *cb, const struct maia_tensor_desc *x,
				 const struct maia_tensor_desc *out, float scale,
				 int32_t causal_offset, uint32_t flags)
{
	static const char fn[] = "maia_cmd_softmax";
	struct maia_cmd_softmax cmd;

	TRY(unary_check(fn, cb, x, out));
	TRY(check_float(fn, "scale", scale));
	if (flags & ~(MAIA_SOFTMAX_F_CAUSAL | MAIA_SOFTMAX_F_LOG))
		return maia_error(-EINVAL, "%s: unknown flags 0x%x", fn, flags);
	if ((flags & MAIA_SOFTMAX_F_CAUSAL) && x->rank < 2)
		return maia_error(-EINVAL, "%s: a causal softmax needs rank >= 2", fn);
	if (!(flags & MAIA_SOFTMAX_F_CAUSAL) && causal_offset)
		return maia_error(-EINVAL, "%s: causal_offset without MAIA_SOFTMAX_F_CAUSAL", fn);
	memset(&cmd, 0, sizeof(cmd));
	cmd.x = *x;
	cmd.out = *out;
	cmd.scale = f32_bits(scale);
	cmd.causal_offset = causal_offset;
	return append(fn, cb, &cmd, MAIA_OP_SOFTMAX, (uint16_t)flags, sizeof(cmd));
}

/* gamma/beta: rank 1 with the innermost dimension's size. */
static int norm_param_check(const char *fn, const char *name, const struct maia_tensor_desc *p,
			    const struct maia_tensor_desc *x)
{
	TRY(desc_check(fn, name, p, false));
	if (p->rank != 1 || p->shape[0] != x->shape[x->rank - 1])
		return maia_error(-EINVAL, "%s: %s must be rank 1 with %u elements (x's innermost "
				  "dimension)", fn, name, x->shape[x->rank - 1]);
	return 0;
}

static int norm(const char *fn, uint16_t op, struct maia_cmdbuf *cb,
		const struct maia_tensor_desc *x, const struct maia_tensor_desc *gamma,
		const struct maia_tensor_desc *beta, const struct maia_tensor_desc *out, float eps)
{
	struct maia_cmd_norm cmd;
	uint16_t flags = 0;

	TRY(unary_check(fn, cb, x, out));
	if (!isfinite(eps) || eps < 0)
		return maia_error(-EINVAL, "%s: eps %g must be finite and >= 0", fn, (double)eps);
	memset(&cmd, 0, sizeof(cmd));
	if (!gamma && !beta) {
		flags = MAIA_NORM_F_NO_AFFINE;
	} else if (!gamma) {
		return maia_error(-EINVAL, "%s: beta without gamma", fn);
	} else {
		TRY(norm_param_check(fn, "gamma", gamma, x));
		cmd.gamma = *gamma;
		if (op == MAIA_OP_LAYERNORM) {
			if (!beta)
				return maia_error(-EINVAL, "%s: gamma without beta (pass both or "
						  "neither)", fn);
			TRY(norm_param_check(fn, "beta", beta, x));
			cmd.beta = *beta;
		}
	}
	cmd.x = *x;
	cmd.out = *out;
	cmd.eps = f32_bits(eps);
	return append(fn, cb, &cmd, op, flags, sizeof(cmd));
}

MAIA_EXPORT int maia_cmd_layernorm(struct maia_cmdbuf *cb, const struct maia_tensor_desc *x,
				   const struct maia_tensor_desc *gamma,
				   const struct maia_tensor_desc *beta,
				   const struct maia_tensor_desc *out, float eps)
{
	return norm("maia_cmd_layernorm", MAIA_OP_LAYERNORM, cb, x, gamma, beta, out, eps);
}

MAIA_EXPORT int maia_cmd_rmsnorm(struct maia_cmdbuf *cb, const struct maia_tensor_desc *x,
				 const struct maia_tensor_desc *gamma,
				 const struct maia_tensor_desc *out, float eps)
{
	return norm("maia_cmd_rmsnorm", MAIA_OP_RMSNORM, cb, x, gamma, NULL, out, eps);
}

MAIA_EXPORT int maia_cmd_attention(struct maia_cmdbuf *cb, const struct maia_tensor_desc *q,
				   const struct maia_tensor_desc *k,
				   const struct maia_tensor_desc *v,
				   const struct maia_tensor_desc *out, float scale, uint32_t flags)
{
	static const char fn[] = "maia_cmd_attention";
	struct maia_cmd_attention cmd;
	unsigned int d;

	TRY(check_cb(fn, cb));
	TRY(desc_check(fn, "Q", q, false));
	TRY(desc_check(fn, "K", k, false));
	TRY(desc_check(fn, "V", v, false));
	TRY(desc_check(fn, "out", out, true));
	TRY(check_float(fn, "scale", scale));
	if (flags & ~MAIA_ATTN_F_CAUSAL)
		return maia_error(-EINVAL, "%s: unknown flags 0x%x", fn, flags);
	if (q->rank != 4 || k->rank != 4 || v->rank != 4 || out->rank != 4)
		return maia_error(-EINVAL, "%s: Q, K, V and out must be rank 4 [B, H, L, D]", fn);
	for (d = 0; d < 2; d++) {
		const char *dim = d ? "heads" : "batch";

		if (out->shape[d] != q->shape[d])
			return maia_error(-EINVAL, "%s: out and Q differ in %s", fn, dim);
		if ((k->shape[d] != q->shape[d] && k->shape[d] != 1) ||
		    (v->shape[d] != q->shape[d] && v->shape[d] != 1))
			return maia_error(-EINVAL, "%s: K/V %s must equal Q's (%u) or be 1", fn, dim,
					  q->shape[d]);
	}
	if (k->shape[3] != q->shape[3])
		return maia_error(-EINVAL, "%s: K head dim %u differs from Q's %u", fn,
				  k->shape[3], q->shape[3]);
	if (v->shape[2] != k->shape[2])
		return maia_error(-EINVAL, "%s: V has %u keys but K has %u", fn, v->shape[2],
				  k->shape[2]);
	if (out->shape[2] != q->shape[2] || out->shape[3] != v->shape[3])
		return maia_error(-EINVAL, "%s: out must be [B, H, Lq=%u, Dv=%u]", fn, q->shape[2],
				  v->shape[3]);
	memset(&cmd, 0, sizeof(cmd));
	cmd.q = *q;
	cmd.k = *k;
	cmd.v = *v;
	cmd.out = *out;
	cmd.scale = f32_bits(scale);
	return append(fn, cb, &cmd, MAIA_OP_ATTENTION, (uint16_t)flags, sizeof(cmd));
}

/* ---- conversions, reduce, transpose ---------------------------------------- */

static int convert(const char *fn, uint16_t op, struct maia_cmdbuf *cb,
		   const struct maia_tensor_desc *x, const struct maia_tensor_desc *out,
		   uint64_t scale_out, uint32_t flags)
{
	struct maia_cmd_convert cmd;

	TRY(unary_check(fn, cb, x, out));
	memset(&cmd, 0, sizeof(cmd));
	cmd.x = *x;
	cmd.out = *out;
	cmd.scale_out = scale_out;
	return append(fn, cb, &cmd, op, (uint16_t)flags, sizeof(cmd));
}

MAIA_EXPORT int maia_cmd_quantize(struct maia_cmdbuf *cb, const struct maia_tensor_desc *x,
				  const struct maia_tensor_desc *out, uint64_t scale_out,
				  uint32_t flags)
{
	static const char fn[] = "maia_cmd_quantize";

	TRY(check_cb(fn, cb));
	if (!x || !out)
		return maia_error(-EINVAL, "%s: NULL tensor", fn);
	if (flags & ~(MAIA_QUANT_F_DYNAMIC | MAIA_QUANT_F_SAT))
		return maia_error(-EINVAL, "%s: unknown flags 0x%x", fn, flags);
	if (dtype_is_quantized(x->dtype) || !dtype_is_quantized(out->dtype))
		return maia_error(-EINVAL, "%s: converts a float/int tensor to INT8, FP8 or MX; "
				  "got %s -> %s", fn, maia_dtype_name(x->dtype) ?: "?",
				  maia_dtype_name(out->dtype) ?: "?");
	if (flags & MAIA_QUANT_F_DYNAMIC) {
		if (!dtype_has_scale(out->dtype))
			return maia_error(-EINVAL, "%s: MAIA_QUANT_F_DYNAMIC is for INT8/FP8 "
					  "outputs", fn);
		if (!scale_out || scale_out % 4)
			return maia_error(-EINVAL, "%s: dynamic quantization needs a 4-byte "
					  "aligned scale_out address", fn);
	} else if (scale_out) {
		return maia_error(-EINVAL, "%s: scale_out is only for MAIA_QUANT_F_DYNAMIC", fn);
	}
	return convert(fn, MAIA_OP_QUANTIZE, cb, x, out, scale_out, flags);
}

MAIA_EXPORT int maia_cmd_dequantize(struct maia_cmdbuf *cb, const struct maia_tensor_desc *x,
				    const struct maia_tensor_desc *out)
{
	static const char fn[] = "maia_cmd_dequantize";

	TRY(check_cb(fn, cb));
	if (!x || !out)
		return maia_error(-EINVAL, "%s: NULL tensor", fn);
	if (!dtype_is_quantized(x->dtype) ||
	    (out->dtype != MAIA_DTYPE_FP32 && out->dtype != MAIA_DTYPE_FP16 &&
	     out->dtype != MAIA_DTYPE_BF16))
		return maia_error(-EINVAL, "%s: converts INT8, FP8 or MX to fp32, fp16 or bf16; "
				  "got %s -> %s", fn, maia_dtype_name(x->dtype) ?: "?",
				  maia_dtype_name(out->dtype) ?: "?");
	return convert(fn, MAIA_OP_DEQUANTIZE, cb, x, out, 0, 0);
}

MAIA_EXPORT int maia_cmd_tensor_copy(struct maia_cmdbuf *cb, const struct maia_tensor_desc *x,
				     const struct maia_tensor_desc *out)
{
	return convert("maia_cmd_tensor_copy", MAIA_OP_COPY, cb, x, out, 0, 0);
}

MAIA_EXPORT int maia_cmd_reduce(struct maia_cmdbuf *cb, const struct maia_tensor_desc *x,
				const struct maia_tensor_desc *out, uint32_t op, uint32_t axes)
{
	static const char fn[] = "maia_cmd_reduce";
	struct maia_cmd_reduce cmd;
	unsigned int d;

	TRY(check_cb(fn, cb));
	TRY(desc_check(fn, "x", x, false));
	TRY(desc_check(fn, "out", out, true));
	if (op >= MAIA_REDUCE_COUNT)
		return maia_error(-EINVAL, "%s: unknown reduction %u", fn, op);
	if (!axes || axes >> x->rank)
		return maia_error(-EINVAL, "%s: axes 0x%x must be nonzero with bits below rank "
				  "%u", fn, axes, x->rank);
	if (out->rank != x->rank)
		return maia_error(-EINVAL, "%s: out must keep x's rank %u", fn, x->rank);
	for (d = 0; d < x->rank; d++) {
		uint32_t want = axes & (1u << d) ? 1 : x->shape[d];

		if (out->shape[d] != want)
			return maia_error(-EINVAL, "%s: out dimension %u is %u, expected %u", fn, d,
					  out->shape[d], want);
	}
	memset(&cmd, 0, sizeof(cmd));
	cmd.x = *x;
	cmd.out = *out;
	cmd.op = op;
	cmd.axes = axes;
	return append(fn, cb, &cmd, MAIA_OP_REDUCE, 0, sizeof(cmd));
}

MAIA_EXPORT int maia_cmd_transpose(struct maia_cmdbuf *cb, const struct maia_tensor_desc *x,
				   const struct maia_tensor_desc *out, const uint8_t *perm)
{
	static const char fn[] = "maia_cmd_transpose";
	struct maia_cmd_transpose cmd;
	unsigned int d, seen = 0;

	TRY(check_cb(fn, cb));
	TRY(desc_check(fn, "x", x, false));
	TRY(desc_check(fn, "out", out, true));
	if (!perm)
		return maia_error(-EINVAL, "%s: NULL perm", fn);
	if (out->rank != x->rank)
		return maia_error(-EINVAL, "%s: out rank %u differs from x's %u", fn, out->rank,
				  x->rank);
	memset(&cmd, 0, sizeof(cmd));
	for (d = 0; d < x->rank; d++) {
		if (perm[d] >= x->rank || (seen & (1u << perm[d])))
			return maia_error(-EINVAL, "%s: perm is not a permutation of 0..%u", fn,
					  x->rank - 1);
		seen |= 1u << perm[d];
		if (out->shape[d] != x->shape[perm[d]])
			return maia_error(-EINVAL, "%s: out dimension %u is %u, expected x dimension "
					  "%u = %u", fn, d, out->shape[d], perm[d],
					  x->shape[perm[d]]);
		cmd.perm[d] = perm[d];
	}
	cmd.x = *x;
	cmd.out = *out;
	return append(fn, cb, &cmd, MAIA_OP_TRANSPOSE, 0, sizeof(cmd));
}
