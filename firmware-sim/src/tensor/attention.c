// SPDX-License-Identifier: MIT
/*
 * Scaled dot-product attention, out = softmax(scale * Q K^T + mask) V,
 * computed the way a tile with limited SRAM does it (flash attention): a
 * task owns a block of BQ queries of one (batch, head), streams K and V in
 * blocks of BK keys, and keeps a running row maximum and sum so that the
 * Lq x Lk score matrix never exists. FP32 throughout.
 */
#include <math.h>
#include <string.h>

#include "maia/hw/queue.h"
#include "te.h"

#define BQ	32u
#define BK	64u

struct attn_op {
	struct fw_tview q, k, v, out;
	bool causal;
	float scale;
	uint64_t heads, lq, lk, d, dv, qblocks;
};

static int load_rows(struct fw_io *io, const struct fw_tview *t, uint64_t b, uint64_t h,
		     uint64_t r0, uint64_t nr, uint64_t len, float *dst)
{
	uint64_t base = b * t->strides[0] + h * t->strides[1];

	for (uint64_t i = 0; i < nr; i++) {
		int st = fw_io_load(io, t, base + (r0 + i) * t->strides[2], len, t->strides[3],
				      dst + i * len);
		if (st)
			return st;
	}
	return MAIA_STATUS_OK;
}

static int attn_task(struct fw_te_job *job, size_t task, struct fw_worker *w)
{
	struct attn_op *a = job->op;
	uint64_t bh = task / a->qblocks, q0 = task % a->qblocks * BQ;
	uint64_t b = bh / a->heads, h = bh % a->heads;
	uint64_t nq = a->lq - q0 < BQ ? a->lq - q0 : BQ, d = a->d, dv = a->dv;
	uint64_t kb = a->k.shape[0] == 1 ? 0 : b, kh = a->k.shape[1] == 1 ? 0 : h;
	uint64_t vb = a->v.shape[0] == 1 ? 0 : b, vh = a->v.shape[1] == 1 ? 0 : h;
	int64_t shift = (int64_t)a->lk - (int64_t)a->lq;
	float *qs, *ks, *vs, *s, *o, *m, *l;
	uint64_t k0, i, j, c;
	int st;

	qs = fw_worker_scratch(w, BQ * d + BK * d + BK * dv + BQ * BK + BQ * dv + 2 * BQ);
	if (!qs)
		return MAIA_STATUS_DMA_ERROR;
	ks = qs + BQ * d;
	vs = ks + BK * d;
	s = vs + BK * dv;
	o = s + BQ * BK;
	m = o + BQ * dv;
	l = m + BQ;
	st = load_rows(&w->io, &a->q, b, h, q0, nq, d, qs);
	if (st)
		return st;
	memset(o, 0, sizeof(float) * nq * dv);
	for (i = 0; i < nq; i++) {
		m[i] = -INFINITY;
		l[i] = 0.0f;
	}
	for (k0 = 0; k0 < a->lk; k0 += BK) {
		uint64_t nk = a->lk - k0 < BK ? a->lk - k0 : BK;

		/* keys after the last query's causal limit are never needed */
		if (a->causal && (int64_t)k0 > (int64_t)(q0 + nq - 1) + shift)
			break;
		st = load_rows(&w->io, &a->k, kb, kh, k0, nk, d, ks);
		if (!st)
			st = load_rows(&w->io, &a->v, vb, vh, k0, nk, dv, vs);
		if (st)
			return st;
		for (i = 0; i < nq; i++) {
			int64_t lim = a->causal ? (int64_t)(q0 + i) + shift : INT64_MAX;
			float *si = s + i * BK, mx = m[i], corr, sum = 0.0f;

			for (j = 0; j < nk; j++) {
				float dot = 0.0f;

				for (c = 0; c < d; c++)
					dot += qs[i * d + c] * ks[j * d + c];
				si[j] = (int64_t)(k0 + j) > lim ? -INFINITY : dot * a->scale;
				if (si[j] > mx)
					mx = si[j];
			}
			if (mx == -INFINITY)
				continue;	/* every key so far is masked */
			corr = expf(m[i] - mx);
			for (j = 0; j < nk; j++) {
				si[j] = expf(si[j] - mx);
				sum += si[j];
			}
			l[i] = l[i] * corr + sum;
			m[i] = mx;
			for (c = 0; c < dv; c++)
				o[i * dv + c] *= corr;
			for (j = 0; j < nk; j++) {
				float p = si[j];

				if (p == 0.0f)
					continue;
				for (c = 0; c < dv; c++)
					o[i * dv + c] += p * vs[j * dv + c];
			}
		}
	}
	for (i = 0; i < nq; i++) {
		float inv = l[i] > 0.0f ? 1.0f / l[i] : 0.0f;

		for (c = 0; c < dv; c++)
			o[i * dv + c] *= inv;
		st = fw_io_store(&w->io, &a->out,
				   b * a->out.strides[0] + h * a->out.strides[1] +
				   (q0 + i) * a->out.strides[2], dv, a->out.strides[3],
				   o + i * dv, false);
		if (st)
			return st;
	}
	return MAIA_STATUS_OK;
}

int fw_op_attention(struct fw_tensor_engine *te, const struct maia_cmd_header *cmd,
		      const struct maia_job_mem *mem, struct maia_op_stats *stats)
{
	const struct maia_cmd_attention *c = (const void *)cmd;
	struct attn_op a = { 0 };
	struct fw_te_job job = { .te = te, .mem = mem, .run = attn_task, .op = &a };
	uint64_t batch;
	int st;

	if (cmd->size != sizeof(*c) || cmd->flags & ~MAIA_ATTN_F_CAUSAL || c->reserved)
		return MAIA_STATUS_BAD_CMD;
	a.causal = cmd->flags & MAIA_ATTN_F_CAUSAL;
	st = fw_tview_parse(&c->q, FW_TV_INPUT, &a.q);
	if (!st)
		st = fw_tview_parse(&c->k, FW_TV_INPUT, &a.k);
	if (!st)
		st = fw_tview_parse(&c->v, FW_TV_INPUT, &a.v);
	if (!st)
		st = fw_tview_parse(&c->out, FW_TV_OUTPUT, &a.out);
	if (st)
		return st;
	batch = a.q.shape[0];
	a.heads = a.q.shape[1];
	a.lq = a.q.shape[2];
	a.d = a.q.shape[3];
	a.lk = a.k.shape[2];
	a.dv = a.v.shape[3];
	if (a.k.shape[3] != a.d || a.v.shape[2] != a.lk ||
	    (a.k.shape[0] != batch && a.k.shape[0] != 1) ||
	    (a.k.shape[1] != a.heads && a.k.shape[1] != 1) ||
	    (a.v.shape[0] != batch && a.v.shape[0] != 1) ||
	    (a.v.shape[1] != a.heads && a.v.shape[1] != 1) ||
	    a.out.shape[0] != batch || a.out.shape[1] != a.heads ||
	    a.out.shape[2] != a.lq || a.out.shape[3] != a.dv)
		return MAIA_STATUS_BAD_DESC;
	if ((BQ * a.d + BK * a.d + BK * a.dv + BQ * BK + BQ * a.dv + 2 * BQ) * sizeof(float) >
	    te->tile_sram)
		return MAIA_STATUS_BAD_DESC;
	a.scale = c->scale ? fw_f32_from_bits(c->scale) : 1.0f / sqrtf((float)a.d);
	if (!isfinite(a.scale))
		return MAIA_STATUS_BAD_CMD;
	a.qblocks = (a.lq + BQ - 1) / BQ;
	job.ntasks = batch * a.heads * a.qblocks;
	stats->flops += 2 * batch * a.heads * a.lq * a.lk * (a.d + a.dv);
	stats->mm = (struct maia_op_mm){ .batch = batch * a.heads, .m = a.lq, .n = a.lk,
					 .k = a.d + a.dv, .dtype_a = a.q.dtype,
					 .dtype_b = a.k.dtype, .dtype_c = a.out.dtype };
	return fw_te_job_run(&job, stats);
}
