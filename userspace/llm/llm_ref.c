// SPDX-License-Identifier: MIT
/*
 * The CPU reference: the same model in double precision, one position at a
 * time with its own KV cache, on the weights as the device decoded them
 * (llm_weights.c). The one rounding it copies from the device is the
 * model's own definition: K and V are stored in BF16, so the reference
 * rounds them to BF16 too. Everything else the device does in FP32 is the
 * error the comparison measures (Documentation/serving.rst states the
 * bound).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "llm.h"

struct llm_ref {
	const struct llm_weights *w;
	uint32_t pos;
	double *k, *v;		/* [layers][max_seq][kvd] */
	double *x, *h, *qkv, *att, *t, *a, *b, *s;
};

static double bf16(double v)
{
	float f = (float)v;
	uint32_t u;

	memcpy(&u, &f, 4);
	if ((u & 0x7f800000u) == 0x7f800000u)
		return f;
	u += 0x7fffu + ((u >> 16) & 1u);
	u &= 0xffff0000u;
	memcpy(&f, &u, 4);
	return f;
}

int llm_ref_create(const struct llm_weights *w, struct llm_ref **out)
{
	const struct llm_config *c = &w->cfg;
	size_t kv = (size_t)c->layers * c->max_seq * llm_kvdim(c);
	size_t wide = c->ffn > llm_qdim(c) + 2 * llm_kvdim(c) ? c->ffn :
			llm_qdim(c) + 2 * llm_kvdim(c);
	struct llm_ref *r = calloc(1, sizeof(*r));

	if (!r || !w->ref)
		goto fail;
	r->w = w;
	r->k = calloc(kv, sizeof(double));
	r->v = calloc(kv, sizeof(double));
	r->x = calloc(c->d_model, sizeof(double));
	r->h = calloc(c->d_model, sizeof(double));
	r->t = calloc(c->d_model, sizeof(double));
	r->qkv = calloc(wide, sizeof(double));
	r->att = calloc(llm_qdim(c), sizeof(double));
	r->a = calloc(c->ffn, sizeof(double));
	r->b = calloc(c->ffn, sizeof(double));
	r->s = calloc(c->max_seq, sizeof(double));
	if (!r->k || !r->v || !r->x || !r->h || !r->t || !r->qkv || !r->att || !r->a || !r->b ||
	    !r->s)
		goto fail;
	*out = r;
	return 0;
fail:
	llm_ref_destroy(r);
	return -ENOMEM;
}

void llm_ref_destroy(struct llm_ref *r)
{
	if (!r)
		return;
	free(r->k);
	free(r->v);
	free(r->x);
	free(r->h);
	free(r->t);
	free(r->qkv);
	free(r->att);
	free(r->a);
	free(r->b);
	free(r->s);
	free(r);
}

void llm_ref_reset(struct llm_ref *r)
{
	r->pos = 0;
}

static void rmsnorm(const double *x, const float *g, double *out, uint32_t d, double eps)
{
	double ms = 0;
	uint32_t i;

	for (i = 0; i < d; i++)
		ms += x[i] * x[i];
	ms = 1.0 / sqrt(ms / d + eps);
	for (i = 0; i < d; i++)
		out[i] = x[i] * ms * g[i];
}

/* out[n] = in[k] W^T for W [n, k] */
static void linear(const double *in, const float *wt, double *out, uint32_t n, uint32_t k)
{
	uint32_t i, j;

	for (i = 0; i < n; i++) {
		const float *row = wt + (size_t)i * k;
		double s = 0;

		for (j = 0; j < k; j++)
			s += in[j] * row[j];
		out[i] = s;
	}
}

static void rope(double *v, uint32_t heads, uint32_t hd, uint32_t pos, double theta)
{
	uint32_t h, i, half = hd / 2;

	for (h = 0; h < heads; h++)
		for (i = 0; i < half; i++) {
			double th = pos / pow(theta, 2.0 * i / hd);
			double x0 = v[h * hd + i], x1 = v[h * hd + half + i];

			v[h * hd + i] = x0 * cos(th) - x1 * sin(th);
			v[h * hd + half + i] = x1 * cos(th) + x0 * sin(th);
		}
}

int llm_ref_step(struct llm_ref *r, uint8_t token, double *logits)
{
	const struct llm_weights *w = r->w;
	const struct llm_config *c = &w->cfg;
	uint32_t d = c->d_model, qd = llm_qdim(c), kvd = llm_kvdim(c), hd = c->head_dim;
	uint32_t g = c->heads / c->kv_heads, l, i, j, hh, p = r->pos;
	const float *emb = llm_wref(w, &w->emb) + (size_t)token * d;

	if (p >= c->max_seq)
		return -ENOSPC;
	for (i = 0; i < d; i++)
		r->x[i] = emb[i];
	for (l = 0; l < c->layers; l++) {
		const struct llm_layer_w *lw = &w->layer[l];
		double *kc = r->k + (size_t)l * c->max_seq * kvd;
		double *vc = r->v + (size_t)l * c->max_seq * kvd;

		rmsnorm(r->x, llm_wref(w, &lw->attn_norm), r->h, d, c->eps);
		linear(r->h, llm_wref(w, &lw->wqkv), r->qkv, qd + 2 * kvd, d);
		rope(r->qkv, c->heads, hd, p, c->rope_theta);
		rope(r->qkv + qd, c->kv_heads, hd, p, c->rope_theta);
		for (i = 0; i < kvd; i++) {
			kc[(size_t)p * kvd + i] = bf16(r->qkv[qd + i]);
			vc[(size_t)p * kvd + i] = bf16(r->qkv[qd + kvd + i]);
		}
		for (hh = 0; hh < c->heads; hh++) {
			const double *q = r->qkv + hh * hd;
			uint32_t kvh = hh / g;
			double mx = -INFINITY, sum = 0;

			for (j = 0; j <= p; j++) {
				double dot = 0;

				for (i = 0; i < hd; i++)
					dot += q[i] * kc[(size_t)j * kvd + kvh * hd + i];
				r->s[j] = dot / sqrt((double)hd);
				if (r->s[j] > mx)
					mx = r->s[j];
			}
			for (j = 0; j <= p; j++) {
				r->s[j] = exp(r->s[j] - mx);
				sum += r->s[j];
			}
			for (i = 0; i < hd; i++) {
				double acc = 0;

				for (j = 0; j <= p; j++)
					acc += r->s[j] * vc[(size_t)j * kvd + kvh * hd + i];
				r->att[hh * hd + i] = acc / sum;
			}
		}
		linear(r->att, llm_wref(w, &lw->wo), r->t, d, qd);
		for (i = 0; i < d; i++)
			r->x[i] += r->t[i];
		rmsnorm(r->x, llm_wref(w, &lw->mlp_norm), r->h, d, c->eps);
		linear(r->h, llm_wref(w, &lw->w1), r->a, c->ffn, d);
		linear(r->h, llm_wref(w, &lw->w3), r->b, c->ffn, d);
		for (i = 0; i < c->ffn; i++)
			r->a[i] = r->a[i] / (1.0 + exp(-r->a[i])) * r->b[i];
		linear(r->a, llm_wref(w, &lw->w2), r->t, d, c->ffn);
		for (i = 0; i < d; i++)
			r->x[i] += r->t[i];
	}
	rmsnorm(r->x, llm_wref(w, &w->final_norm), r->h, d, c->eps);
	linear(r->h, llm_wref(w, &w->lm_head), logits, LLM_VOCAB, d);
	for (i = 0; i < LLM_VOCAB; i++)
		logits[i] += llm_wref(w, &w->lm_bias)[i];
	r->pos++;
	return 0;
}
