// SPDX-License-Identifier: MIT
/*
 * Row-wise operations over the innermost dimension: softmax (optionally
 * causal, optionally log-softmax), layer norm and RMS norm. One row is one
 * unit of work and must fit in the tile's SRAM. Sums are accumulated in
 * double, which keeps the documented error bounds independent of the row
 * length.
 */
#include <math.h>

#include "maia/hw/queue.h"
#include "te.h"

#define ROWS_PER_TASK_ELEMS	16384u

struct rownorm_op {
	uint16_t opcode;
	unsigned int flags;
	struct fw_tview x, gamma, beta, out;
	bool affine;
	float scale, eps;
	int32_t causal_offset;
	uint64_t rows, rows_per_task;
};

static void softmax_row(const struct rownorm_op *o, uint64_t row, float *v, uint64_t d)
{
	float mx = -INFINITY;
	double sum = 0.0;
	uint64_t j, valid = d;

	if (o->flags & MAIA_SOFTMAX_F_CAUSAL) {
		int64_t lim = (int64_t)(row % o->x.shape[2]) + o->causal_offset + 1;

		valid = lim < 0 ? 0 : (uint64_t)lim < d ? (uint64_t)lim : d;
	}
	for (j = 0; j < valid; j++) {
		v[j] *= o->scale;
		if (v[j] > mx || isnan(v[j]))
			mx = isnan(mx) ? mx : v[j];
	}
	if (mx == -INFINITY || isnan(mx)) {	/* all masked, or NaN in the row */
		float fill = isnan(mx) ? NAN : (o->flags & MAIA_SOFTMAX_F_LOG ? -INFINITY : 0.0f);

		for (j = 0; j < d; j++)
			v[j] = fill;
		return;
	}
	for (j = 0; j < valid; j++)
		sum += exp((double)v[j] - mx);
	if (o->flags & MAIA_SOFTMAX_F_LOG) {
		double lse = mx + log(sum);

		for (j = 0; j < valid; j++)
			v[j] = (float)(v[j] - lse);
		for (; j < d; j++)
			v[j] = -INFINITY;
	} else {
		for (j = 0; j < valid; j++)
			v[j] = (float)(exp((double)v[j] - mx) / sum);
		for (; j < d; j++)
			v[j] = 0.0f;
	}
}

static void norm_row(const struct rownorm_op *o, float *v, uint64_t d, const float *g,
		     const float *b)
{
	double mean = 0.0, var = 0.0, inv;
	uint64_t j;

	if (o->opcode == MAIA_OP_LAYERNORM) {
		for (j = 0; j < d; j++)
			mean += v[j];
		mean /= (double)d;
		for (j = 0; j < d; j++)
			var += ((double)v[j] - mean) * ((double)v[j] - mean);
		var /= (double)d;
	} else {
		for (j = 0; j < d; j++)
			var += (double)v[j] * v[j];
		var /= (double)d;
	}
	inv = 1.0 / sqrt(var + o->eps);
	for (j = 0; j < d; j++) {
		double y = ((double)v[j] - mean) * inv;

		if (o->affine) {
			y *= g[j];
			if (b)
				y += b[j];
		}
		v[j] = (float)y;
	}
}

static int rownorm_task(struct fw_te_job *job, size_t task, struct fw_worker *w)
{
	struct rownorm_op *o = job->op;
	uint64_t d = o->out.shape[3], r0 = task * o->rows_per_task, r;
	bool ln = o->opcode == MAIA_OP_LAYERNORM;
	float *v = fw_worker_scratch(w, 3 * d), *g = v + d, *b = NULL;
	int st;

	if (!v)
		return MAIA_STATUS_DMA_ERROR;
	if (o->opcode != MAIA_OP_SOFTMAX && o->affine) {
		st = fw_io_load(&w->io, &o->gamma, 0, d, o->gamma.strides[3], g);
		if (st)
			return st;
		if (ln) {
			b = g + d;
			st = fw_io_load(&w->io, &o->beta, 0, d, o->beta.strides[3], b);
			if (st)
				return st;
		}
	}
	for (r = r0; r < r0 + o->rows_per_task && r < o->rows; r++) {
		st = fw_io_load(&w->io, &o->x, fw_row_offset(o->out.shape, o->x.strides, r), d,
				  o->x.strides[3], v);
		if (st)
			return st;
		if (o->opcode == MAIA_OP_SOFTMAX)
			softmax_row(o, r, v, d);
		else
			norm_row(o, v, d, g, b);
		st = fw_io_store(&w->io, &o->out, fw_row_offset(o->out.shape, o->out.strides, r),
				   d, o->out.strides[3], v, false);
		if (st)
			return st;
	}
	return MAIA_STATUS_OK;
}

static int parse_affine(const struct maia_tensor_desc *d, uint64_t dim, struct fw_tview *t)
{
	int st = fw_tview_parse(d, FW_TV_INPUT, t);

	if (st)
		return st;
	if (t->rank != 1 || t->shape[3] != dim || t->block > 1)
		return MAIA_STATUS_BAD_DESC;
	return MAIA_STATUS_OK;
}

int fw_op_rownorm(struct fw_tensor_engine *te, const struct maia_cmd_header *cmd,
		    const struct maia_job_mem *mem, struct maia_op_stats *stats)
{
	struct rownorm_op o = { .opcode = cmd->opcode, .flags = cmd->flags };
	struct fw_te_job job = { .te = te, .mem = mem, .run = rownorm_task, .op = &o };
	uint64_t d;
	int st;

	if (cmd->opcode == MAIA_OP_SOFTMAX) {
		const struct maia_cmd_softmax *c = (const void *)cmd;

		if (cmd->size != sizeof(*c) ||
		    cmd->flags & ~(MAIA_SOFTMAX_F_CAUSAL | MAIA_SOFTMAX_F_LOG))
			return MAIA_STATUS_BAD_CMD;
		o.scale = c->scale ? fw_f32_from_bits(c->scale) : 1.0f;
		o.causal_offset = c->causal_offset;
		if (!isfinite(o.scale) || (!(cmd->flags & MAIA_SOFTMAX_F_CAUSAL) && c->causal_offset))
			return MAIA_STATUS_BAD_CMD;
		st = fw_tview_parse(&c->x, FW_TV_INPUT, &o.x);
		if (!st)
			st = fw_tview_parse(&c->out, FW_TV_OUTPUT, &o.out);
		if (st)
			return st;
		if ((cmd->flags & MAIA_SOFTMAX_F_CAUSAL) && o.x.rank < 2)
			return MAIA_STATUS_BAD_DESC;
	} else {
		const struct maia_cmd_norm *c = (const void *)cmd;
		bool ln = cmd->opcode == MAIA_OP_LAYERNORM;

		if (cmd->size != sizeof(*c) || cmd->flags & ~MAIA_NORM_F_NO_AFFINE || c->reserved)
			return MAIA_STATUS_BAD_CMD;
		o.eps = fw_f32_from_bits(c->eps);
		if (!isfinite(o.eps) || o.eps < 0.0f)
			return MAIA_STATUS_BAD_CMD;
		o.affine = !(cmd->flags & MAIA_NORM_F_NO_AFFINE);
		st = fw_tview_parse(&c->x, FW_TV_INPUT, &o.x);
		if (!st)
			st = fw_tview_parse(&c->out, FW_TV_OUTPUT, &o.out);
		if (st)
			return st;
		if (o.affine) {
			st = parse_affine(&c->gamma, o.out.shape[3], &o.gamma);
			if (!st && ln)
				st = parse_affine(&c->beta, o.out.shape[3], &o.beta);
			if (st)
				return st;
		} else if (!fw_desc_is_zero(&c->gamma)) {
			return MAIA_STATUS_BAD_CMD;
		}
		if ((!ln || !o.affine) && !fw_desc_is_zero(&c->beta))
			return MAIA_STATUS_BAD_CMD;
	}
	for (int i = 0; i < 4; i++)
		if (o.x.shape[i] != o.out.shape[i])
			return MAIA_STATUS_BAD_DESC;
	d = o.out.shape[3];
	if (3 * d * sizeof(float) > te->tile_sram)	/* a row must fit a tile */
		return MAIA_STATUS_BAD_DESC;
	o.rows = fw_rows(o.out.shape);
	o.rows_per_task = d >= ROWS_PER_TASK_ELEMS ? 1 : ROWS_PER_TASK_ELEMS / d;
	job.ntasks = (o.rows + o.rows_per_task - 1) / o.rows_per_task;
	stats->flops += o.out.nelems * (o.opcode == MAIA_OP_SOFTMAX ? 4 : 6);
	return fw_te_job_run(&job, stats);
}
