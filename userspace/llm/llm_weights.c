// SPDX-License-Identifier: MIT
/*
 * The model's configuration and weights. Every weight is a deterministic
 * function of the seed (a 64-bit LCG, the same on every host). The host
 * makes them in FP32; the device converts them into the run's weight type
 * (BF16 by COPY, an MX format by QUANTIZE, which computes the block scales)
 * and converts them back, so the CPU reference (llm_ref.c) uses exactly the
 * values the device multiplies with: the reference checks the forward pass,
 * not the quantization.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "llm.h"

void llm_config_default(struct llm_config *c)
{
	*c = (struct llm_config){
		.layers = 4, .d_model = 256, .heads = 8, .kv_heads = 2, .head_dim = 32,
		.ffn = 512, .max_seq = 256, .block_tokens = 16, .kv_blocks = 128,
		.max_batch = 8, .wdtype = MAIA_DTYPE_BF16, .seed = 0x6d616961ull,
		.eps = 1e-5f, .rope_theta = 10000.0f,
	};
}

int llm_config_check(const struct llm_config *c, const char **why)
{
	const char *w = NULL;

	if (!c->layers || c->layers > LLM_MAX_LAYERS)
		w = "layers must be 1..16";
	else if (!c->heads || !c->kv_heads || c->heads % c->kv_heads)
		w = "heads must be a multiple of kv_heads";
	else if (!c->head_dim || c->head_dim % 2 || c->head_dim > 256)
		w = "head_dim must be even and at most 256";
	else if (!c->d_model || c->d_model % 32 || c->ffn % 32 || !c->ffn ||
		 llm_qdim(c) % 32 || c->d_model > 4096 || c->ffn > 16384)
		w = "d_model, ffn and heads x head_dim must be multiples of 32 (MX blocks)";
	else if (c->max_seq < 2 || c->max_seq > 4096)
		w = "max_seq must be 2..4096";
	else if (!c->block_tokens || c->block_tokens > c->max_seq)
		w = "block_tokens must be 1..max_seq";
	else if (c->kv_blocks < 1 || c->kv_blocks > 1u << 20)
		w = "kv_blocks must be 1..2^20";
	else if (llm_kv_blocks_for(c->max_seq, c->block_tokens) > 1024)
		w = "max_seq / block_tokens must be at most 1024";
	else if (!c->max_batch || c->max_batch > LLM_MAX_BATCH)
		w = "max_batch must be 1..16";
	else if (c->wdtype != MAIA_DTYPE_BF16 && c->wdtype != MAIA_DTYPE_MXFP8_E4M3 &&
		 c->wdtype != MAIA_DTYPE_MXFP8_E5M2 && c->wdtype != MAIA_DTYPE_MXFP6_E3M2 &&
		 c->wdtype != MAIA_DTYPE_MXFP6_E2M3 && c->wdtype != MAIA_DTYPE_MXFP4_E2M1 &&
		 c->wdtype != MAIA_DTYPE_MXINT8)
		w = "weights are bf16 or an OCP MX format";
	if (why)
		*why = w;
	return w ? -EINVAL : 0;
}

static uint64_t align_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) / a * a;
}

/* Place a tensor: norms (rows 1) in FP32, matrices in the weight type. */
static int place(struct llm_weights *w, struct llm_wt *t, uint32_t rows, uint32_t cols)
{
	uint64_t elems = (uint64_t)rows * cols, data, scale;
	int err;

	t->rows = rows;
	t->cols = cols;
	t->ref_off = w->nref;
	w->nref += elems;
	if (rows == 1) {
		data = elems * 4;
		scale = 0;
	} else {
		err = maia_dtype_bytes(w->cfg.wdtype, elems, &data, &scale);
		if (err)
			return err;
	}
	t->off = w->bytes;
	w->bytes = align_up(w->bytes + data, 256);
	t->scale_off = 0;
	if (scale) {
		t->scale_off = w->bytes;
		w->bytes = align_up(w->bytes + scale, 256);
	}
	return 0;
}

int llm_weights_init(struct llm_weights *w, const struct llm_config *c)
{
	uint32_t d = c->d_model, l;
	int err;

	err = llm_config_check(c, NULL);
	if (err)
		return err;
	memset(w, 0, sizeof(*w));
	w->cfg = *c;
	err = place(w, &w->emb, LLM_VOCAB, d);
	for (l = 0; l < c->layers && !err; l++) {
		struct llm_layer_w *lw = &w->layer[l];

		err = place(w, &lw->attn_norm, 1, d);
		err = err ?: place(w, &lw->wqkv, llm_qdim(c) + 2 * llm_kvdim(c), d);
		err = err ?: place(w, &lw->wo, d, llm_qdim(c));
		err = err ?: place(w, &lw->mlp_norm, 1, d);
		err = err ?: place(w, &lw->w1, c->ffn, d);
		err = err ?: place(w, &lw->w3, c->ffn, d);
		err = err ?: place(w, &lw->w2, d, c->ffn);
	}
	err = err ?: place(w, &w->final_norm, 1, d);
	err = err ?: place(w, &w->lm_head, LLM_VOCAB, d);
	err = err ?: place(w, &w->lm_bias, 1, LLM_VOCAB);
	if (err)
		return err;
	w->bytes = align_up(w->bytes, 4096);
	return 0;
}

void llm_weights_fini(struct llm_weights *w)
{
	free(w->ref);
	free(w->init);
	w->ref = NULL;
	w->init = NULL;
}

/*
 * Rows r0.. and columns [c0, c0 + t->cols) of full tensor f into rows
 * dst_row0..t->rows of tensor t (FP32 at dst).
 */
static void slice(const struct llm_weights *full, const struct llm_wt *f, uint32_t r0,
		  uint32_t c0, float *dst, const struct llm_wt *t, uint32_t dst_row0)
{
	const float *src = full->ref + f->ref_off;
	uint32_t i;

	for (i = 0; i + dst_row0 < t->rows && r0 + i < f->rows; i++)
		memcpy(dst + t->ref_off + (size_t)(dst_row0 + i) * t->cols,
		       src + (size_t)(r0 + i) * f->cols + c0, (size_t)t->cols * 4);
}

int llm_weights_shard(const struct llm_weights *full, uint32_t rank, uint32_t n,
		      struct llm_weights *ws)
{
	struct llm_config c = full->cfg;
	uint32_t qd, kvd, qd_l, kvd_l, l;
	float *p;
	int err;

	if (!full->ref || !n || rank >= n || c.kv_heads % n || c.heads % n || c.ffn % n)
		return -EINVAL;
	qd = llm_qdim(&c);
	kvd = llm_kvdim(&c);
	c.heads /= n;
	c.kv_heads /= n;
	c.ffn /= n;
	err = llm_weights_init(ws, &c);
	if (err)
		return err;
	qd_l = llm_qdim(&c);
	kvd_l = llm_kvdim(&c);
	p = malloc(ws->nref * 4);
	if (!p) {
		llm_weights_fini(ws);
		return -ENOMEM;
	}
	slice(full, &full->emb, 0, 0, p, &ws->emb, 0);
	for (l = 0; l < c.layers; l++) {
		const struct llm_layer_w *f = &full->layer[l];
		const struct llm_layer_w *t = &ws->layer[l];
		const struct llm_wt q = { .rows = qd_l, .cols = t->wqkv.cols,
					  .ref_off = t->wqkv.ref_off };

		slice(full, &f->attn_norm, 0, 0, p, &t->attn_norm, 0);
		/* Wqkv: this rank's query rows, then its K rows, then its V rows */
		slice(full, &f->wqkv, rank * qd_l, 0, p, &q, 0);
		slice(full, &f->wqkv, qd + rank * kvd_l, 0, p, &(struct llm_wt){
			.rows = qd_l + kvd_l, .cols = t->wqkv.cols, .ref_off = t->wqkv.ref_off },
		      qd_l);
		slice(full, &f->wqkv, qd + kvd + rank * kvd_l, 0, p, &t->wqkv, qd_l + kvd_l);
		slice(full, &f->wo, 0, rank * qd_l, p, &t->wo, 0);
		slice(full, &f->mlp_norm, 0, 0, p, &t->mlp_norm, 0);
		slice(full, &f->w1, rank * c.ffn, 0, p, &t->w1, 0);
		slice(full, &f->w3, rank * c.ffn, 0, p, &t->w3, 0);
		slice(full, &f->w2, 0, rank * c.ffn, p, &t->w2, 0);
	}
	slice(full, &full->final_norm, 0, 0, p, &ws->final_norm, 0);
	slice(full, &full->lm_head, 0, 0, p, &ws->lm_head, 0);
	slice(full, &full->lm_bias, 0, 0, p, &ws->lm_bias, 0);
	ws->init = p;
	return 0;
}

float *llm_wref(const struct llm_weights *w, const struct llm_wt *t)
{
	return w->ref + t->ref_off;
}

int llm_wdesc(const struct llm_weights *w, const struct llm_wt *t, uint64_t va,
	      struct maia_tensor_desc *d)
{
	int err;

	if (t->rows == 1)
		return maia_tensor_init(d, va + t->off, MAIA_DTYPE_FP32, 1,
					(uint32_t[]){ t->cols });
	err = maia_tensor_init(d, va + t->off, w->cfg.wdtype, 2, (uint32_t[]){ t->rows, t->cols });
	if (!err && t->scale_off)
		err = maia_tensor_set_scale_addr(d, va + t->scale_off);
	return err;
}

static float rnd(uint64_t *s)
{
	*s = *s * 6364136223846793005ull + 1442695040888963407ull;
	return (float)((double)(*s >> 11) / (double)(1ull << 53) * 2.0 - 1.0);
}

static void fill(float *p, const struct llm_wt *t, float amp, float base, uint64_t *s)
{
	uint64_t i, n = (uint64_t)t->rows * t->cols;

	for (i = 0; i < n; i++)
		p[t->ref_off + i] = base + amp * rnd(s);
}

/* Every tensor in the order place() laid them out. */
static int for_each(const struct llm_weights *w, int (*fn)(const struct llm_weights *,
							     const struct llm_wt *, void *),
		    void *arg)
{
	uint32_t l;
	int err = fn(w, &w->emb, arg);

	for (l = 0; l < w->cfg.layers && !err; l++) {
		const struct llm_layer_w *lw = &w->layer[l];

		err = fn(w, &lw->attn_norm, arg);
		err = err ?: fn(w, &lw->wqkv, arg);
		err = err ?: fn(w, &lw->wo, arg);
		err = err ?: fn(w, &lw->mlp_norm, arg);
		err = err ?: fn(w, &lw->w1, arg);
		err = err ?: fn(w, &lw->w3, arg);
		err = err ?: fn(w, &lw->w2, arg);
	}
	err = err ?: fn(w, &w->final_norm, arg);
	err = err ?: fn(w, &w->lm_head, arg);
	return err ?: fn(w, &w->lm_bias, arg);
}

/*
 * The output bias: the log of each byte's frequency in English text (space,
 * then letters), -6 for bytes that are not printable, so that a model with
 * random weights still writes letters and spaces. Not random: a fixed table.
 */
static void fill_bias(float *p)
{
	static const float letter[26] = {	/* a..z, percent of letters */
		8.2f, 1.5f, 2.8f, 4.3f, 12.7f, 2.2f, 2.0f, 6.1f, 7.0f, 0.15f, 0.8f, 4.0f, 2.4f,
		6.7f, 7.5f, 1.9f, 0.1f, 6.0f, 6.3f, 9.1f, 2.8f, 1.0f, 2.4f, 0.15f, 2.0f, 0.07f,
	};
	unsigned int b;

	for (b = 0; b < LLM_VOCAB; b++) {
		float f = 0;

		if (b >= 'a' && b <= 'z')
			f = letter[b - 'a'] * 0.8f;
		else if (b >= 'A' && b <= 'Z')
			f = letter[b - 'A'] * 0.04f;
		else if (b == ' ')
			f = 18.0f;
		else if (b == ',' || b == '.')
			f = 1.0f;
		p[b] = f > 0 ? logf(f / 100.0f) + 2.0f : -6.0f;
	}
}

struct conv {
	struct maia_cmdbuf *cb;
	uint64_t wva, src_va, dst_va;
};

/* Host FP32 -> weight type in the BO -> decoded FP32 back in host memory. */
static int convert_one(const struct llm_weights *w, const struct llm_wt *t, void *arg)
{
	struct conv *cv = arg;
	struct maia_tensor_desc src, dst, back;
	uint32_t shape[2] = { t->rows, t->cols };
	int err;

	if (t->rows == 1) {
		err = maia_cmd_copy(cv->cb, cv->wva + t->off, cv->src_va + t->ref_off * 4,
				    (uint64_t)t->cols * 4);
		return err ?: maia_cmd_copy(cv->cb, cv->dst_va + t->ref_off * 4, cv->wva + t->off,
					    (uint64_t)t->cols * 4);
	}
	err = maia_tensor_init(&src, cv->src_va + t->ref_off * 4, MAIA_DTYPE_FP32, 2, shape);
	err = err ?: maia_tensor_init(&back, cv->dst_va + t->ref_off * 4, MAIA_DTYPE_FP32, 2, shape);
	err = err ?: llm_wdesc(w, t, cv->wva, &dst);
	if (err)
		return err;
	if (w->cfg.wdtype == MAIA_DTYPE_BF16) {
		err = maia_cmd_tensor_copy(cv->cb, &src, &dst);
		return err ?: maia_cmd_tensor_copy(cv->cb, &dst, &back);
	}
	err = maia_cmd_quantize(cv->cb, &src, &dst, 0, 0);
	return err ?: maia_cmd_dequantize(cv->cb, &dst, &back);
}

int llm_weights_load(struct llm_weights *w, struct maia_device *dev, struct maia_bo *wbo)
{
	const struct llm_config *c = &w->cfg;
	struct maia_bo *src = NULL, *dst = NULL;
	struct conv cv = { 0 };
	struct maia_job_status st;
	float *s = NULL, *back = NULL;
	uint64_t seed = c->seed, bytes = w->nref * 4;
	uint32_t l;
	int err;

	err = maia_bo_create(dev, bytes, MAIA_BO_HOST, &src);
	err = err ?: maia_bo_create(dev, bytes, MAIA_BO_HOST, &dst);
	err = err ?: maia_bo_map(src, (void **)&s);
	err = err ?: maia_bo_map(dst, (void **)&back);
	err = err ?: maia_cmdbuf_create(dev, 64 * 1024, &cv.cb);
	if (err)
		goto out;
	/* Embedding rows of rms ~0.6; projections keep unit variance. */
	fill(s, &w->emb, 1.0f, 0.0f, &seed);
	for (l = 0; l < c->layers && !w->init; l++) {
		const struct llm_layer_w *lw = &w->layer[l];

		fill(s, &lw->attn_norm, 0.1f, 1.0f, &seed);
		fill(s, &lw->wqkv, sqrtf(3.0f / c->d_model), 0.0f, &seed);
		fill(s, &lw->wo, sqrtf(3.0f / llm_qdim(c)), 0.0f, &seed);
		fill(s, &lw->mlp_norm, 0.1f, 1.0f, &seed);
		fill(s, &lw->w1, sqrtf(3.0f / c->d_model), 0.0f, &seed);
		fill(s, &lw->w3, sqrtf(3.0f / c->d_model), 0.0f, &seed);
		fill(s, &lw->w2, sqrtf(3.0f / c->ffn), 0.0f, &seed);
	}
	fill(s, &w->final_norm, 0.1f, 1.0f, &seed);
	fill(s, &w->lm_head, 2.0f * sqrtf(3.0f / c->d_model), 0.0f, &seed);
	fill_bias(s + w->lm_bias.ref_off);
	if (w->init)
		memcpy(s, w->init, bytes);
	cv.wva = maia_bo_va(wbo);
	cv.src_va = maia_bo_va(src);
	cv.dst_va = maia_bo_va(dst);
	err = for_each(w, convert_one, &cv);
	err = err ?: maia_run(dev, cv.cb, 60ll * 1000000000, &st);
	if (err)
		goto out;
	if (!w->ref) {
		w->ref = malloc(bytes);
		if (!w->ref) {
			err = -ENOMEM;
			goto out;
		}
		memcpy(w->ref, back, bytes);
	} else if (memcmp(w->ref, back, bytes)) {
		/* A second device must hold the very same weights. */
		err = -EIO;
	}
out:
	maia_cmdbuf_destroy(cv.cb);
	maia_bo_destroy(src);
	maia_bo_destroy(dst);
	return err;
}
