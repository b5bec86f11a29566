// SPDX-License-Identifier: MIT
/*
 * Sampling the next token from a row of logits, on the host: greedy
 * (temperature 0; the lowest index wins a tie), or softmax at a temperature
 * restricted to the top_k most likely tokens and then to the smallest set
 * whose probability reaches top_p, drawn with the request's own generator
 * (a 64-bit LCG seeded from the request's seed). The same logits and seed
 * give the same token on every host and in every serving mode.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "llm.h"

uint64_t llm_rng_seed(uint64_t seed)
{
	/* splitmix64: nearby seeds give unrelated streams. */
	uint64_t z = seed + 0x9e3779b97f4a7c15ull;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static double uniform(uint64_t *s)
{
	*s = *s * 6364136223846793005ull + 1442695040888963407ull;
	return (double)(*s >> 11) / (double)(1ull << 53);
}

struct cand {
	double p;
	uint32_t tok;
};

static int by_prob(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;

	if (x->p != y->p)
		return x->p < y->p ? 1 : -1;
	return x->tok < y->tok ? -1 : x->tok > y->tok;
}

int llm_sample(const float *logits, uint32_t vocab, const struct llm_sampling *s,
	       uint64_t *rng)
{
	struct cand c[LLM_VOCAB];
	double mx = -INFINITY, sum = 0, acc, r;
	uint32_t i, n = vocab, best = 0;

	if (!vocab || vocab > LLM_VOCAB)
		return -EINVAL;
	for (i = 1; i < vocab; i++)
		if (logits[i] > logits[best])
			best = i;
	if (s->temperature <= 0.0f)
		return (int)best;
	mx = logits[best];
	for (i = 0; i < vocab; i++) {
		c[i].tok = i;
		c[i].p = exp(((double)logits[i] - mx) / s->temperature);
	}
	qsort(c, vocab, sizeof(c[0]), by_prob);
	if (s->top_k && s->top_k < n)
		n = s->top_k;
	for (i = 0; i < n; i++)
		sum += c[i].p;
	if (s->top_p > 0.0f && s->top_p < 1.0f) {
		for (i = 0, acc = 0; i < n; i++) {
			acc += c[i].p / sum;
			if (acc >= s->top_p) {
				n = i + 1;
				break;
			}
		}
		for (i = 0, sum = 0; i < n; i++)
			sum += c[i].p;
	}
	r = uniform(rng) * sum;
	for (i = 0, acc = 0; i < n; i++) {
		acc += c[i].p;
		if (r < acc)
			return (int)c[i].tok;
	}
	return (int)c[n - 1].tok;
}
