/* SPDX-License-Identifier: MIT */
/*
 * Maia hardware ABI: tensor operations (opcodes 0x10 - 0x2f) and the tensor
 * descriptor they share. See Documentation/tensor-engine.rst for the
 * semantics and error bounds of every operation and Documentation/hw/dtypes.rst
 * for the element formats.
 *
 * Conventions:
 * - Every command starts with struct maia_cmd_header; hdr.size must equal
 *   sizeof() of the command struct. hdr.flags holds the command's flags
 *   (MAIA_<OP>_F_*); undefined flag bits and reserved fields must be zero,
 *   else the command fails with MAIA_STATUS_BAD_CMD.
 * - Floating-point scalars in commands (alpha, eps, ...) are IEEE-754
 *   binary32 bit patterns in a __u32, so the kernel can include this header.
 * - The device computes in FP32 with FP32 accumulation and rounds once when
 *   it stores a result in the output's format.
 */
#ifndef MAIA_HW_TENSOR_H
#define MAIA_HW_TENSOR_H

#include <linux/types.h>

#include "maia/hw/cmd.h"
#include "maia/hw/dtype.h"

#define MAIA_TENSOR_MAX_RANK		4u
#define MAIA_TENSOR_MAX_DIM		(1u << 24)	/* per dimension */
#define MAIA_TENSOR_MAX_ELEMS		(1ull << 32)	/* per tensor */

/* Block sizes (MAIA_MX_BLOCK, MAIA_MSMX_BLOCK) are in maia/hw/dtype.h. */

/*
 * Tensor descriptor: a strided view of up to 4 dimensions in the job's
 * address space.
 *
 * shape[0..rank-1] are the dimensions, outermost first; dimension rank-1 is
 * the innermost. strides[] are in elements. Entries at index >= rank must be
 * zero. Element (i0, .., i{rank-1}) is at element offset
 * sum(i_d * strides[d]) from addr.
 *
 * Input tensors may use stride 0 to broadcast a dimension. Output tensors
 * must not overlap themselves (MAIA_STATUS_BAD_DESC otherwise).
 *
 * Block formats (MAIA_DTYPE_MX*): the innermost dimension must have stride 1
 * and a size that is a multiple of the block size, the other strides must be
 * multiples of the block size, and addr must point at the start of a block.
 * Element offset e is in block e / block_size; its shared scale is the byte
 * at scale_addr + e / block_size (E8M0 for the OCP formats, the 8-bit shared
 * exponent for MX9/MX6/MX4). Elements are packed little-endian, low bits
 * first: FP4 two per byte, FP6 four per three bytes. For MX9/MX6/MX4 the
 * microexponent bits of a block follow its elements (see dtypes.rst).
 * For other types scale_addr must be 0.
 *
 * scale: binary32 bits. For INT8, FP8_E4M3 and FP8_E5M2, value =
 * stored * scale, with 0 meaning 1.0; it must be finite and positive. For
 * other types it must be 0.
 */
struct maia_tensor_desc {
	__u64 addr;
	__u64 scale_addr;
	__u64 strides[MAIA_TENSOR_MAX_RANK];
	__u32 shape[MAIA_TENSOR_MAX_RANK];
	__u8 dtype;		/* MAIA_DTYPE_* */
	__u8 rank;		/* 1 .. MAIA_TENSOR_MAX_RANK */
	__u16 flags;		/* must be 0 */
	__u32 scale;
};

/* Opcodes */
#define MAIA_OP_GEMM			0x10u
#define MAIA_OP_GEMM_BATCHED		0x11u
#define MAIA_OP_ADD			0x12u
#define MAIA_OP_MUL			0x13u
#define MAIA_OP_SCALE			0x14u
#define MAIA_OP_ACTIVATION		0x15u
#define MAIA_OP_SOFTMAX			0x16u
#define MAIA_OP_LAYERNORM		0x17u
#define MAIA_OP_RMSNORM			0x18u
#define MAIA_OP_ATTENTION		0x19u
#define MAIA_OP_QUANTIZE		0x1au
#define MAIA_OP_DEQUANTIZE		0x1bu
#define MAIA_OP_REDUCE			0x1cu
#define MAIA_OP_TRANSPOSE		0x1du
#define MAIA_OP_COPY			0x1eu
#define MAIA_OP_TENSOR_FIRST		0x10u
#define MAIA_OP_TENSOR_LAST		0x2fu

/* Activation functions (GEMM epilogue and MAIA_OP_ACTIVATION) */
#define MAIA_ACT_NONE			0u
#define MAIA_ACT_RELU			1u
#define MAIA_ACT_GELU			2u	/* tanh approximation */
#define MAIA_ACT_SILU			3u
#define MAIA_ACT_GELU_ERF		4u	/* exact, with erf */
#define MAIA_ACT_COUNT			5u

/*
 * GEMM: C = act(alpha * op(A) * op(B) + beta * C + bias).
 *
 * Rank 2: op(A) is M x K, op(B) is K x N, C is M x N.
 * Rank 3 (strided batched): dimension 0 is the batch; all three tensors
 * must agree on it, except that A or B may use a batch stride of 0 to share
 * one matrix. With MAIA_GEMM_F_TRANS_A, A is stored K x M (op(A) = A^T);
 * likewise for B. bias (if MAIA_GEMM_F_BIAS) has rank 1 and N elements and
 * is added to every row; its descriptor is ignored otherwise and must be
 * all zero. beta = 0 means C is not read (NaNs in C do not propagate).
 * A and B may have any dtype; C is FP32, BF16, FP16, FP8_E4M3 or FP8_E5M2.
 */
#define MAIA_GEMM_F_TRANS_A		(1u << 0)
#define MAIA_GEMM_F_TRANS_B		(1u << 1)
#define MAIA_GEMM_F_BIAS		(1u << 2)
#define MAIA_GEMM_F_SAT			(1u << 3)	/* saturating FP8 output */
#define MAIA_GEMM_F_ALL			0xfu

struct maia_cmd_gemm {
	struct maia_cmd_header hdr;
	struct maia_tensor_desc a;
	struct maia_tensor_desc b;
	struct maia_tensor_desc c;
	struct maia_tensor_desc bias;
	__u32 alpha;		/* binary32; 0 is taken as 1.0 */
	__u32 beta;		/* binary32 */
	__u32 activation;	/* MAIA_ACT_* */
	__u32 reserved;
};

/*
 * Batched GEMM with pointer arrays (like cublasGemmBatchedEx): for
 * i < batch_count, matrix i of A, B and C is at the device VA read from
 * a_ptrs[i], b_ptrs[i] and c_ptrs[i] (arrays of __u64, 8-byte aligned).
 * The descriptors give dtype, shape (rank 2) and strides; their addr fields
 * must be 0. Flags as for MAIA_OP_GEMM. C matrices must not overlap.
 */
struct maia_cmd_gemm_batched {
	struct maia_cmd_header hdr;
	struct maia_tensor_desc a;
	struct maia_tensor_desc b;
	struct maia_tensor_desc c;
	struct maia_tensor_desc bias;
	__u64 a_ptrs;
	__u64 b_ptrs;
	__u64 c_ptrs;
	__u32 batch_count;	/* 1 .. 65536 */
	__u32 alpha;
	__u32 beta;
	__u32 activation;
};

/*
 * Elementwise binary op: out = x + y (MAIA_OP_ADD) or x * y (MAIA_OP_MUL).
 * All three descriptors have the same rank and shape; broadcast an input
 * with stride 0. out may be the same tensor as x or y (same addr, strides
 * and dtype), not a partial overlap.
 */
#define MAIA_ELTWISE_F_SAT		(1u << 0)	/* saturating FP8 output */

struct maia_cmd_eltwise {
	struct maia_cmd_header hdr;
	struct maia_tensor_desc x;
	struct maia_tensor_desc y;
	struct maia_tensor_desc out;
};

/* out = alpha * x + beta, elementwise. */
struct maia_cmd_scale {
	struct maia_cmd_header hdr;
	struct maia_tensor_desc x;
	struct maia_tensor_desc out;
	__u32 alpha;		/* binary32 */
	__u32 beta;		/* binary32 */
};

/* out = act(x), elementwise; activation is MAIA_ACT_* other than NONE. */
struct maia_cmd_activation {
	struct maia_cmd_header hdr;
	struct maia_tensor_desc x;
	struct maia_tensor_desc out;
	__u32 activation;
	__u32 reserved;
};

/*
 * Softmax over the innermost dimension: out = softmax(scale * x), computed
 * with the row maximum subtracted. With MAIA_SOFTMAX_F_CAUSAL the input
 * must have rank >= 2 and element (.., i, j) with j > i + causal_offset is
 * taken as -Inf. A row that is entirely -Inf gives zeros.
 */
#define MAIA_SOFTMAX_F_CAUSAL		(1u << 0)
#define MAIA_SOFTMAX_F_LOG		(1u << 1)	/* log-softmax */

struct maia_cmd_softmax {
	struct maia_cmd_header hdr;
	struct maia_tensor_desc x;
	struct maia_tensor_desc out;
	__u32 scale;		/* binary32; 0 is taken as 1.0 */
	__s32 causal_offset;
};

/*
 * Layer norm and RMS norm over the innermost dimension (size D):
 *   layernorm: out = (x - mean) / sqrt(var + eps) * gamma + beta
 *   rmsnorm:   out = x / sqrt(mean(x^2) + eps) * gamma
 * gamma and beta are rank 1 with D elements; with MAIA_NORM_F_NO_AFFINE
 * they are not used and their descriptors must be all zero (beta is never
 * used by RMS norm and must be all zero there).
 */
#define MAIA_NORM_F_NO_AFFINE		(1u << 0)

struct maia_cmd_norm {
	struct maia_cmd_header hdr;
	struct maia_tensor_desc x;
	struct maia_tensor_desc gamma;
	struct maia_tensor_desc beta;
	struct maia_tensor_desc out;
	__u32 eps;		/* binary32, >= 0 */
	__u32 reserved;
};

/*
 * Scaled dot-product attention:
 *   out = softmax(scale * Q K^T + mask) V
 * Q: [B, H, Lq, D], K: [B, H, Lk, D], V: [B, H, Lk, Dv], out: [B, H, Lq, Dv]
 * (rank 4; use B = 1 or H = 1 for fewer dimensions). K and V may broadcast
 * heads with stride 0 (multi-query / grouped attention by strides).
 * MAIA_ATTN_F_CAUSAL masks key j for query i when j > i + (Lk - Lq), so the
 * last query sees all keys (decode with a KV cache).
 */
#define MAIA_ATTN_F_CAUSAL		(1u << 0)

struct maia_cmd_attention {
	struct maia_cmd_header hdr;
	struct maia_tensor_desc q;
	struct maia_tensor_desc k;
	struct maia_tensor_desc v;
	struct maia_tensor_desc out;
	__u32 scale;		/* binary32; 0 is taken as 1/sqrt(D) */
	__u32 reserved;
};

/*
 * Quantize / dequantize / copy: out = convert(x), same rank and shape, any
 * strides. MAIA_OP_COPY and MAIA_OP_DEQUANTIZE use out.scale as given.
 * MAIA_OP_QUANTIZE computes the scales: for MX outputs the block scales
 * (written at out.scale_addr); for INT8 / FP8 outputs with
 * MAIA_QUANT_F_DYNAMIC a per-tensor scale amax / max_finite (1.0 if the
 * tensor is all zero), used for the conversion and written as binary32 at
 * scale_out (4-byte aligned); without the flag out.scale is used.
 */
#define MAIA_QUANT_F_DYNAMIC		(1u << 0)
#define MAIA_QUANT_F_SAT		(1u << 1)	/* saturating FP8 output */

struct maia_cmd_convert {
	struct maia_cmd_header hdr;
	struct maia_tensor_desc x;
	struct maia_tensor_desc out;
	__u64 scale_out;	/* QUANTIZE with MAIA_QUANT_F_DYNAMIC, else 0 */
};

/*
 * Reduce over the dimensions set in axes (bit d = dimension d of x). out
 * has the same rank as x with those dimensions of size 1.
 */
#define MAIA_REDUCE_SUM			0u
#define MAIA_REDUCE_MEAN		1u
#define MAIA_REDUCE_MAX			2u
#define MAIA_REDUCE_MIN			3u
#define MAIA_REDUCE_SUMSQ		4u
#define MAIA_REDUCE_COUNT		5u

struct maia_cmd_reduce {
	struct maia_cmd_header hdr;
	struct maia_tensor_desc x;
	struct maia_tensor_desc out;
	__u32 op;		/* MAIA_REDUCE_* */
	__u32 axes;		/* nonzero, bits below x.rank */
};

/*
 * Transpose: out dimension d is x dimension perm[d]; perm is a permutation
 * of 0 .. rank-1, entries at index >= rank must be 0. The output dtype may
 * differ (conversion as for MAIA_OP_COPY).
 */
struct maia_cmd_transpose {
	struct maia_cmd_header hdr;
	struct maia_tensor_desc x;
	struct maia_tensor_desc out;
	__u8 perm[MAIA_TENSOR_MAX_RANK];
	__u32 reserved;
};

#ifndef __KERNEL__
/*
 * The descriptor rules above that need no memory access, in one place for
 * the device (firmware-sim fails the command with MAIA_STATUS_BAD_DESC) and
 * for libmaia (which refuses to build the command, with a message). The
 * kernel does not parse commands and does not use this.
 */
enum maia_desc_reason {
	MAIA_DESC_OK = 0,
	MAIA_DESC_BAD_DTYPE,		/* dtype >= MAIA_DTYPE_COUNT */
	MAIA_DESC_BAD_RANK,		/* rank not 1 .. MAIA_TENSOR_MAX_RANK */
	MAIA_DESC_BAD_FLAGS,		/* flags != 0 */
	MAIA_DESC_UNUSED_DIM,		/* shape or stride set at an index >= rank (*dim) */
	MAIA_DESC_BAD_DIM,		/* dimension *dim is 0 or > MAIA_TENSOR_MAX_DIM */
	MAIA_DESC_OUTPUT_STRIDE0,	/* output: stride 0 in dimension *dim of size > 1 */
	MAIA_DESC_TOO_MANY_ELEMS,	/* more than MAIA_TENSOR_MAX_ELEMS elements */
	MAIA_DESC_SPAN_TOO_LARGE,	/* element offsets reach MAIA_TENSOR_MAX_SPAN */
	MAIA_DESC_BLOCK_INNER,		/* block format: innermost stride != 1 or size % block */
	MAIA_DESC_BLOCK_STRIDE,		/* block format: stride *dim not a multiple of the block */
	MAIA_DESC_SCALE_ADDR,		/* scale_addr set for a type without block scales */
	MAIA_DESC_SCALE_UNUSED,		/* scale set for a type without a per-tensor scale */
	MAIA_DESC_BAD_SCALE,		/* scale not finite, normal and positive */
	MAIA_DESC_WRAPS,		/* data or block scales run past the end of the VA space */
	MAIA_DESC_OUTPUT_OVERLAP,	/* output: two elements at the same offset */
	MAIA_DESC_REASON_COUNT
};

/* Element offsets (sum of stride * (dim - 1)) stay below this. */
#define MAIA_TENSOR_MAX_SPAN		(1ull << 56)

static inline const char *maia_desc_reason_str(int reason)
{
	switch (reason) {
	case MAIA_DESC_OK:		return "valid";
	case MAIA_DESC_BAD_DTYPE:	return "unknown dtype";
	case MAIA_DESC_BAD_RANK:	return "rank is not 1..4";
	case MAIA_DESC_BAD_FLAGS:	return "nonzero flags";
	case MAIA_DESC_UNUSED_DIM:	return "shape or stride set at an index >= rank";
	case MAIA_DESC_BAD_DIM:		return "a dimension is not 1..2^24";
	case MAIA_DESC_OUTPUT_STRIDE0:	return "output has stride 0 (it would overlap itself)";
	case MAIA_DESC_TOO_MANY_ELEMS:	return "more than 2^32 elements";
	case MAIA_DESC_SPAN_TOO_LARGE:	return "strides span 2^56 elements or more";
	case MAIA_DESC_BLOCK_INNER:	return "block format needs innermost stride 1 and a "
					       "size that is a multiple of the block";
	case MAIA_DESC_BLOCK_STRIDE:	return "block format stride is not a multiple of the block";
	case MAIA_DESC_SCALE_ADDR:	return "scale address on a type without block scales";
	case MAIA_DESC_SCALE_UNUSED:	return "per-tensor scale on a type without one";
	case MAIA_DESC_BAD_SCALE:	return "scale is not finite, normal and positive";
	case MAIA_DESC_WRAPS:		return "data or block scales wrap the address space";
	case MAIA_DESC_OUTPUT_OVERLAP:	return "output elements overlap";
	default:			return "unknown reason";
	}
}

/* Types with a per-tensor scale (struct maia_tensor_desc.scale). */
static inline int maia_dtype_has_scale(unsigned int dtype)
{
	return dtype == MAIA_DTYPE_INT8 || dtype == MAIA_DTYPE_FP8_E4M3 ||
	       dtype == MAIA_DTYPE_FP8_E5M2;
}

/*
 * Outputs must not write an element twice: sorted by stride, each dimension
 * must step over everything the smaller ones span. Sufficient, not
 * necessary; the rare interleaved layouts it rejects are documented.
 * Expects a descriptor that passed the other checks (offsets < 2^56).
 */
static inline int maia_tensor_desc_overlaps(const struct maia_tensor_desc *d)
{
	unsigned int order[MAIA_TENSOR_MAX_RANK], n = 0, i, j;
	__u64 extent = 1;

	for (i = 0; i < d->rank && i < MAIA_TENSOR_MAX_RANK; i++)
		if (d->shape[i] > 1)
			order[n++] = i;
	for (i = 1; i < n; i++)		/* insertion sort by stride */
		for (j = i; j > 0 && d->strides[order[j]] < d->strides[order[j - 1]]; j--) {
			unsigned int x = order[j];

			order[j] = order[j - 1];
			order[j - 1] = x;
		}
	for (i = 0; i < n; i++) {
		__u64 s = d->strides[order[i]];

		if (s < extent)
			return 1;
		extent = s * (d->shape[order[i]] - 1) + extent;
	}
	return 0;
}

/*
 * Checks a descriptor against every rule that needs no memory access; output
 * is nonzero for a tensor the command writes. Returns MAIA_DESC_OK or the
 * first rule broken (MAIA_DESC_*); for the rules about one dimension, *dim
 * (if dim is not NULL) is its index.
 */
static inline int maia_tensor_desc_check(const struct maia_tensor_desc *d, int output,
					 unsigned int *dim)
{
	unsigned int r = d->rank, i, bs, exp;
	__u64 n = 1, maxoff = 0, bytes;
	unsigned int scratch;

	if (!dim)
		dim = &scratch;
	*dim = 0;
	if (d->dtype >= MAIA_DTYPE_COUNT)
		return MAIA_DESC_BAD_DTYPE;
	if (r < 1 || r > MAIA_TENSOR_MAX_RANK)
		return MAIA_DESC_BAD_RANK;
	if (d->flags)
		return MAIA_DESC_BAD_FLAGS;
	for (i = 0; i < MAIA_TENSOR_MAX_RANK; i++) {
		*dim = i;
		if (i >= r) {
			if (d->shape[i] || d->strides[i])
				return MAIA_DESC_UNUSED_DIM;
			continue;
		}
		if (!d->shape[i] || d->shape[i] > MAIA_TENSOR_MAX_DIM)
			return MAIA_DESC_BAD_DIM;
		if (output && d->shape[i] > 1 && !d->strides[i])
			return MAIA_DESC_OUTPUT_STRIDE0;
	}
	*dim = 0;
	for (i = 0; i < r; i++) {
		__u64 len = d->shape[i];

		if (n > MAIA_TENSOR_MAX_ELEMS / len)
			return MAIA_DESC_TOO_MANY_ELEMS;
		n *= len;
	}
	for (i = 0; i < r; i++) {
		__u64 len = d->shape[i], st = d->strides[i];

		if (len > 1) {
			if (st > (MAIA_TENSOR_MAX_SPAN - maxoff) / (len - 1))
				return MAIA_DESC_SPAN_TOO_LARGE;
			maxoff += st * (len - 1);
		}
	}
	bs = maia_dtype_block(d->dtype);
	if (bs > 1) {
		if (d->strides[r - 1] != 1 || d->shape[r - 1] % bs)
			return MAIA_DESC_BLOCK_INNER;
		for (i = 0; i + 1 < r; i++) {
			*dim = i;
			if (d->strides[i] % bs)
				return MAIA_DESC_BLOCK_STRIDE;
		}
		*dim = 0;
	} else if (d->scale_addr) {
		return MAIA_DESC_SCALE_ADDR;
	}
	if (d->scale) {
		if (!maia_dtype_has_scale(d->dtype))
			return MAIA_DESC_SCALE_UNUSED;
		/* binary32: positive, exponent neither 0 (zero, subnormal) nor all ones */
		exp = (d->scale >> 23) & 0xffu;
		if ((d->scale >> 31) || exp == 0 || exp == 0xffu)
			return MAIA_DESC_BAD_SCALE;
	}
	if (bs > 1) {
		__u64 nblocks = maxoff / bs + 1;

		if (nblocks - 1 > ~(__u64)0 - d->scale_addr)
			return MAIA_DESC_WRAPS;
		bytes = nblocks * maia_dtype_block_bytes(d->dtype);
	} else {
		bytes = (maxoff + 1) * maia_dtype_size(d->dtype);
	}
	if (bytes - 1 > ~(__u64)0 - d->addr)
		return MAIA_DESC_WRAPS;
	if (output && maia_tensor_desc_overlaps(d))
		return MAIA_DESC_OUTPUT_OVERLAP;
	return MAIA_DESC_OK;
}
#endif /* !__KERNEL__ */

#endif /* MAIA_HW_TENSOR_H */
