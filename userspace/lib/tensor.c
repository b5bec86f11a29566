// SPDX-License-Identifier: MIT
/* Tensor descriptors and tensor commands for the command-buffer builder. */
#include <errno.h>
#include <string.h>

#include "internal.h"

static uint32_t f32_bits(float f)
{
	uint32_t u;

	memcpy(&u, &f, sizeof(u));
	return u;
}

MAIA_EXPORT int maia_tensor_init(struct maia_tensor_desc *desc, uint64_t va, unsigned int dtype,
				 unsigned int rank, const uint32_t *shape)
{
	uint64_t stride = 1;
	int d;

	if (!desc || !shape || !rank || rank > MAIA_TENSOR_MAX_RANK || dtype >= MAIA_DTYPE_COUNT)
		return -EINVAL;
	memset(desc, 0, sizeof(*desc));
	desc->addr = va;
	desc->dtype = (uint8_t)dtype;
	desc->rank = (uint8_t)rank;
	for (d = (int)rank - 1; d >= 0; d--) {
		if (!shape[d])
			return -EINVAL;
		desc->shape[d] = shape[d];
		desc->strides[d] = stride;
		stride *= shape[d];
	}
	return 0;
}

MAIA_EXPORT int maia_cmd_gemm(struct maia_cmdbuf *cb, const struct maia_tensor_desc *a,
			      const struct maia_tensor_desc *b, const struct maia_tensor_desc *c,
			      float alpha, float beta, uint32_t flags)
{
	struct maia_cmd_gemm g;

	if (!a || !b || !c || (flags & ~MAIA_GEMM_F_ALL) || (flags & MAIA_GEMM_F_BIAS))
		return -EINVAL;
	memset(&g, 0, sizeof(g));
	g.hdr.opcode = MAIA_OP_GEMM;
	g.hdr.flags = (uint16_t)flags;
	g.hdr.size = sizeof(g);
	g.a = *a;
	g.b = *b;
	g.c = *c;
	g.alpha = f32_bits(alpha);
	g.beta = f32_bits(beta);
	return maia_cmd_raw(cb, &g);
}
