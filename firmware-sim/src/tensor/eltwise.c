// SPDX-License-Identifier: MIT
/*
 * Elementwise operations: ADD, MUL (with broadcasting of size-1 or
 * stride-0 dimensions), SCALE (alpha * x + beta) and ACTIVATION.
 * Work is cut into chunks of FW_CHUNK elements of output rows; each
 * chunk is loaded, computed in FP32 and stored by one tile.
 */
#include <math.h>

#include "maia/hw/queue.h"
#include "te.h"

struct eltwise_op {
	uint16_t opcode;
	struct fw_tview x, y, out;
	float alpha, beta;
	unsigned int act;
	bool saturate;
	uint64_t chunks_per_row;
	uint64_t rows_per_task;	/* short rows are grouped into one task */
};

static int eltwise_chunk(struct eltwise_op *e, uint64_t item, struct fw_worker *w)
{
	uint64_t row = item / e->chunks_per_row, c0 = item % e->chunks_per_row * FW_CHUNK;
	uint64_t n = e->out.shape[3] - c0 < FW_CHUNK ? e->out.shape[3] - c0 : FW_CHUNK;
	float *a = fw_worker_scratch(w, 2 * FW_CHUNK), *b = a + FW_CHUNK;
	uint64_t xo, i;
	int st;

	if (!a)
		return MAIA_STATUS_DMA_ERROR;
	xo = fw_row_offset(e->out.shape, e->x.strides, row) + c0 * e->x.strides[3];
	st = fw_io_load(&w->io, &e->x, xo, n, e->x.strides[3], a);
	if (st)
		return st;
	switch (e->opcode) {
	case MAIA_OP_ADD:
	case MAIA_OP_MUL:
		st = fw_io_load(&w->io, &e->y,
				  fw_row_offset(e->out.shape, e->y.strides, row) +
				  c0 * e->y.strides[3], n, e->y.strides[3], b);
		if (st)
			return st;
		if (e->opcode == MAIA_OP_ADD)
			for (i = 0; i < n; i++)
				a[i] += b[i];
		else
			for (i = 0; i < n; i++)
				a[i] *= b[i];
		break;
	case MAIA_OP_SCALE:
		for (i = 0; i < n; i++)
			a[i] = e->alpha * a[i] + e->beta;
		break;
	default:
		for (i = 0; i < n; i++)
			a[i] = fw_act(a[i], e->act);
		break;
	}
	return fw_io_store(&w->io, &e->out,
			     fw_row_offset(e->out.shape, e->out.strides, row) +
			     c0 * e->out.strides[3], n, e->out.strides[3], a, e->saturate);
}

static int eltwise_task(struct fw_te_job *job, size_t task, struct fw_worker *w)
{
	struct eltwise_op *e = job->op;
	uint64_t items = fw_rows(e->out.shape) * e->chunks_per_row;
	uint64_t i0 = task * e->rows_per_task, i;
	int st = MAIA_STATUS_OK;

	for (i = i0; i < i0 + e->rows_per_task && i < items && !st; i++)
		st = eltwise_chunk(e, i, w);
	return st;
}

int fw_op_eltwise(struct fw_tensor_engine *te, const struct maia_cmd_header *cmd,
		    const struct maia_job_mem *mem, struct maia_op_stats *stats)
{
	struct eltwise_op e = { .opcode = cmd->opcode };
	struct fw_te_job job = { .te = te, .mem = mem, .run = eltwise_task, .op = &e };
	const struct maia_tensor_desc *xd, *yd = NULL, *od;
	int st;

	switch (cmd->opcode) {
	case MAIA_OP_ADD:
	case MAIA_OP_MUL: {
		const struct maia_cmd_eltwise *c = (const void *)cmd;

		if (cmd->size != sizeof(*c) || cmd->flags & ~MAIA_ELTWISE_F_SAT)
			return MAIA_STATUS_BAD_CMD;
		xd = &c->x;
		yd = &c->y;
		od = &c->out;
		break;
	}
	case MAIA_OP_SCALE: {
		const struct maia_cmd_scale *c = (const void *)cmd;

		if (cmd->size != sizeof(*c) || cmd->flags & ~MAIA_ELTWISE_F_SAT)
			return MAIA_STATUS_BAD_CMD;
		e.alpha = fw_f32_from_bits(c->alpha);
		e.beta = fw_f32_from_bits(c->beta);
		if (!isfinite(e.alpha) || !isfinite(e.beta))
			return MAIA_STATUS_BAD_CMD;
		xd = &c->x;
		od = &c->out;
		break;
	}
	default: {
		const struct maia_cmd_activation *c = (const void *)cmd;

		if (cmd->size != sizeof(*c) || cmd->flags & ~MAIA_ELTWISE_F_SAT || c->reserved ||
		    c->activation == MAIA_ACT_NONE || c->activation >= MAIA_ACT_COUNT)
			return MAIA_STATUS_BAD_CMD;
		e.act = c->activation;
		xd = &c->x;
		od = &c->out;
		break;
	}
	}
	e.saturate = cmd->flags & MAIA_ELTWISE_F_SAT;
	st = fw_tview_parse(xd, FW_TV_INPUT, &e.x);
	if (!st && yd)
		st = fw_tview_parse(yd, FW_TV_INPUT, &e.y);
	if (!st)
		st = fw_tview_parse(od, FW_TV_OUTPUT, &e.out);
	if (st)
		return st;
	if (!fw_broadcasts(&e.x, e.out.shape) || (yd && !fw_broadcasts(&e.y, e.out.shape)))
		return MAIA_STATUS_BAD_DESC;
	/* block formats load whole blocks: no broadcasting along their rows */
	if ((e.x.block > 1 && e.x.shape[3] != e.out.shape[3]) ||
	    (yd && e.y.block > 1 && e.y.shape[3] != e.out.shape[3]))
		return MAIA_STATUS_BAD_DESC;
	e.chunks_per_row = (e.out.shape[3] + FW_CHUNK - 1) / FW_CHUNK;
	e.rows_per_task = e.out.shape[3] >= FW_CHUNK ? 1 : FW_CHUNK / e.out.shape[3];
	job.ntasks = (fw_rows(e.out.shape) * e.chunks_per_row + e.rows_per_task - 1) /
		     e.rows_per_task;
	stats->flops += e.out.nelems * (e.opcode == MAIA_OP_SCALE ? 2 : 1);
	return fw_te_job_run(&job, stats);
}
