// SPDX-License-Identifier: MIT
/*
 * The KV-cache block manager: host bookkeeping of the decode device's pool
 * (llm_forward.c lays the blocks out; every layer's K and V of block b sit
 * at the same block number). Blocks are all one size and any free block
 * serves any request, so the pool cannot fragment: what is free is always
 * usable. A request takes every block its prompt and max_tokens need when
 * it is admitted and gives them back when it ends, so a running request
 * never runs out mid-decode and admission is the only place to refuse or
 * queue. Not thread-safe: the engine holds its lock around these calls.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "llm.h"

int llm_kv_init(struct llm_kv *kv, uint32_t nblocks)
{
	uint32_t i;

	memset(kv, 0, sizeof(*kv));
	if (!nblocks)
		return -EINVAL;
	kv->free = malloc(sizeof(*kv->free) * nblocks);
	kv->used = calloc(nblocks, 1);
	if (!kv->free || !kv->used) {
		llm_kv_fini(kv);
		return -ENOMEM;
	}
	/* Lowest numbers on top: a fresh pool hands out consecutive runs. */
	for (i = 0; i < nblocks; i++)
		kv->free[i] = nblocks - 1 - i;
	kv->nblocks = kv->nfree = nblocks;
	return 0;
}

void llm_kv_fini(struct llm_kv *kv)
{
	free(kv->free);
	free(kv->used);
	memset(kv, 0, sizeof(*kv));
}

uint32_t llm_kv_blocks_for(uint32_t tokens, uint32_t block_tokens)
{
	return (tokens + block_tokens - 1) / block_tokens;
}

int llm_kv_alloc(struct llm_kv *kv, uint32_t n, uint32_t *out)
{
	uint32_t i;

	if (n > kv->nfree) {
		kv->refusals++;
		return -ENOSPC;
	}
	for (i = 0; i < n; i++) {
		out[i] = kv->free[--kv->nfree];
		kv->used[out[i]] = 1;
	}
	kv->allocs++;
	return 0;
}

void llm_kv_free(struct llm_kv *kv, const uint32_t *blocks, uint32_t n)
{
	uint32_t i;

	/* Push back in reverse so the next request gets the same run again. */
	for (i = n; i-- > 0;) {
		if (blocks[i] >= kv->nblocks || !kv->used[blocks[i]])
			abort();	/* a double free is a bug in the engine */
		kv->used[blocks[i]] = 0;
		kv->free[kv->nfree++] = blocks[i];
	}
}
