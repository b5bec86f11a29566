// SPDX-License-Identifier: MIT
/*
 * The forward pass as device commands. Activations are FP32 rows (one row
 * per token), weights are [out, in] in the run's type and multiply with
 * MAIA_GEMM_F_TRANS_B, K/V are BF16. A layer:
 *
 *   h = RMSNorm(x); qkv = h Wqkv^T (one GEMM for Q, K and V)
 *   q, k = RoPE(q), RoPE(k)        (4 elementwise commands each, below)
 *   K/V of the new positions into the cache; o = attention(q, K, V)
 *   x += o Wo^T; h = RMSNorm(x); x += (SiLU(h W1^T) * (h W3^T)) W2^T
 *
 * and at the end logits = RMSNorm(x) Wout^T + b (b: llm_weights.c).
 *
 * Grouped-query attention needs no copy of K/V per query head: Q is viewed
 * as [kv_heads, group, L, head_dim] and K/V as [kv_heads, group (stride 0),
 * L, head_dim]. A prefill keeps its K/V contiguous in the staging buffer; a
 * decode step appends each row's K/V to its block in the pool and gathers
 * the request's blocks into a contiguous buffer for the attention command
 * (the device's attention takes one strided K and V), unless they are
 * consecutive blocks, which are one strided tensor in the pool already.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "drm/maia_accel.h"
#include "llm.h"

#define CB_BYTES	(1024 * 1024 - 4096)

static int buf_new(struct maia_device *dev, uint64_t bytes, enum maia_placement p,
		   struct llm_buf *b)
{
	int err = maia_bo_create(dev, bytes, p, &b->bo);

	if (!err && p == MAIA_BO_HOST)
		err = maia_bo_map(b->bo, &b->cpu);
	if (!err)
		b->va = maia_bo_va(b->bo);
	return err;
}

static void buf_free(struct llm_buf *b)
{
	if (b->bo)
		maia_bo_destroy(b->bo);
	memset(b, 0, sizeof(*b));
}

/* The RoPE table: row p is C = [cos, cos], S = [-sin, sin] of position p. */
static int rope_table(struct llm_dev *d)
{
	const struct llm_config *c = &d->w->cfg;
	uint32_t half = c->head_dim / 2, p, i;
	uint64_t bytes = (uint64_t)c->max_seq * 2 * c->head_dim * 4;
	struct llm_buf tmp = { 0 };
	struct maia_job_status st;
	int err = buf_new(d->dev, bytes, MAIA_BO_HOST, &tmp);

	if (err)
		return err;
	for (p = 0; p < c->max_seq; p++) {
		float *row = (float *)tmp.cpu + (size_t)p * 2 * c->head_dim;

		for (i = 0; i < half; i++) {
			double th = p / pow(c->rope_theta, 2.0 * i / c->head_dim);

			row[i] = row[half + i] = (float)cos(th);
			row[c->head_dim + i] = (float)-sin(th);
			row[c->head_dim + half + i] = (float)sin(th);
		}
	}
	maia_cmdbuf_reset(d->cb);
	err = maia_cmd_copy(d->cb, d->rope.va, tmp.va, bytes);
	err = err ?: maia_run(d->dev, d->cb, 10ll * 1000000000, &st);
	buf_free(&tmp);
	return err;
}

int llm_dev_init(struct llm_dev *d, struct maia_device *dev, struct llm_weights *w,
		 bool with_pool)
{
	const struct llm_config *c = &w->cfg;
	uint64_t r = c->max_seq > c->max_batch ? c->max_seq : c->max_batch;
	uint64_t wide = c->ffn > llm_qdim(c) ? c->ffn : llm_qdim(c);
	uint64_t qkvd = llm_qdim(c) + 2 * llm_kvdim(c), kvd = llm_kvdim(c);
	int err;

	memset(d, 0, sizeof(*d));
	d->dev = dev;
	d->w = w;
	err = maia_cmdbuf_create(dev, CB_BYTES, &d->cb);
	err = err ?: buf_new(dev, w->bytes, MAIA_BO_HBM, &d->wbo);
	err = err ?: buf_new(dev, c->max_seq * 2ull * c->head_dim * 4, MAIA_BO_HBM, &d->rope);
	err = err ?: buf_new(dev, r * c->d_model * 4, MAIA_BO_HBM, &d->x);
	err = err ?: buf_new(dev, r * c->d_model * 4, MAIA_BO_HBM, &d->h);
	err = err ?: buf_new(dev, r * qkvd * 4, MAIA_BO_HBM, &d->qkv);
	err = err ?: buf_new(dev, r * llm_qdim(c) * 4, MAIA_BO_HBM, &d->qr);
	err = err ?: buf_new(dev, r * llm_qdim(c) * 4, MAIA_BO_HBM, &d->att);
	err = err ?: buf_new(dev, r * c->d_model * 4, MAIA_BO_HBM, &d->t);
	err = err ?: buf_new(dev, r * wide * 4, MAIA_BO_HBM, &d->g);
	err = err ?: buf_new(dev, r * wide * 4, MAIA_BO_HBM, &d->u);
	err = err ?: buf_new(dev, r * kvd * 2, MAIA_BO_HBM, &d->krow);
	err = err ?: buf_new(dev, r * 2 * c->head_dim * 4, MAIA_BO_HBM, &d->rope_step);
	err = err ?: buf_new(dev, (uint64_t)c->max_batch * LLM_VOCAB * 4, MAIA_BO_HOST,
			     &d->logits);
	err = err ?: buf_new(dev, c->max_batch * r * llm_kv_row_bytes(c), MAIA_BO_HBM, &d->gather);
	err = err ?: buf_new(dev, c->layers * r * llm_kv_row_bytes(c), MAIA_BO_HBM, &d->staging);
	if (!err && with_pool)
		err = llm_dev_add_pool(d);
	err = err ?: llm_weights_load(w, dev, d->wbo.bo);
	err = err ?: rope_table(d);
	if (err)
		llm_dev_fini(d);
	return err;
}

int llm_dev_add_pool(struct llm_dev *d)
{
	const struct llm_config *c = &d->w->cfg;

	if (d->pool.bo)
		return 0;
	d->pool_bytes = llm_pool_off(c, c->layers, 0);
	return buf_new(d->dev, d->pool_bytes, MAIA_BO_HBM, &d->pool);
}

void llm_dev_fini(struct llm_dev *d)
{
	struct llm_buf *all[] = { &d->wbo, &d->rope, &d->x, &d->h, &d->qkv, &d->qr, &d->att,
				  &d->t, &d->g, &d->u, &d->krow, &d->rope_step, &d->logits,
				  &d->gather, &d->staging, &d->pool };
	size_t i;

	for (i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		buf_free(all[i]);
	maia_cmdbuf_destroy(d->cb);
	d->cb = NULL;
}

int llm_dev_run(struct llm_dev *d, struct maia_job_times *times)
{
	struct maia_job_times t = { 0 };
	struct maia_job_status st;
	uint64_t seq;
	int err;

	err = maia_submit(d->dev, d->cb, NULL, &seq);
	err = err ?: maia_wait_times(d->dev, seq, 60ll * 1000000000, &st, &t);
	if (!err && st.status != DRM_MAIA_JOB_OK)
		err = -EIO;
	if (err)
		return err;
	d->jobs++;
	d->job_host_ns += t.host_ns;
	d->job_device_ns += t.device_ns;
	if (times)
		*times = t;
	return 0;
}

void llm_dev_set_tp(struct llm_dev *d, uint32_t rank, uint32_t n, uint32_t comm)
{
	d->tp_rank = rank;
	d->tp_n = n;
	d->tp_comm = comm;
	d->tp_seq = 0;
}

int llm_devs_run(struct llm_dev *const *ds, uint32_t n, struct maia_job_times *times)
{
	struct maia_job_times t[LLM_MAX_TP] = { 0 };
	uint64_t seq[LLM_MAX_TP];
	uint32_t i, sub;
	int err = 0, e2;

	if (!n || n > LLM_MAX_TP)
		return -EINVAL;
	/* All submitted before any wait: their collectives meet. */
	for (sub = 0; sub < n && !err; sub++)
		err = maia_submit(ds[sub]->dev, ds[sub]->cb, NULL, &seq[sub]);
	for (i = 0; i < sub; i++) {
		struct maia_job_status st;

		e2 = maia_wait_times(ds[i]->dev, seq[i], 60ll * 1000000000, &st, &t[i]);
		if (!e2 && st.status != DRM_MAIA_JOB_OK)
			e2 = -EIO;
		err = err ?: e2;
		if (!e2) {
			ds[i]->jobs++;
			ds[i]->job_host_ns += t[i].host_ns;
			ds[i]->job_device_ns += t[i].device_ns;
		}
	}
	if (!err && times)
		*times = t[0];
	return err;
}

const float *llm_logits(const struct llm_dev *d, uint32_t row)
{
	return (const float *)d->logits.cpu + (size_t)row * LLM_VOCAB;
}

/* A rank-2 FP32 [rows, cols] view with row stride ld (elements). */
static int mat(struct maia_tensor_desc *t, uint64_t va, unsigned int dtype, uint32_t rows,
	       uint32_t cols, uint64_t ld)
{
	int err = maia_tensor_init(t, va, dtype, 2, (uint32_t[]){ rows, cols });

	t->strides[0] = ld;
	return err;
}

/* C[n, N] = act(A[n, K] W^T + bias) for a weight W [N, K]; bias may be NULL. */
static int linear_bias(struct llm_dev *d, uint64_t a_va, uint32_t n, const struct llm_wt *wt,
		       const struct llm_wt *bias, uint64_t c_va, uint32_t act)
{
	struct maia_tensor_desc a, b, c, bd;
	struct maia_gemm_args g;
	int err;

	err = mat(&a, a_va, MAIA_DTYPE_FP32, n, wt->cols, wt->cols);
	err = err ?: llm_wdesc(d->w, wt, d->wbo.va, &b);
	err = err ?: mat(&c, c_va, MAIA_DTYPE_FP32, n, wt->rows, wt->rows);
	if (err)
		return err;
	g = (struct maia_gemm_args){ .a = &a, .b = &b, .c = &c, .alpha = 1.0f,
				     .activation = act, .flags = MAIA_GEMM_F_TRANS_B };
	if (bias) {
		err = llm_wdesc(d->w, bias, d->wbo.va, &bd);
		if (err)
			return err;
		g.bias = &bd;
	}
	return maia_cmd_gemm_ex(d->cb, &g);
}

static int linear(struct llm_dev *d, uint64_t a_va, uint32_t n, const struct llm_wt *wt,
		  uint64_t c_va, uint32_t act)
{
	return linear_bias(d, a_va, n, wt, NULL, c_va, act);
}

static int rmsnorm(struct llm_dev *d, uint64_t x_va, uint32_t n, const struct llm_wt *gw,
		   uint64_t out_va)
{
	const struct llm_config *c = &d->w->cfg;
	struct maia_tensor_desc x, g, o;
	int err;

	err = mat(&x, x_va, MAIA_DTYPE_FP32, n, c->d_model, c->d_model);
	err = err ?: llm_wdesc(d->w, gw, d->wbo.va, &g);
	err = err ?: mat(&o, out_va, MAIA_DTYPE_FP32, n, c->d_model, c->d_model);
	return err ?: maia_cmd_rmsnorm(d->cb, &x, &g, &o, c->eps);
}

static void view(struct maia_tensor_desc *t, uint64_t va, unsigned int dtype, unsigned int rank,
		 const uint32_t *shape, const uint64_t *strides)
{
	unsigned int i;

	memset(t, 0, sizeof(*t));
	t->addr = va;
	t->dtype = dtype;
	t->rank = rank;
	for (i = 0; i < rank; i++) {
		t->shape[i] = shape[i];
		t->strides[i] = strides[i];
	}
}

/*
 * RoPE (rotate-half form) of n rows of `heads` heads at src (FP32, row
 * stride src_ld), into dst (dst_dtype, row stride dst_ld), with the table
 * rows at cs (row stride 2 x head_dim): out = x C + swap(x) S, where swap
 * exchanges the halves of each head. T and U are scratch (d->g, d->u).
 */
static int rope(struct llm_dev *d, uint64_t src, uint64_t src_ld, uint32_t n, uint32_t heads,
		uint64_t dst, unsigned int dst_dtype, uint64_t dst_ld, uint64_t cs)
{
	const struct llm_config *c = &d->w->cfg;
	uint32_t hd = c->head_dim, half = hd / 2;
	uint64_t tld = (uint64_t)heads * hd, ab = 4;
	struct maia_tensor_desc x, cc, t, u, o, xh, sh, uh;
	uint32_t s4[4] = { n, heads, 2, half }, s3[3] = { n, heads, half };
	int err;

	view(&x, src, MAIA_DTYPE_FP32, 4, s4, (uint64_t[]){ src_ld, hd, half, 1 });
	view(&cc, cs, MAIA_DTYPE_FP32, 4, s4, (uint64_t[]){ 2ull * hd, 0, half, 1 });
	view(&t, d->g.va, MAIA_DTYPE_FP32, 4, s4, (uint64_t[]){ tld, hd, half, 1 });
	err = maia_cmd_mul(d->cb, &x, &cc, &t, 0);
	/* U's second half = x0 sin, its first half = x1 (-sin). */
	view(&xh, src, MAIA_DTYPE_FP32, 3, s3, (uint64_t[]){ src_ld, hd, 1 });
	view(&sh, cs + (hd + half) * ab, MAIA_DTYPE_FP32, 3, s3, (uint64_t[]){ 2ull * hd, 0, 1 });
	view(&uh, d->u.va + half * ab, MAIA_DTYPE_FP32, 3, s3, (uint64_t[]){ tld, hd, 1 });
	err = err ?: maia_cmd_mul(d->cb, &xh, &sh, &uh, 0);
	view(&xh, src + half * ab, MAIA_DTYPE_FP32, 3, s3, (uint64_t[]){ src_ld, hd, 1 });
	view(&sh, cs + hd * ab, MAIA_DTYPE_FP32, 3, s3, (uint64_t[]){ 2ull * hd, 0, 1 });
	view(&uh, d->u.va, MAIA_DTYPE_FP32, 3, s3, (uint64_t[]){ tld, hd, 1 });
	err = err ?: maia_cmd_mul(d->cb, &xh, &sh, &uh, 0);
	view(&u, d->u.va, MAIA_DTYPE_FP32, 4, s4, (uint64_t[]){ tld, hd, half, 1 });
	view(&o, dst, dst_dtype, 4, s4, (uint64_t[]){ dst_ld, hd, half, 1 });
	return err ?: maia_cmd_add(d->cb, &t, &u, &o, 0);
}

/* Q rows [kv_heads, group, rows, head_dim] of an FP32 buffer with row stride qd. */
static void q_view(const struct llm_config *c, struct maia_tensor_desc *t, uint64_t va,
		   uint32_t rows)
{
	uint32_t g = c->heads / c->kv_heads;

	view(t, va, MAIA_DTYPE_FP32, 4, (uint32_t[]){ c->kv_heads, g, rows, c->head_dim },
	     (uint64_t[]){ (uint64_t)g * c->head_dim, c->head_dim, llm_qdim(c), 1 });
}

/*
 * K (kv 0) or V (kv 1) of cache rows at va (llm_kv_row_bytes apart) as
 * [kv_heads, group (stride 0), rows, head_dim], BF16.
 */
static void kv_view(const struct llm_config *c, struct maia_tensor_desc *t, uint64_t va,
		    uint32_t kv, uint32_t rows)
{
	view(t, va + kv * llm_kvdim(c) * 2ull, MAIA_DTYPE_BF16, 4,
	     (uint32_t[]){ c->kv_heads, c->heads / c->kv_heads, rows, c->head_dim },
	     (uint64_t[]){ c->head_dim, 0, 2ull * llm_kvdim(c), 1 });
}

/* x row `row` = embedding of token. */
static int embed(struct llm_dev *d, uint8_t token, uint32_t row)
{
	const struct llm_config *c = &d->w->cfg;
	const struct llm_wt *e = &d->w->emb;
	struct maia_tensor_desc src, dst;
	uint64_t data, scale;
	int err;

	err = maia_dtype_bytes(c->wdtype, c->d_model, &data, &scale);
	err = err ?: maia_tensor_init(&src, d->wbo.va + e->off + token * data, c->wdtype, 1,
				      (uint32_t[]){ c->d_model });
	if (!err && scale)
		err = maia_tensor_set_scale_addr(&src, d->wbo.va + e->scale_off + token * scale);
	err = err ?: maia_tensor_init(&dst, d->x.va + (uint64_t)row * c->d_model * 4,
				      MAIA_DTYPE_FP32, 1, (uint32_t[]){ c->d_model });
	if (err)
		return err;
	if (scale)
		return maia_cmd_dequantize(d->cb, &src, &dst);
	return maia_cmd_tensor_copy(d->cb, &src, &dst);
}

/* Tensor parallel: sum the ranks' partial rows [n, d_model] of t, in place. */
static int tp_sum(struct llm_dev *d, uint32_t n)
{
	struct maia_cmd_collective c = {
		.coll = MAIA_COLL_ALL_REDUCE, .redop = MAIA_REDOP_SUM, .dtype = MAIA_DTYPE_FP32,
		.send_port = 0, .recv_port = 1, .rank = (uint16_t)d->tp_rank,
		.nranks = (uint16_t)d->tp_n, .comm_id = d->tp_comm, .seq = d->tp_seq++,
		.send_addr = d->t.va, .recv_addr = d->t.va,
		.count = (uint64_t)n * d->w->cfg.d_model,
	};

	return d->tp_n > 1 ? maia_cmd_collective(d->cb, &c) : 0;
}

/* Everything of a layer after attention: x += o Wo^T, then the gated MLP. */
static int layer_tail(struct llm_dev *d, const struct llm_layer_w *lw, uint32_t n)
{
	const struct llm_config *c = &d->w->cfg;
	struct maia_tensor_desc x, t, g, u;
	int err;

	err = linear(d, d->att.va, n, &lw->wo, d->t.va, MAIA_ACT_NONE);
	err = err ?: tp_sum(d, n);
	err = err ?: mat(&x, d->x.va, MAIA_DTYPE_FP32, n, c->d_model, c->d_model);
	err = err ?: mat(&t, d->t.va, MAIA_DTYPE_FP32, n, c->d_model, c->d_model);
	err = err ?: maia_cmd_add(d->cb, &x, &t, &x, 0);
	err = err ?: rmsnorm(d, d->x.va, n, &lw->mlp_norm, d->h.va);
	err = err ?: linear(d, d->h.va, n, &lw->w1, d->g.va, MAIA_ACT_SILU);
	err = err ?: linear(d, d->h.va, n, &lw->w3, d->u.va, MAIA_ACT_NONE);
	err = err ?: mat(&g, d->g.va, MAIA_DTYPE_FP32, n, c->ffn, c->ffn);
	err = err ?: mat(&u, d->u.va, MAIA_DTYPE_FP32, n, c->ffn, c->ffn);
	err = err ?: maia_cmd_mul(d->cb, &g, &u, &g, 0);
	err = err ?: linear(d, d->g.va, n, &lw->w2, d->t.va, MAIA_ACT_NONE);
	err = err ?: tp_sum(d, n);
	return err ?: maia_cmd_add(d->cb, &x, &t, &x, 0);
}

/*
 * h = RMSNorm(x); qkv = h Wqkv^T; q = RoPE(q) into qr; k = RoPE(k) into
 * k_dst (BF16, row stride k_ld elements).
 */
static int layer_head(struct llm_dev *d, const struct llm_layer_w *lw, uint32_t n,
		      uint64_t cs, uint64_t k_dst, uint64_t k_ld)
{
	const struct llm_config *c = &d->w->cfg;
	uint64_t qkvd = llm_qdim(c) + 2 * llm_kvdim(c);
	int err;

	err = rmsnorm(d, d->x.va, n, &lw->attn_norm, d->h.va);
	err = err ?: linear(d, d->h.va, n, &lw->wqkv, d->qkv.va, MAIA_ACT_NONE);
	err = err ?: rope(d, d->qkv.va, qkvd, n, c->heads, d->qr.va, MAIA_DTYPE_FP32,
			  llm_qdim(c), cs);
	return err ?: rope(d, d->qkv.va + llm_qdim(c) * 4ull, qkvd, n, c->kv_heads, k_dst,
			   MAIA_DTYPE_BF16, k_ld, cs);
}

/* V rows [r0, r0 + n) of qkv, converted to BF16 at dst (cache rows). */
static int v_out(struct llm_dev *d, uint32_t r0, uint32_t n, uint64_t dst)
{
	const struct llm_config *c = &d->w->cfg;
	uint64_t qkvd = llm_qdim(c) + 2 * llm_kvdim(c);
	struct maia_tensor_desc s, o;
	int err;

	err = mat(&s, d->qkv.va + (r0 * qkvd + llm_qdim(c) + llm_kvdim(c)) * 4, MAIA_DTYPE_FP32,
		  n, llm_kvdim(c), qkvd);
	err = err ?: mat(&o, dst, MAIA_DTYPE_BF16, n, llm_kvdim(c), 2ull * llm_kvdim(c));
	return err ?: maia_cmd_tensor_copy(d->cb, &s, &o);
}

/*
 * Copy the cache rows (K and V) of tokens [0, ntok) of one layer between a
 * contiguous buffer and the request's pool blocks, one copy per run of
 * consecutive block numbers. to_pool: contiguous -> pool.
 */
static int blocks_copy(struct llm_dev *d, uint64_t contig, uint32_t layer,
		       const uint32_t *blocks, uint32_t ntok, bool to_pool)
{
	const struct llm_config *c = &d->w->cfg;
	uint64_t row = llm_kv_row_bytes(c);
	uint32_t nb = llm_kv_blocks_for(ntok, c->block_tokens), b = 0, e;
	int err = 0;

	while (b < nb && !err) {
		uint64_t pool, loc, bytes;
		uint32_t last_tok;

		for (e = b + 1; e < nb && blocks[e] == blocks[e - 1] + 1; e++)
			;
		last_tok = e * c->block_tokens < ntok ? e * c->block_tokens : ntok;
		bytes = (uint64_t)(last_tok - b * c->block_tokens) * row;
		pool = d->pool.va + llm_pool_off(c, layer, blocks[b]);
		loc = contig + (uint64_t)b * c->block_tokens * row;
		err = to_pool ? maia_cmd_copy(d->cb, pool, loc, bytes) :
				maia_cmd_copy(d->cb, loc, pool, bytes);
		b = e;
	}
	return err;
}

/* Layer `layer`'s cache rows in the staging buffer. */
static uint64_t staging_va(const struct llm_dev *d, uint32_t layer)
{
	const struct llm_config *c = &d->w->cfg;

	return d->staging.va + (uint64_t)layer * c->max_seq * llm_kv_row_bytes(c);
}

/* logits[0..n) = RMSNorm(rows of x_va) lm_head^T + b */
static int head(struct llm_dev *d, uint64_t x_va, uint32_t n)
{
	int err;

	err = rmsnorm(d, x_va, n, &d->w->final_norm, d->h.va);
	return err ?: linear_bias(d, d->h.va, n, &d->w->lm_head, &d->w->lm_bias, d->logits.va,
				  MAIA_ACT_NONE);
}

int llm_build_prefill(struct llm_dev *d, const struct llm_prefill_req *reqs, uint32_t nreq,
		      enum llm_kv_dest dest, uint32_t sem_base)
{
	const struct llm_config *c = &d->w->cfg;
	uint64_t kvrow = llm_kv_row_bytes(c), cs_row = 2ull * c->head_dim * 4;
	uint64_t xrow = c->d_model * 4ull, qrow = llm_qdim(c) * 4ull;
	struct maia_tensor_desc q, k, v, o;
	uint32_t i, j, l, rows = 0, off;
	int err = 0;

	if (!nreq || nreq > c->max_batch || (dest == LLM_KV_LOCAL_POOL && !d->pool.bo))
		return -EINVAL;
	for (i = 0; i < nreq; i++) {
		if (!reqs[i].n)
			return -EINVAL;
		rows += reqs[i].n;
	}
	if (rows > c->max_seq)
		return -EINVAL;
	/* Embeddings; each request's RoPE rows are the table's rows 0..n-1. */
	for (i = 0, off = 0; i < nreq && !err; off += reqs[i].n, i++) {
		for (j = 0; j < reqs[i].n && !err; j++)
			err = embed(d, reqs[i].tokens[j], off + j);
		err = err ?: maia_cmd_copy(d->cb, d->rope_step.va + off * cs_row, d->rope.va,
					   reqs[i].n * cs_row);
	}
	for (l = 0; l < c->layers && !err; l++) {
		const struct llm_layer_w *lw = &d->w->layer[l];
		uint64_t ks = staging_va(d, l);

		err = layer_head(d, lw, rows, d->rope_step.va, ks, 2ull * llm_kvdim(c));
		err = err ?: v_out(d, 0, rows, ks + llm_kvdim(c) * 2ull);
		for (i = 0, off = 0; i < nreq && !err; off += reqs[i].n, i++) {
			uint32_t n = reqs[i].n;

			q_view(c, &q, d->qr.va + off * qrow, n);
			kv_view(c, &k, ks + off * kvrow, 0, n);
			kv_view(c, &v, ks + off * kvrow, 1, n);
			q_view(c, &o, d->att.va + off * qrow, n);
			err = maia_cmd_attention(d->cb, &q, &k, &v, &o, 0.0f, MAIA_ATTN_F_CAUSAL);
			if (!err && dest == LLM_KV_LOCAL_POOL) {
				err = blocks_copy(d, ks + off * kvrow, l, reqs[i].blocks, n, true);
			}
		}
		if (!err && dest == LLM_KV_SIGNAL)
			/* K/V of this layer are final: the transfer job may take them. */
			err = maia_cmd_sem_signal(d->cb, sem_base + l, 1);
		err = err ?: layer_tail(d, lw, rows);
	}
	for (l = 0; l < c->layers && !err && dest == LLM_KV_SIGNAL_AT_END; l++)
		err = maia_cmd_sem_signal(d->cb, sem_base + l, 1);
	if (nreq == 1)
		return err ?: head(d, d->x.va + (uint64_t)(rows - 1) * xrow, 1);
	/* The requests' last rows, side by side in t (free here), then the head. */
	for (i = 0, off = 0; i < nreq && !err; off += reqs[i].n, i++)
		err = maia_cmd_copy(d->cb, d->t.va + i * xrow, d->x.va + (off + reqs[i].n - 1) * xrow,
				    xrow);
	return err ?: head(d, d->t.va, nreq);
}

/* Whether blocks[0..n) are consecutive block numbers. */
static bool one_run(const uint32_t *blocks, uint32_t n)
{
	uint32_t i;

	for (i = 1; i < n; i++)
		if (blocks[i] != blocks[0] + i)
			return false;
	return true;
}

int llm_build_decode(struct llm_dev *d, const struct llm_step_row *rows, uint32_t n)
{
	const struct llm_config *c = &d->w->cfg;
	uint64_t kvrow = llm_kv_row_bytes(c), cs_row = 2ull * c->head_dim * 4;
	uint64_t gslot = c->max_seq * kvrow, kbytes = llm_kvdim(c) * 2ull;
	struct maia_tensor_desc q, k, v, o;
	uint32_t i, l;
	int err = 0;

	if (!n || n > c->max_batch || !d->pool.bo)
		return -EINVAL;
	for (i = 0; i < n; i++)
		if (rows[i].pos >= c->max_seq)
			return -EINVAL;
	for (i = 0; i < n && !err; i++) {
		err = embed(d, rows[i].token, i);
		err = err ?: maia_cmd_copy(d->cb, d->rope_step.va + i * cs_row,
					   d->rope.va + rows[i].pos * cs_row, cs_row);
	}
	for (l = 0; l < c->layers && !err; l++) {
		const struct llm_layer_w *lw = &d->w->layer[l];

		err = layer_head(d, lw, n, d->rope_step.va, d->krow.va, llm_kvdim(c));
		for (i = 0; i < n && !err; i++) {
			const struct llm_step_row *r = &rows[i];
			uint32_t blk = r->blocks[r->pos / c->block_tokens];
			uint64_t slot = d->pool.va + llm_pool_off(c, l, blk) +
					(uint64_t)(r->pos % c->block_tokens) * kvrow;
			uint64_t g = d->gather.va + i * gslot;

			/* Append this position's K and V to its block. */
			err = maia_cmd_copy(d->cb, slot, d->krow.va + i * kbytes, kbytes);
			err = err ?: v_out(d, i, 1, slot + kbytes);
			if (one_run(r->blocks, r->pos / c->block_tokens + 1))
				/* Consecutive blocks are one strided tensor already. */
				g = d->pool.va + llm_pool_off(c, l, r->blocks[0]);
			else
				err = err ?: blocks_copy(d, g, l, r->blocks, r->pos + 1, false);
			q_view(c, &q, d->qr.va + (uint64_t)i * llm_qdim(c) * 4, 1);
			kv_view(c, &k, g, 0, r->pos + 1);
			kv_view(c, &v, g, 1, r->pos + 1);
			q_view(c, &o, d->att.va + (uint64_t)i * llm_qdim(c) * 4, 1);
			err = err ?: maia_cmd_attention(d->cb, &q, &k, &v, &o, 0.0f, 0);
		}
		err = err ?: layer_tail(d, lw, n);
	}
	return err ?: head(d, d->x.va, n);
}
